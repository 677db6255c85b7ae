"""``method=encoder``: an encoder classifier (``legalft.models.encoder_module``) fine-tuned on one task's train
split, fused with ``method=classical`` where ``fuse_classical`` says (``legalft.kit.fusion``). What it
shares with every document classifier (windows, thresholds, cross-validation, scoring, the run record) is
``legalft.kit.document_classifier``'s; this module says how its model is built, saved and loaded."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from legalft.data.example import Example, TaskSpec
from legalft.foundation.checks import number, one_of, whole
from legalft.foundation.errors import UserError
from legalft.evaluation.choices import DEFAULT_MIN_DOCS
from legalft.kit.base import Exported
from legalft.kit.document_classifier import DocumentClassifierMethod, Trained
from legalft.kit.document_steps import names_own_evidence, positive_weights
from legalft.models.kinds import ENCODER
from legalft.runs.context import RunContext
from legalft.runs.folder import RunFolder

METHOD = "encoder"  # the name runs of method=encoder record
ENCODER_FOLDER = "encoder"  # in the run folder: tokenizer and model config, so a run is scored without the hub


EVIDENCE_FROM = ("scorer", "model")  # what names a predicted section's evidence (method.evidence_from)
MODEL_EVIDENCE_NOTE = ("each sentence of the facts read alone, as a document of one window; a predicted section's "
                       "evidence is every sentence the model gives it above one half, at least its best one")


def encoder_folder(run: RunFolder) -> Path:
    return run.path / ENCODER_FOLDER


def build_module(model_cfg: DictConfig, windows: DictConfig, optimiser: dict, task: TaskSpec, train: list[Example]):
    """A fresh classifier from the model config, reading documents in ``windows`` (the windows group), trained
    with the method's ``optimiser`` settings; ``pos_weight=auto`` is counted on ``train``."""
    from hydra.utils import instantiate

    pos_weight = model_cfg.get("pos_weight")
    if isinstance(pos_weight, str) and pos_weight.lower() == "none":  # how a sweep's choice(none, auto) says null
        pos_weight = None
    if pos_weight == "auto":
        pos_weight = positive_weights(train, task.labels)
    settings = {key: value for key, value in model_cfg.items() if key != "kind"}  # what it is, not a setting
    return instantiate(settings, _convert_="all", labels=list(task.labels), multi_label=task.multi_label,
                       pos_weight=pos_weight, **windows, **optimiser)


def load_trained_module(run: RunFolder, checkpoint: Path | None = None):
    """The run's classifier from its checkpoint, built from the run's saved encoder config (no hub)."""
    from legalft.training.checkpoints import consolidated, refusing_code
    from legalft.models.encoder_module import EncoderClassifierModule

    checkpoint = checkpoint or run.require(run.best_checkpoint, "best checkpoint")
    if checkpoint.is_dir():  # DeepSpeed's shards: read the file the training run consolidated them into
        checkpoint = run.require(consolidated(checkpoint), "consolidated DeepSpeed checkpoint")
    try:
        with refusing_code(checkpoint):
            module = EncoderClassifierModule.load_from_checkpoint(
                checkpoint, map_location="cpu", weights_only=True, pretrained=str(encoder_folder(run)), load_weights=False
            )
    except (RuntimeError, EOFError, OSError) as err:  # what torch.load raises for a truncated or damaged file
        raise UserError(f"{checkpoint}: the checkpoint cannot be read ({str(err).splitlines()[0]}). The file is "
                        "truncated or damaged; restore it from a copy, or train the run again.") from None
    if run.label_map.exists():
        labels = list(run.read_task().labels)
        if list(module.hparams.labels) != labels:
            raise UserError(f"{checkpoint}: this checkpoint classifies {len(module.hparams.labels)} labels "
                            f"({', '.join(module.hparams.labels[:5])}{' ...' if len(module.hparams.labels) > 5 else ''}), "
                            f"but the run folder's task has {len(labels)}: it belongs to another run. Restore the run's "
                            "own checkpoint, or train the run again.")
    return module


