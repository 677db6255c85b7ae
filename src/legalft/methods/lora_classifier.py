"""``method=lora_classifier``: a causal LM with a classification head on its last token, LoRA or QLoRA on its
body and the head trained in full (``legalft.models.llm_classifier``), fitted on one task's train split
like an encoder: single-label (softmax, cross-entropy) or multi-label (sigmoid, BCE, per-label thresholds
tuned on validation, or out of fold with ``protocol.cv_folds=K``), long documents read in windows. Every answer
is one of the task's labels.

Its run folder holds ``classifier/``: the peft adapter with its head (``adapter_config.json``,
``adapter_model.safetensors``), the tokenizer and a model card; ``evaluate.py run=DIR`` rescores from it, and
``python -m legalft.export run=DIR out=OUT`` merges it into a model ``AutoModelForSequenceClassification``
loads."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from legalft.foundation.checks import number, whole
from legalft.foundation.errors import UserError
from legalft.evaluation.choices import DEFAULT_MIN_DOCS
from legalft.kit.base import Exported
from legalft.kit.document_classifier import DocumentClassifierMethod
from legalft.kit.document_steps import positive_weights
from legalft.models.adapter_files import save_adapter
from legalft.models.kinds import CAUSAL_LM, kind_of
from legalft.models.lora_settings import GROUP as LORA_GROUP, LORA_SETTINGS
from legalft.runs.context import RunContext
from legalft.runs.folder import RunFolder

log = logging.getLogger(__name__)

CLASSIFIER_FOLDER = "classifier"  # in the run folder: the adapter, its head and the tokenizer


def classifier_folder(run: RunFolder) -> Path:
    return run.path / CLASSIFIER_FOLDER


def quantized(lora_cfg) -> bool:
    return lora_cfg is not None and lora_cfg.get("quantize") not in (None, "none")


class LoraClassifierMethod(DocumentClassifierMethod):
    """``method=lora_classifier``: the lora group shapes the adapters (rank, alpha, targets, ``quantize=nf4``
    for QLoRA); this node the optimiser (``lr`` for the adapters, ``head_lr`` for the head), the windows a
    document is read in and how their logits are pooled. Trains ``trainer.max_epochs`` epochs and keeps the
    last epoch's weights (``last.ckpt`` each epoch: a rerun or requeued job resumes)."""

    name = "lora_classifier"
    builds = ("legalft.data.encoder_datamodule.EncoderDataModule",)  # how its documents are batched
    model_kind = CAUSAL_LM
    every_epoch = True
    settings = {"pos_weight": (lambda v: v in ("auto", None) or (isinstance(v, list) and bool(v) and all(
                    number(above=0)(x) for x in v)), "auto (negatives over positives per label, capped at 20), null "
                                                     "(every label alike) or a list of positive weights, one per label"),
                "min_choice_docs": (whole(0), "a whole number of held-out documents, 0 or more (0: choose on any)")}
    group_settings = {LORA_GROUP: LORA_SETTINGS}

    def __init__(self, lr: float = 2e-4, head_lr: float | None = 1e-3, weight_decay: float = 0.0,
                 warmup_ratio: float = 0.1, pos_weight="auto", min_choice_docs: int = DEFAULT_MIN_DOCS) -> None:
        self.min_choice_docs = min_choice_docs
        self.optimiser = {"lr": lr, "head_lr": head_lr, "weight_decay": weight_decay, "warmup_ratio": warmup_ratio}
        self.pos_weight = pos_weight

    @classmethod
    def report_words(cls, info: Mapping) -> list[str]:
        qlora = info.get("quantize") not in (None, "none")
        return ["qlora_classifier" if qlora else cls.name, str(info.get("model", "?"))]

    def wrong_model(self, ctx: RunContext) -> str:
        return (f"model={ctx.model_choice} is an {kind_of(ctx.model)} model: method=lora_classifier puts a "
                "classification head on a causal LM (model=smollm2, llama3_8b, mistral_7b or qwen2_7b); "
                "fine-tune an encoder with method=encoder.")

    def run_fields(self, ctx: RunContext) -> dict:
        return {"pretrained": str(ctx.model.pretrained), "quantize": str(ctx.lora.quantize)}

    def module(self, model, task, windows, train=()):
        """The Lightning module around ``model`` (a peft sequence classifier) for ``task``, reading documents in
        ``windows`` (the windows group)."""
        from legalft.models.llm_classifier import LlmClassifierModule

        pos_weight = None
        if task.multi_label and self.pos_weight == "auto" and train:
            pos_weight = positive_weights(list(train), task.labels)
        elif isinstance(self.pos_weight, (list, tuple)):
            pos_weight = list(self.pos_weight)
        return LlmClassifierModule(model, list(task.labels), task.multi_label, pos_weight=pos_weight,
                                   **windows, **self.optimiser)

    def new_model(self, ctx: RunContext, task, fitted):
        model, tokenizer = new_classifier(ctx.model, ctx.lora, list(task.labels))
        return self.module(model, task, ctx.windows, fitted), tokenizer

    def save_model(self, ctx: RunContext, trainer, trained, task) -> None:
        save_adapter(trainer, trained.module.model.classifier, trained.tokenizer, classifier_folder(ctx.folder),
                     model_card(str(ctx.model.pretrained), task.name))

    def model_file(self, run: RunFolder) -> tuple[Path, str]:
        return classifier_folder(run) / "adapter_config.json", "classifier adapter"

    def saved_model(self, ctx: RunContext, task):
        """The classifier this run saved (``classifier/``), on the base as the run's model config names it."""
        folder = classifier_folder(ctx.folder)
        if not (folder / "adapter_config.json").exists():
            return None
        model, tokenizer = load_classifier(folder, ctx.model, ctx.lora, list(task.labels))
        return self.module(model, task, ctx.windows), tokenizer


    def export(self, ctx: RunContext, folder: Path, part: str | None = None) -> Exported:
        """The classifier's adapters merged into its base (in full precision), with its head and tokenizer: a folder
        ``AutoModelForSequenceClassification`` loads; the windows and pooling in ``legalft.json``."""
        from legalft.models.adapter_files import merge_into
        from legalft.runs.saved_layout import WINDOW_KEYS

        if part is not None:
            raise UserError(f"adapter={part}: a {self.name} run holds one model; leave adapter= out.")
        run = ctx.folder
        run.require(*self.model_file(run))
        task = run.read_task()
        model, tokenizer = load_classifier(classifier_folder(run), ctx.model, ctx.lora, list(task.labels),
                                           quantize=False)
        merge_into(model, tokenizer, folder,
                   "multi_label_classification" if task.multi_label else "single_label_classification")
        windows = {key: ctx.windows[key] for key in WINDOW_KEYS if ctx.windows is not None and key in ctx.windows}
        windows["pooled"] = "logits"
        windows["note"] = ("transformers reads the first max_length tokens; the run cut longer documents into these "
                           "windows and pooled their logits (predict.py run=<the run folder> does too)")
        load = ('from transformers import AutoModelForSequenceClassification\n'
                'model = AutoModelForSequenceClassification.from_pretrained("<this folder>")')
        return Exported(task, run.read_thresholds(task.labels), "transformers", "text-classification", load,
                        record={"windows": windows})

