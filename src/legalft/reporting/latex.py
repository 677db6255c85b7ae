"""The report's tables for a paper, LaTeX with every cell escaped, booktabs rules, the best number of each
row in bold and marks the caption explains: the whole table as a ``longtable`` that breaks across pages at
162 tasks (an appendix; in a two-column class after ``\\onecolumn``), and a compact ``table*`` that fits a
page of a one- or two-column article (means only, a short label per method, tasks grouped under their
category). Needs ``\\usepackage{booktabs,longtable}`` in the document's preamble."""

from __future__ import annotations

import re

import pandas as pd

SIGNIFICANT = "*"  # best in its row, and better than every method it was tested against
NUMBER = re.compile(r"^-?\d+(\.\d+)?")
# Characters a cell may hold that pdflatex does not take as they are
SYMBOLS = {"†": r"\textsuperscript{\dag}", "—": "---", "±": r"$\pm$", "≥": r"$\geq$", "≤": r"$\leq$",
           "°": r"\textsuperscript{$\circ$}"}


def escape(text: str) -> str:
    """``text`` as LaTeX prints it: its special characters escaped, the report's symbols as commands."""
    replaced = []
    for char in str(text):
        if char in "&%$#_{}":
            replaced.append("\\" + char)
        elif char == "~":
            replaced.append(r"\textasciitilde{}")
        elif char == "^":
            replaced.append(r"\textasciicircum{}")
        elif char == "\\":
            replaced.append(r"\textbackslash{}")
        elif char in SYMBOLS:
            replaced.append(SYMBOLS[char])
        elif ord(char) > 127:
            replaced.append("?")  # pdflatex's default fonts have no glyph for it: never a failed build
        else:
            replaced.append(char)
    return "".join(replaced)


def leading_number(cell) -> float | None:
    match = NUMBER.match(str(cell).strip().lstrip("*"))
    return float(match.group()) if match else None


def best_columns(row: pd.Series, columns: list[str]) -> set[str]:
    """The columns holding the row's highest number (ties: all of them); none in a row of one number."""
    values = {c: leading_number(row[c]) for c in columns}
    values = {c: v for c, v in values.items() if v is not None}
    if len(values) < 2:
        return set()
    top = max(values.values())
    return {c for c, v in values.items() if v == top}


def to_latex(display: pd.DataFrame, numeric_columns: list[str], caption: str, label: str = "tab:comparison") -> str:
    """A longtable of ``display`` (every column, in order), the best of ``numeric_columns`` bold per row."""
    columns = list(display.columns)
    spec = "".join("r" if c in numeric_columns else "l" for c in columns)
    header = " & ".join(rf"\textbf{{{escape(c)}}}" for c in columns) + r" \\"
    lines = [
        rf"\begin{{longtable}}{{{spec}}}",
        rf"\caption{{{escape(caption)}}}\label{{{label}}} \\",
        r"\toprule", header, r"\midrule", r"\endfirsthead",
        r"\toprule", header, r"\midrule", r"\endhead",
        r"\bottomrule", r"\endfoot",
    ]
    previous_category = None
    for _, row in display.iterrows():
        if previous_category is not None and row.get("category") != previous_category:
            lines.append(r"\midrule")
        previous_category = row.get("category")
        best = best_columns(row, numeric_columns)
        cells = [rf"\textbf{{{escape(row[c])}}}" if c in best else escape(row[c]) for c in columns]
        lines.append(" & ".join(cells) + r" \\")
    lines.append(r"\end{longtable}")
    return "\n".join(lines) + "\n"


def short_labels(methods: list[str], chosen: dict[str, str] | None = None) -> dict[str, str]:
    """Each method's column label in the compact table: the one the user set (``report.short_names``), else
    A, B, C, ... in the methods' order (the caption says which is which)."""
    chosen = chosen or {}
    letters = (chr(ord("A") + i) if i < 26 else f"M{i + 1}" for i in range(len(methods)))
    return {method: str(chosen.get(method) or letter) for method, letter in zip(methods, letters)}


def cell_value(cell) -> str:
    """A display cell's mean and its marks, without the interval (the long table keeps it)."""
    text = str(cell).strip()
    if leading_number(text) is None:
        return text
    marks = text[len(text.rstrip(SIGNIFICANT + "°")):]  # the marks end the cell, after any interval
    return text.split()[0].rstrip(SIGNIFICANT + "°") + marks


def to_compact_latex(display: pd.DataFrame, methods: list[str], caption: str, labels: dict[str, str],
                     label: str = "tab:comparison-compact") -> str:
    """A ``table*`` of task rows (per-label rows left out) under their category, one short column per method
    (means and marks), the metric named once in the caption when every row has the same one (else a column),
    and each label's method in the caption."""
    rows = display[~display["category"].astype(str).str.endswith(": per label")]
    rows = rows[rows["metric"].astype(str) != ""] if "metric" in rows else rows
    task_rows = rows[~rows["task"].astype(str).str.startswith("average")]
    metrics = sorted(set(task_rows["metric"].astype(str)))
    one_metric = len(metrics) == 1
    columns = ["task"] + ([] if one_metric else ["metric"]) + methods
    spec = "l" * (len(columns) - len(methods)) + "r" * len(methods)
    legend = "; ".join(f"{labels[m]}: {m}" for m in methods)
    text = caption + (f" Every task in {metrics[0].replace('_', ' ')}." if one_metric else "") + f" Methods: {legend}."
    lines = [r"\begin{table*}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
             rf"\caption{{{escape(text)}}}\label{{{label}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(escape(labels.get(c, c)) for c in columns) + r" \\", r"\midrule"]
    previous = None
    for _, row in rows.iterrows():
        if row["category"] != previous:
            if previous is not None:
                lines.append(r"\midrule")
            lines.append(rf"\multicolumn{{{len(columns)}}}{{l}}{{\textit{{{escape(row['category'])}}}}} \\")
            previous = row["category"]
        best = best_columns(row, methods)
        cells = [escape(row["task"])] + ([] if one_metric else [escape(row["metric"])])
        cells += [rf"\textbf{{{escape(cell_value(row[m]))}}}" if m in best else escape(cell_value(row[m])) for m in methods]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table*}"]
    return "\n".join(lines) + "\n"


def in_article(table: str, two_column: bool = False) -> str:
    """A plain article (A4-ish default margins, portrait) around ``table``: what a paper's page gives it."""
    return ("\\documentclass" + ("[twocolumn]" if two_column else "") + "{article}\n\\usepackage[T1]{fontenc}\n"
            "\\usepackage{booktabs,longtable}\n\\begin{document}\n" + ("\\onecolumn\n" if two_column and "longtable" in table
                                                                       else "") + table + "\\end{document}\n")


def standalone(table: str, two_column: bool = False) -> str:
    """A document around ``table`` that compiles on its own (``pdflatex table_standalone.tex``)."""
    return ("\\documentclass" + ("[twocolumn]" if two_column else "") + "{article}\n\\usepackage[T1]{fontenc}\n"
            "\\usepackage{booktabs,longtable}\n\\usepackage[margin=1.5cm,landscape]{geometry}\n\\begin{document}\n"
            "\\scriptsize\n" + table + "\\end{document}\n")
