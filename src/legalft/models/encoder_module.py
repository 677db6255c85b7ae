"""Lightning wrappers of document classifiers: ``DocumentClassifierModule`` owns loss, validation metrics and
prediction for any model that turns a batch of windowed documents into logits; ``EncoderClassifierModule``
is the encoder's (the chunked classifier, AdamW groups for encoder and head)."""

from __future__ import annotations

import logging

import torch
from torch import nn

from legalft.data.chunked_batches import padding_fraction
from legalft.models.components.chunked_classifier import ChunkedDocumentClassifier
from legalft.models.inference import probabilities
from legalft.models.pretrained import load_encoder
from legalft.models.training_module import TrainingModule

log = logging.getLogger(__name__)


class DocumentClassifierModule(TrainingModule):
    """Sigmoid and BCE (weighted by ``pos_weight``) for a multi-label task, softmax and cross-entropy for a
    single-label one; macro- and micro-F1 on validation. A subclass builds ``self.model`` (called with
    input_ids, attention_mask and chunk_counts, returning logits [documents, labels]) and its optimiser."""

    def __init__(self, multi_label: bool, pos_weight: list[float] | None) -> None:
        super().__init__()
        if multi_label:
            weight = torch.tensor(pos_weight) if pos_weight is not None else None
            self.loss = nn.BCEWithLogitsLoss(pos_weight=weight)
        else:
            self.loss = nn.CrossEntropyLoss()
        self.val_outputs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.model(batch["input_ids"], batch["attention_mask"], batch["chunk_counts"])

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self.loss(self(batch).float(), batch["targets"])
        n_docs = len(batch["chunk_counts"])
        weight = self.hparams.get("evidence_weight") or 0.0
        if weight and "sentence_input_ids" in batch:
            # the experts' sentences (and the sections' descriptions) read alone, each a document of one window:
            # the same head learns which sentences are evidence for which section
            ids = batch["sentence_input_ids"]
            logits = self.model(ids, batch["sentence_attention_mask"], torch.ones(len(ids), dtype=torch.long))
            evidence_loss = nn.functional.binary_cross_entropy_with_logits(logits.float(), batch["sentence_targets"])
            self.log("train/evidence_loss", evidence_loss, batch_size=len(ids))
            loss = loss + weight * evidence_loss
        self.log("train/loss", loss, prog_bar=True, batch_size=n_docs)
        self.log("train/padding_fraction", padding_fraction(batch), batch_size=n_docs)
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        logits = self(batch).float()
        self.log("val/loss", self.loss(logits, batch["targets"]), prog_bar=True, batch_size=len(logits))
        self.val_outputs.append((probabilities(logits, self.hparams.multi_label), batch["targets"]))

    def on_validation_epoch_end(self) -> None:
        from legalft.evaluation.metrics import score_probabilities

        # Every rank validates on the whole validation split (its loader is not sharded): the scores, and so
        # checkpoint choice and early stopping, are the same on every rank without gathering anything.
        probs = torch.cat([p for p, _ in self.val_outputs])
        targets = torch.cat([t for _, t in self.val_outputs])
        self.val_outputs.clear()
        scores = score_probabilities(
            probs.float().cpu().numpy(), targets.cpu().numpy(), self.hparams.labels, self.hparams.multi_label
        )
        self.log("val/macro_f1", scores["macro_f1"], prog_bar=True)
        self.log("val/micro_f1", scores["micro_f1"])
        if not self.trainer.sanity_checking:  # in every rank's log: the ranks must agree
            log.info("epoch %d validation on rank %d: macro-F1 %.6f, micro-F1 %.6f", self.current_epoch,
                     self.global_rank, scores["macro_f1"], scores["micro_f1"])

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> dict[str, torch.Tensor]:
        return {"index": batch["index"], "probs": probabilities(self(batch).float(), self.hparams.multi_label).float()}


class EncoderClassifierModule(DocumentClassifierModule):
    """``max_length``, ``stride``, ``max_chunks`` and ``last_window`` say how the encoder reads a document
    (windows of ``max_length`` tokens overlapping by ``stride``, at most ``max_chunks`` of them, the last
    ending at the document's end or holding what is left: ``legalft.data.chunking``); they live here
    so a checkpoint carries them and is always read the way it was trained. ``evidence_weight``: the weight of
    the loss on the experts' sentences read alone (multi-label tasks whose training documents have evidence spans;
    0: none), with which the model names each predicted section's evidence (``legalft.models.model_evidence``)."""

    def __init__(
        self,
        pretrained: str,
        labels: list[str],
        multi_label: bool = True,
        max_length: int = 512,
        stride: int = 128,
        max_chunks: int = 8,
        last_window: str = "rest",
        pooling: str = "max",
        chunk_embedding: str = "cls",
        dropout: float = 0.1,
        lr: float = 3e-5,
        head_lr: float | None = None,
        weight_decay: float = 0.01,
        warmup_ratio: float = 0.1,
        pos_weight: list[float] | None = None,
        gradient_checkpointing: bool = False,
        evidence_weight: float = 0.0,
        load_weights: bool = True,
    ) -> None:
        super().__init__(multi_label, pos_weight)
        # ``load_weights`` is how the module is rebuilt around a checkpoint; it is not a hyperparameter.
        self.save_hyperparameters(ignore=["load_weights"])
        encoder = load_encoder(pretrained, weights=load_weights)
        if gradient_checkpointing:
            encoder.gradient_checkpointing_enable()
        self.model = ChunkedDocumentClassifier(
            encoder, len(labels), pooling=pooling, chunk_embedding=chunk_embedding, dropout=dropout
        )
        # from_pretrained returns the encoder in eval mode, and Lightning keeps each submodule's mode:
        # without this, dropout would stay off during fine-tuning.
        self.model.train()

    def configure_optimizers(self):
        from legalft.models.optimization import adamw_with_linear_warmup

        # No weight decay on biases and norms, as in BERT's own recipe.
        decay, no_decay, head = [], [], []
        for name, param in self.model.named_parameters():
            if not param.requires_grad:
                continue
            if not name.startswith("encoder."):
                head.append(param)
            elif param.ndim < 2:
                no_decay.append(param)
            else:
                decay.append(param)
        hp = self.hparams
        groups = [
            {"params": decay, "weight_decay": hp.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
            {"params": head, "weight_decay": hp.weight_decay, "lr": hp.head_lr or hp.lr},
        ]
        return adamw_with_linear_warmup(self, groups, hp.lr, hp.weight_decay, hp.warmup_ratio)
