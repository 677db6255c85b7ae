"""Writes contract_clauses.csv: short contract clauses, invented for this project from templates, each
labelled with its type. The example for data=custom; its scores say nothing about real contracts.

    python scripts/make_contract_clauses.py
"""

import csv
import random
from pathlib import Path

PARTIES = ["the Supplier", "the Customer", "the Licensee", "the Licensor", "the Contractor", "the Company"]
CLAUSES = {
    "termination": [
        "Either party may terminate this Agreement upon {n} days' written notice to {p}.",
        "{P} may terminate this Agreement immediately if {q} commits a material breach.",
        "This Agreement shall terminate automatically if {p} becomes insolvent.",
        "Upon termination, {p} shall cease all use of the services within {n} days.",
    ],
    "confidentiality": [
        "{P} shall keep all Confidential Information of {q} strictly confidential.",
        "{P} shall not disclose any confidential information to third parties without consent.",
        "The obligations of confidentiality survive for {n} years after the end of this Agreement.",
        "{P} shall return or destroy all confidential materials of {q} on request.",
    ],
    "indemnification": [
        "{P} shall indemnify and hold harmless {q} against all claims arising from its negligence.",
        "{P} agrees to defend {q} against any third-party claim of infringement.",
        "{P} shall compensate {q} for all losses, damages and costs caused by its breach.",
        "The indemnifying party shall bear the costs of defending any claim covered by this clause.",
    ],
    "governing law": [
        "This Agreement shall be governed by the laws of {s}.",
        "The courts of {s} shall have exclusive jurisdiction over any dispute under this Agreement.",
        "Any dispute shall be finally resolved by arbitration seated in {s}.",
        "This Agreement is construed in accordance with the law of {s}, without regard to conflict rules.",
    ],
}
PLACES = ["India", "England and Wales", "New York", "Singapore", "Delhi", "Maharashtra"]


def main() -> None:
    rng = random.Random(7)
    rows = []
    for label, templates in CLAUSES.items():
        for i in range(10):
            p, q = rng.sample(PARTIES, 2)
            text = templates[i % len(templates)].format(p=p, P=p[0].upper() + p[1:], q=q, n=rng.choice([15, 30, 60, 90]),
                                                         s=rng.choice(PLACES))
            rows.append({"id": f"{label[:4]}-{i}", "text": text, "label": label})
    rng.shuffle(rows)
    path = Path(__file__).resolve().parents[1] / "src" / "legalft" / "samples" / "contract_clauses.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "text", "label"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} rows -> {path}")


if __name__ == "__main__":
    main()
