"""Classify unlabelled documents with a finished run: python predict.py run=checkpoints/<run> input=cases.csv
out=predictions.jsonl (see conf/predict.yaml)."""

import sys

import hydra
from omegaconf import DictConfig

from legalft.foundation.console import no_bars_outside_a_terminal

no_bars_outside_a_terminal()  # before anything imports tqdm

from legalft.configuration.resolvers import CONFIG_DIR, register_resolvers  # noqa: E402

register_resolvers()


def main() -> None:
    """The command: ``input=FILE`` read as ``input.path=FILE`` (the input group also takes its columns)."""
    from legalft.foundation.io import this_command

    this_command("predict")
    sys.argv[1:] = [f"input.path={a.split('=', 1)[1]}" if a.startswith("input=") else a for a in sys.argv[1:]]
    composed()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="predict")
def composed(cfg: DictConfig) -> None:
    from legalft.foundation.console import console_says_each_error_once, run_or_exit
    from legalft.apps.predicting import predict

    console_says_each_error_once()
    run_or_exit(lambda: predict(str(cfg.run), str(cfg.input.path), cfg.out, cfg.input.text_column,
                                cfg.input.id_column, cfg.task, bool(cfg.overwrite), cfg.get("engine"),
                                bool(cfg.evidence), str(cfg.format), cfg.get("cache_dir")))


if __name__ == "__main__":  # python -m legalft.apps.predict
    main()
