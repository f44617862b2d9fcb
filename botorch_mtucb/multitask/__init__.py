"""Multi-task GPs of paper 000: the exact MT-KB estimator and the Nyström MT-BKB estimator.

The public names are exported by :mod:`botorch_mtucb.models`.
"""
