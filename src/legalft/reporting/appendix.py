"""The report's per-task appendix (``appendix.md``): for each task and method (its lowest-seed run), a
confusion matrix of a single-label task, or per-label precision and recall of a multi-label one; and
the (confidence, correct) pairs a calibration plot draws from the label scores in predictions.jsonl."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from legalft.reporting.runs import Run, lowest_seed

OTHER = "(no label)"  # the column of answers that name none of the gold labels


def confusion_table(records: list[dict]) -> str:
    """A Markdown confusion matrix (rows: gold, columns: predicted) of LegalBench-normalised answers."""
    import pandas as pd

    from legalft.evaluation.normalize import normalize

    gold = [normalize(r["gold"]) for r in records]
    labels = sorted(set(gold))
    predicted = [p if p in labels else OTHER for p in (normalize(r["prediction"]) for r in records)]
    columns = labels + ([OTHER] if OTHER in predicted else [])
    counts = pd.crosstab(pd.Categorical(gold, categories=labels), pd.Categorical(predicted, categories=columns),
                         dropna=False)
    counts.index.name, counts.columns.name = "gold \\ predicted", None
    return counts.to_markdown()


def per_label_table(runs: list[Run], task: str) -> str:
    """Per label: precision, recall, F1 (mean over the method's runs) and support, as metrics.json has them."""
    import pandas as pd

    per_label = [r.tasks[task]["per_label"] for r in runs if "per_label" in r.tasks.get(task, {})]
    labels = sorted({label for scores in per_label for label in scores})
    rows = [{"label": label,
             **{k: float(np.mean([s[label][k] for s in per_label if label in s])) for k in ("precision", "recall", "f1")},
             "support": per_label[0].get(label, {}).get("support", "")} for label in labels]
    return pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3f")


def write_appendix(out: Path, methods: dict[str, list[Run]], rows: dict[str, tuple[str, str]],
                   tasks: list[str]) -> Path | None:
    lines = ["# Per-task appendix\n",
             "Each method's lowest-seed run. Single-label tasks: confusion matrix of the answers after LegalBench's "
             f"normalisation (rows gold, columns predicted; `{OTHER}`: answers naming no gold label). Multi-label "
             "tasks: precision, recall and F1 per label, mean over the method's runs.\n"]
    written = False
    for task in tasks:
        sections = []
        for method, runs in methods.items():
            run = lowest_seed(runs)
            if task not in run.tasks:
                continue
            if "per_label" in run.tasks[task]:
                sections.append(f"**{method}**\n\n{per_label_table(runs, task)}\n")
                continue
            records = run.predictions.get(task) or []
            if records and all(isinstance(r["gold"], str) and isinstance(r["prediction"], str) for r in records) and (
                    rows[task][1] in ("balanced_accuracy", "accuracy", "macro_f1", "micro_f1")):
                sections.append(f"**{method}**\n\n{confusion_table(records)}\n")
        if sections:
            written = True
            lines.append(f"## {task} ({rows[task][0]}, {rows[task][1]})\n")
            lines += sections
    if not written:
        return None
    (out / "appendix.md").write_text("\n".join(lines) + "\n")
    return out / "appendix.md"


def confidence_pairs(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, correct) per decision from the run's label scores: single-label, the highest label's
    probability (a softmax over the labels where the scores are log-likelihoods, i.e. none positive) and
    whether that label is the gold one; multi-label, each label's probability and whether it is gold."""
    from legalft.evaluation.normalize import normalize

    confidence, correct = [], []
    for records in run.predictions.values():
        for record in records:
            scores = record.get("scores")
            if not isinstance(scores, dict) or not scores or not all(
                    isinstance(v, (int, float)) and math.isfinite(v) for v in scores.values()):
                continue
            labels, values = list(scores), np.array(list(scores.values()), dtype=float)
            if isinstance(record["gold"], list):  # multi-label: each label a decision of its own
                confidence += list(np.clip(values, 0, 1))
                correct += [label in record["gold"] for label in labels]
                continue
            if (values <= 0).all():  # log-likelihoods of the labels: their softmax
                values = np.exp(values - values.max())
            probabilities = values / values.sum() if values.sum() > 0 else np.full(len(values), 1 / len(values))
            best = int(np.argmax(probabilities))
            confidence.append(float(probabilities[best]))
            correct.append(normalize(labels[best]) == normalize(record["gold"]))
    return np.array(confidence), np.array(correct, dtype=float)
