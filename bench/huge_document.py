"""One very long document in the training data: peak memory and time of a quick-start run with and
without it, side by side. Only the windows a document keeps are ever tokenized, so a 30 MB document
costs about what a long one does (target: peak memory within 1.5x of the run without it).

    .venv/bin/python bench/huge_document.py [--megabytes 30] [--epochs 1] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import in_child, interleaved, median_range, ratios

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "samples" / "proslex_sample"


def train(data_root: str, run_dir: str, epochs: int, queue) -> None:
    """train.py in a process of its own; its peak resident memory is this process's children's."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "train.py", "experiment=quickstart", f"data.root={data_root}", f"trainer.max_epochs={epochs}",
         "logger=none", "trainer.enable_progress_bar=false", f"hydra.run.dir={run_dir}",
         "datamodule.cache_dir=null"],  # every repeat tokenises: the cost measured is reading the document
        cwd=ROOT, capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise SystemExit(result.stderr[-3000:])
    queue.put({"seconds": time.perf_counter() - start,
               "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024})


def with_huge_document(folder: Path, megabytes: int) -> None:
    """The sample plus one training document of ``megabytes`` MB (the sample's facts, repeated)."""
    shutil.copytree(SAMPLE, folder)
    facts = [doc["fact"] for path in sorted((SAMPLE / "Train").glob("*.json"))
             for doc in json.loads(path.read_text()).values()]
    text = " ".join(facts)
    fact = (text + " ") * (megabytes * 2**20 // (len(text) + 1) + 1)
    (folder / "Train" / "huge.json").write_text(json.dumps({"huge.txt": {"fact": fact, "statute": ["s3"]}}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=30)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side, interleaved")
    args = parser.parse_args()
    huge_name = f"+ {args.megabytes} MB document"
    with tempfile.TemporaryDirectory() as tmp:
        huge = Path(tmp) / "with_huge"
        with_huge_document(huge, args.megabytes)
        roots = {"sample": SAMPLE, huge_name: huge}
        sides = interleaved(roots, lambda side, repeat: in_child(
            train, str(roots[side]), f"{tmp}/run_{repeat}_{'huge' if side == huge_name else 'sample'}", args.epochs),
            args.repeats)
    print(f"quick-start run, {args.epochs} epoch(s), MiniLM, 8 windows of 256 tokens per document; "
          f"median (min-max) of {args.repeats} interleaved repeats")
    print(f"{'':20}" + "".join(f"{name:>26}" for name in sides))
    for key, label, fmt in (("peak_mb", "peak memory MiB", "{:.0f}"), ("seconds", "seconds", "{:.1f}")):
        print(f"{label:20}" + "".join(f"{median_range((r[key] for r in runs), fmt):>26}" for runs in sides.values()))
    memory, time_ratio = (ratios(sides, huge_name, "sample", key) for key in ("peak_mb", "seconds"))
    print(f"peak memory ratio {median_range(memory)}x (target <= 1.5x), time ratio {median_range(time_ratio)}x")


if __name__ == "__main__":
    main()
