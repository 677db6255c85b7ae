"""Score a run: python evaluate.py run=checkpoints/<run folder>, or an in-context baseline:
python evaluate.py prompt=base_prompt model=smollm2 data=legalbench, or compare runs:
python evaluate.py report=compare runs='checkpoints/**' out=reports/<name> (see conf/evaluate.yaml).
python evaluate.py report=legalevalhub runs='checkpoints/**' out=submissions/<name>"""

from legalft.apps.evaluate import main

if __name__ == "__main__":
    main()
