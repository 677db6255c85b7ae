"""The Lightning module every training module here derives from."""

from __future__ import annotations

import lightning as L


class TrainingModule(L.LightningModule):
    """Frees the gradients as soon as the optimiser has stepped, as transformers' ``Trainer`` does.

    Lightning zeroes them later, after the next batch's forward pass and before its backward, so one step's
    gradients live through the next step's forward. On the CPU those small tensors, left between the freed
    activations of batches of varying length, fragment the allocator's heap: kept that long, they add about
    a tenth to a SmolLM2 LoRA classifier's peak resident memory (``bench/lora_classifier_vs_trainer.py``
    measures it against the Trainer). Under gradient accumulation Lightning calls ``optimizer_step`` only
    when it steps, so the gradients being accumulated are never touched."""

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None) -> None:
        super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)
        optimizer.zero_grad(set_to_none=True)
