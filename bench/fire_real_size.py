"""Every method at PROSLEX's real training size, as one table: the runs of ``python study.py run proslex_real_size``
(FIRE 2026 Task 1's cases as PROSLEX's training split, PROSLEX's validation split scored), each beside classical.

    .venv/bin/python bench/fire_real_size.py --study checkpoints/studies/proslex_real_size [--study OTHER_FOLDER]

Reads each study folder (its study.json and its runs' metrics.json and predictions.jsonl); the study runs the
methods, this prints what they scored. Per row (a study group): macro-F1, the mean over the seeds that ran (the
spread, max - min, where several did); its difference from classical, mean over the seeds both ran, and the paired
permutation test of that difference on the documents (lowest seed of each, 1,000 resamples); micro-F1; recall@3 (gold
sections among each document's three best-scored, for runs that score); evidence-sentence F1 against the experts'
spans; FIRE's six metrics' mean (macro-F1, micro-F1, accuracy, ROUGE-L, BLEU, METEOR of the evidence); minutes and
peak resident memory of a run on this machine (the study's record); then the published anchors.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

FIRE_SIX = ("macro_f1", "micro_f1", "accuracy", "rougeL_f", "bleu", "meteor")
ANCHORS = [  # (what, macro-F1, where it was measured)
    ("published TF-IDF, logistic regression", 0.755, "5-fold CV on FIRE's 525 cases (a team's working notes)"),
    ("FIRE 2026 Task 1 winner", 0.6909, "the task's hidden test split"),
    ("PROSLEX paper's InLegalBERT", 0.82, "PROSLEX's test split (\"overall accuracy\", the paper's words)"),
    ("PROSLEX paper's GPT-4, chain of thought", 0.75, "PROSLEX's test split"),
]


def recall_at_3(records: list[dict]) -> float | None:
    found = total = 0
    for record in records:
        scores = record.get("scores")
        if not scores:
            return None
        best = sorted(scores, key=scores.get, reverse=True)[:3]
        found += len(set(record["gold"]) & set(best))
        total += len(record["gold"])
    return found / total if total else None


def read_runs(studies: list[Path]) -> dict[str, list[dict]]:
    """Group -> its finished runs: scores, records, seed, and what the study recorded of the run here."""
    groups: dict[str, list[dict]] = {}
    for study in studies:
        record = json.loads((study / "study.json").read_text())
        for run in record["runs"]:
            folder = Path(run["folder"])
            if not (folder / "metrics.json").is_file():
                continue
            metrics = json.loads((folder / "metrics.json").read_text())
            if not metrics["tasks"]:
                continue
            (scores,) = metrics["tasks"].values()
            records = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
            attempt = record["attempts"].get(f"{run['group']}/{run['name']}", {})
            groups.setdefault(run["group"], []).append({
                "scores": scores, "records": records, "seed": metrics["run"]["seed"], "info": metrics["run"],
                "minutes": attempt["seconds"] / 60 if "seconds" in attempt else None,
                "peak_mb": attempt.get("peak_rss_mb")})
    return groups


def cell(values: list, digits: int = 3) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mean = statistics.fmean(values)
    return f"{mean:.{digits}f}" + (f" ({max(values) - min(values):.{digits}f})" if len(values) > 1 else "")


def against(runs: list[dict], floor: list[dict], resamples: int) -> str:
    """The mean difference from classical over the seeds both ran, and the paired permutation test's p at the
    lowest seed both ran."""
    from legalft.evaluation.metrics import item_counts
    from legalft.reporting.significance import paired_permutation_test

    by_seed = {r["seed"]: r for r in floor}
    both = sorted(r["seed"] for r in runs if r["seed"] in by_seed)
    if not both:
        return "-"
    ours = {r["seed"]: r for r in runs}
    difference = statistics.fmean(ours[s]["scores"]["macro_f1"] - by_seed[s]["scores"]["macro_f1"] for s in both)
    first, second = ours[both[0]], by_seed[both[0]]
    gold = {r["id"]: r["gold"] for r in second["records"]}
    ids = [r["id"] for r in first["records"] if r["id"] in gold]
    predicted = {run: {r["id"]: r["prediction"] for r in run_["records"]} for run, run_ in (("a", first), ("b", second))}
    counts = [item_counts("proslex", first["scores"], [gold[i] for i in ids], [predicted[side][i] for i in ids])
              for side in ("a", "b")]
    _, p = paired_permutation_test(*counts, resamples=resamples)
    return f"{difference:+.3f} (p {p:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", type=Path, nargs="+", required=True, help="study folders of proslex_real_size")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    groups = read_runs(args.study)
    floor = groups.get("classical", [])
    columns = ["macro-F1", "- classical (p)", "micro-F1", "recall@3", "evidence F1", "FIRE mean", "seeds", "minutes",
               "peak MB"]
    print("| row | " + " | ".join(columns) + " |\n|" + " --- |" * (len(columns) + 1))
    for group, runs in groups.items():
        six = [statistics.fmean(r["scores"][k] for k in FIRE_SIX) if all(k in r["scores"] for k in FIRE_SIX) else None
               for r in runs]
        cells = [cell([r["scores"].get("macro_f1") for r in runs]),
                 "" if group == "classical" else against(runs, floor, args.resamples),
                 cell([r["scores"].get("micro_f1") for r in runs]), cell([recall_at_3(r["records"]) for r in runs]),
                 cell([r["scores"].get("evidence_sentence_f1") for r in runs]), cell(six), str(len(runs)),
                 cell([r["minutes"] for r in runs], 0), str(max((r["peak_mb"] or 0) for r in runs) or "-")]
        print(f"| {group} | " + " | ".join(cells) + " |")
    for name, value, where in ANCHORS:
        print(f"| {name} ({where}) | {value:.3f} |" + " - |" * (len(columns) - 1))


if __name__ == "__main__":
    main()
