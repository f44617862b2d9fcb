"""Linear-algebra solvers behind the multi-task GPs: exact (dense or ICM) and Nyström."""
