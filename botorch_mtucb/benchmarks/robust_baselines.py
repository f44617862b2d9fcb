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
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable

import torch
from botorch.acquisition import LogExpectedImprovement, UpperConfidenceBound
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP, SingleTaskVariationalGP
from botorch.models.model import Model
from botorch.models.robust_relevance_pursuit_model import RobustRelevancePursuitSingleTaskGP
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.likelihoods import StudentTLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from torch import Tensor

from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.benchmarks.ht_suite_problems import (
    ContinuousHeavyTailedProblem,
    sobol_unit_design,
)
from botorch_mtucb.models.heavy_tailed_defaults import robust_location_and_moment
from botorch_mtucb.models.truncated_gp import TruncatedGP
from botorch_mtucb.theory.heavy_tailed import tgp_truncation_level, tgp_truncation_levels

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

#: Default practical UCB width w (μ + w σ) of the suite; see benchmarks/README.md.
DEFAULT_WIDTH = 1.0


def _fit(model: Model, mll) -> Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(mll)
    return model.eval()


def fit_single_task_gp(X: Tensor, Y: Tensor) -> SingleTaskGP:
    """``SingleTaskGP(X, Y)`` with BoTorch's defaults (Standardize, priors), MLL-fitted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant targets (all truncated) are legitimate
        model = SingleTaskGP(X, Y, outcome_transform=Standardize(m=1))
    return _fit(model, ExactMarginalLogLikelihood(model.likelihood, model))


def fit_rrp_gp(X: Tensor, Y: Tensor) -> RobustRelevancePursuitSingleTaskGP:
    """``RobustRelevancePursuitSingleTaskGP(X, Y)`` fitted by relevance pursuit (defaults).

    BoTorch's default prior mean of the support size, ``int(0.2 n)``, is 0 for ``n < 5`` and
    then fails (``log(0)`` in the exponential prior); it is raised to 1 there.
    """
    kw = {"prior_mean_of_support": 1.0} if int(0.2 * X.shape[-2]) == 0 else {}
    model = RobustRelevancePursuitSingleTaskGP(X, Y, **kw)
    return _fit(model, ExactMarginalLogLikelihood(model.likelihood, model))


def fit_student_t_gp(X: Tensor, Y: Tensor) -> SingleTaskVariationalGP:
    """Variational GP with a ``StudentTLikelihood`` (inducing points fixed at the data)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # outcome transform + variational GP: full batch here
        model = SingleTaskVariationalGP(
            X, Y, likelihood=StudentTLikelihood(), inducing_points=X.clone(),
            learn_inducing_points=False, outcome_transform=Standardize(m=1),
        ).to(X)
    return _fit(model, VariationalELBO(model.likelihood, model.model, num_data=X.shape[0]))


