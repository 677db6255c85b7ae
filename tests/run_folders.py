"""What the run-folder safety tests share: a folder's tree as text, a tiny-BERT training command, waiting on a running
command, the epochs a run validated."""

from __future__ import annotations

import sys
import time
from pathlib import Path


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): (p.read_text() if p.is_file() else "/") for p in sorted(folder.rglob("*"))}


# --- end to end, on a tiny BERT ---------------------------------------------------------------------------
def train_command(tiny_bert_dir: Path, run_dir: Path, *overrides: str) -> list[str]:
    from helpers import FAST_MODEL

    return [sys.executable, "train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
            "callbacks.early_stopping.patience=50", "trainer.enable_progress_bar=false", f"hydra.run.dir={run_dir}",
            *overrides]


def wait_for(condition, process, what: str, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert process.poll() is None, f"the run ended before {what}: {process.communicate()[1][-2000:]}"
        assert time.time() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.1)


def validated_epochs(run_dir: Path) -> list[int]:
    import csv

    path = run_dir / "csv" / "metrics.csv"
    if not path.exists():
        return []
    with open(path) as f:
        return [int(r["epoch"]) for r in csv.DictReader(f) if r.get("val/loss")]
