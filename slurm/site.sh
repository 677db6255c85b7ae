# What differs between clusters, edited once. Two parts:
#
# 1. Submission defaults. sbatch and the submitit launcher (hydra/launcher=slurm) read these when
#    you submit: `source slurm/site.sh` in the shell you submit from, or in your ~/.bashrc.
# export SBATCH_PARTITION=gpu
# export SBATCH_ACCOUNT=my-project
# export SBATCH_QOS=normal
#
# 2. The job's environment, set up by every slurm/*.sbatch before it runs Python.
legalft_job_environment() {
    # module load cuda/12.4           # what your cluster needs for the GPU build of torch
    # export HF_HOME=/scratch/$USER/hf # models and data sets on a fast shared disk
    # shellcheck disable=SC1091
    source "${LEGALFT_VENV:-$SLURM_SUBMIT_DIR/.venv}/bin/activate"
}
