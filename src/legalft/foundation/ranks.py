"""Which process of a distributed run this is."""

from __future__ import annotations

import os


def secondary_rank() -> bool:
    """Rank 0 of a distributed run owns the run folder; the other ranks (Lightning's DDP launcher
    re-runs the script with LOCAL_RANK set; srun sets SLURM_PROCID) write nothing of their own."""
    return any(os.environ.get(name, "0") != "0" for name in ("LOCAL_RANK", "RANK", "SLURM_PROCID"))
