"""botorch-mtucb: multi-task scalarized UCB and heavy-tailed BO for BoTorch."""

__version__ = "0.1.0"

__all__ = ["__version__"]
