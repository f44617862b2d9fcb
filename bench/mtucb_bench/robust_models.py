"""The models of the heavy-tailed suite's methods (issue 16): BoTorch fits and the practical TGP.

Private module behind :mod:`mtucb_bench.robust_baselines`, which re-exports its
public names and holds the methods table and the trial protocol. Every function takes
unit-cube inputs ``t x d`` and raw rewards ``t x 1`` and refits the hyperparameters with
``fit_gpytorch_mll`` (BoTorch's default priors): the baselines a BoTorch user reaches for
(``SingleTaskGP``, ``RobustRelevancePursuitSingleTaskGP``, a Student-t variational GP) and
:func:`~mtucb_bench.robust_baselines.practical_truncated_gp`, paper 001's TGP
(Algorithm 1) with centred rewards, a data-driven (α, v) and a BoTorch-fitted kernel.
"""

from __future__ import annotations

import copy
import warnings

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP, SingleTaskVariationalGP
from botorch.models.model import Model
from botorch.models.robust_relevance_pursuit_model import RobustRelevancePursuitSingleTaskGP
from botorch.models.transforms import Standardize
from gpytorch.kernels import ScaleKernel
from gpytorch.likelihoods import StudentTLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from torch import Tensor

from botorch_mtucb.heavy_tailed.moments import robust_location_and_moment
from botorch_mtucb.models import TruncatedGP
from botorch_mtucb.theory.heavy_tailed import tgp_truncation_level, tgp_truncation_levels

__all__: list[str] = []


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
       zeroed at t = 30, measured by :mod:`mtucb_bench.studies.ht_moment_estimates`) or at
       ``u = s``, the reward's own round (``level="per-round"``, Algorithm 1 verbatim).
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
