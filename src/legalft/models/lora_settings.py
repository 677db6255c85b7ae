"""What the ``lora`` group (conf/lora) may hold, checked before anything loads (``Method.group_settings`` of the
methods that read it): the adapters' rank and scale and whether the base is quantised (``legalft.models.lora``
builds from them; this module imports neither torch nor peft, so the check stays light)."""

from __future__ import annotations

from legalft.foundation.checks import names, number, one_of, whole

GROUP = "lora"  # the config group: conf/lora, the run's ``lora`` node
QUANTIZATIONS = ("none", "nf4")  # nf4: QLoRA (bitsandbytes 4-bit NF4 with double quantisation)

LORA_SETTINGS = {
    "r": (whole(1), "a whole number, 1 or more"),
    "alpha": (number(above=0), "a positive number"),
    "dropout": (number(least=0, below=1), "a number from 0 up to (not including) 1"),
    "target_modules": (names(), "a module name or a non-empty list of them, e.g. [q_proj, v_proj]"),
    "quantize": (one_of(*QUANTIZATIONS), f"one of {', '.join(QUANTIZATIONS)}"),
}
