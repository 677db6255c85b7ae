"""Classify unlabelled documents with a finished run: python predict.py run=checkpoints/<run> input=cases.csv
out=predictions.jsonl (see conf/predict.yaml)."""

from legalft.apps.predict import main

if __name__ == "__main__":
    main()
