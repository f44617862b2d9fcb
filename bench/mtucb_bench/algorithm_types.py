"""Types of the algorithm registry: the run settings and what an algorithm gives the loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.loop.defaults import RefitRule

__all__ = ["AlgorithmSetup", "AlgorithmSpec", "RunConfig", "is_practical"]


@dataclass(frozen=True)
class RunConfig:
    """Settings shared by all algorithms of a run.

    Attributes:
        horizon: T (enters the Nyström q and the ATA schedules).
        bound: ``"spectral"`` or ``"directional"`` scalarized UCB for MT-* / IT-*.
        constants: ``"authors"`` or ``"theory"`` for the heavy-tailed models.
        seed: Seed of algorithm-internal randomness (Nyström dictionaries, MC samplers).
        epsilon_mt: Nyström accuracy ε of MT-BKB / IT-BKB (paper 000: 0.5).
        epsilon_ht: Nyström accuracy ε of ATA-GP-UCB-Nyström (paper 001: 0.1).
        lam: Regulariser λ of the heavy-tailed models (paper 001: 1).
        delta: Confidence δ of the heavy-tailed models.
        beta: Width of the entries with a tunable practical width (``None``: the entry's
            default, e.g. β = 1 for ``MT-UCB``); set by a ``NAME@beta=B`` algorithm name.
    """

    horizon: int
    bound: str = "spectral"
    constants: str = "authors"
    seed: int = 0
    epsilon_mt: float = 0.5
    epsilon_ht: float = 0.1
    lam: float = 1.0
    delta: float = 0.1
    beta: float | None = None


@dataclass
class AlgorithmSetup:
    """What :func:`run_bo_loop` needs from an algorithm.

    The model schedule is explicit: after each round the loop either conditions the model
    on the new observation (``update="condition"``: fixed hyperparameters, the papers'
    estimators), or calls ``model_factory`` on all data (``update="refit"``: hyperparameters
    refitted every round), or conditions and calls ``model_factory`` every ``refit_every``-th
    round (see :func:`~botorch_mtucb.loop.run_bo_loop`). The refit time is part of the
    round's wall time.

    Attributes:
        model_factory: ``(X, Y) -> Model``.
        acquisition_factory: ``(model, s_λ or None) -> AcquisitionFunction``.
        representation: Heavy-tailed only: arm coordinates ``"kernel"`` or ``"qff"``.
        update: ``run_bo_loop``'s ``update``: ``"condition"``, ``"refit"`` or a callable
            ``(model, X_round, Y_round) -> Model``.
        refit_every: ``run_bo_loop``'s ``refit_every``: an int k (``0``: never besides
            ``update``) or a rule ``(t, N, N_fit) -> bool`` such as
            :class:`~botorch_mtucb.loop.defaults.RefitSchedule`.
        optimizer: ``acqf -> 1 x d`` point chooser replacing the runner's (e.g. random
            search); ``None``: the runner's ``BoxOptimizer`` / ``FiniteArmOptimizer``.
    """

    model_factory: Callable[[Tensor, Tensor], Model]
    acquisition_factory: Callable[[Model, Scalarization | None], AcquisitionFunction]
    representation: str = "kernel"
    update: str | Callable[[Model, Tensor, Tensor], Model] = "condition"
    refit_every: RefitRule = 0
    optimizer: Callable[[Any], Tensor] | None = None


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registry entry.

    Attributes:
        name: Name used on the command line.
        kind: ``"multi_task"`` or ``"heavy_tailed"``.
        description: One line for ``list``.
        build: ``(problem, config) -> AlgorithmSetup``.
        available: ``problem -> None`` or the reason the algorithm cannot run on it.
        practical: Whether the entry uses the practical defaults of issue 16 instead of a
            paper's settings (``run --paper`` leaves these out); names ending in
            ``-practical`` count as practical too (:func:`is_practical`).
        tunable_width: Whether the entry reads ``RunConfig.beta``, so that ``NAME@beta=B``
            (``run --beta B``) runs it with width B.
    """

    name: str
    kind: str
    description: str
    build: Callable[[Any, RunConfig], AlgorithmSetup]
    available: Callable[[Any], str | None] = lambda problem: None
    practical: bool = False
    tunable_width: bool = False


def is_practical(spec: AlgorithmSpec) -> bool:
    """Whether ``spec`` is a practical-defaults entry (not a paper's method or a baseline)."""
    return spec.practical or spec.name.endswith("-practical")
