"""Heavy-tailed single-output models of paper 001: TGP-UCB (truncated) and ATA-GP-UCB.

The public names are exported by :mod:`botorch_mtucb.models`.
"""