def new_classifier(model_cfg, lora_cfg, labels: list[str]):
    """(peft sequence classifier with new adapters and head, tokenizer)."""
    from legalft.models.llm_classifier import load_sequence_classifier
    from legalft.models.lora import add_lora, trainable_share

    model, tokenizer = load_sequence_classifier(model_cfg, labels, lora_cfg.quantize)
    model = add_lora(model, lora_cfg.r, lora_cfg.alpha, lora_cfg.dropout, list(lora_cfg.target_modules),
                     model_cfg.get("gradient_checkpointing", False), quantized=quantized(lora_cfg), task_type="SEQ_CLS")
    log.info("%.2f%% of the model's weights are trainable (adapters and head)", 100 * trainable_share(model))
    return model, tokenizer


def load_classifier(folder: Path, model_cfg, lora_cfg, labels: list[str], quantize: bool = True):
    """The base as a sequence classifier with the saved adapters and head on top (``quantize=False``: the base
    in full precision, for merging); refuses a folder trained on another base or for other labels."""
    from peft import PeftModel

    from legalft.training.checkpoints import refusing_code
    from legalft.models.adapter_files import check_base
    from legalft.models.llm_classifier import load_sequence_classifier

    check_base(folder, model_cfg)
    model, tokenizer = load_sequence_classifier(model_cfg, labels, lora_cfg.quantize if quantize else None)
    with refusing_code(folder):  # a pickled adapter_model.bin
        try:
            return PeftModel.from_pretrained(model, folder).eval(), tokenizer
        except RuntimeError as err:  # a head of another shape: "size mismatch for ... score ..."
            raise UserError(f"{folder}: its head does not classify this run's {len(labels)} labels "
                            f"({str(err).splitlines()[0][:200]}). Restore the run's own classifier folder.") from None


def model_card(base: str, task: str) -> str:
    from legalft.models.adapter_files import base_model_name

    shown = base_model_name(base)
    header = ("---\nlibrary_name: peft\n" + (f"base_model: {base}\n" if shown == base else "")
              + "pipeline_tag: text-classification\ntags: [legalft, lora, sequence-classification]\n---\n")
    return (f"{header}\n# {task} classifier\n\n"
            f"LoRA adapters with a classification head, trained by legalft (`method=lora_classifier`) on the train "
            f"split of {task}: a linear head on the last non-padding token's hidden state of {shown}. "
            "`config.json`'s `id2label` names the labels. A document longer than one window was scored as the pooled "
            "logits of its windows (the run's `config.yaml`, `method`).\n\nLoad it with "
            "`peft.AutoPeftModelForSequenceClassification.from_pretrained(<this folder>)`, score it with "
            "`python evaluate.py run=<run folder>`, or merge it with `python -m legalft.export run=<run folder> "
            "out=<out>`.\n")
