"""Report on finished runs: python report.py runs='checkpoints/**' out=reports/<name> compares them (tables,
paired tests, figures); report=legalevalhub writes them as LegalEvalHub evaluation runs (see conf/report.yaml)."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from legalft.foundation.console import no_bars_outside_a_terminal

no_bars_outside_a_terminal()  # before anything imports tqdm

from legalft.configuration.resolvers import CONFIG_DIR, register_resolvers  # noqa: E402

register_resolvers()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="report")
def main(cfg: DictConfig) -> None:
    from legalft.foundation.console import console_says_each_error_once, run_or_exit
    from legalft.reporting.command import write_report

    console_says_each_error_once()
    kind = HydraConfig.get().runtime.choices["report"]
    run_or_exit(lambda: write_report(cfg, kind))


if __name__ == "__main__":  # python -m legalft.apps.report (how a study runs it)
    main()