class EncoderMethod(DocumentClassifierMethod):
    """``method=encoder``: an encoder classifier fine-tuned on one task's train split, fused with
    ``method=classical`` where ``fuse_classical`` says (``legalft.kit.fusion``). AdamW trains the
    encoder's layers at ``lr`` and the new classification head at ``head_lr``."""

    name = METHOD
    builds = ("legalft.data.encoder_datamodule.EncoderDataModule",)  # how its documents are batched
    model_kind = ENCODER
    best_on_validation = True
    settings = {"fuse_classical": (lambda v: isinstance(v, bool) or v == "auto", "one of auto, true, false"),
                "evidence_weight": (number(least=0), "a loss weight: 0 (off) or more"),
                "evidence_from": (one_of(*EVIDENCE_FROM), f"one of {', '.join(EVIDENCE_FROM)}"),
                "min_choice_docs": (whole(0), "a whole number of held-out documents, 0 or more (0: choose on any)")}

    @classmethod
    def config_problems(cls, requested) -> list[str]:
        method = requested.get("method") or {}
        if method.get("evidence_from") == "model" and not method.get("evidence_weight"):
            return ["method.evidence_from=model names evidence with the model's view of single sentences, which it "
                    "learns with method.evidence_weight: set it (e.g. method.evidence_weight=1), or "
                    "method.evidence_from=scorer."]
        return []

    def __init__(self, fuse_classical="auto", lr: float = 3e-5, head_lr: float | None = 1e-3,
                 weight_decay: float = 0.01, warmup_ratio: float = 0.1,
                 min_choice_docs: int = DEFAULT_MIN_DOCS, evidence_weight: float = 0.0,
                 evidence_from: str = "scorer") -> None:
        self.fuse_classical, self.min_choice_docs = fuse_classical, min_choice_docs
        self.optimiser = {"lr": lr, "head_lr": head_lr, "weight_decay": weight_decay, "warmup_ratio": warmup_ratio}
        self.evidence_weight, self.evidence_from = float(evidence_weight), evidence_from
        self._tokenizer = None

    def check_settings(self, ctx: RunContext, data) -> None:
        super().check_settings(ctx, data)
        if self.evidence_weight and not (data.spec.multi_label and any(e.explanations for e in data.train + data.val)):
            raise UserError(f"method.evidence_weight={self.evidence_weight} trains on the experts' evidence spans of a "
                            f"statute task's training documents, and task {data.spec.name}'s have none: set "
                            "method.evidence_weight=0, or train on data that has them (data=proslex).")

    def wrong_model(self, ctx: RunContext) -> str:
        return (f"model={ctx.model_choice} is a causal LM for in-context runs (evaluate.py prompt=... "
                f"model={ctx.model_choice}); train.py fine-tunes encoders: model=minilm, inlegalbert, legalbert or "
                "longformer.")

    def tokenizer(self, ctx: RunContext):
        from legalft.models.pretrained import load_tokenizer

        if self._tokenizer is None:
            self._tokenizer = (load_tokenizer(str(encoder_folder(ctx.folder)), key="run") if ctx.saved
                               else load_tokenizer(ctx.model.pretrained))
        return self._tokenizer

    def write_model_files(self, ctx: RunContext, task: TaskSpec) -> None:
        """The tokenizer and the encoder's config: rescoring rebuilds the model from them, with no hub."""
        from legalft.models.pretrained import load_encoder_config

        self.tokenizer(ctx).save_pretrained(encoder_folder(ctx.folder))
        load_encoder_config(ctx.model.pretrained).save_pretrained(encoder_folder(ctx.folder))

    def new_model(self, ctx: RunContext, task: TaskSpec, fitted: list[Example]):
        settings = {**self.optimiser, **({"evidence_weight": self.evidence_weight} if self.evidence_weight else {})}
        return build_module(ctx.model, ctx.windows, settings, task, fitted), self.tokenizer(ctx)

    def save_model(self, ctx: RunContext, trainer, trained: Trained, task: TaskSpec) -> None:
        trainer.save_checkpoint(ctx.folder.best_checkpoint, weights_only=True)  # atomically (legalft.training.checkpoints)

    def model_file(self, run: RunFolder) -> tuple[Path, str]:
        return run.best_checkpoint, "best checkpoint"

    def saved_model(self, ctx: RunContext, task: TaskSpec):
        if not ctx.saved and not ctx.folder.best_checkpoint.exists():  # rescoring: no checkpoint is an error
            return None
        return load_trained_module(ctx.folder), self.tokenizer(ctx)

    def export(self, ctx: RunContext, folder: Path, part: str | None = None) -> Exported:
        """The stock transformers sequence classifier of the encoder's architecture (``legalft.export.hf_export``):
        safetensors, its tokenizer, ``id2label`` holding each label with its description; beside it what the stock
        model does not apply: the windows and pooling, the attention pooling's weights, the fusion's classical
        side (``legalft.kit.fusion.export_side``)."""
        from legalft.kit import fusion
        from legalft.export.hf_export import save_pooling, stock_classifier
        from legalft.runs.saved_layout import WINDOW_KEYS

        run = ctx.folder
        run.require(*self.model_file(run))
        spec = run.read_task()
        names = {label: f"{label}: {text}" for label, text in spec.label_descriptions.items()}
        module = load_trained_module(run)
        stock = stock_classifier(module, list(spec.labels), names, spec.multi_label, str(run.path))
        stock.save_pretrained(folder, safe_serialization=True)
        self.tokenizer(ctx).save_pretrained(folder)
        save_pooling(module, folder)
        hp = module.hparams
        windows = {key: hp[key] for key in WINDOW_KEYS if key in hp}
        windows["pooled"] = "embeddings"  # what predict.py run=<the export> rebuilds (hf_export.from_stock)
        windows["note"] = ("transformers reads the first max_length tokens; the run cut longer documents into these "
                           "windows, pooled their first tokens' embeddings and applied the head (predict.py does too)")
        record = {"windows": windows}
        fused = fusion.export_side(ctx, spec.labels, folder)
        if fused:
            record["fusion"] = fused
        evidence = None
        if names_own_evidence(self.evidence_from, module):
            record["evidence"] = {"from": "model", "note": MODEL_EVIDENCE_NOTE}
        else:
            evidence = run.read_evidence()
        return Exported(spec, run.read_thresholds(spec.labels), "transformers", "text-classification",
                        'from transformers import pipeline\n'
                        'classify = pipeline("text-classification", model="<this folder>", top_k=None)\n'
                        'classify("The accused threatened ...")', evidence, record)

    @classmethod
    def classify_export(cls, folder: Path, record: dict, task: TaskSpec, examples: list[Example]):
        """The export's stock transformers model rebuilt into the run's document classifier (its windows, pooling and
        head, ``legalft.export.hf_export.from_stock``), in a plain inference loop (no Lightning), fused with the
        exported classical side where the run was; the model names its own evidence where it learnt to."""
        from legalft.export.hf_export import from_stock
        from legalft.models.pretrained import load_tokenizer

        check_exported_windows(folder, record)
        model = from_stock(folder, len(task.labels), record["windows"].get("pooling", "max"))
        tokenizer = load_tokenizer(str(folder), key="run")
        scores = exported_scores(folder, model, tokenizer, record, task, examples)
        if (record.get("evidence") or {}).get("from") == "model":  # trained on the experts' sentences
            from legalft.models.model_evidence import ModelEvidence

            return scores, ModelEvidence(model, tokenizer, task.labels)
        return scores, None


