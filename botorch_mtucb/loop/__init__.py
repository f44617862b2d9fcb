"""The Bayesian-optimisation loop of paper 000, Algorithm 1, with the practical defaults."""

from botorch_mtucb.acquisition.dedup import DedupOptimizer
from botorch_mtucb.acquisition.optimizers import BoxOptimizer, FiniteArmOptimizer
from botorch_mtucb.acquisition.pending import condition_model
from botorch_mtucb.acquisition.trust_region import TrustRegionOptimizer
from botorch_mtucb.loop.defaults import RefitSchedule
from botorch_mtucb.loop.history import LoopHistory, RoundRecord
from botorch_mtucb.loop.run import gaussian_observer, run_bo_loop, scalarized_ucb_factory

__all__ = [
    "BoxOptimizer",
    "DedupOptimizer",
    "FiniteArmOptimizer",
    "LoopHistory",
    "RefitSchedule",
    "RoundRecord",
    "TrustRegionOptimizer",
    "condition_model",
    "gaussian_observer",
    "run_bo_loop",
    "scalarized_ucb_factory",
]
