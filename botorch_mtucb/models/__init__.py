"""BoTorch models: exact and Nyström multi-task GPs, heavy-tailed single-output models."""

from botorch_mtucb.models.adaptive_truncation_gp import AdaptiveTruncationGP
from botorch_mtucb.models.exact_multitask import ExactMultiTaskGP
from botorch_mtucb.models.heavy_tailed_batch import HeavyTailedBatch
from botorch_mtucb.models.nystrom_multitask import NystromMultiTaskGP
from botorch_mtucb.models.nystrom_multitask_batch import NystromMultiTaskBatch
from botorch_mtucb.models.practical import practical_multitask_gp
from botorch_mtucb.models.truncated_gp import TruncatedGP

__all__: list[str] = [
    "AdaptiveTruncationGP",
    "ExactMultiTaskGP",
    "HeavyTailedBatch",
    "NystromMultiTaskBatch",
    "NystromMultiTaskGP",
    "TruncatedGP",
    "practical_multitask_gp",
]
