"""Train a model from a Hydra config: python train.py experiment=quickstart (see conf/train.yaml)."""

from legalft.apps.train import main

if __name__ == "__main__":
    main()
