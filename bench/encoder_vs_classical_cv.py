"""The default encoder recipe against ``method=classical`` on the same k folds of PROSLEX documents.

    .venv/bin/python bench/encoder_vs_classical_cv.py [--folds 5] [--model minilm] [encoder overrides ...]

Both sides are ``train.py`` runs with ``protocol.cv_folds=K`` and the same seed, so they fold the same
documents the same way (``legalft.evaluation.cross_validation``: stratified by label sets) and decide
each fold with thresholds tuned on the other folds' out-of-fold scores. Documents: PROSLEX's
validation split (``LEGALFT_PROSLEX_DIR``, its only labelled split in the development data; no test
split is read), else the project's sample. Prints each side's mean and standard deviation over folds
and its wall time (the encoder's includes its final model on every document, which a CV run trains
too). The encoder run is fused with classical by default (``method.fuse_classical=auto``): its
``cv.json`` also scores each side alone on the same folds, so the table has the encoder alone, the
fusion, and a check that the fusion's classical side is ``method=classical``'s own result. Extra
arguments are Hydra overrides for the encoder run (e.g. ``method.fuse_classical=false``,
``trainer.precision=bf16-mixed``). ``--keep DIR`` keeps both run folders (``DIR/classical``,
``DIR/encoder``: each fold's out-of-fold scores under ``checkpoints/cv/``) instead of a temporary folder;
DIR must not exist yet.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def documents() -> tuple[str, list[str]]:
    real = Path(os.environ.get("LEGALFT_PROSLEX_DIR", "/nonexistent")) / "validation"
    if real.is_dir():
        return f"PROSLEX validation split ({real})", ["data=proslex", f"data.train_path={real}"]
    return "the project's sample (Train + Validation)", ["data=proslex_sample"]


def cross_validate(overrides: list[str], folder: Path) -> tuple[dict, float]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "train.py", *overrides, f"hydra.run.dir={folder}", "logger=none", "trainer.enable_progress_bar=false"],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"train.py {' '.join(overrides)} failed:\n{result.stderr[-3000:]}")
    (cv,) = json.loads((folder / "cv.json").read_text()).values()
    return cv, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="a new folder to keep both run folders in")
    args, encoder_overrides = parser.parse_known_args()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: it exists already; name a new folder.")
    where, data = documents()
    shared = [*data, f"protocol.cv_folds={args.folds}", f"seed={args.seed}"]
    sides = {
        "classical (tfidf_logreg)": ["method=classical", *shared],
        f"encoder ({args.model})": ["method=encoder", f"model={args.model}", *shared, *encoder_overrides],
    }
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        parent = args.keep or Path(tmp)
        for (side, overrides), name in zip(sides.items(), ("classical", "encoder")):
            results[side] = cross_validate(overrides, parent / name)
            print(f"done: {side} in {results[side][1]:.0f} s", flush=True)
    (classical, _), (encoder, encoder_seconds) = results.values()
    rows = {"classical (tfidf_logreg)": (classical, results["classical (tfidf_logreg)"][1])}
    if "parts" in encoder:  # fused with classical (method.fuse_classical): each side's own scores, same folds
        assert encoder["parts"]["classical"] == classical, "the fused run's classical side differs from method=classical"
        rows[f"encoder alone ({args.model})"] = (encoder["parts"]["encoder"], None)
        rows["encoder + classical (fused)"] = (encoder.get("fused", encoder), None)
        # what the run predicts with: the option with the best out-of-fold macro-F1 (method.fuse_classical=auto)
        rows[f"encoder run, its choice: {encoder.get('use', 'fused')}"] = (encoder, encoder_seconds)
    else:
        rows[f"encoder ({args.model})"] = (encoder, encoder_seconds)
    fold_sizes = {side: [f["n"] for f in cv["per_fold"]] for side, (cv, _) in rows.items()}
    assert len({tuple(n) for n in fold_sizes.values()}) == 1, f"the sides folded differently: {fold_sizes}"

    print(f"\n{args.folds}-fold cross-validation on {where}, seed {args.seed}; encoder overrides: "
          f"{' '.join(encoder_overrides) or 'none'}")
    print(f"{'':30}{'macro-F1':>16}{'micro-F1':>16}{'exact set':>16}{'wall time':>12}")
    for side, (cv, seconds) in rows.items():
        cells = "".join(f"{cv['mean'][k]:>10.3f} ± {cv['std'][k]:.3f}" for k in ("macro_f1", "micro_f1", "accuracy"))
        wall = f"{seconds:>11.0f}s" if seconds is not None else f"{'(same run)':>12}"
        print(f"{side:30}{cells}{wall}")
    for side, (cv, _) in list(rows.items())[1:]:
        per_fold = [round(e["macro_f1"] - c["macro_f1"], 3) for e, c in zip(cv["per_fold"], classical["per_fold"])]
        print(f"{side} - classical, macro-F1 per fold: {per_fold}; "
              f"mean {cv['mean']['macro_f1'] - classical['mean']['macro_f1']:+.3f}")

if __name__ == "__main__":
    main()
