"""The export command (``legalft-export``, ``python -m legalft.export``):

    python -m legalft.export run=checkpoints/<run> out=exported/statutes
    python -m legalft.export run=checkpoints/<run> out=exported/statutes push_to_hub=true hub.repo_id=me/statutes

(conf/export.yaml); what it writes: ``legalft.export.exporting``."""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from legalft.configuration.resolvers import CONFIG_DIR, register_resolvers
from legalft.export.exporting import check_repo_id, existing_export, export, push
from legalft.foundation.errors import UserError


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="export")
def composed(cfg: DictConfig) -> None:
    import sys

    from legalft.foundation.console import console_says_each_error_once, run_or_exit

    console_says_each_error_once()

    def job() -> None:
        if cfg.push_to_hub:  # said before anything is written
            check_repo_id(cfg.hub.repo_id)
        if cfg.run is None:  # an export already on disk: pushed alone, so a failed push is retried without exporting
            if not cfg.push_to_hub:
                raise UserError("run= is unset: name the run folder to export (run=checkpoints/<run>), or set "
                                "push_to_hub=true hub.repo_id=... to push the export out already holds.")
            folder = existing_export(str(cfg.out))
        else:
            folder = export(str(cfg.run), str(cfg.out), cfg.adapter,
                            "python -m legalft.export " + " ".join(sys.argv[1:]), cfg.task)
            print(f"exported: {folder}")
        if cfg.push_to_hub:
            print(f"uploaded: {push(folder, cfg.hub.repo_id, bool(cfg.hub.private), cfg.hub.token)}")

    run_or_exit(job)


def main() -> None:
    from legalft.foundation.io import this_command

    this_command("export")
    register_resolvers()
    composed()
