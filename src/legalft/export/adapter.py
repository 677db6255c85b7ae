"""The Python functions of earlier releases' ``legalft.export_adapter``, for scripts that call them:
``export_merged(run, out, adapter)`` and ``export(...)``, both ``legalft.export.export`` now."""

from __future__ import annotations

from pathlib import Path

__all__ = ["export", "export_merged"]


def export_merged(run_dir: str, out: str, adapter: str | None = None, command: str | None = None) -> Path:
    """``legalft.export.export`` under the name earlier releases gave it."""
    from legalft.export.exporting import export as exported

    return exported(run_dir, out, adapter, command)


export = export_merged
