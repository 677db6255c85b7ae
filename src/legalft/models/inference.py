"""Scores of a document classifier over batches of windowed documents, in a plain inference loop on the device
training would take (a GPU where there is one): a Lightning ``Trainer`` adds its set-up to every call and nothing
to the scores. What scoring a split in a run and ``predict.py`` share."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn


def probabilities(logits: torch.Tensor, multi_label: bool) -> torch.Tensor:
    return logits.sigmoid() if multi_label else logits.softmax(dim=-1)


def scores_in_order(step: Callable[[dict, int], dict], model: nn.Module, loader, what: str) -> np.ndarray:
    """``step(batch, batch_index)`` -> {"index", "probs"} over ``loader`` with ``model`` in eval mode (its mode is
    given back after): the probabilities in the documents' order."""
    from legalft.foundation.loop_progress import Progress

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    training = model.training
    model.to(device).eval()
    progress = Progress(len(loader.dataset), what, unit="documents")
    indices, probs = [], []
    with torch.inference_mode():
        for batch_index, batch in enumerate(loader):
            batch = {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in batch.items()}
            out = step(batch, batch_index)
            indices.append(out["index"].cpu().numpy())
            probs.append(out["probs"].float().cpu().numpy())
            progress.update(len(indices[-1]))
    progress.close()
    model.train(training)
    index, probs = np.concatenate(indices), np.concatenate(probs)
    ordered = np.empty_like(probs)
    ordered[index] = probs
    return ordered
