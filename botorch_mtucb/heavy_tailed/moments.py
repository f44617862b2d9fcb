"""Practical defaults of the heavy-tailed models (issue 16): data-driven (α, v) and a fitted kernel.

Used by :class:`~botorch_mtucb.models.TruncatedGP` and
:class:`~botorch_mtucb.models.AdaptiveTruncationGP` when they are built without ``v`` (and by
the issue-16 benchmark suite). Measurements: ``bench/mtucb_bench/studies/ht_moment_estimates.py``
and ``benchmarks/README.md`` (heavy-tailed suite section).
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

__all__ = [
    "DEFAULT_LENGTHSCALE",
    "PRACTICAL_WIDTH",
    "data_driven_moments",
    "default_kernel",
    "fit_kernel_on_targets",
    "projection_levels",
    "robust_location_and_moment",
]

#: Default SE lengthscale when no kernel is given (paper 001, §6 synthetic experiments).
DEFAULT_LENGTHSCALE = 0.2

#: UCB width ``w`` of ``μ + w σ`` used by the data-driven models' ``beta()`` (issue 16 suite:
#: w = 1 against 0.5 and 2; benchmarks/README.md).
PRACTICAL_WIDTH = 1.0


def robust_location_and_moment(
    y: Tensor, alpha: float = 1.0, delta: float = 0.1, centre: bool = True
) -> tuple[Tensor, Tensor]:
    """Median location and a median-of-means estimate of ``E|y − loc|^{1+α}``.

    ``loc = median(y)`` (torch's lower middle for even counts); the values
    ``|y_s − loc|^{1+α}`` are split into ``K = max(1, min(⌈8 ln(1/δ)⌉, ⌊t/2⌋))`` groups by
    round index (``s mod K``) and ``v̂`` is the median of the group means. For a variable with
    finite variance ``σ²`` the median of ``K ≈ 8 ln(1/δ)`` means is within
    ``O(σ √(ln(1/δ)/t))`` of the mean with probability ≥ 1 − δ (Bubeck, Cesa-Bianchi &
    Lugosi 2013, Lemma 2); that variance is finite only if ``E|y|^{2(1+α)} < ∞``, so for
    heavier tails ``v̂`` is a robust scale statistic that grows slowly with ``t``, not a
    consistent estimate. Assumes exchangeable rewards (the spread of ``f`` over the evaluated
    points counts as spread, which keeps the level above the signal) and outliers in fewer
    than ``K/2`` groups. Biased low for skewed values (≈ 0.69× for pairs of χ²₁ values).
    Measured against the truth in ``bench/mtucb_bench/studies/ht_moment_estimates.py``.

    Args:
        y: ``t ≥ 1`` rewards.
        alpha: Moment order α ∈ (0, 1].
        delta: Confidence of the group count.
        centre: ``False`` takes ``loc = 0`` (the raw moment ``E|y|^{1+α}``).

    Returns:
        ``(loc, v̂)`` as 0-dim tensors (``v̂ ≥ 1e-12``).
    """
    if y.dim() != 1 or y.shape[0] == 0:
        raise ValueError(f"`y` must be a non-empty vector of rewards, got {tuple(y.shape)}.")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"`alpha` must lie in (0, 1], got {alpha!r}.")
    t = y.shape[0]
    loc = y.median() if centre else y.new_zeros(())
    z = (y - loc).abs().pow(1.0 + alpha)
    K = max(1, min(math.ceil(8.0 * math.log(1.0 / delta)), t // 2))
    groups = torch.arange(t, device=y.device) % K
    sums = torch.zeros(K, dtype=y.dtype, device=y.device).index_add_(0, groups, z)
    counts = torch.bincount(groups, minlength=K).to(y)
    return loc, (sums / counts).median().clamp_min(1e-12)


def data_driven_moments(
    y: Tensor, alpha: float | None, v: float | None, centre: bool | None
) -> tuple[float, float | None, float]:
    """``(α, v, loc)`` of a heavy-tailed model: the data-driven estimates where not given.

    ``α = 1`` unless given; with ``v=None`` (the data-driven mode) ``v̂`` from
    :func:`robust_location_and_moment` (about the median when centring, else about 0; 1
    without data). ``centre=None`` centres only in the data-driven mode.

    Args:
        y: ``t`` raw rewards (``t = 0`` allowed).
        alpha: Moment order or ``None``.
        v: Declared moment bound or ``None``.
        centre: Subtract the median (``None``: only when ``v`` is ``None``).

    Returns:
        ``(alpha, v, loc)`` as Python floats (``v`` is the declared one when given).
    """
    alpha = 1.0 if alpha is None else float(alpha)
    centre = v is None if centre is None else bool(centre)
    loc, v_hat = 0.0, None
    if centre and y.shape[0]:
        loc_t, v_hat = robust_location_and_moment(y, alpha)
        loc = float(loc_t)
    if v is None:
        if v_hat is None:  # no centring (or no data): the moment about 0
            v_hat = robust_location_and_moment(y, alpha, centre=False)[1] if y.shape[0] else 1.0
        v = float(v_hat)
    return alpha, v, loc


def default_kernel(X: Tensor, targets: Tensor | None = None) -> tuple[Kernel, float | None]:
    """The kernel of a heavy-tailed model built without one, and a fitted ``λ`` (or ``None``).

    With ``targets`` (the data-driven mode, ``t ≥ 2``): :func:`fit_kernel_on_targets`.
    Otherwise the paper's SE kernel with lengthscale 0.2 (paper 001, §6). Either way the
    inputs must lie in the unit cube (lengthscale 0.2, or BoTorch's dimension-scaled
    lengthscale prior, assume it; outside, the mean would be ~0 almost everywhere).

    Raises:
        ValueError: if ``X`` leaves ``[0, 1]^d``.
    """
    from gpytorch.kernels import RBFKernel

    if X.shape[0] and ((X < -1e-9) | (X > 1 + 1e-9)).any():
        raise ValueError(
            "`train_X` lies outside the unit cube [0, 1]^d, where the default kernel "
            "(SE, lengthscale 0.2) would give a zero mean almost everywhere: normalise "
            "the inputs (botorch.utils.transforms.normalize) or pass `covar_module`."
        )
    if targets is not None and X.shape[0] >= 2:
        return fit_kernel_on_targets(X, targets)
    kernel = RBFKernel().to(X)
    kernel.lengthscale = DEFAULT_LENGTHSCALE
    return kernel, None


def fit_kernel_on_targets(X: Tensor, targets: Tensor) -> tuple[Kernel, float]:
    """BoTorch-fitted kernel and noise for a zero-mean GP on ``t`` (truncated) targets.

    A ``SingleTaskGP(X, targets)`` (BoTorch's defaults: RBF with its dimension-scaled
    lengthscale prior, Standardize, ``fit_gpytorch_mll``) supplies the lengthscales and the
    noise; converted from standardised units (outcome std ``s``): ``ScaleKernel`` with
    outputscale ``s²`` and ``λ = η s²``. Hyperparameters are returned frozen.

    Returns:
        ``(kernel, lam)``.
    """
    import copy
    import warnings

    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from gpytorch.kernels import ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant (all-truncated) targets are legitimate
        gp = SingleTaskGP(X, targets.unsqueeze(-1), outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    s2 = gp.outcome_transform.stdvs.squeeze().square().detach()
    kernel = ScaleKernel(copy.deepcopy(gp.covar_module)).to(X)
    kernel.outputscale = s2
    for p in kernel.parameters():
        p.requires_grad_(False)
    return kernel, float(gp.likelihood.noise.squeeze().detach() * s2)


def projection_levels(u_max: Tensor, t: int, alpha: float, v: float) -> Tensor:
    """Data-driven per-direction truncation levels of ATA-GP-UCB (issue 16).

    ``b_{t,i} = v^{1/(1+α)} t^{(1−α)/(2(1+α))} · √t · max_τ |u_{i,τ}|``: paper 001's level
    (Lemma 1 / Theorem 4, ``b_t = (v/L)^{1/(1+α)} t^{(1−α)/(2(1+α))}``, its schedule in ``t``
    kept) in the units of the terms ``u_{i,τ} y_τ``. Lemma 1 bounds
    ``Σ_τ E|u_{i,τ} y_τ|^{1+α}`` by ``v t^{(1−α)/2}`` from ``Σ_τ u²_{i,τ} ≤ 1``, i.e. the
    weights of a direction spread over the ``t`` rounds (``|u_{i,τ}| ≈ t^{−1/2}``); with a
    fitted kernel and a small ``λ`` a Nyström direction rests on one or a few rounds
    (``max_τ |u_{i,τ}| ≈ 1``) and the paper's level, in reward units, would zero nearly every
    term. The factor ``√t max_τ |u_{i,τ}|`` (1 for evenly spread weights) rescales the level
    to the direction's largest weight, so a term is kept iff its reward is within
    ``v^{1/(1+α)} t^{(1−α)/(2(1+α))} √t`` of the centre, up to its weight's share. The union-bound
    factor ``L`` is dropped (as the practical width drops the theory's β). Assumes ``v``
    estimates ``E|y − loc|^{1+α}`` of one reward (:func:`robust_location_and_moment`).

    Args:
        u_max: ``m`` largest weights ``max_τ |u_{i,τ}|`` per direction.
        t: Number of observations ``t ≥ 1``.
        alpha: Moment order ``α ∈ (0, 1]``.
        v: Moment estimate ``v > 0``.

    Returns:
        ``m`` levels ``b_{t,i}`` (dtype and device of ``u_max``).
    """
    scale = v ** (1.0 / (1.0 + alpha)) * float(t) ** ((1.0 - alpha) / (2.0 * (1.0 + alpha)) + 0.5)
    return scale * u_max