EVAL_BATCH_SIZE = 16  # documents a batch of an export's inference loop: datamodule=documents' eval_batch_size


def check_exported_windows(folder: Path, record: dict) -> None:
    """An export's ``windows`` record as a run writes it: each value of the kind and range the config check asks of
    the windows group, else one message naming the file and the key."""
    from legalft.data.chunking import LAST_WINDOWS
    from legalft.foundation.checks import one_of, whole
    from legalft.models.components import POOLINGS

    windows = record.get("windows")
    if not isinstance(windows, dict):
        raise UserError(f"{folder / 'legalft.json'}: windows is not a mapping. Export the run again.")
    rules = {"max_length": (whole(8), "a whole number of tokens, 8 or more"),
             "stride": (whole(0), "a whole number of tokens, 0 or more"),
             "max_chunks": (whole(1), "a whole number of windows, 1 or more"),
             "last_window": (one_of(*LAST_WINDOWS), f"one of {', '.join(LAST_WINDOWS)}"),
             "pooling": (one_of(*POOLINGS), f"one of {', '.join(POOLINGS)}")}
    for key, (check, what) in rules.items():
        if key in windows and not check(windows[key]):
            raise UserError(f"{folder / 'legalft.json'}: windows.{key}={windows[key]!r} must be {what}. Export the "
                            "run again.")
    length, stride = windows.get("max_length"), windows.get("stride")
    if isinstance(length, int) and isinstance(stride, int) and stride >= length - 2:
        raise UserError(f"{folder / 'legalft.json'}: windows.stride={stride} must be smaller than windows.max_length="
                        f"{length} minus 2. Export the run again.")


def exported_scores(folder: Path, model, tokenizer, record: dict, task: TaskSpec, examples: list[Example]):
    """An exported encoder ``model`` on ``examples`` in a plain inference loop, fused with the exported classical side
    where the run was."""
    import torch
    from torch.utils.data import DataLoader

    from legalft.data.chunked_batches import ChunkCollator, by_length, encoded_split
    from legalft.kit import fusion
    from legalft.models.inference import probabilities, scores_in_order
    from legalft.runs.saved_layout import WINDOW_KEYS

    windows = record["windows"]
    chunking = {key: windows[key] for key in WINDOW_KEYS if key in windows and key != "pooling"}
    documents = by_length(encoded_split(examples, task, tokenizer, chunking, "input"))
    # windows padded to a multiple of 8 suit a GPU's tensor cores; on a CPU the padding is only work (8% of it on
    # one-window documents, bench/predict_speed.py)
    multiple = 8 if torch.cuda.is_available() else None
    loader = DataLoader(documents, batch_size=EVAL_BATCH_SIZE, collate_fn=ChunkCollator(tokenizer, multiple))

    def step(batch, _):
        logits = model(batch["input_ids"], batch["attention_mask"], batch["chunk_counts"])
        return {"index": batch["index"], "probs": probabilities(logits.float(), task.multi_label)}

    scores = scores_in_order(step, model, loader, "predicting")
    if record.get("fusion"):
        scores = fusion.exported(record["fusion"], task.labels, folder)(examples, scores)
    return scores
