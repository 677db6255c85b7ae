"""SetFit's first stage (Tunstall et al., 2022): a sentence encoder fine-tuned on pairs of training
examples so that its embeddings of same-label examples move together and of different-label ones
apart (cosine similarity regressed on 1 or 0). A plain PyTorch module and its thin Lightning wrapper."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from legalft.models.training_module import TrainingModule


class SentenceEmbedder(nn.Module):
    """Mean of the encoder's token states over the attention mask, L2-normalised (how
    sentence-transformers' MiniLM models embed)."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return F.normalize((hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1), dim=-1)


def contrastive_pairs(label_sets: list[frozenset], iterations: int, rng: np.random.Generator) -> list[tuple[int, int, float]]:
    """SetFit's pair sampling: for every example, each iteration, one partner that shares a label with
    it (target 1) and one that shares none (target 0), drawn at random. An example alone with its
    label is paired with itself; with no example sharing none of its labels it gets no negative."""
    pairs = []
    for _ in range(iterations):
        for i, labels in enumerate(label_sets):
            same = [j for j, other in enumerate(label_sets) if j != i and labels & other] or [i]
            different = [j for j, other in enumerate(label_sets) if not labels & other]
            pairs.append((i, int(rng.choice(same)), 1.0))
            if different:
                pairs.append((i, int(rng.choice(different)), 0.0))
    return pairs


class ContrastiveModule(TrainingModule):
    """Trains ``SentenceEmbedder`` on batches of pairs: ``{"a": tokens, "b": tokens, "target": [B]}``."""

    def __init__(self, embedder: SentenceEmbedder, lr: float = 2e-5, weight_decay: float = 0.01,
                 warmup_ratio: float = 0.1) -> None:
        super().__init__()
        self.embedder = embedder
        self.lr, self.weight_decay, self.warmup_ratio = lr, weight_decay, warmup_ratio

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        a = self.embedder(batch["a"]["input_ids"], batch["a"]["attention_mask"])
        b = self.embedder(batch["b"]["input_ids"], batch["b"]["attention_mask"])
        loss = F.mse_loss((a * b).sum(dim=-1), batch["target"].to(a.dtype))  # cosine: both are unit vectors
        self.log("train/loss", loss, batch_size=len(batch["target"]))
        return loss

    def configure_optimizers(self):
        from legalft.models.optimization import adamw_with_linear_warmup

        return adamw_with_linear_warmup(self, self.embedder.parameters(), self.lr, self.weight_decay,
                                        self.warmup_ratio)
