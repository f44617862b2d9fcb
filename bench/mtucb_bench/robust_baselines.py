"""Methods of the heavy-tailed suite (issue 16): what a BoTorch user reaches for, and ours.

Every method works on unit-cube inputs ``t x d`` and raw rewards ``t x 1``, refits its
hyperparameters every round with ``fit_gpytorch_mll`` (BoTorch's default priors) and picks
the next point with ``optimize_acqf``:

===========================  ======================================================================
``STGP-UCB``                 ``SingleTaskGP`` (Standardize, BoTorch defaults) + ``UpperConfidence
                             Bound(beta=w²)``, i.e. ``μ + w σ``.
``STGP-LogEI``               ``SingleTaskGP`` + ``LogExpectedImprovement`` (``best_f`` = the
                             largest posterior mean at an evaluated point).
``RRP-UCB/-LogEI``           ``RobustRelevancePursuitSingleTaskGP`` (Ament et al. 2024; BoTorch's
                             default support-size schedule) + the same acquisitions.
``StudentT-GP-UCB``          variational GP (inducing points = the data) with GPyTorch's
                             ``StudentTLikelihood``, ELBO fit, ``μ + w σ`` of the latent ``f``.
``TGP-UCB-practical``        :func:`practical_truncated_gp` + ``HeavyTailedUCB(beta=w)``.
``TGP-UCB-practical-v``      the same with the problem's declared (α, v) instead of the estimate.
``TGP-UCB-uncentred``        the same without centring (``loc = 0``): what centring is worth.
``TGP-UCB-practical-clip``   the same with rewards beyond the level *clipped* to ``loc ± b_t``
                             (winsorised) instead of zeroed: a monotone map, so the best rewards
                             stay the best (``practical_truncated_gp(..., clip=True)``).
``TGP-LogEI-clip``           the winsorised model of ``-clip`` + ``LogExpectedImprovement``
                             (``best_f`` as for ``STGP-LogEI``): the acquisition of RRP-LogEI on
                             our robust model, to compare like with like.
``ATA-GP-UCB-practical``     ``AdaptiveTruncationGP(X, Y)`` data-driven (median centring,
                             median-of-means v, Nyström features on a BoTorch-fitted kernel,
                             per-direction projection levels (``projection_levels``);
                             dictionary generator seeded with t) + ``HeavyTailedUCB(beta=w)``.
``TGP-UCB-resid``            ``-clip``, then the residuals winsorised against the leave-one-out
                             fit (``practical_truncated_gp(..., residual_steps=1)``).
``GP-UCB-practical``         :func:`practical_truncated_gp` without truncation, same width ``w``.
``TGP-UCB-paper``            paper 001 as published: TruncatedGP on raw (uncentred) rewards, SE
                             lengthscale 0.2, λ = 1, authors' β, declared (α, v, B).
===========================  ======================================================================

The **recommended point** after round t is the evaluated point with the largest posterior
mean of the method's own model (robust methods thus discount their outliers); its simple
regret is ``f* − f(x_rec)``. Cumulative regret sums ``f* − f(x_s)`` over all evaluations.

The models' fits (``fit_*``, :func:`practical_truncated_gp`, :func:`loo_means`) are defined in
:mod:`~mtucb_bench.robust_models` and re-exported here.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import torch
from botorch.acquisition import LogExpectedImprovement, UpperConfidenceBound
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from gpytorch.kernels import RBFKernel
from torch import Tensor

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.heavy_tailed.moments import robust_location_and_moment
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.ht_suite_problems import (
    ContinuousHeavyTailedProblem,
    sobol_unit_design,
)
from mtucb_bench.robust_models import (
    fit_rrp_gp,
    fit_single_task_gp,
    fit_student_t_gp,
    loo_means,
    practical_truncated_gp,
)

__all__ = [
    "METHODS",
    "fit_rrp_gp",
    "fit_single_task_gp",
    "fit_student_t_gp",
    "loo_means",
    "practical_truncated_gp",
    "recommend_index",
    "replay_observations",
    "robust_location_and_moment",
    "run_suite_trial",
]

#: Default practical UCB width w (μ + w σ) of the heavy-tailed suite.
DEFAULT_WIDTH = 1.0


def _paper_tgp(problem: ContinuousHeavyTailedProblem, X: Tensor, Y: Tensor, honest: bool):
    kernel = RBFKernel().to(X)
    kernel.lengthscale = 0.2
    kernel.raw_lengthscale.requires_grad_(False)
    return TruncatedGP(
        X, Y, alpha=problem.alpha, v=problem.v_declared(honest), covar_module=kernel,
        B=problem.B, constants="authors",
    )


def _mean_argmax(model: Model, X: Tensor) -> int:
    with torch.no_grad():
        return int(model.posterior(X.unsqueeze(-2)).mean.view(-1).argmax())


def recommend_index(model: Model, X: Tensor) -> int:
    """Index of the evaluated point with the largest posterior mean (the recommendation)."""
    return _mean_argmax(model, X)


def _best_mean(model: Model, X: Tensor) -> Tensor:
    with torch.no_grad():
        return model.posterior(X.unsqueeze(-2)).mean.view(-1).max()


Builder = Callable[[ContinuousHeavyTailedProblem, Tensor, Tensor, float, bool], tuple]


def _botorch(fit: Callable[[Tensor, Tensor], Model], acq: str) -> Builder:
    def build(problem, X, Y, width, honest):
        model = fit(X, Y)
        if acq == "UCB":
            return model, UpperConfidenceBound(model, beta=width**2)
        return model, LogExpectedImprovement(model, best_f=_best_mean(model, X))

    return build


def _practical(
    truncate: bool, declared: bool, centre: bool = True, clip: bool = False
) -> Builder:
    def build(problem, X, Y, width, honest):
        kw = {"alpha": problem.alpha, "v": problem.v_declared(honest)} if declared else {}
        model, _ = practical_truncated_gp(
            X, Y, truncate=truncate, centre=centre, clip=clip, **kw
        )
        return model, HeavyTailedUCB(model, beta=width)

    return build


def _practical_resid(problem, X, Y, width, honest):
    model, _ = practical_truncated_gp(X, Y, clip=True, residual_steps=1)
    return model, HeavyTailedUCB(model, beta=width)


def _practical_logei(problem, X, Y, width, honest):
    model, _ = practical_truncated_gp(X, Y, clip=True)
    return model, LogExpectedImprovement(model, best_f=_best_mean(model, X))


def _ata_practical(problem, X, Y, width, honest):
    gen = torch.Generator(device=X.device).manual_seed(X.shape[0])  # reproducible per round
    model = AdaptiveTruncationGP(X, Y, generator=gen)
    return model, HeavyTailedUCB(model, beta=width)


def _paper(problem, X, Y, width, honest):
    model = _paper_tgp(problem, X, Y, honest)
    return model, HeavyTailedUCB(model)


#: name -> (builder, uses the declared v). A builder returns ``(model, acquisition)``.
METHODS: dict[str, tuple[Builder, bool]] = {
    "STGP-UCB": (_botorch(fit_single_task_gp, "UCB"), False),
    "STGP-LogEI": (_botorch(fit_single_task_gp, "LogEI"), False),
    "RRP-UCB": (_botorch(fit_rrp_gp, "UCB"), False),
    "RRP-LogEI": (_botorch(fit_rrp_gp, "LogEI"), False),
    "StudentT-GP-UCB": (_botorch(fit_student_t_gp, "UCB"), False),
    "TGP-UCB-practical": (_practical(True, False), False),
    "TGP-UCB-practical-v": (_practical(True, True), True),
    "TGP-UCB-uncentred": (_practical(True, False, centre=False), False),
    "TGP-UCB-practical-clip": (_practical(True, False, clip=True), False),
    "TGP-LogEI-clip": (_practical_logei, False),
    "TGP-UCB-resid": (_practical_resid, False),
    "GP-UCB-practical": (_practical(False, False), False),
    "ATA-GP-UCB-practical": (_ata_practical, False),
    "TGP-UCB-paper": (_paper, True),
}


def run_suite_trial(
    problem: ContinuousHeavyTailedProblem,
    method: str,
    seed: int,
    n_init: int = 10,
    iterations: int = 20,
    width: float = DEFAULT_WIDTH,
    honest: bool = True,
    num_restarts: int = 4,
    raw_samples: int = 256,
) -> dict:
    """One BO run; common random numbers across methods for the same ``seed``.

    The initial design (``n_init`` scrambled-Sobol points, seed ``seed``) and the noise stream
    (a generator seeded with ``seed + 1``, one draw per evaluation in order) are the same for
    every method; ``optimize_acqf``'s random restarts are seeded with ``seed + 2 + round``.

    Returns:
        JSON-ready dict: ``regret`` (per evaluation), ``cumulative_regret``,
        ``observations`` (the rewards ``y_s``), ``inputs`` (the ``x_s``, unit cube, as nested
        lists), ``simple_regret`` (of the recommendation after
        each BO round), ``seconds`` (fit + acquisition per round), settings.
    """
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; known: {', '.join(METHODS)}.")
    if n_init < 2 or iterations < 0:
        raise ValueError(f"Need n_init >= 2 and iterations >= 0, got {n_init}, {iterations}.")
    build = METHODS[method][0]
    gen = torch.Generator().manual_seed(seed + 1)
    X = sobol_unit_design(n_init, problem.dim, seed)
    Y = problem.observe(X, gen)
    simple, seconds = [], []
    for r in range(iterations + 1):
        start = time.perf_counter()
        model, acqf = build(problem, X, Y, width, honest)
        simple.append(float(problem.regret(X[recommend_index(model, X)].unsqueeze(0))))
        if r == iterations:
            break
        torch.manual_seed(seed + 2 + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x, _ = optimize_acqf(
                acqf, problem.unit_bounds, q=1, num_restarts=num_restarts,
                raw_samples=raw_samples,
            )
        seconds.append(time.perf_counter() - start)
        x = x.detach().clamp(0.0, 1.0)
        X, Y = torch.cat([X, x]), torch.cat([Y, problem.observe(x, gen)])
    regret = problem.regret(X)
    return {
        "problem": problem.name, "method": method, "seed": seed, "n_init": n_init,
        "iterations": iterations, "width": width, "honest": honest,
        "regret": regret.tolist(), "cumulative_regret": regret.cumsum(0).tolist(),
        "observations": Y.squeeze(-1).tolist(), "inputs": X.tolist(),
        "simple_regret": simple, "seconds": seconds,
    }


def replay_observations(problem: ContinuousHeavyTailedProblem, record: dict) -> Tensor:
    """The rewards ``y_s`` of a :func:`run_suite_trial` record, rebuilt from its regrets.

    ``f(x_s) = f* − regret_s`` and the noise is redrawn from the trial's stream (generator
    seeded ``seed + 1``: ``n_init`` draws, then one per round, the order of
    :func:`run_suite_trial`), so records written before ``observations`` was stored can be
    analysed too.

    Returns:
        ``T`` rewards (float64), ``T = n_init + iterations``.
    """
    n_init, iterations = int(record["n_init"]), int(record["iterations"])
    regret = torch.tensor(record["regret"], dtype=torch.float64)
    if regret.shape[0] != n_init + iterations:
        raise ValueError(
            f"`record` has {regret.shape[0]} regrets, expected n_init + iterations = "
            f"{n_init + iterations}."
        )
    gen = torch.Generator().manual_seed(int(record["seed"]) + 1)
    draws = [problem.noise.sample((n_init,), gen)]
    draws += [problem.noise.sample((1,), gen) for _ in range(iterations)]
    return problem.optimum - regret + torch.cat(draws)
