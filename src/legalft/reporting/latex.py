"""The report's table for a paper: LaTeX with every cell escaped, booktabs rules, a ``longtable`` that
breaks across pages at 162 tasks, the best number of each row in bold and significance marks that
the caption explains. Needs ``\\usepackage{booktabs,longtable}`` in the document's preamble."""

from __future__ import annotations

import re

import pandas as pd

SIGNIFICANT = "*"  # best in its row, and better than every method it was tested against
NUMBER = re.compile(r"^-?\d+(\.\d+)?")
# Characters a cell may hold that pdflatex does not take as they are
SYMBOLS = {"†": r"\textsuperscript{\dag}", "—": "---", "±": r"$\pm$", "≥": r"$\geq$", "≤": r"$\leq$"}


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


def standalone(table: str) -> str:
    """A document around ``table`` that compiles on its own (``pdflatex table_standalone.tex``)."""
    return ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs,longtable}\n"
            "\\usepackage[margin=1.5cm,landscape]{geometry}\n\\begin{document}\n\\scriptsize\n"
            + table + "\\end{document}\n")
