"""Family modules: each defines and registers its closed forms and nothing else."""
