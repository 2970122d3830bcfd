"""mmspubench.sweep: many models x prompt variants, run folder per run, on local GPUs, Slurm or HF Jobs."""