def practical_truncated_gp(
    X: Tensor,
    Y: Tensor,
    alpha: float | None = None,
    v: float | None = None,
    truncate: bool = True,
    centre: bool = True,
    level: str = "current",
    clip: bool = False,
    residual_steps: int = 0,
) -> tuple[TruncatedGP, Tensor]:
    """TGP with centred data, a data-driven (α, v) and BoTorch-fitted hyperparameters.

    1. Centre: ``z = y − loc``, ``loc = median(y)`` (truncation zeroes rewards with
       ``|z_s| > b_s``: a zeroed reward is imputed at the robust centre, not at 0 of the
       raw scale).
    2. ``α = 1``, ``v = v̂`` from :func:`robust_location_and_moment` unless given.
    3. ``ẑ_s = z_s 1{|z_s| ≤ b}`` with paper 001's level ``b_u = v^{1/(1+α)} u^{1/(2(1+α))}``
       (Alg. 1) at ``u = t`` for every reward (``level="current"``, default: the model is
       rebuilt every round with a new ``v̂`` anyway, and the rewards of the first rounds
       would otherwise be cut at ``b_1 = v̂^{1/(1+α)}``: 17–20 % instead of 10–13 % of the rewards
       zeroed at t = 30, measured by ``benchmarks/ht_moment_estimates.py``) or at ``u = s``,
       the reward's own round (``level="per-round"``, Algorithm 1 verbatim).
    4. ``SingleTaskGP`` fitted on ``(X, ẑ)`` supplies the RBF lengthscales, outputscale and
       noise (converted from standardised to ``z`` units: ``o s²``, ``λ = η s²``).
    5. ``TruncatedGP`` with ``ScaleKernel(k)`` and ``λ``: its targets are exactly ``ẑ`` and
       its posterior that of a zero-mean GP on ``ẑ`` with those hyperparameters (per-round:
       ``TruncatedGP(X, z, α, v)`` truncates itself; current: ``TruncatedGP(X, ẑ,
       truncate=False)``, the truncation done here).

    ``centre=False`` skips step 1 (``loc = 0``; the moment estimate is then taken about 0),
    to measure what centring is worth.

    ``clip=True`` replaces step 3's zeroing by clipping (winsorising),
    ``ẑ_s = clip(z_s, −b, b)``. The two properties the truncated-mean arguments rest on
    (Bubeck, Cesa-Bianchi & Lugosi 2013), ``|ẑ_s| ≤ b`` and the bias bound
    ``|E[z − ẑ]| ≤ E[|z| 1{|z| > b}] ≤ v / b^α``, hold for the clipped reward too (its error
    ``|z − ẑ| = (|z| − b)_+`` is below the truncated one's ``|z| 1{|z| > b}``); paper 001's
    proof of Theorem 1 (its Appendix B, not in our copy) is not re-derived here. Zeroing maps
    a reward beyond the level to the centre, so on a function whose rare values are the *good*
    ones (Hartmann6: a peak far above the median) the best rewards become typical ones; the
    clipped map is monotone and keeps them the largest (tied at ``loc + b``). The clipped
    targets are given to ``TruncatedGP`` with ``truncate=False`` (for either ``level``).

    ``residual_steps=k`` (``TGP-UCB-resid``) then winsorises *residuals* instead of rewards,
    ``k`` times: with ``mᵢ = μ₋ᵢ(xᵢ)`` the previous model's leave-one-out mean
    (:func:`loo_means`) and ``rᵢ = zᵢ − mᵢ``, the targets become ``mᵢ + clip(rᵢ, −b_r, b_r)``,
    ``b_r`` the same level formula with ``v̂`` of the residuals (about 0), and the kernel is
    refitted. A reward is judged against what its neighbours predict rather than against the
    median of all rewards, so a rare *good* value that the fit explains is not clipped as an
    outlier (the level on ``y − loc`` clips Hartmann6's peak, ``ht_decompose.py``). No bound
    is claimed for it.

    Returns:
        ``(model, loc)``: the model predicts ``f − loc``.
    """
    if residual_steps < 0:
        raise ValueError(f"`residual_steps` must be >= 0, got {residual_steps}.")
    y = Y.squeeze(-1)
    a = 1.0 if alpha is None else float(alpha)
    loc, v_hat = robust_location_and_moment(y, a, centre=centre)
    v_used = float(v_hat) if v is None else float(v)
    z = y - loc
    if level not in ("current", "per-round"):
        raise ValueError(f"`level` must be 'current' or 'per-round', got {level!r}.")
    t = z.shape[0]
    if truncate:
        s = torch.arange(1, t + 1, dtype=z.dtype, device=z.device)
        if level == "current":
            s = torch.full_like(s, float(t))
        b = tgp_truncation_levels(s, a, v_used)
        z_hat = torch.maximum(torch.minimum(z, b), -b) if clip else torch.where(
            z.abs() <= b, z, 0.0
        )
    else:
        z_hat = z
    self_truncate = truncate and level == "per-round" and not clip
    model = _fitted_tgp(X, z if self_truncate else z_hat, a, v_used, self_truncate)
    for _ in range(residual_steps):  # winsorise residuals against the leave-one-out fit
        m = loo_means(model)
        r = z - m
        b_r = tgp_truncation_level(t, a, float(robust_location_and_moment(r, a, centre=False)[1]))
        model = _fitted_tgp(X, m + r.clamp(-b_r, b_r), a, v_used, False)
    return model, loc


def _fitted_tgp(X: Tensor, targets: Tensor, a: float, v: float, truncate: bool) -> TruncatedGP:
    """Steps 4–5: a ``SingleTaskGP`` fit on ``targets`` supplies the kernel and λ of a
    zero-mean ``TruncatedGP`` on them (``truncate``: it truncates them itself, per round)."""
    gp = fit_single_task_gp(X, targets.unsqueeze(-1))
    s2 = gp.outcome_transform.stdvs.squeeze().square().detach()
    kernel = ScaleKernel(copy.deepcopy(gp.covar_module)).to(X)
    kernel.outputscale = s2
    for p in kernel.parameters():
        p.requires_grad_(False)
    lam = float(gp.likelihood.noise.squeeze().detach() * s2)
    return TruncatedGP(X, targets.unsqueeze(-1), alpha=a, v=v, covar_module=kernel, lam=lam,
                       truncate=truncate)


def loo_means(model: TruncatedGP) -> Tensor:
    """Leave-one-out posterior means ``μ₋ᵢ(xᵢ)`` of a dense zero-mean ``TruncatedGP`` at its
    ``t`` training points (same hyperparameters): ``ŷᵢ − [A⁻¹ŷ]ᵢ / [A⁻¹]ᵢᵢ``, ``A = K + λI``
    (Rasmussen & Williams 2006, eq. 5.12), in the targets' units."""
    X, y = model.train_X, model.train_targets
    with torch.no_grad():
        A = model.covar_module(X, X).to_dense()
        A = A + model.lam * torch.eye(X.shape[0], dtype=A.dtype, device=A.device)
        A_inv = torch.cholesky_inverse(torch.linalg.cholesky(A))
    return y - (A_inv @ y) / A_inv.diagonal()


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
    from botorch_mtucb.models.adaptive_truncation_gp import AdaptiveTruncationGP

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
