"""Time to give a document's evidence against its size, from 10 KB to 20 MB: the evidence scorer as runs and
predict.py use it (its first 200,000 characters, split by pysbd in segments), beside pysbd splitting the whole text
in one call, as earlier releases did (run up to 100 KB: beyond, it takes minutes).

    .venv/bin/python bench/evidence_time.py [--repeats 5]

The documents are the sample's facts repeated to the size; the scorer is trained on the sample's training split.
Each figure is the median (min-max) of the repeats, the two sides interleaved.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import interleaved, median_range  # noqa: E402

SIZES = [10_000, 100_000, 1_000_000, 20_000_000]
WHOLE_UP_TO = 100_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from legalft.data.proslex import collection_files, read_split, shipped_codes
    from legalft.data.sentences import segmenter, split_sentences
    from legalft.evaluation.evidence import EvidenceSelector

    train = read_split(collection_files(ROOT / "data" / "samples" / "proslex_sample" / "Train", "bench"), shipped_codes())
    labels = sorted({label for e in train for label in e.labels})
    selector = EvidenceSelector.fit(train, labels)
    facts = " ".join(e.text for e in train)
    print(f"{'size':>10}  {'evidence (its first 200,000 characters)':>42}  {'pysbd on the whole text':>26}")
    for size in SIZES:
        text = (facts * (size // len(facts) + 1))[:size]

        def run(side, repeat):
            started = time.perf_counter()
            if side == "evidence":
                split_sentences.cache_clear()
                selector.select(text, labels)
            else:
                segmenter().segment(text)
            return time.perf_counter() - started

        sides = ["evidence"] + (["whole"] if size <= WHOLE_UP_TO else [])
        times = interleaved(sides, run, args.repeats)
        whole = median_range(times["whole"], "{:.2f} s") if "whole" in times else "not run (minutes)"
        print(f"{size / 1e6:>8.2f}MB  {median_range(times['evidence'], '{:.2f} s'):>42}  {whole:>26}", flush=True)


if __name__ == "__main__":
    main()
