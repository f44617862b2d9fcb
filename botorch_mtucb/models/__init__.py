"""BoTorch models: exact and Nyström multi-task GPs, heavy-tailed single-output models."""

from botorch_mtucb.heavy_tailed.adaptive import AdaptiveTruncationGP
from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.multitask.exact import ExactMultiTaskGP
from botorch_mtucb.multitask.nystrom import NystromMultiTaskGP
from botorch_mtucb.multitask.nystrom_batch import NystromMultiTaskBatch
from botorch_mtucb.multitask.practical import practical_multitask_gp

__all__: list[str] = [
    "AdaptiveTruncationGP",
    "ExactMultiTaskGP",
    "HeavyTailedBatch",
    "NystromMultiTaskBatch",
    "NystromMultiTaskGP",
    "TruncatedGP",
    "practical_multitask_gp",
]
