"""Multi-task kernels Γ(x, x') ∈ R^{n×n} (paper 000, §2) and a finite-arm scalar kernel.

* :class:`ICMKernel` — Γ = k·B with a learned or fixed PSD task matrix B;
* :class:`TaskSimilarityKernel` — Γ = k·B_ω, B_ω = ωI + (1−ω)11ᵀ/n;
* :class:`IndependentTasksKernel` — Γ = diag(k_1, …, k_n) (the IT-KB baselines);
* :class:`SumOfSeparableKernel` — Γ = Σ_j k_j B_j (linear model of coregionalization);
* :class:`PrecomputedKernel` — k(i, j) = M_ij on a finite arm set (paper 001, §6).

All multi-task kernels return GPyTorch's interleaved ``(N1·n) x (N2·n)`` matrix
(:func:`kron_interleaved`) and expose their separable terms to the models' fast paths.
"""

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
