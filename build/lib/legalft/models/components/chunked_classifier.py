"""A document classifier over an encoder that reads the document in windows.

Plain PyTorch: the Lightning wrapper owns loss, optimisation and logging; this owns the forward.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from legalft.models.components import CHUNK_EMBEDDINGS, POOLINGS  # noqa: F401  (re-exported)


class ChunkPooling(nn.Module):
    """Pools the window embeddings of each document into one vector."""

    def __init__(self, hidden_size: int, mode: str = "max") -> None:
        super().__init__()
        if mode not in POOLINGS:
            raise ValueError(f"pooling {mode!r}: choose one of {POOLINGS}")
        self.mode = mode
        self.score = nn.Linear(hidden_size, 1) if mode == "attention" else None

    def forward(self, chunks: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``chunks`` [docs, windows, hidden], ``mask`` [docs, windows] (True for real windows)."""
        if self.mode == "max":
            return chunks.masked_fill(~mask.unsqueeze(-1), torch.finfo(chunks.dtype).min).amax(dim=1)
        if self.mode == "mean":
            weights = mask.unsqueeze(-1).to(chunks.dtype)
            return (chunks * weights).sum(dim=1) / weights.sum(dim=1)
        scores = self.score(chunks).squeeze(-1).masked_fill(~mask, torch.finfo(chunks.dtype).min)
        return torch.einsum("dw,dwh->dh", scores.softmax(dim=1), chunks)


class ChunkedDocumentClassifier(nn.Module):
    """Encoder over each window, window embedding (first token or mean), pooling, linear head."""

    def __init__(
        self,
        encoder: nn.Module,
        num_labels: int,
        pooling: str = "max",
        chunk_embedding: str = "cls",
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        if chunk_embedding not in CHUNK_EMBEDDINGS:
            raise ValueError(f"chunk_embedding {chunk_embedding!r}: choose one of {CHUNK_EMBEDDINGS}")
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.chunk_embedding = chunk_embedding
        # Longformer attends locally; its first token needs global attention to summarise the window.
        self.global_first_token = encoder.config.model_type == "longformer"
        self.pooling = ChunkPooling(hidden, pooling)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, num_labels)

    def embed_chunks(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        extra = {}
        if self.global_first_token:
            extra["global_attention_mask"] = torch.zeros_like(attention_mask)
            extra["global_attention_mask"][:, 0] = 1
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        if self.chunk_embedding == "cls":
            return hidden[:, 0]
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, chunk_counts: torch.Tensor
    ) -> torch.Tensor:
        """Windows of all documents flattened in ``input_ids``; returns logits [docs, labels]."""
        windows = self.embed_chunks(input_ids, attention_mask)
        per_doc = pad_sequence(list(windows.split(chunk_counts.tolist())), batch_first=True)
        positions = torch.arange(per_doc.shape[1], device=per_doc.device)
        mask = positions.unsqueeze(0) < chunk_counts.to(per_doc.device).unsqueeze(1)
        return self.head(self.dropout(self.pooling(per_doc, mask)))
