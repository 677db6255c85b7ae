"""How a Lightning trainer is built and kept alive for a run: the trainer and its loggers from the config
groups, progress lines, preemption and requeueing, a CSV logger that resumes, DeepSpeed with CPU ranks."""
