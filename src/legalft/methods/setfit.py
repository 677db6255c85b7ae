"""``method=setfit``: SetFit's recipe for classifiers from a handful of examples, per task. A sentence
encoder (``model=minilm`` or any encoder config) is fine-tuned contrastively on pairs of the task's
training examples (``legalft.models.contrastive``), then a logistic regression (scikit-learn) is fitted
on its embeddings of them. Made for LegalBench's train splits of 2-10 rows, where fine-tuning a
classification head has almost nothing to learn from; any task with a fixed label space works, a
multi-label one with one-vs-rest heads and thresholds tuned on validation (or out of fold).

Each task starts from the pretrained encoder again; nothing is saved but the results: rescoring
fits again from the run's training data, like ``method=classical`` (seeded, so the same on a machine).
"""

from __future__ import annotations

import logging

import numpy as np

from pathlib import Path

from legalft.data.example import Task
from legalft.foundation.checks import number, one_of, whole
from legalft.kit.base import Exported
from legalft.kit.features import fitted_scorer
from legalft.kit.per_task import PerTaskMethod
from legalft.runs.context import RunContext

log = logging.getLogger(__name__)


class SetFitMethod(PerTaskMethod):
    name = "setfit"
    settings = {"head_C": (number(above=0), "a positive number (the head's inverse regularisation strength)"),
                "head_class_weight": (one_of("balanced", None), "balanced or null"),
                "embed_batch_size": (whole(1), "a whole number of texts, 1 or more"),
                "iterations": (whole(0), "a whole number of pairs per example, 0 or more (0: no contrastive training)"),
                "epochs": (whole(1), "a whole number of epochs, 1 or more"),
                "max_length": (whole(8), "a whole number of tokens, 8 or more")}

    def __init__(self, pretrained: str, max_length: int = 256, iterations: int = 20, epochs: int = 1,
                 batch_size: int = 16, lr: float = 2e-5, warmup_ratio: float = 0.1, head_C: float = 1.0,
                 head_class_weight: str | None = None, embed_batch_size: int = 64, precision: str = "32-true") -> None:
        self.pretrained, self.max_length, self.iterations, self.epochs = pretrained, max_length, iterations, epochs
        self.batch_size, self.lr, self.warmup_ratio, self.embed_batch_size = batch_size, lr, warmup_ratio, embed_batch_size
        self.head_C, self.head_class_weight, self.precision = head_C, head_class_weight, precision
        self._tokenizer = None

    def model_label(self, model_choice: str | None) -> str:
        return model_choice or "encoder"

    def run_fields(self) -> dict:
        return {"pretrained": str(self.pretrained), "iterations": self.iterations, "epochs": self.epochs}

    @property
    def tokenizer(self):
        from legalft.models.pretrained import load_tokenizer

        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(str(self.pretrained))
        return self._tokenizer

    def tokenize(self, texts: list[str]) -> list[dict]:
        return [self.tokenizer(t, truncation=True, max_length=self.max_length) for t in texts]

    def pad(self, items: list[dict]) -> dict:
        return self.tokenizer.pad(items, pad_to_multiple_of=8, return_tensors="pt")

    def train_embedder(self, texts: list[str], label_sets: list[frozenset], seed: int):
        """The pretrained encoder, fine-tuned on SetFit's pairs of ``texts`` (or as it is, for 0 iterations)."""
        import lightning as L
        import torch
        from torch.utils.data import DataLoader

        from legalft.models.contrastive import ContrastiveModule, SentenceEmbedder, contrastive_pairs
        from legalft.models.pretrained import load_encoder
        from legalft.training.progress import TrainingLines

        L.seed_everything(seed, workers=True, verbose=False)
        embedder = SentenceEmbedder(load_encoder(str(self.pretrained)))
        pairs = contrastive_pairs(label_sets, self.iterations, np.random.default_rng(seed))
        if not pairs:
            return embedder
        tokens = self.tokenize(texts)

        def collate(batch):
            return {"a": self.pad([tokens[i] for i, _, _ in batch]), "b": self.pad([tokens[j] for _, j, _ in batch]),
                    "target": torch.tensor([t for _, _, t in batch])}

        loader = DataLoader(pairs, batch_size=self.batch_size, shuffle=True, collate_fn=collate,
                            generator=torch.Generator().manual_seed(seed))
        embedder.train()  # from_pretrained returns it in eval mode: dropout on, as in SetFit's training
        # no bar, but the log lines every training run writes: pairs of FIRE's 523 cases train for an hour on 2 cores
        trainer = L.Trainer(accelerator="auto", devices=1, max_epochs=self.epochs, precision=self.precision,
                            logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, gradient_clip_val=1.0, callbacks=[TrainingLines()])
        trainer.fit(ContrastiveModule(embedder, lr=self.lr, warmup_ratio=self.warmup_ratio), train_dataloaders=loader)
        return embedder

    def embed(self, embedder, texts: list[str]) -> np.ndarray:
        """Embeddings of ``texts``, longest first in batches (least padding), returned in their order."""
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        embedder = embedder.to(device).eval()
        tokens = self.tokenize(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(tokens[i]["input_ids"]))
        out = np.zeros((len(texts), embedder.encoder.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), self.embed_batch_size):
                chosen = order[start:start + self.embed_batch_size]
                batch = {k: v.to(device) for k, v in self.pad([tokens[i] for i in chosen]).items()}
                out[chosen] = embedder(batch["input_ids"], batch["attention_mask"]).float().cpu().numpy()
        return out

    def head(self, multi_label: bool, seed: int):
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier

        linear = LogisticRegression(C=self.head_C, class_weight=self.head_class_weight, max_iter=5000, random_state=seed)
        return OneVsRestClassifier(linear) if multi_label else linear

    def fit(self, task: Task, seed: int, option=None):
        return fitted_scorer(SetFitHead(self, task), task, seed=seed)

    def export(self, ctx: RunContext, folder: Path, part: str | None = None) -> Exported:
        """The final model, fitted again as rescoring does (seeded), in setfit's own save format
        (``legalft.models.setfit_files``)."""
        from legalft.models import setfit_files

        chosen, fitted, thresholds, evidence = self.exportable(ctx, part)
        setfit_files.save(fitted.embedder, self.tokenizer, fitted.head, folder, list(chosen.spec.labels),
                          self.max_length)
        return Exported(chosen.spec, thresholds, "setfit", "text-classification",
                        "from setfit import SetFitModel\n"
                        "model = SetFitModel.from_pretrained(\"<this folder>\")\n"
                        "model.predict_proba([\"The accused threatened ...\"])", evidence)


class SetFitHead:
    """SetFit's two steps as one scikit-learn-like model over texts: the contrastively tuned embedder, then
    the logistic regression on its embeddings."""

    def __init__(self, method: SetFitMethod, task: Task) -> None:
        self.method, self.task, self.embedder, self.head = method, task, None, None

    @property
    def classes_(self):
        return self.head.classes_

    def fit(self, texts: list[str], targets, multi_label: bool, seed: int) -> SetFitHead:
        self.embedder = self.method.train_embedder(texts, [frozenset(e.labels) for e in self.task.train], seed)
        self.head = self.method.head(multi_label, seed).fit(self.method.embed(self.embedder, texts), targets)
        return self

    def predict_proba(self, texts: list[str]):
        return self.head.predict_proba(self.method.embed(self.embedder, texts))
