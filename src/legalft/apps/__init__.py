"""The three commands, as Hydra apps with the package's own configs: ``legalft-train``,
``legalft-evaluate`` and ``legalft-study`` (console scripts, runnable from any folder), and
``train.py``, ``evaluate.py`` and ``study.py`` at a clone's root, which call the same ``main``."""
