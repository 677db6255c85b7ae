"""Score a run: python evaluate.py run=checkpoints/<run folder>, or an in-context baseline:
python evaluate.py incontext=base_prompt model=smollm2 data=legalbench, or compare runs:
python evaluate.py report=compare runs='checkpoints/**' out=reports/<name> (see conf/evaluate.yaml)."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from legalft.config import register_resolvers

register_resolvers()


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    from legalft.cli import route_lightning_logs_to_hydra, run_or_exit
    from legalft.errors import UserError
    from legalft.run_folder import RunFolder

    route_lightning_logs_to_hydra()
    hydra_cfg = HydraConfig.get()
    if cfg.get("report") is not None:
        from legalft.reporting.compare import compare

        def report():
            if not cfg.runs:
                raise UserError("report=compare needs runs=<glob of run folders>, e.g. runs='checkpoints/**'.")
            r = cfg.report
            out = compare(cfg.runs, cfg.out, r.metric_mode, list(r.baselines), r.resamples, r.seed, r.overwrite)
            print(f"report: {out}/report.md")

        run_or_exit(report)
    elif cfg.get("incontext") is not None:
        from legalft.config_checks import check_config
        from legalft.incontext.runner import run_incontext

        run = RunFolder(hydra_cfg.runtime.output_dir)
        run_or_exit(lambda: check_config(cfg) or run_incontext(cfg, run, hydra_cfg.runtime.choices["model"]))
    elif cfg.run is not None:
        from legalft.encoder_pipeline import evaluate_encoder_run
        from legalft.lora_pipeline import evaluate_lora_run

        run = RunFolder(cfg.run)
        evaluate_run = evaluate_lora_run if (run.path / "adapters").is_dir() else evaluate_encoder_run
        run_or_exit(lambda: evaluate_run(run, cfg.data))
    else:
        def nothing_to_score():
            raise UserError("say what to score: run=<run folder>, or incontext=... model=... data=...")

        run_or_exit(nothing_to_score)


if __name__ == "__main__":
    main()
