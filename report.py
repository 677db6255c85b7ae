"""Report on finished runs: python report.py runs='checkpoints/**' out=reports/<name> (see conf/report.yaml);
report=legalevalhub writes them as LegalEvalHub evaluation runs."""

from legalft.apps.report import main

if __name__ == "__main__":
    main()
