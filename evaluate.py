"""Score a trained run on its test split: python evaluate.py run=checkpoints/<run folder>."""

import hydra
from omegaconf import DictConfig

from legalft.config import register_resolvers

register_resolvers()


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    from legalft.cli import route_lightning_logs_to_hydra, run_or_exit
    from legalft.encoder_pipeline import evaluate_encoder_run
    from legalft.run_folder import RunFolder

    route_lightning_logs_to_hydra()
    run_or_exit(lambda: evaluate_encoder_run(RunFolder(cfg.run), cfg.data))


if __name__ == "__main__":
    main()
