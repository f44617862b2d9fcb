"""BoTorch models: exact and Nyström multi-task GPs, heavy-tailed single-output models."""

from botorch_mtucb.models.exact_multitask import ExactMultiTaskGP

__all__: list[str] = ["ExactMultiTaskGP"]
