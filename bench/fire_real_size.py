"""Every method at PROSLEX's real training size: FIRE 2026 Task 1's 525 training cases, under two protocols.

    LEGALFT_FIRE2026_DIR=../shared/fire2026 LEGALFT_PROSLEX_DIR=../shared/proslex \
        .venv/bin/python bench/fire_real_size.py --runs bench_runs [--rows classical recipe] \
        [--protocols heldout cv] [--seeds 0 1 2] [--table-only]

- ``heldout``: trained on FIRE's file as PROSLEX's training split (523 cases: the two that PROSLEX's validation split
  holds too, by id or by their facts, are left out), scored on PROSLEX's validation split (159 documents);
- ``cv``: 5-fold cross-validation on FIRE's 525 cases (stratified folds of shuffled lines), as the published TF-IDF
  row was measured.

Each row is the framework's own command (``train.py`` or ``evaluate.py``), run in a process of its own into
``--runs/<protocol>/<row>/seed<k>``; a folder that holds its results is read, not run again, so a long table is
filled over several invocations (a killed row starts again). Prints, per row and protocol: macro-F1 (mean over
seeds, and its spread where several ran), micro-F1, recall@3 (gold sections among the three best-scored, for rows
with scores), evidence-sentence F1 against the validation split's experts' spans, FIRE's six metrics (macro-F1,
micro-F1, accuracy, ROUGE-L, BLEU, METEOR) and their mean, and the wall time of a run on this machine.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

MINILM = ["experiment=quickstart", "trainer.max_epochs=4"]  # the quick start's MiniLM recipe, 4 epochs
ROWS: dict[str, tuple[str, list[str]]] = {  # name -> (script, overrides)
    "classical": ("train.py", ["method=classical"]),
    "classical, C=10": ("train.py", ["method=classical", "method.C=10"]),
    "recipe": ("train.py", ["experiment=proslex_recipe"]),
    "SetFit MiniLM": ("train.py", ["method=setfit", "model=minilm"]),
    "MiniLM fine-tuned": ("train.py", [*MINILM, "method.fuse_classical=false"]),
    "MiniLM + classical": ("train.py", MINILM),
    "MiniLM evidence-trained + classical": ("train.py", [*MINILM, "method.evidence_weight=1"]),
    "SmolLM2 classifier (LoRA)": ("train.py", ["experiment=proslex_lora_classifier"]),
    "SmolLM2 generative LoRA": ("train.py", ["experiment=proslex_lora"]),
    "SmolLM2 in context, zero-shot": ("evaluate.py", ["prompt=proslex_zeroshot", "model=smollm2"]),
}
PUBLISHED = [("published TF-IDF (5-fold CV on FIRE's 525; working notes)", "cv", {"macro_f1": 0.755, "recall@3": 0.983}),
             ("FIRE 2026 winner (hidden test split)", "-", {"macro_f1": 0.6909, "micro_f1": 0.7913, "accuracy": 0.5438,
                                                            "rougeL_f": 0.3417, "bleu": 0.2056, "meteor": 0.3196}),
             ("PROSLEX paper's InLegalBERT (PROSLEX test split)", "-", {"macro_f1": 0.82})]
FIRE_SIX = ("macro_f1", "micro_f1", "accuracy", "rougeL_f", "bleu", "meteor")


def data_overrides(protocol: str, fire: Path, proslex: Path) -> list[str]:
    if protocol == "heldout":
        return ["data=proslex", f"data.train_path={fire / 'task1.jsonl'}", f"data.test_path={proslex / 'validation'}"]
    return ["data=fire2026", f"data.train_path={fire / 'task1.jsonl'}", "protocol.cv_folds=5"]


def run_folder(runs: Path, protocol: str, row: str, seed: int) -> Path:
    """``runs/<protocol>/<row, letters and digits>/seed<k>``: a comma in a path would split Hydra's override."""
    return runs / protocol / re.sub(r"[^A-Za-z0-9]+", "_", row).strip("_") / f"seed{seed}"


def finished(folder: Path, protocol: str) -> bool:
    return (folder / ("metrics.json" if protocol == "heldout" else "cv.json")).is_file()


def run(row: str, protocol: str, seed: int, folder: Path, fire: Path, proslex: Path) -> None:
    script, overrides = ROWS[row]
    command = [sys.executable, script, *overrides, *data_overrides(protocol, fire, proslex), f"seed={seed}",
               f"protocol.seed={seed}", "explanations.bertscore_model=null", "logger=csv",
               "trainer.enable_progress_bar=false", f"hydra.run.dir={folder}"]
    if script == "evaluate.py":
        command = [c for c in command if not c.startswith(("trainer.", "logger="))]
    print(f"{row} ({protocol}, seed {seed}): {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True,
                            text=True)
    if result.returncode != 0:
        print(f"  failed (exit {result.returncode}): {result.stderr.strip().splitlines()[-1:]}", flush=True)
        return
    (folder / "bench_wall_seconds.json").write_text(json.dumps(round(time.monotonic() - started, 1)))


def recall_at_3(records: list[dict]) -> float | None:
    """Gold sections among each document's three best-scored, over every gold section (None without scores)."""
    found = total = 0
    for record in records:
        scores = record.get("scores")
        if not scores:
            return None
        best = sorted(scores, key=scores.get, reverse=True)[:3]
        found += len(set(record["gold"]) & set(best))
        total += len(record["gold"])
    return found / total if total else None


