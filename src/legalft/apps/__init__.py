"""The commands, as Hydra apps with the package's own configs: ``legalft-train``, ``legalft-evaluate``,
``legalft-predict``, ``legalft-report``, ``legalft-study`` and ``legalft-fire2026`` (console scripts, runnable from
any folder; ``legalft-export``, the seventh, is ``legalft.export.command``), and ``train.py``, ``evaluate.py``,
``predict.py``, ``report.py`` and ``study.py`` at a clone's root, which call the same ``main``."""
