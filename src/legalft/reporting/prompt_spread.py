"""How much an in-context baseline moves with its prompt: for each model and answer mode run with several
prompts (``evaluate.py -m prompt=base_prompt,zero_shot,knn,template ...``), per task the lowest and highest
score over the prompts and their spread, set beside each fine-tuned method, so a fine-tuned gain is read
against prompt variance rather than against one prompt."""

from __future__ import annotations

from collections import defaultdict

from legalft.reporting.runs import Run, is_per_label, lowest_seed, trained


def prompt_families(methods: dict[str, list[Run]]) -> dict[str, list[str]]:
    """``"<model>, <answer mode>"`` -> the in-context report columns of that model and answer mode, where it
    was run with at least two prompts."""
    families = defaultdict(list)
    for column, runs in methods.items():
        if trained(column) is False:
            info = lowest_seed(runs).info
            families[f"{info.get('model', '?')}, {info.get('answer', '?')}"].append(column)
    return {family: sorted(columns) for family, columns in families.items() if len(columns) >= 2}


def spread_rows(families: dict[str, list[str]], cells, rows, methods: list[str]) -> list[dict]:
    """Per task and family: the prompts scored, the lowest and highest score and the spread, and each
    fine-tuned method's score with its margin over the family's best prompt."""
    tuned = [m for m in methods if trained(m)]
    table = []
    for task in sorted(t for t in rows if not is_per_label(rows[t][0])):
        for family, columns in families.items():
            scores = {c: cells[(task, c)].mean for c in columns if (task, c) in cells}
            if len(scores) < 2:
                continue
            best, worst = max(scores.values()), min(scores.values())
            row = {"task": task, "metric": rows[task][1], "model, answer": family, "prompts": len(scores),
                   "lowest": worst, "highest": best, "spread": best - worst,
                   "best prompt": max(scores, key=scores.get)}
            for method in tuned:
                if (task, method) in cells:
                    row[f"{method} (over best prompt)"] = cells[(task, method)].mean - best
            table.append(row)
    return table
