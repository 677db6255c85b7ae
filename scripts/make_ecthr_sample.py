"""Writes the ECtHR-format sample under src/legalft/samples/ecthr_sample/ (data/samples/ in a clone).

The sample is invented for this project: short made-up facts paragraphs in the shape of the ``lex_glue``
dataset's ``ecthr_a`` export (one JSON Lines file per split, each row ``{"text": [paragraphs], "labels":
[class indices]}``). It is a stand-in for the tests, not legal data, and no result on it means anything
about ECtHR.

    python scripts/make_ecthr_sample.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "legalft" / "samples" / "ecthr_sample"
SPLITS = {"train": 40, "validation": 12, "test": 12}
ARTICLES = ["2", "3", "5", "6", "8", "9", "10", "11", "14", "P1-1"]
# Paragraphs that point at one article (index into ARTICLES); the sample uses five of the ten.
FACTS = {
    1: ["The applicant alleged that police officers beat him with truncheons during questioning at the station.",
        "A medical report drawn up after his release recorded bruises on his back and a broken rib."],
    2: ["The applicant was held in pre-trial detention for three years without the court reviewing its grounds.",
        "His repeated requests for release were rejected with the same formulaic reasoning."],
    3: ["The civil proceedings concerning the applicant's claim lasted eleven years before two levels of court.",
        "The applicant was never given a copy of the expert report on which the judgment relied."],
    4: ["The authorities intercepted the applicant's telephone conversations without a judicial warrant.",
        "The applicant's children were placed in care and she was refused any contact with them."],
    9: ["The applicant's farmland was expropriated and no compensation was paid to him.",
        "A final judgment ordering the State to pay him for his house remained unenforced for years."],
}
NEUTRAL = ["The applicant was born in 1961 and lives in a provincial town.",
           "The Government contested the applicant's account of the events.",
           "The applicant lodged a complaint with the prosecutor, who took no further action.",
           "The domestic courts dismissed the appeal as unfounded."]


def case(rng: random.Random) -> dict:
    labels = sorted(rng.sample(sorted(FACTS), rng.choice([0, 1, 1, 2])))
    paragraphs = [rng.choice(NEUTRAL)] + [p for label in labels for p in FACTS[label]] + [rng.choice(NEUTRAL)]
    return {"text": paragraphs, "labels": labels}


def main() -> None:
    rng = random.Random(0)
    OUT.mkdir(parents=True, exist_ok=True)
    for split, count in SPLITS.items():
        lines = [json.dumps(case(rng)) for _ in range(count)]
        (OUT / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
