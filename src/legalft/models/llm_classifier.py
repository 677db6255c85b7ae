"""An LLM as a document classifier: the causal LM's sequence-classification form (transformers'
``AutoModelForSequenceClassification``: a linear head, ``score``, on the hidden state of each window's last
non-padding token) with LoRA or QLoRA adapters on its body. peft's ``SEQ_CLS`` task type trains the head in
full beside the adapters and saves it with them, so an adapter folder reloads with its head. A long
document is read in windows (``legalft.data.chunking``) whose logits are pooled into the document's."""

from __future__ import annotations

import logging

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from legalft.foundation.errors import UserError
from legalft.models.encoder_module import DocumentClassifierModule

log = logging.getLogger(__name__)

WINDOW_POOLINGS = ("max", "mean")  # max: a label holds where any window shows it; mean: the document's average


def load_sequence_classifier(model_cfg, labels: list[str], quantize: str | None):
    """(the base model as a sequence classifier over ``labels``, tokenizer): a hub name, local folder or GGUF
    file (dequantised), 4-bit when ``quantize`` names a QLoRA format. Its head is new (seeded)."""
    from transformers import AutoModelForSequenceClassification

    from legalft.models.pretrained import hub_source, load_tokenizer
    from legalft.models.lora import quantization_config
    from legalft.foundation.hub import not_found

    pretrained = str(model_cfg.pretrained)
    tokenizer = load_tokenizer(pretrained, pad_token=model_cfg.get("pad_token"), require_pad=True)
    source, extra = hub_source(pretrained)
    if quantize not in (None, "none"):
        extra["quantization_config"] = quantization_config(quantize, "bfloat16" if torch.cuda.is_available() else "float32")
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            source, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)},
            dtype=getattr(torch, model_cfg.get("dtype", "float32")), **extra)
    except (OSError, ValueError) as err:
        raise not_found(pretrained, "model.pretrained", err) from None
    # the head reads the last token that is not padding: the model must know which token pads
    model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


class WindowedClassifier(nn.Module):
    """A sequence classifier applied to every window of a batch of documents, its window logits pooled per
    document: logits [documents, labels]."""

    def __init__(self, classifier: nn.Module, pooling: str = "max") -> None:
        super().__init__()
        if pooling not in WINDOW_POOLINGS:
            raise UserError(f"method.pooling={pooling!r}: choose one of {', '.join(WINDOW_POOLINGS)}.")
        self.classifier = classifier
        self.pooling = pooling

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, chunk_counts: torch.Tensor) -> torch.Tensor:
        windows = self.classifier(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits.float()
        per_doc = pad_sequence(list(windows.split(chunk_counts.tolist())), batch_first=True)
        mask = (torch.arange(per_doc.shape[1], device=per_doc.device).unsqueeze(0)
                < chunk_counts.to(per_doc.device).unsqueeze(1)).unsqueeze(-1)
        if self.pooling == "max":
            return per_doc.masked_fill(~mask, torch.finfo(per_doc.dtype).min).amax(dim=1)
        return (per_doc * mask).sum(dim=1) / mask.sum(dim=1)


class LlmClassifierModule(DocumentClassifierModule):
    """The Lightning wrapper: the document classifier's loss and validation (``DocumentClassifierModule``),
    AdamW over the trainable weights only (adapters at ``lr``, the head at ``head_lr``), and checkpoints that
    hold those weights only (the frozen base is the hub's, or the GGUF file's). ``max_length``, ``stride``,
    ``max_chunks`` and ``last_window`` say how documents are cut into windows (``build_datamodule`` reads
    them from here, as it does an encoder's)."""

    def __init__(self, model: nn.Module, labels: list[str], multi_label: bool, max_length: int = 512,
                 stride: int = 64, max_chunks: int = 4, last_window: str = "rest", pooling: str = "max",
                 lr: float = 2e-4, head_lr: float | None = None, weight_decay: float = 0.0,
                 warmup_ratio: float = 0.1, pos_weight: list[float] | None = None) -> None:
        super().__init__(multi_label, pos_weight)
        self.save_hyperparameters(ignore=["model"])
        self.model = WindowedClassifier(model, pooling).train()  # loaded in eval mode; Lightning keeps modes
        self.strict_loading = False  # checkpoints hold the trainable weights only

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        trainable = {name for name, p in self.named_parameters() if p.requires_grad}
        checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k in trainable}

    def configure_optimizers(self):
        from legalft.models.optimization import adamw_with_linear_warmup

        adapters, head = [], []
        for name, param in self.model.named_parameters():
            if param.requires_grad:
                (adapters if "lora_" in name else head).append(param)
        hp = self.hparams
        groups = [{"params": adapters, "weight_decay": hp.weight_decay},
                  {"params": head, "weight_decay": hp.weight_decay, "lr": hp.head_lr or hp.lr}]
        return adamw_with_linear_warmup(self, groups, hp.lr, hp.weight_decay, hp.warmup_ratio)
