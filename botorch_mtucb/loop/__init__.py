"""The Bayesian-optimisation loop of paper 000, Algorithm 1, with the practical defaults.

:func:`run_bo_loop` runs the rounds (:mod:`~botorch_mtucb.loop.run`); the round's steps are in
:mod:`~botorch_mtucb.loop.rounds`, the regret metric in :mod:`~botorch_mtucb.loop.regret`, the
records in :mod:`~botorch_mtucb.loop.history`, the callbacks in
:mod:`~botorch_mtucb.loop.callbacks` and the defaults in :mod:`~botorch_mtucb.loop.defaults`.
"""

from botorch_mtucb.acquisition.dedup import DedupOptimizer
from botorch_mtucb.acquisition.optimizers import BoxOptimizer, FiniteArmOptimizer
from botorch_mtucb.acquisition.pending import condition_model
from botorch_mtucb.acquisition.trust_region import TrustRegionOptimizer
from botorch_mtucb.loop.defaults import (
    RefitSchedule,
    hypervolume_ucb_factory,
    log_ehvi_factory,
    practical_acquisition_factory,
    practical_model_factory,
    scalarized_ucb_factory,
)
from botorch_mtucb.loop.failures import LoopInterrupted
from botorch_mtucb.loop.history import LoopHistory, RoundRecord
from botorch_mtucb.loop.rounds import gaussian_observer
from botorch_mtucb.loop.run import run_bo_loop

__all__ = [
    "BoxOptimizer",
    "DedupOptimizer",
    "FiniteArmOptimizer",
    "LoopHistory",
    "LoopInterrupted",
    "RefitSchedule",
    "RoundRecord",
    "TrustRegionOptimizer",
    "condition_model",
    "gaussian_observer",
    "hypervolume_ucb_factory",
    "log_ehvi_factory",
    "practical_acquisition_factory",
    "practical_model_factory",
    "run_bo_loop",
    "scalarized_ucb_factory",
]
