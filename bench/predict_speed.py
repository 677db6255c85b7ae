"""predict.py against evaluate.py run= on the same documents, and an exported encoder through
``transformers.pipeline`` against predict.py on the same one-window documents.

    .venv/bin/python bench/predict_speed.py [--documents 1000] [--repeats 5] [--run DIR]

Without --run it trains the model first: ``experiment=quickstart trainer.max_epochs=1`` (MiniLM on the
PROSLEX-format sample, fused with classical), the documents the sample's texts repeated. Part 1, whole
commands (start-up included), each in its own process: ``predict.py run=R input=docs.csv out=...`` and
``evaluate.py run=<a copy of R> data.test_path=<the same documents as PROSLEX files>`` (evaluate needs labels,
and writes into its run folder), documents per second over the command's wall time; predict.py's start-up is
the wall time of a one-document prediction. Part 2: the exported
folder through ``pipeline("text-classification", top_k=None, function_to_apply="sigmoid", batch_size=8)`` in a
process that imports only transformers, against ``predict.py run=<the export> evidence=false`` (the same work) and
``predict.py run=<the run>`` (its fusion switched off in a copy, so every side scores the encoder alone), whole
commands, on documents cut to fit one window; the labels each gives (sigmoid at the run's thresholds) compared
document by document. Sides interleaved, medians (min-max).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
SAMPLE = ROOT / "src" / "legalft" / "samples" / "proslex_sample"


def command(*args: str) -> float:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def sample_documents() -> list[tuple[str, str, list[str]]]:
    documents = []
    for path in sorted(SAMPLE.glob("*/*.json")):
        for doc_id, doc in json.loads(path.read_text()).items():
            documents.append((doc_id, doc["fact"], doc["statute"]))
    return documents


def write_inputs(folder: Path, n: int, chars: int | None = None) -> tuple[Path, Path]:
    """(a CSV for predict.py, a PROSLEX test folder for evaluate.py) of the same ``n`` documents."""
    base = sample_documents()
    rows = [(f"d{i}", base[i % len(base)][1][:chars] if chars else base[i % len(base)][1], base[i % len(base)][2])
            for i in range(n)]
    table = folder / "documents.csv"
    with table.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows((doc_id, text) for doc_id, text, _ in rows)
    test = folder / "Test"
    test.mkdir()
    (test / "test_collection.json").write_text(json.dumps(
        {doc_id: {"fact": text, "statute": codes, "explanation": {}} for doc_id, text, codes in rows}))
    return table, test


def trained_run(folder: Path) -> Path:
    run = folder / "run"
    command("train.py", "experiment=quickstart", "trainer.max_epochs=1", "model.chunk_embedding=cls",
            "trainer.enable_progress_bar=false", f"hydra.run.dir={run}")
    return run


def whole_commands(run: Path, folder: Path, n: int, repeats: int) -> None:
    from common import interleaved, median_range

    table, test = write_inputs(subfolder(folder, "documents"), n)
    one, _ = write_inputs(subfolder(folder, "one"), 1)

    def side(name: str, repeat: int) -> float:
        if name == "predict.py":
            return command("predict.py", f"run={run}", f"input={table}", f"out={folder / f'p{repeat}.jsonl'}")
        if name == "start-up":
            return command("predict.py", f"run={run}", f"input={one}", f"out={folder / f's{repeat}.jsonl'}")
        copy = folder / f"evaluated{repeat}"
        shutil.copytree(run, copy)
        return command("evaluate.py", f"run={copy}", f"data.test_path={test}")

    times = interleaved(["predict.py", "evaluate.py run=", "start-up"], side, repeats)
    print(f"\n{n} documents, whole commands (wall time, start-up included), median (min-max) of {repeats}:")
    print(f"{'command':<22}{'seconds':>22}{'documents/s':>22}")
    for name in ("predict.py", "evaluate.py run="):
        print(f"{name:<22}{median_range(times[name]):>22}{median_range([n / t for t in times[name]]):>22}")
    print(f"{'predict.py, 1 document (start-up)':<36}{median_range(times['start-up']):>8}")
    ratio = [e / p for p, e in zip(times["predict.py"], times["evaluate.py run="])]
    print(f"predict.py documents/s over evaluate.py's: {median_range(ratio)}")


PIPELINE = """
import csv, json, sys
from transformers import pipeline
classify = pipeline("text-classification", model=sys.argv[1], top_k=None, function_to_apply="sigmoid", batch_size=8,
                    truncation=True)
