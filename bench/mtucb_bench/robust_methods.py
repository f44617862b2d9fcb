"""Methods of the robust suite (issue 27) and its trial protocol.

Every method refits its model every round on unit-cube inputs ``t x d`` and raw readings
``t x 1`` and picks the next point with ``optimize_acqf`` (``q = 1``):

================  ==================================================================================
``STGP-LogEI``    ``SingleTaskGP`` (BoTorch defaults, MLL fit) + ``LogExpectedImprovement``.
``RRP-LogEI``     ``RobustRelevancePursuitSingleTaskGP`` (Ament et al. 2024, BoTorch defaults) +
                  LogEI.
``TGP-UCB``       ``TruncatedGP(X, Y)``, data-driven mode + ``HeavyTailedUCB`` (the model's β).
``TGP-LogEI``     ``TruncatedGP(X, Y)`` + LogEI.
``ATA-UCB``       ``AdaptiveTruncationGP(X, Y, generator=G)`` + ``HeavyTailedUCB``; ``G`` seeded
                  with ``1000 · seed + t`` (trial seed, number of readings).
``ATA-LogEI``     the same model + LogEI.
``ROBUST-LogEI``  ``botorch_mtucb.models.robust_gp(X, Y, bounds)`` +
                  ``botorch_mtucb.acquisition.robust_acquisition(model, kind="logei")``.
``ROBUST-UCB``    the same model + ``robust_acquisition(model, kind="ucb")``.
================  ==================================================================================

**Replicates.** ``"<method>@<k>"`` (``k ≥ 1``) is ``<method>`` with another stream of
``optimize_acqf``'s random restarts (seeded ``seed + 2 + round + k · REPLICATE_SEED_STRIDE``)
and the same design and readings: an independent rerun of the method, up to its common random
numbers, that measures how far two runs of one method differ.

LogEI's ``best_f`` is the largest posterior mean of the method's own model at an evaluated
point. The **recommendation** after each round is ``botorch_mtucb.models.recommend(model, X)``
for the two ``ROBUST`` methods and, for every other method, the evaluated point with the largest
posterior mean of its own model; its simple regret is ``f* − f(x_rec)``. The ``ROBUST``
builders import the product functions when called, so this module imports without them
(:func:`available_methods` lists what runs here).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from torch import Tensor

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.ht_suite_problems import ContinuousHeavyTailedProblem, sobol_unit_design
from mtucb_bench.robust_baselines import recommend_index
from mtucb_bench.robust_models import fit_rrp_gp, fit_single_task_gp
from mtucb_bench.robust_suite_problems import n_init as default_n_init

__all__ = [
    "BASELINES",
    "METHODS",
    "PRODUCT_METHODS",
    "REPLICATE_SEED_STRIDE",
    "Fitted",
    "available_methods",
    "run_robust_trial",
    "split_replicate",
]


@dataclass
class Fitted:
    """What a builder returns for one round.

    Attributes:
        model: The fitted model.
        acqf: The acquisition to maximise over the unit cube.
        recommend: ``X -> 1 x d`` recommended point, given the ``t x d`` evaluated points.
    """

    model: Model
    acqf: AcquisitionFunction
    recommend: Callable[[Tensor], Tensor]


#: A builder: ``(X, Y, bounds, generator_seed) -> Fitted``.
Builder = Callable[[Tensor, Tensor, Tensor, int], Fitted]


def _mean_argmax(model: Model) -> Callable[[Tensor], Tensor]:
    def rec(X: Tensor) -> Tensor:
        return X[recommend_index(model, X)].unsqueeze(0)

    return rec


def _best_mean(model: Model, X: Tensor) -> Tensor:
    with torch.no_grad():
        return model.posterior(X.unsqueeze(-2)).mean.view(-1).max()


def _logei(model: Model, X: Tensor) -> Fitted:
    return Fitted(model, LogExpectedImprovement(model, best_f=_best_mean(model, X)),
                  _mean_argmax(model))


def _ucb(model: Model) -> Fitted:
    return Fitted(model, HeavyTailedUCB(model), _mean_argmax(model))


def _stgp_logei(X, Y, bounds, seed):
    return _logei(fit_single_task_gp(X, Y), X)


def _rrp_logei(X, Y, bounds, seed):
    return _logei(fit_rrp_gp(X, Y), X)


def _tgp(X, Y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TruncatedGP(X, Y)


def _ata(X, Y, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AdaptiveTruncationGP(X, Y, generator=torch.Generator().manual_seed(seed))


def _robust(kind: str) -> Builder:
    def build(X, Y, bounds, seed):
        from botorch_mtucb.acquisition import robust_acquisition
        from botorch_mtucb.models import recommend, robust_gp

        model = robust_gp(X, Y, bounds)
        acqf = robust_acquisition(model, kind=kind)
        return Fitted(model, acqf, lambda Xe: recommend(model, Xe).reshape(1, -1))

    return build


#: name -> builder (module docstring).
METHODS: dict[str, Builder] = {
    "STGP-LogEI": _stgp_logei,
    "RRP-LogEI": _rrp_logei,
    "TGP-UCB": lambda X, Y, bounds, seed: _ucb(_tgp(X, Y)),
    "TGP-LogEI": lambda X, Y, bounds, seed: _logei(_tgp(X, Y), X),
    "ATA-UCB": lambda X, Y, bounds, seed: _ucb(_ata(X, Y, seed)),
    "ATA-LogEI": lambda X, Y, bounds, seed: _logei(_ata(X, Y, seed), X),
    "ROBUST-LogEI": _robust("logei"),
    "ROBUST-UCB": _robust("ucb"),
}
#: The two baselines every method is paired against.
BASELINES = ("STGP-LogEI", "RRP-LogEI")
#: Methods that need ``robust_gp``, ``robust_acquisition`` and ``recommend`` of the product.
PRODUCT_METHODS = ("ROBUST-LogEI", "ROBUST-UCB")


#: Offset between the restart seeds of two replicates of a method (module docstring).
REPLICATE_SEED_STRIDE = 10_000


def split_replicate(method: str) -> tuple[str, int]:
    """``"<method>@<k>"`` -> ``(method, k)``; a name without ``@`` -> ``(name, 0)``.

    Raises:
        ValueError: for an unknown base method or a replicate that is not an integer ≥ 1.
    """
    base, sep, k = method.partition("@")
    if base not in METHODS:
        raise ValueError(f"Unknown method {base!r}; known: {', '.join(METHODS)}.")
    if not sep:
        return base, 0
    if not k.isdigit() or int(k) < 1:
        raise ValueError(f"The replicate of {method!r} must be an integer >= 1 after '@'.")
    return base, int(k)


def available_methods() -> list[str]:
    """The methods of :data:`METHODS` that run in this environment (the ``ROBUST`` ones only
    when the product exports ``robust_gp``, ``recommend`` and ``robust_acquisition``)."""
    import botorch_mtucb.acquisition as acq
    import botorch_mtucb.models as models

    have = all(hasattr(models, n) for n in ("robust_gp", "recommend")) and hasattr(
        acq, "robust_acquisition"
    )
    return [m for m in METHODS if have or m not in PRODUCT_METHODS]


def run_robust_trial(
    problem: ContinuousHeavyTailedProblem,
    method: str,
    seed: int,
    rounds: int = 30,
    n_init: int | None = None,
    num_restarts: int = 4,
    raw_samples: int = 256,
) -> dict:
    """One BO run of ``method``; common random numbers across methods for one ``seed``.

    The initial design (``n_init`` scrambled Sobol points, seed ``seed``; default
    ``max(5, 2d)``) and the reading stream (a generator seeded ``seed + 1``: the design's
    readings, then one per round) are the same for every method; ``optimize_acqf``'s random
    restarts are seeded with ``seed + 2 + round`` (a replicate ``"<method>@<k>"``: plus
    ``k · REPLICATE_SEED_STRIDE``).

    Returns:
        JSON-ready dict: ``simple_regret`` (``rounds + 1`` values: of the recommendation after
        the design and after each round), ``recommendations`` (unit cube), ``regret`` (of each
        evaluation), ``observations``, ``inputs``, ``seconds`` (model fit + recommendation +
        acquisition optimisation, per round), ``fit_seconds`` (model fit only), settings.
    """
    base, replicate = split_replicate(method)
    n0 = default_n_init(problem.dim) if n_init is None else int(n_init)
    if n0 < 2 or rounds < 0:
        raise ValueError(f"Need n_init >= 2 and rounds >= 0, got {n0}, {rounds}.")
    build, bounds = METHODS[base], problem.unit_bounds
    restart_seed = seed + 2 + replicate * REPLICATE_SEED_STRIDE
    gen = torch.Generator().manual_seed(seed + 1)
    X = sobol_unit_design(n0, problem.dim, seed)
    Y = problem.observe(X, gen)
    simple, recs, seconds, fit_seconds = [], [], [], []
    for r in range(rounds + 1):
        start = time.perf_counter()
        fitted = build(X, Y, bounds, 1000 * seed + X.shape[0])
        fit_seconds.append(time.perf_counter() - start)
        x_rec = fitted.recommend(X).detach().reshape(1, -1).clamp(0.0, 1.0)
        simple.append(float(problem.regret(x_rec)))
        recs.append(x_rec.squeeze(0).tolist())
        if r == rounds:
            break
        torch.manual_seed(restart_seed + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x, _ = optimize_acqf(fitted.acqf, bounds, q=1, num_restarts=num_restarts,
                                 raw_samples=raw_samples)
        seconds.append(time.perf_counter() - start)
        x = x.detach().clamp(0.0, 1.0)
        X, Y = torch.cat([X, x]), torch.cat([Y, problem.observe(x, gen)])
    return {
        "problem": problem.name, "method": method, "seed": seed, "n_init": n0,
        "rounds": rounds, "num_restarts": num_restarts, "raw_samples": raw_samples,
        "simple_regret": simple, "recommendations": recs,
        "regret": problem.regret(X).tolist(), "observations": Y.squeeze(-1).tolist(),
        "inputs": X.tolist(), "seconds": seconds, "fit_seconds": fit_seconds[:rounds],
    }
