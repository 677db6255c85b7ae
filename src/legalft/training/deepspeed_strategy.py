"""Lightning's DeepSpeed strategy, also on CPU ranks (through DeepSpeed's own CPU accelerator).

Lightning refuses any accelerator but CUDA for DeepSpeed ("only supported on CUDA GPUs"), though the
rest of its strategy does not depend on it, and DeepSpeed runs ZeRO-2 and ZeRO-3 on CPU processes
(its CPU accelerator, picked when there is no GPU or with ``DS_ACCELERATOR=cpu``; collectives over
gloo). On GPUs this is Lightning's strategy unchanged; on CPUs a DeepSpeed setup can be checked
before it queues for GPUs (``trainer=deepspeed_zero3 trainer.accelerator=cpu trainer.devices=2
trainer.precision=32-true``).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from lightning.pytorch.accelerators import CPUAccelerator
from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy

from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
# DeepSpeed compiles its shared-memory collectives for CPU ranks on first use, in well under a minute
STALE_BUILD_LOCK_S = 300


def stale_build_locks(now: float | None = None) -> list[Path]:
    """Locks on DeepSpeed's CPU collectives build older than a build takes. torch waits on such a lock
    without a word, for ever: a process killed while compiling leaves it behind."""
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder
    from torch.utils.cpp_extension import get_default_build_root

    name = ShareMemCommBuilder.NAME
    # torch builds in $TORCH_EXTENSIONS_DIR/<name>, else in <its cache>/<python and accelerator>/<name>
    chosen = os.environ.get("TORCH_EXTENSIONS_DIR")
    locks = [Path(chosen) / name / "lock"] if chosen else sorted(Path(get_default_build_root()).glob(f"*/{name}/lock"))
    now = time.time() if now is None else now
    stale = []
    for lock in locks:
        try:
            if now - lock.stat().st_mtime > STALE_BUILD_LOCK_S:
                stale.append(lock)
        except FileNotFoundError:  # none, or a build that just ended removed it
            pass
    return stale


class DeepSpeedWithCPU(DeepSpeedStrategy):

    def setup_environment(self) -> None:
        if not isinstance(self.accelerator, CPUAccelerator):
            return super().setup_environment()
        from deepspeed.accelerator import get_accelerator

        if get_accelerator().device_name() != "cpu":
            raise UserError(f"DeepSpeed on CPU ranks needs DeepSpeed's CPU accelerator, and it picked "
                            f"{get_accelerator().device_name()!r}: set DS_ACCELERATOR=cpu.")
        DDPStrategy.setup_environment(self)  # what DeepSpeedStrategy does after its CUDA check

    def setup_distributed(self) -> None:
        if not isinstance(self.accelerator, CPUAccelerator):
            return super().setup_distributed()
        # DeepSpeedStrategy's own, less its check that GPU indices match local ranks (CPU devices have none)
        from lightning.fabric.utilities.seed import reset_seed

        reset_seed()
        self.set_world_ranks()
        for lock in stale_build_locks():
            log.warning("%s is older than a build of DeepSpeed's CPU collectives takes, and torch waits for it to "
                        "go: if no other process is building them, a killed one left it; delete it.", lock)
        self._init_deepspeed_distributed()

    def _setup_model_and_optimizer(self, model, optimizer, lr_scheduler=None):
        if not isinstance(self.accelerator, CPUAccelerator):
            return super()._setup_model_and_optimizer(model, optimizer, lr_scheduler)
        import argparse

        import deepspeed

        # As DeepSpeedStrategy's own, but DeepSpeed's engine takes its device from the local rank: a CPU
        # device has no index (DeepSpeed's CPU accelerator maps any rank to the CPU).
        engine, deepspeed_optimizer, _, _ = deepspeed.initialize(
            args=argparse.Namespace(device_rank=self.local_rank), config=self.config, model=model,
            model_parameters=[p for p in model.parameters() if p.requires_grad], optimizer=optimizer,
            lr_scheduler=lr_scheduler, dist_init_required=False,
        )
        return engine, deepspeed_optimizer
