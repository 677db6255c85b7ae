"""Writes the PROSLEX-format sample under src/legalft/samples/proslex_sample/ (data/samples/ in a clone).

The sample is invented for this project: short made-up case facts, built from the sentences
below, in the file layout and JSON schema of the real PROSLEX release (one JSON per collection,
a dict keyed by document id with ``fact``, ``statute``, ``explanation`` and ``doc_url``). It is a
stand-in for the quick start and the tests, not legal data, and no result on it means anything
about PROSLEX.

    python scripts/make_proslex_sample.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "legalft" / "samples" / "proslex_sample"
SPLITS = {"Train": ("train", 14), "Validation": ("val", 5), "Test": ("test", 5)}
COLLECTION_OF_CODE = {"s1": "147", "s2": "201", "s3": "302", "s4": "376", "s5": "420", "s6": "498A", "s7": "506"}

# Sentences that point at one statute; each becomes an explanation span for its code.
EVIDENCE = {
    "s1": [
        "A crowd of about twenty villagers armed with lathis and spears gathered outside {v}'s house and began beating the family.",
        "The accused persons formed an unlawful assembly and attacked the neighbours with sticks over a land dispute.",
        "Members of the mob shouted slogans, threw stones at the shop of {v} and assaulted anyone who came near.",
        "The group of armed men surrounded the field and violently drove away the labourers working there.",
    ],
    "s2": [
        "After the incident the accused washed the blood-stained clothes and burnt them behind the cattle shed.",
        "The body of {v} was dragged to the canal and thrown into the water to hide what had happened.",
        "The accused buried the weapon in the courtyard and told the police that nothing had happened.",
        "Witnesses saw {a} wiping the floor and removing the articles from the room before the police arrived.",
    ],
    "s3": [
        "{a} struck {v} on the head with an axe, and {v} died on the spot.",
        "The post-mortem report recorded that the stab wound to the chest of {v} was sufficient to cause death.",
        "{a} fired a country-made pistol at {v} from close range, killing him instantly.",
        "{v} was strangled with a rope in the night and was found dead the next morning.",
    ],
    "s4": [
        "The prosecutrix, a minor girl, stated that {a} forcibly took her into the sugarcane field and committed sexual intercourse against her will.",
        "The medical examination of the victim showed injuries consistent with sexual assault by {a}.",
        "{a} entered the room at night, threatened the girl and raped her while her parents were away.",
    ],
    "s5": [
        "{a} induced {v} to pay a large sum by promising a government job that never existed.",
        "The accused sold the same plot of land to two buyers using forged sale deeds and kept the money.",
        "{a} issued cheques from a closed bank account knowing that they would be dishonoured, and obtained goods from {v}.",
        "The company collected deposits from investors with false promises of high returns and then disappeared.",
    ],
    "s6": [
        "Soon after the marriage, {a} and his mother repeatedly demanded more dowry and beat {v} when her parents could not pay.",
        "{v} wrote letters to her father describing the constant harassment and cruelty by her husband and in-laws.",
        "The husband starved {v}, locked her in a room and taunted her for not bringing a motorcycle as dowry.",
    ],
    "s7": [
        "{a} threatened {v} that he would kill the whole family if the complaint was not withdrawn.",
        "The accused brandished a knife and warned the witness of dire consequences if he deposed in court.",
        "{a} telephoned {v} several times at night threatening to burn down the house.",
    ],
}
NEUTRAL = [
    "The First Information Report was lodged at the police station on the same day.",
    "The trial court examined several prosecution witnesses and recorded the statement of the accused.",
    "The High Court heard the appeal and affirmed the findings of the trial court.",
    "Learned counsel for the appellant contended that the prosecution story was improbable.",
    "The investigating officer prepared a site plan and seized certain articles from the spot.",
    "There was a delay of two days in sending the report to the magistrate, which the defence relied upon.",
    "The defence examined two witnesses who stated that the accused was at another village at the time.",
    "The prosecution relied mainly on the evidence of the eyewitnesses, who were related to each other.",
    "The appellant was granted special leave to appeal against the judgment of the High Court.",
    "The incident was the result of long-standing enmity between the two families of the village.",
]
ACCUSED = ["Ramesh", "Suresh", "Mahesh", "Kishan Lal", "Gopal", "Bhola", "Harpal", "Vinod"]
VICTIMS = ["Shanti", "Mohan", "Kamla", "Raju", "Sunita", "Prakash", "Geeta", "Dinesh"]


def make_document(rng: random.Random, primary: str, long: bool) -> dict:
    codes = [primary]
    if rng.random() < 0.3:
        codes.append(rng.choice([c for c in EVIDENCE if c != primary]))
    names = {"a": rng.choice(ACCUSED), "v": rng.choice(VICTIMS)}
    explanation: dict[str, list[str]] = {}
    for code in codes:
        for sentence in rng.sample(EVIDENCE[code], 2):
            explanation.setdefault(sentence.format(**names), []).append(code)
    filler = rng.choices(NEUTRAL, k=rng.randint(2, 5) + (40 if long else 0))
    body = list(explanation) + filler
    rng.shuffle(body)
    if long:  # put the evidence past the first 512 tokens, where a truncating model cannot see it
        body = filler + list(explanation)
    return {"fact": " ".join(body), "statute": sorted(set(codes)), "explanation": explanation}


def main() -> None:
    rng = random.Random(20240601)
    serial = 1
    for folder, (prefix, per_code) in SPLITS.items():
        (OUT / folder).mkdir(parents=True, exist_ok=True)
        for code, section in COLLECTION_OF_CODE.items():
            collection = {}
            for i in range(per_code):
                doc_id = f"2099.SAMPLE.{serial}.txt"
                serial += 1
                doc = make_document(rng, code, long=(i % 5 == 4))
                doc["doc_url"] = f"sample://{doc_id}"
                collection[doc_id] = doc
            path = OUT / folder / f"{prefix}_collection_IPC_{section}.json"
            path.write_text(json.dumps(collection, indent=1) + "\n")


if __name__ == "__main__":
    main()
