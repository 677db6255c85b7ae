"""Score a run: python evaluate.py run=checkpoints/<run folder>, or an in-context baseline:
python evaluate.py prompt=base_prompt model=smollm2 data=legalbench (see conf/evaluate.yaml). Reports
are report.py's (evaluate.py report=... still writes them, with a note)."""

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

    this_command("evaluate")
    sys.argv[1:] = run_or_exit(lambda: forwarded(sys.argv[1:]))
    return composed()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def composed(cfg: DictConfig) -> float | None:
    from hydra.utils import instantiate

    from legalft.foundation.console import quiet_console, run_or_exit
    from legalft.foundation.errors import UserError
    from legalft.llm.engine import backend_of
    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder
    from legalft.runs.migrations import MOVED_TO_COMMANDS
    from legalft.runs.saved_config import recorded_method
    from legalft.training.trainer import instantiate_loggers

    quiet_console()
    hydra_cfg = HydraConfig.get()

    def evaluate() -> dict:
        moved = next((group for group in MOVED_TO_COMMANDS if cfg.get(group) is not None), None)
        if moved is not None:  # reports are their own command; this spelling still writes them
            from legalft.reporting.command import write_report

            kind = hydra_cfg.runtime.choices[moved]
            print(f"note: reports are their own command now: python {MOVED_TO_COMMANDS[moved]} {moved}={kind} ... "
                  "(legalft-report)")
            write_report(cfg, kind)
            return {}
        if cfg.run is not None:
            run = RunFolder(cfg.run)
            method = recorded_method(run)
            engine = cfg.get("engine")
            if backend_of(engine) == "server" and not getattr(method, "served_adapters", False):
                raise UserError(f"engine=server scores LoRA runs and in-context baselines, and {cfg.run} is a "
                                f"{method.name} run: drop engine=server.")
            # the run's own config, with this command's data keys, loggers, engine and explanations.* keys
            set_here = [o.split("=", 1)[0].lstrip("+~") for o in hydra_cfg.overrides.task]
            explanation_keys = [k.removeprefix("explanations.") for k in set_here if k.startswith("explanations.")]
            return method.rescore(RunContext.for_saved_run(
                run, cfg.data, instantiate_loggers(cfg), engine, cfg.get("explanations"),
                {key: cfg.explanations.get(key) for key in explanation_keys}))
        if cfg.get("prompt") is not None:
            context = RunContext.for_new_run(cfg, RunFolder(hydra_cfg.runtime.output_dir),
                                             hydra_cfg.runtime.choices["model"])
            return instantiate(cfg.method).run(context)
        raise UserError("say what to score: run=<run folder>, or prompt=... model=... data=...")

    metrics = run_or_exit(evaluate) or {}
    return metrics.get(cfg.optimized_metric) if cfg.optimized_metric else None  # to a Hydra sweeper


if __name__ == "__main__":  # python -m legalft.apps.evaluate (how a study runs it)
    main()
