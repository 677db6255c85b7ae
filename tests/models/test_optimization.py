"""The AdamW the fine-tuning modules share, under the precisions and clipping users combine it with."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from legalft.models.optimization import adamw_with_linear_warmup


def fit_a_linear_layer(precision: str, gradient_clip_val: float | None):
    """Two steps of a linear layer whose loss is scaled up so its gradients exceed any clip value.
    Returns (the optimiser, each step's gradient norm as the optimiser saw it)."""
    import lightning as L

    class Linear(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y) * 1e4

        def configure_optimizers(self):
            return adamw_with_linear_warmup(self, self.parameters(), lr=1e-3, weight_decay=0.01, warmup_ratio=0.0)

    norms = []

    class RecordGradientNorm(L.Callback):
        def on_train_start(self, trainer, pl_module):
            def record(optimizer, args, kwargs):
                grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
                norms.append(float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))))

            trainer.optimizers[0].register_step_post_hook(record)  # gradients as the step used them

    torch.manual_seed(0)
    trainer = L.Trainer(accelerator="cpu", devices=1, precision=precision, gradient_clip_val=gradient_clip_val,
                        max_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[RecordGradientNorm()])
    data = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2) + 10), batch_size=4)
    trainer.fit(Linear(), data)
    return trainer.optimizers[0], norms


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_gradients_are_clipped_under_each_precision(precision):
    optimizer, norms = fit_a_linear_layer(precision, gradient_clip_val=1.0)
    assert len(norms) == 2 and all(n <= 1.0 + 1e-4 for n in norms)


def test_the_fused_kernel_is_used_wherever_lightning_lets_it_clip():
    assert fit_a_linear_layer("32-true", gradient_clip_val=1.0)[0].defaults["fused"]
    assert fit_a_linear_layer("bf16-mixed", gradient_clip_val=None)[0].defaults["fused"]
    # Lightning refuses to clip a fused optimiser under autocast: the per-tensor update there
    assert not fit_a_linear_layer("bf16-mixed", gradient_clip_val=1.0)[0].defaults["fused"]
    unclipped = fit_a_linear_layer("32-true", gradient_clip_val=None)[1]
    assert max(unclipped) > 10  # so the clipped runs' norms are the clipping's doing


def linear_training_module():
    from legalft.models.training_module import TrainingModule

    class Linear(TrainingModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Linear()


def test_gradients_are_freed_once_the_optimiser_has_stepped():
    """As transformers' Trainer frees them, not after the next batch's forward (Lightning's own zeroing)."""
    import lightning as L

    left = []

    class GradientsAfterEachBatch(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            left.append([p.grad is not None for p in pl_module.parameters()])

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(8, 4), torch.randn(8, 2))
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[GradientsAfterEachBatch()])
    trainer.fit(linear_training_module(), DataLoader(data, batch_size=2))
    assert left == [[False, False]] * 4


def test_accumulated_gradients_are_kept_until_the_step_that_uses_them():
    import lightning as L

    torch.manual_seed(0)
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    module = linear_training_module()
    expected = torch.nn.Linear(4, 2)
    expected.load_state_dict(module.layer.state_dict())
    optimizer = torch.optim.SGD(expected.parameters(), lr=0.1)
    for step in range(2):  # two steps, each over two batches of two, as accumulate_grad_batches=2 takes them
        for batch in range(2):
            rows = slice(4 * step + 2 * batch, 4 * step + 2 * batch + 2)
            (torch.nn.functional.mse_loss(expected(x[rows]), y[rows]) / 2).backward()
        optimizer.step()
        optimizer.zero_grad()

    initial = module.layer.weight.detach().clone()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, accumulate_grad_batches=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, DataLoader(TensorDataset(x, y), batch_size=2))
    assert torch.allclose(module.layer.weight, expected.weight, atol=1e-6)
    assert torch.allclose(module.layer.bias, expected.bias, atol=1e-6)
    assert not torch.allclose(module.layer.weight, initial)  # it did train
