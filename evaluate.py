"""Score a run: python evaluate.py run=checkpoints/<run folder>, or an in-context baseline:
python evaluate.py prompt=base_prompt model=smollm2 data=legalbench (see conf/evaluate.yaml)."""

from legalft.apps.evaluate import main

if __name__ == "__main__":
    main()