def heldout_figures(folder: Path) -> dict:
    metrics = json.loads((folder / "metrics.json").read_text())
    (task,) = metrics["tasks"].values()
    records = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    figures = {key: task.get(key) for key in (*FIRE_SIX, "evidence_sentence_f1")}
    figures["recall@3"] = recall_at_3(records)
    return figures


def cv_figures(folder: Path, gold: dict[str, list[str]]) -> dict:
    """The folds' mean scores (``cv.json``), and recall@3 over every document's out-of-fold scores (each fold's
    ``probs``, columns in the task's label order), where the method's folds keep them."""
    from legalft.data.fire2026 import section_order

    (cv,) = json.loads((folder / "cv.json").read_text()).values()
    figures = {key: cv["mean"].get(key) for key in ("macro_f1", "micro_f1", "accuracy")}
    labels = sorted({label for sections in gold.values() for label in sections}, key=section_order)
    records = []
    for path in sorted((folder / "checkpoints" / "cv" / "fire2026").glob("fold_*.json")):
        fold = json.loads(path.read_text())
        records += [{"gold": gold[i], "scores": dict(zip(labels, p))} for i, p in zip(fold["ids"], fold.get("probs", []))]
    figures["recall@3"] = recall_at_3(records) if records else None
    return figures


@functools.lru_cache(maxsize=1)
def gold_sections(fire: Path) -> dict[str, list[str]]:
    from legalft.data.fire2026 import read_file

    return {e.id: list(e.labels) for e in read_file(fire / "task1.jsonl", labelled=True, unknown_sections="drop_label")}


def wall_seconds(folder: Path) -> float | None:
    path = folder / "bench_wall_seconds.json"
    return json.loads(path.read_text()) if path.is_file() else None


def cell(values: list, digits: int = 3) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mean = statistics.fmean(values)
    return f"{mean:.{digits}f}" + (f" ({max(values) - min(values):.{digits}f})" if len(values) > 1 else "")


def table(runs: Path, rows: list[str], protocols: list[str], seeds: list[int], fire: Path) -> None:
    columns = ["macro-F1", "micro-F1", "recall@3", "evidence F1", "accuracy", "ROUGE-L", "BLEU", "METEOR", "FIRE mean",
               "seeds", "minutes"]
    print("\n| row | protocol | " + " | ".join(columns) + " |\n|" + " --- |" * (len(columns) + 2))
    for protocol in protocols:
        for row in rows:
            folders = [run_folder(runs, protocol, row, seed) for seed in seeds]
            done = [f for f in folders if finished(f, protocol)]
            if not done:
                continue
            figures = [heldout_figures(f) if protocol == "heldout" else cv_figures(f, gold_sections(fire)) for f in done]
            six = [statistics.fmean(f[k] for k in FIRE_SIX) if all(f.get(k) is not None for k in FIRE_SIX) else None
                   for f in figures]
            minutes = [w / 60 for w in map(wall_seconds, done) if w is not None]
            values = [cell([f.get(k) for f in figures]) for k in ("macro_f1", "micro_f1", "recall@3",
                                                                   "evidence_sentence_f1", "accuracy", "rougeL_f",
                                                                   "bleu", "meteor")]
            print(f"| {row} | {protocol} | " + " | ".join([*values, cell(six), str(len(done)),
                                                           cell(minutes, 0) if minutes else "-"]) + " |")
    for name, protocol, figures in PUBLISHED:
        values = [f"{figures[k]:.3f}" if k in figures else "-" for k in ("macro_f1", "micro_f1", "recall@3")]
        rest = [f"{figures[k]:.3f}" if k in figures else "-" for k in ("accuracy", "rougeL_f", "bleu", "meteor")]
        mean = f"{statistics.fmean(figures[k] for k in FIRE_SIX):.3f}" if all(k in figures for k in FIRE_SIX) else "-"
        print(f"| {name} | {protocol} | " + " | ".join([*values, "-", *rest, mean, "-", "-"]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, required=True, help="where the run folders are kept (reused)")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS), metavar="ROW")
    parser.add_argument("--protocols", nargs="+", default=["heldout", "cv"], choices=["heldout", "cv"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--table-only", action="store_true", help="print the table of the runs already there")
    args = parser.parse_args()
    fire, proslex = (Path(os.environ.get(key, "/nonexistent")) for key in ("LEGALFT_FIRE2026_DIR", "LEGALFT_PROSLEX_DIR"))
    if not args.table_only and not ((fire / "task1.jsonl").is_file() and (proslex / "validation").is_dir()):
        raise SystemExit("set LEGALFT_FIRE2026_DIR (a folder with task1.jsonl) and LEGALFT_PROSLEX_DIR (with validation/)")
    if not args.table_only:
        for protocol in args.protocols:
            for row in args.rows:
                if protocol == "cv" and ROWS[row][0] == "evaluate.py":
                    continue  # nothing is trained: an in-context run has no folds
                for seed in args.seeds:
                    folder = run_folder(args.runs.resolve(), protocol, row, seed)
                    if not finished(folder, protocol):
                        run(row, protocol, seed, folder, fire, proslex)
    table(args.runs.resolve(), args.rows, args.protocols, args.seeds, fire)


if __name__ == "__main__":
    main()
