"""Train a model from a Hydra config: python train.py experiment=quickstart (see conf/train.yaml)."""

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from legalft.foundation.console import no_bars_outside_a_terminal

no_bars_outside_a_terminal()  # before anything imports tqdm

from legalft.configuration.resolvers import CONFIG_DIR, register_resolvers  # noqa: E402

register_resolvers()


def main() -> float | None:
    """The command: its overrides as Hydra composes them, with the data keys of earlier releases read where
    they are now (``data.cv_folds=5`` as ``protocol.cv_folds=5``)."""
    from legalft.foundation.console import run_or_exit
    from legalft.foundation.io import this_command
    from legalft.runs.migrations import forwarded

    this_command("train")
    sys.argv[1:] = run_or_exit(lambda: forwarded(sys.argv[1:]))
    return composed()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def composed(cfg: DictConfig) -> float | None:
    from hydra.utils import instantiate

    from legalft.foundation.console import quiet_console, run_or_exit
    from legalft.training.preemption import Preempted, outlive_signals_outside_training
    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder

    quiet_console()
    outlive_signals_outside_training()
    hydra_cfg = HydraConfig.get()

    def train() -> dict:
        context = RunContext.for_new_run(cfg, RunFolder(hydra_cfg.runtime.output_dir), hydra_cfg.runtime.choices["model"])
        return instantiate(cfg.method).run(context)

    try:
        metrics = run_or_exit(train)
    except Preempted as stop:  # the requeued job (or a rerun into this run folder) resumes from the checkpoint
        print(stop, file=sys.stderr if stop.exit_code else sys.stdout)
        if stop.exit_code:  # SIGTERM / SIGINT: the run is unfinished, and the exit status says so
            raise SystemExit(stop.exit_code) from None
        return None
    return metrics.get(cfg.optimized_metric) if cfg.optimized_metric else None


if __name__ == "__main__":  # python -m legalft.apps.train (how a study runs it)
    main()
