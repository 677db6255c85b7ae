"""Tokenised windows kept between runs: the framework's window cache beside ``datasets.map``'s own cache, each timed
cold (first run: tokenise, cut, write) and warm (a second run on the same documents, tokenizer and settings).

    LEGALFT_FIRE2026_DIR=../shared/fire2026 .venv/bin/python bench/window_cache.py [--repeats 5]

The documents are FIRE 2026 Task 1's 525 training cases where LEGALFT_FIRE2026_DIR is set, else the shipped PROSLEX
sample's; the tokenizer and windows are the quick start's (MiniLM, conf/windows/minilm.yaml). ``datasets.map`` runs
the same ``chunk_documents`` over a dataset saved to disk (a map caches only on a dataset with cache files), batched.
Each figure is the median (min-max) of the repeats, the sides interleaved; each cold run starts from an empty folder.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import interleaved, median_range  # noqa: E402

SIDES = ("legalft window cache", "datasets.map cache")


def documents() -> tuple[list[str], str]:
    if os.environ.get("LEGALFT_FIRE2026_DIR"):
        from legalft.data.fire2026 import Fire2026Source

        (task,) = Fire2026Source(train_path=str(Path(os.environ["LEGALFT_FIRE2026_DIR"]) / "task1.jsonl")).load()
        examples = task.train + task.val + (task.test or [])
        return [e.text for e in examples], "FIRE 2026 Task 1's training cases"
    from legalft.data.proslex import collection_files, read_split, shipped_codes

    train = read_split(collection_files(ROOT / "data" / "samples" / "proslex_sample" / "Train", "bench"), shipped_codes())
    return [e.text for e in train], "the PROSLEX sample's training documents"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import datasets
    from omegaconf import OmegaConf

    from legalft.data.chunking import chunk_documents
    from legalft.data.window_cache import cached_chunk_documents
    from legalft.models.pretrained import load_tokenizer, offline_minilm_path

    datasets.disable_progress_bars()
    texts, what = documents()
    tokenizer = load_tokenizer(offline_minilm_path(), "model.pretrained")
    windows = OmegaConf.merge(OmegaConf.load(ROOT / "conf" / "windows" / "bert.yaml"),
                              OmegaConf.load(ROOT / "conf" / "windows" / "minilm.yaml"))
    settings = {"max_length": 256, **{k: windows[k] for k in ("stride", "max_chunks", "last_window")}}

    def windows_of(batch):
        chunked, _ = chunk_documents(tokenizer, batch["text"], **settings)
        return {"chunks": [d.chunks for d in chunked], "n_tokens": [d.n_tokens for d in chunked]}

    def run(side: str, repeat: int) -> dict:
        with tempfile.TemporaryDirectory() as folder:
            times = []
            if side == SIDES[0]:
                for _ in ("cold", "warm"):
                    start = time.perf_counter()
                    cached_chunk_documents(folder, tokenizer, texts, **settings)
                    times.append(time.perf_counter() - start)
            else:
                datasets.Dataset.from_dict({"text": texts}).save_to_disk(f"{folder}/docs")
                for _ in ("cold", "warm"):
                    start = time.perf_counter()
                    loaded = datasets.load_from_disk(f"{folder}/docs")
                    mapped = loaded.map(windows_of, batched=True, batch_size=1000, remove_columns=["text"])
                    mapped["chunks"]  # what a training run reads
                    times.append(time.perf_counter() - start)
            return {"cold": times[0], "warm": times[1]}

    results = interleaved(SIDES, run, args.repeats)
    print(f"{len(texts)} documents ({what}), {sum(map(len, texts)) / 1e6:.1f} M characters; MiniLM windows "
          f"{settings}; {args.repeats} interleaved repeats, median (min-max) seconds")
    print(f"{'':24}  {'cold (tokenise, write)':>24}  {'warm (second run)':>20}  {'warm / cold':>12}")
    for side in SIDES:
        cold, warm = [r["cold"] for r in results[side]], [r["warm"] for r in results[side]]
        print(f"{side:24}  {median_range(cold):>24}  {median_range(warm, '{:.3f}'):>20}  "
              f"{median_range([w / c for w, c in zip(warm, cold)], '{:.3f}'):>12}")


if __name__ == "__main__":
    main()
