"""Evidence from the classifier itself, for a model trained on the experts' sentences as well as the documents
(``method.evidence_weight``): each sentence of the facts is read alone, as a document of one window, and a
predicted section's evidence is every sentence the model gives it a probability above one half, at least its
best one (the span scorer's rule, ``legalft.evaluation.evidence.called_evidence``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from legalft.data.chunked_batches import sentence_windows
from legalft.data.sentences import split_sentences
from legalft.evaluation.evidence import called_evidence


class ModelEvidence:
    """``model``: called with (input_ids, attention_mask, chunk_counts), returning logits [documents, labels] in
    ``labels`` order (``ChunkedDocumentClassifier``); ``tokenizer``: its tokenizer."""

    def __init__(self, model: nn.Module, tokenizer, labels: Sequence[str], batch_size: int = 32) -> None:
        self.model, self.tokenizer, self.labels, self.batch_size = model, tokenizer, tuple(labels), batch_size

    def select(self, text: str, sections: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``sections`` the model classifies, the sentences of ``text`` it calls evidence for it (at
        least its best one), in document order."""
        known = [s for s in sections if s in self.labels]
        sentences = split_sentences(text)
        if not known or not sentences:
            return {}
        logits = self.sentence_logits([s.text for s in sentences])
        return {section: called_evidence(sentences, logits[:, self.labels.index(section)]) for section in known}

    def sentence_logits(self, texts: list[str]) -> np.ndarray:
        """[sentences, labels]: each text read alone, as the model was trained to read the experts' sentences."""
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                ids = sentence_windows(self.tokenizer, texts[start:start + self.batch_size])
                padded = self.tokenizer.pad({"input_ids": ids}, padding="longest", return_tensors="pt")
                logits = self.model(padded["input_ids"].to(device), padded["attention_mask"].to(device),
                                    torch.ones(len(ids), dtype=torch.long))
                out.append(logits.float().cpu().numpy())
        self.model.train(was_training)
        return np.concatenate(out)
