#!/bin/bash
# What srun starts once per task of a multi-task job: `srun bash slurm/rank.sh train.py <overrides>`.
# Rank 0 runs the entry point as is and owns the run folder. The other ranks join the same run (same
# folder, from the job id) but write nothing there except their own log: no .hydra record, as Lightning's
# own launcher arranges for the processes it starts.
entry=${1:?usage: srun bash slurm/rank.sh <entry point>.py [Hydra overrides]}
shift
if [ "${SLURM_PROCID:-0}" != 0 ]; then
    exec python "$entry" "$@" hydra.output_subdir=null "hydra.job.name=${entry%.py}_rank_${SLURM_PROCID}"
fi
exec python "$entry" "$@"
