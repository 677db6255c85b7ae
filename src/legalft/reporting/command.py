"""What ``report.py`` (``legalft-report``) writes, by the ``report`` group's choice: a comparison of runs
(``compare``), the runs as LegalEvalHub evaluation runs (``legalevalhub``), or one run as a FIRE 2026
Task 1 submission (``fire2026``)."""

from __future__ import annotations

from pathlib import Path


def write_report(cfg, kind: str) -> Path:
    """The report ``kind`` asks for, from ``cfg``'s runs, out and report group; says where it is."""
    if kind == "fire2026":
        from legalft.reporting.fire2026 import write_submission

        out = write_submission(cfg)
        print(f"FIRE 2026 Task 1 submission: {out}")
        return out
    if kind == "legalevalhub":
        from legalft.reporting.legalevalhub_export import export_from_config

        out = export_from_config(cfg)
        print(f"LegalEvalHub evaluation runs: {out}/README.md")
        return out
    from legalft.reporting.compare import compare_from_config

    out = compare_from_config(cfg)
    print(f"report: {out}/report.md")
    return out
