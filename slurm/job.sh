# Sourced by every slurm/*.sbatch: the site's environment, and a run folder fixed by the job id,
# so that a requeued job (same id) resumes into its own run folder.
set -euo pipefail
cd "$SLURM_SUBMIT_DIR"
# shellcheck disable=SC1091
source slurm/site.sh
legalft_job_environment
if [ -n "${SLURM_ARRAY_JOB_ID:-}" ]; then
    export LEGALFT_RUN_ID="slurm-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
else
    export LEGALFT_RUN_ID="slurm-${SLURM_JOB_ID}"
fi
echo "job ${SLURM_JOB_ID} on $(hostname), restart ${SLURM_RESTART_COUNT:-0}, run id ${LEGALFT_RUN_ID}"
