"""What ``report.py`` (``legalft-report``) writes, by the ``report`` group's choice: a comparison of runs
(``compare``) or the runs as LegalEvalHub evaluation runs (``legalevalhub``)."""

from __future__ import annotations

from pathlib import Path


def write_report(cfg, kind: str) -> Path:
    """The report ``kind`` asks for, from ``cfg``'s runs, out and report group; says where it is."""
    if kind == "legalevalhub":
        from legalft.reporting.legalevalhub_export import export_from_config

        out = export_from_config(cfg)
        print(f"LegalEvalHub evaluation runs: {out}/README.md")
        return out
    from legalft.reporting.compare import compare_from_config

    out = compare_from_config(cfg)
    print(f"report: {out}/report.md")
    return out
