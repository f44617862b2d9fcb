"""Multi-task kernels Γ(x, x') ∈ R^{n×n} and a finite-arm scalar kernel."""

from botorch_mtucb.kernels.base import MultiTaskKernel, kron_interleaved
from botorch_mtucb.kernels.icm import ICMKernel, TaskSimilarityKernel
from botorch_mtucb.kernels.independent import IndependentTasksKernel, SumOfSeparableKernel
from botorch_mtucb.kernels.precomputed import PrecomputedKernel

__all__ = [
    "ICMKernel",
    "IndependentTasksKernel",
    "MultiTaskKernel",
    "PrecomputedKernel",
    "SumOfSeparableKernel",
    "TaskSimilarityKernel",
    "kron_interleaved",
]
