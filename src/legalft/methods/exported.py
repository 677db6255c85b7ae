"""A folder ``legalft.export`` wrote, read back as the run it came from classifies (``predict.py run=<the export>``):
an encoder's stock transformers model rebuilt into the run's document classifier (its windows, pooling and head,
``legalft.models.hf_export.from_stock``) and fused with the exported classical side where the run was; a classical
run's TF-IDF classifier from its plain files (``legalft.models.tfidf``); the thresholds and the evidence scorer
``legalft.json`` names. Nothing in the folder is executed or unpickled."""

from __future__ import annotations

import json
from pathlib import Path

from legalft.data.example import Example, TaskSpec
from legalft.foundation.errors import UserError
from legalft.kit.base import Classified
from legalft.models.tfidf import FILES as TFIDF_FILES

RECORD = "legalft.json"
FORMAT = 1
EVAL_BATCH_SIZE = 16  # documents a batch: datamodule=documents' eval_batch_size


def is_export(path: str | Path) -> bool:
    """A folder ``legalft.export`` wrote (``legalft.json``, no run's ``config.yaml``)."""
    path = Path(path)
    return (path / RECORD).is_file() and not (path / "config.yaml").exists()


def read_record(folder: Path) -> dict:
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise ValueError(f"format {record.get('format') if isinstance(record, dict) else None!r}, not {FORMAT}")
        TaskSpec(name=str(record["task"]), labels=tuple(record["labels"]), multi_label=bool(record["multi_label"]))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UserError(f"{folder / RECORD}: not an export this release reads ({err}). Export the run again with "
                        "python -m legalft.export.") from None
    return record


def classify(folder: str | Path, examples: list[Example], with_evidence: bool = True) -> tuple[Classified, dict]:
    """(the export's scores of ``examples`` with its thresholds and evidence scorer (``with_evidence``), its
    ``legalft.json``)."""
    import numpy as np

    folder = Path(folder)
    record = read_record(folder)
    task = TaskSpec(name=record["task"], labels=tuple(record["labels"]), multi_label=bool(record["multi_label"]),
                    label_descriptions=record.get("descriptions") or {})
    namer = None
    if (folder / TFIDF_FILES[0]).is_file():  # a TF-IDF classifier's plain files
        scores = classical_scores(folder, task, examples)
    elif (record.get("windows") or {}).get("pooled") == "embeddings":  # an encoder's stock transformers model
        model, tokenizer = encoder_model(folder, record, task)
        scores = encoder_scores(folder, model, tokenizer, record, task, examples)
        if (record.get("evidence") or {}).get("from") == "model":  # trained on the experts' sentences
            from legalft.models.model_evidence import ModelEvidence

            namer = ModelEvidence(model, tokenizer, task.labels)
    else:
        raise UserError(f"{folder}: an export of a {record.get('method')} run, which predict.py reads from its run "
                        f"folder: predict.py run={record.get('run')} (transformers loads this folder).")
    thresholds = np.array([float(record.get("thresholds", {}).get(label, 0.5)) for label in task.labels])
    return Classified(task, scores, thresholds, (namer or evidence(folder, record)) if with_evidence else None), record


def classical_scores(folder: Path, task: TaskSpec, examples: list[Example]):
    from legalft.kit.features import align
    from legalft.models.tfidf import SavedTfidf

    model = SavedTfidf(folder)
    return align(model.predict_proba([e.text for e in examples]), model, task)


def encoder_model(folder: Path, record: dict, task: TaskSpec):
    """(the run's windows, pooling and head over the export's encoder, ``legalft.models.hf_export.from_stock``; its
    tokenizer)."""
    from legalft.models.hf_export import from_stock
    from legalft.models.pretrained import load_tokenizer

    model = from_stock(folder, len(task.labels), record["windows"].get("pooling", "max"))
    return model, load_tokenizer(str(folder), key="run")


def encoder_scores(folder: Path, model, tokenizer, record: dict, task: TaskSpec, examples: list[Example]):
    """``model`` (``encoder_model``) on ``examples`` in a plain inference loop (no Lightning), fused with the exported
    classical side where the run was."""
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


def evidence(folder: Path, record: dict):
    from legalft.evaluation.evidence import EvidenceSelector

    name = (record.get("evidence") or {}).get("file")
    if not name:
        return None
    path = folder / Path(name).name  # a file of the export itself, never a path elsewhere
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"{path}: legalft.json names this evidence scorer, but it cannot be read ({err}). Export the "
                        "run again.") from None
    return EvidenceSelector.from_json(text, str(path))


def classify_texts(folder: str | Path, texts: list[str]) -> list[dict]:
    """For Python: each text's predicted labels, every label's score and threshold, and the evidence sentences, as
    ``predict.py`` writes them."""
    examples = [Example(id=str(i), text=text, labels=()) for i, text in enumerate(texts, start=1)]
    classified, record = classify(folder, examples)
    return classified.records(examples, record.get("codes") or {})
