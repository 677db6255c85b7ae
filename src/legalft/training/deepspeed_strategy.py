"""Lightning's DeepSpeed strategy, also on CPU ranks (through DeepSpeed's own CPU accelerator).

Lightning refuses any accelerator but CUDA for DeepSpeed ("only supported on CUDA GPUs"), though the
rest of its strategy does not depend on it, and DeepSpeed runs ZeRO-2 and ZeRO-3 on CPU processes
(its CPU accelerator, picked when there is no GPU or with ``DS_ACCELERATOR=cpu``; collectives over
gloo). On GPUs this is Lightning's strategy unchanged; on CPUs a DeepSpeed setup can be checked
before it queues for GPUs (``trainer=deepspeed_zero3 trainer.accelerator=cpu trainer.devices=2
trainer.precision=32-true``).
"""

from __future__ import annotations

from lightning.pytorch.accelerators import CPUAccelerator
from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy

from legalft.foundation.errors import UserError


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