texts = [row["text"] for row in csv.DictReader(open(sys.argv[2]))]
json.dump(classify(texts), open(sys.argv[3], "w"))
"""


def against_pipeline(run: Path, folder: Path, n: int, repeats: int) -> None:
    """Whole commands from start-up to written output, on the encoder alone (the run's fusion switched off in a
    copy): transformers.pipeline on the export in a process that imports only transformers; predict.py on the same
    export with evidence=false (the same work: scores and labels); predict.py on the run folder as it comes (its
    evidence sentences too)."""
    import numpy as np

    from common import interleaved, median_range

    alone = folder / "encoder_alone"
    shutil.copytree(run, alone)
    (alone / "fusion.json").unlink(missing_ok=True)  # every side scores the encoder alone
    exported = folder / "exported"
    command("-m", "legalft.export", f"run={alone}", f"out={exported}")
    table, _ = write_inputs(subfolder(folder, "short"), n, chars=200)
    thresholds = json.loads((exported / "legalft.json").read_text())["thresholds"]

    def side(name: str, repeat: int) -> float:
        out = folder / f"{name.replace(' ', '_')}{repeat}.jsonl"
        if name == "pipeline":
            return command("-c", PIPELINE, str(exported), str(table), str(out))
        if name == "predict.py export":
            return command("predict.py", f"run={exported}", f"input={table}", f"out={out}", "evidence=false")
        return command("predict.py", f"run={alone}", f"input={table}", f"out={out}")

    names = ["pipeline", "predict.py export", "predict.py run"]
    times = interleaved(names, side, repeats)
    theirs = [sorted(s["label"].split(":")[0] for s in scores if s["score"] >= thresholds[s["label"].split(":")[0]])
              for scores in json.loads((folder / "pipeline0.jsonl").read_text())]
    print(f"\n{n} one-window documents (200 characters), whole commands, median (min-max) of {repeats}:")
    print(f"{'command':<58}{'seconds':>20}{'documents/s':>20}{'same labels':>14}")
    shown = {"pipeline": "transformers.pipeline(export), batch 8",
             "predict.py export": "predict.py run=<export> evidence=false",
             "predict.py run": "predict.py run=<run> (with evidence sentences)"}
    for name in names:
        same = "" if name == "pipeline" else f"{np.mean([a == b for a, b in zip(labels(folder, name), theirs, strict=True)]):.1%}"
        print(f"{shown[name]:<58}{median_range(times[name]):>20}{median_range([n / t for t in times[name]]):>20}"
              f"{same:>14}")
    for name in names[1:]:
        ratio = [p / t for p, t in zip(times["pipeline"], times[name])]
        print(f"{shown[name]} documents/s over the pipeline's: {median_range(ratio)}")


def labels(folder: Path, name: str) -> list[list[str]]:
    path = folder / f"{name.replace(' ', '_')}0.jsonl"
    return [sorted(json.loads(line)["prediction"]) for line in path.read_text().splitlines()]


def subfolder(folder: Path, name: str) -> Path:
    (folder / name).mkdir()
    return folder / name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run", help="a finished encoder run (default: train one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run = Path(args.run) if args.run else trained_run(folder)
        print(f"run: {run}")
        whole_commands(run, folder, args.documents, args.repeats)
        against_pipeline(run, folder, args.documents, args.repeats)


if __name__ == "__main__":
    main()
