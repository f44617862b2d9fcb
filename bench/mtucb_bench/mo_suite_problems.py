r"""Multi-objective benchmark suite (issue 16): BoTorch test functions and correlated problems.

Every problem is a :class:`SuiteProblem`, a
:class:`~mtucb_bench.problems.MultiTaskProblem` (so the runner and the one BO
loop take it as is) with a hypervolume reference point, the maximum hypervolume and its
provenance. All objectives are maximised.

**Kinds.**

* BoTorch test functions on their continuous domains (native bounds, so an algorithm has to
  normalise inputs itself): ``branin-currin`` (d = 2, n = 2), ``vehicle-safety`` (5, 3),
  ``car-side-impact`` (7, 4), ``zdt1`` / ``zdt2`` / ``zdt3`` (4, 2), ``penicillin`` (7, 3),
  ``dtlz2`` (6, 3). Reference point and maximum hypervolume are BoTorch's (``ref_point``,
  ``max_hv``), negated to the maximisation form.
* Strongly correlated objectives (:func:`correlated_problem`, in
  :mod:`~mtucb_bench.mo_correlated_problems`): monotone transforms of shared
  latent functions plus small independent parts; ``corr-rff`` (random-Fourier-feature
  latents, a new instance per seed) and ``corr-hartmann`` (Hartmann-6 latents). Their maximum
  hypervolume is an estimate (a lower bound).

The container (:class:`SuiteProblem`, units, paper settings) is in
:mod:`~mtucb_bench.mo_suite_base`, the correlated problems in
:mod:`~mtucb_bench.mo_correlated_problems`; this module holds the BoTorch test
functions and the registry :data:`MO_SUITE`, and re-exports the names that lived here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import lru_cache

import torch
from botorch.test_functions.multi_objective import (
    DTLZ2,
    ZDT1,
    ZDT2,
    ZDT3,
    BraninCurrin,
    CarSideImpact,
    Penicillin,
    VehicleSafety,
)
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import ScalarizationSampler
from botorch_mtucb.loop import BoxOptimizer, run_bo_loop
from mtucb_bench.metrics import (
    hypervolume_percent,
    hypervolume_percent_curve,
    suite_metrics,
)
from mtucb_bench.mo_correlated_problems import corr_hartmann, corr_rff, correlated_problem
from mtucb_bench.mo_suite_base import (
    DT,
    SAMPLE_SIZE,
    FiniteDifferenceF,
    SuiteProblem,
    finish_problem,
    sobol_points,
)

__all__ = [
    "MO_SUITE",
    "SuiteProblem",
    "correlated_problem",
    "hypervolume_percent",
    "hypervolume_percent_curve",
    "make_suite_problem",
    "run_suite_protocol",
    "suite_metrics",
]


def _botorch_problem(name: str, make, polish: bool = True):
    def build(seed: int = 0, units: str = "normalized", noise_std: float = 0.0) -> SuiteProblem:
        p = make().to(DT)  # negate=True: maximised; ref_point is then negated too
        def f_raw(X: Tensor, _p=p) -> Tensor:  # the negated (maximised) noise-free values
            return _p(X, noise=False)

        if not polish:
            h = 1e-6 * (p.bounds[1] - p.bounds[0]).to(DT)

            def f_raw(X: Tensor, _p=p, _h=h) -> Tensor:  # one-sided on the box's faces
                return FiniteDifferenceF.apply(X, lambda Z: _p(Z, noise=False), _h, _p.bounds)

        return finish_problem(
            name, f_raw, p.bounds.to(DT), p.ref_point.to(DT), float(p.max_hv), units,
            noise_std, False, polish, sample_size=SAMPLE_SIZE if polish else 2**11,
            notes=f"BoTorch {type(p).__name__} (d = {p.dim}, n = {p.num_objectives}), negated",
        )

    return build


#: Suite problems by name: ``(seed, units, noise_std) -> SuiteProblem``. Only ``corr-rff``
#: draws a new instance per seed; the others are fixed functions.
MO_SUITE: dict[str, Callable[..., SuiteProblem]] = {
    "branin-currin": _botorch_problem("branin-currin", lambda: BraninCurrin(negate=True)),
    "vehicle-safety": _botorch_problem("vehicle-safety", lambda: VehicleSafety(negate=True)),
    "car-side-impact": _botorch_problem("car-side-impact", lambda: CarSideImpact(negate=True)),
    "zdt1": _botorch_problem("zdt1", lambda: ZDT1(dim=4, negate=True)),
    "zdt2": _botorch_problem("zdt2", lambda: ZDT2(dim=4, negate=True)),
    "zdt3": _botorch_problem("zdt3", lambda: ZDT3(dim=4, negate=True)),
    "penicillin": _botorch_problem("penicillin", lambda: Penicillin(negate=True), polish=False),
    "dtlz2": _botorch_problem("dtlz2", lambda: DTLZ2(dim=6, num_objectives=3, negate=True)),
    "corr-rff": corr_rff,
    "corr-hartmann": corr_hartmann,
}


@lru_cache(maxsize=32)
def _cached(name: str, seed: int, units: str, noise_std: float) -> SuiteProblem:
    return MO_SUITE[name](seed=seed, units=units, noise_std=noise_std)


def make_suite_problem(
    name: str, seed: int = 0, units: str = "normalized", noise_std: float = 0.0
) -> SuiteProblem:
    """The suite problem ``name`` (see :data:`MO_SUITE`), cached per process.

    Args:
        name: One of :data:`MO_SUITE`.
        seed: Instance seed (only ``corr-rff`` depends on it).
        units: ``"normalized"`` (default) or ``"raw"``.
        noise_std: Gaussian observation noise σ in the problem's units.
    """
    if name not in MO_SUITE:
        raise ValueError(f"Unknown suite problem {name!r}; known: {', '.join(MO_SUITE)}.")
    if name != "corr-rff":
        seed = 0
    return _cached(name, int(seed), units, float(noise_std))


def trial_sobol_points(problem: SuiteProblem, seed: int, n: int) -> Tensor:
    """The first ``n`` points (``n x d``, on the problem's box) of trial ``seed``'s scrambled
    Sobol sequence (engine seed ``seed + 1``), the one the component-swap scripts share: its
    first max(5, 2d) points are their initial design, the rest their Sobol arm's proposals
    (a prefix of a longer draw is the shorter draw)."""
    return sobol_points(n, problem.bounds, seed + 1)


def run_suite_protocol(
    problem: SuiteProblem,
    initial_X: Tensor,
    num_rounds: int,
    model_factory: Callable,
    acquisition_factory: Callable,
    seed: int,
    optimizer: Callable | None = None,
):
    """One paired trial of the suite's protocol for the benchmark scripts that swap one
    component (:mod:`mtucb_bench.studies.mo_ablation`, ``mo_dtlz2_diagnosis``): ``num_rounds`` of
    q = 1 from ``initial_X``, the model refitted after every round (``update="refit"``),
    ``BoxOptimizer(num_restarts=4, raw_samples=256)``, Chebyshev λ_t at the HV reference, and
    the trial's common random numbers (noise ``seed + 2``, λ_t ``seed + 3``, optimizer
    ``seed``). Warnings are silenced. ``optimizer`` (``acqf -> 1 x d``) replaces the
    ``BoxOptimizer`` (e.g. to restrict the search region); it should draw its randomness from
    ``seed`` to keep the trial's common random numbers.

    Returns:
        The loop's :class:`~botorch_mtucb.loop.history.LoopHistory`.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_bo_loop(
            observe=problem.observer(torch.Generator().manual_seed(seed + 2)),
            initial_X=initial_X, num_rounds=num_rounds, model_factory=model_factory,
            acquisition_factory=acquisition_factory,
            optimizer=optimizer if optimizer is not None
            else BoxOptimizer(problem.bounds, num_restarts=4, raw_samples=256, seed=seed),
            scalarization_sampler=ScalarizationSampler(problem.num_objectives, "chebyshev",
                                                       ref_point=problem.ref_point),
            update="refit", generator=torch.Generator().manual_seed(seed + 3),
        )
