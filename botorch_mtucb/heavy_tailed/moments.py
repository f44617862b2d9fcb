"""Data-driven ``(α, v)``, the moment-estimator seam and the fitted default kernel (paper 001).

Paper 001 assumes a declared moment bound ``E[|y_t|^{1+α} | F_{t−1}] ≤ v`` (§2) and sets the
truncation levels from it (TGP-UCB, Algorithm 1: ``b_t = v^{1/(1+α)} t^{1/(2(1+α))}``;
ATA-GP-UCB, Algorithm 2: Lemma 1 / Theorem 4). :class:`~botorch_mtucb.models.TruncatedGP` and
:class:`~botorch_mtucb.models.AdaptiveTruncationGP` built without ``v`` (the data-driven mode)
read it off the rewards instead:

* a :class:`MomentEstimator` returns a location ``loc`` and an estimate ``v̂`` of
  ``E|y − loc|^{1+α}``; the default, :class:`MedianOfMeans`, is the median and a
  median-of-means estimate (:func:`robust_location_and_moment`). A new estimator is one class
  with a ``location_and_moment`` method, passed to a model as ``moment_estimator=``;
* :func:`data_driven_moments` turns the optional ``(α, v, centre)`` of a model into the values
  it uses;
* :func:`default_kernel` / :func:`fit_kernel_on_targets` give the kernel (and ``λ``) of a model
  built without one;
* :func:`projection_levels` gives ATA-GP-UCB's data-driven per-direction truncation levels;
* :data:`PRACTICAL_WIDTH` is the constant UCB width of the data-driven mode.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import NamedTuple, Protocol, runtime_checkable

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Standardize
from gpytorch.kernels import Kernel, RBFKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_mtucb.utils.validation import as_real

__all__ = [
    "DEFAULT_LENGTHSCALE",
    "FittedTargetGP",
    "PRACTICAL_WIDTH",
    "MedianOfMeans",
    "MomentEstimator",
    "data_driven_moments",
    "default_kernel",
    "fit_gp_on_targets",
    "fit_kernel_on_targets",
    "projection_levels",
    "robust_location_and_moment",
]

#: Default SE lengthscale when no kernel is given (paper 001, §6 synthetic experiments).
DEFAULT_LENGTHSCALE = 0.2

#: UCB width ``w`` of ``μ + w σ`` returned by the data-driven models' ``beta()``
#: (``constants="practical"``), in place of the theory's ``β_{t+1}``.
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
    than ``K/2`` groups. Biased low for skewed values (the median of group means lies below
    their mean). Where that median is 0 (at least half of the groups hold only readings equal
    to ``loc``: a plateau, clipped, binary or integer readings) ``v̂`` is the median of the
    nonzero ``|y_s − loc|^{1+α}`` instead, so that the readings that differ from the
    location are not all truncated away.

    Args:
        y: ``t ≥ 1`` rewards.
        alpha: Moment order α ∈ (0, 1].
        delta: Confidence of the group count.
        centre: ``False`` takes ``loc = 0`` (the raw moment ``E|y|^{1+α}``).

    Returns:
        ``(loc, v̂)`` as 0-dim tensors (``v̂ ≥ 1e-12``).

    Example:
        >>> y = torch.tensor([1.0, 2.0, 3.0, 4.0, 100.0], dtype=torch.float64)
        >>> loc, v = robust_location_and_moment(y, alpha=1.0)
        >>> float(loc), float(v)
        (3.0, 1.0)
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
    v = (sums / counts).median()
    # At least half the groups all at loc (plateau, clipped, binary or integer readings): the
    # median of the readings that differ from loc, so that they are not all truncated away.
    differ = torch.where(z > 0, z, torch.full_like(z, math.nan)).nanmedian()
    v = torch.where(v > 0, v, differ)
    return loc, torch.nan_to_num(v, nan=1e-12).clamp_min(1e-12)



@runtime_checkable
class MomentEstimator(Protocol):
    """What a data-driven heavy-tailed model asks of its rewards: a location and a moment.

    Paper 001's truncation levels need the moment bound ``v`` of ``E|y|^{1+α} ≤ v`` (§2). A model
    built without ``v`` calls :meth:`location_and_moment` once, at construction, on its ``t ≥ 1``
    raw rewards: the location ``loc`` is subtracted from the rewards (the model stores ``y − loc``
    and adds ``loc`` back to its predictions) and the moment ``v̂`` of ``E|y − loc|^{1+α}`` replaces
    ``v`` in every level and width. Both stay fixed when the model is conditioned on more data.

    Any object with this method satisfies the protocol (``isinstance`` checks it at runtime);
    the default is :class:`MedianOfMeans`.

    Example:
        >>> class MeanAbs:
        ...     def location_and_moment(self, y, alpha, centre):
        ...         loc = y.mean() if centre else y.new_zeros(())
        ...         return loc, (y - loc).abs().pow(1 + alpha).mean()
        >>> isinstance(MeanAbs(), MomentEstimator)
        True
    """

    def location_and_moment(
        self, y: Tensor, alpha: float, centre: bool
    ) -> tuple[Tensor | float, Tensor | float]:
        """Location and moment estimate of ``t`` rewards.

        Args:
            y: ``t ≥ 1`` raw rewards (a vector; do not modify).
            alpha: Moment order ``α ∈ (0, 1]``.
            centre: ``False``: the location is 0 and the moment is the raw ``E|y|^{1+α}``.

        Returns:
            ``(loc, v̂)``: 0-dim tensors or numbers, ``v̂ > 0`` and finite.
        """
        ...  # pragma: no cover


class MedianOfMeans:
    """The default :class:`MomentEstimator`: median location, median-of-means moment.

    ``loc = median(y)`` and ``v̂`` the median of ``K = max(1, min(⌈8 ln(1/δ)⌉, ⌊t/2⌋))`` group
    means of ``|y_s − loc|^{1+α}`` (:func:`robust_location_and_moment`, where its assumptions
    are stated).

    Example:
        >>> y = torch.tensor([1.0, 2.0, 3.0, 4.0, 100.0], dtype=torch.float64)
        >>> loc, v = MedianOfMeans().location_and_moment(y, 1.0, centre=True)
        >>> float(loc), float(v)
        (3.0, 1.0)
    """

    def __init__(self, delta: float = 0.1) -> None:
        """
        Args:
            delta: Confidence ``δ ∈ (0, 1)`` of the group count ``K``.
        """
        if not 0.0 < float(delta) < 1.0:
            raise ValueError(f"`delta` must lie in (0, 1), got {delta!r}.")
        self.delta = float(delta)

    def location_and_moment(self, y: Tensor, alpha: float, centre: bool) -> tuple[Tensor, Tensor]:
        """:func:`robust_location_and_moment` with this estimator's ``δ``."""
        return robust_location_and_moment(y, alpha, self.delta, centre)

    def __repr__(self) -> str:
        return f"MedianOfMeans(delta={self.delta})"


_DEFAULT_ESTIMATOR = MedianOfMeans()


def data_driven_moments(
    y: Tensor,
    alpha: float | None,
    v: float | None,
    centre: bool | None,
    estimator: MomentEstimator | None = None,
) -> tuple[float, float | None, float]:
    """``(α, v, loc)`` of a heavy-tailed model: the data-driven estimates where not given.

    ``α = 1`` unless given; with ``v=None`` (the data-driven mode) ``v̂`` from ``estimator``
    (about its location when centring, else about 0; 1 without data). ``centre=None`` centres
    only in the data-driven mode.

    Args:
        y: ``t`` raw rewards (``t = 0`` allowed).
        alpha: Moment order or ``None``.
        v: Declared moment bound or ``None``.
        centre: Subtract the estimator's location (``None``: only when ``v`` is ``None``).
        estimator: A :class:`MomentEstimator`; default :class:`MedianOfMeans` with ``δ = 0.1``.

    Returns:
        ``(alpha, v, loc)`` as Python floats (``v`` is the declared one when given).

    Raises:
        ValueError: if ``estimator`` is not a :class:`MomentEstimator`.

    Example:
        >>> y = torch.tensor([1.0, 2.0, 3.0, 4.0, 100.0], dtype=torch.float64)
        >>> data_driven_moments(y, alpha=None, v=None, centre=None)
        (1.0, 1.0, 3.0)
        >>> data_driven_moments(y, alpha=0.5, v=4.0, centre=None)  # declared: as given
        (0.5, 4.0, 0.0)
    """
    if estimator is None:
        estimator = _DEFAULT_ESTIMATOR
    elif not isinstance(estimator, MomentEstimator):
        raise ValueError(
            "`moment_estimator` must have a `location_and_moment(y, alpha, centre)` method "
            f"(MomentEstimator), got {type(estimator).__name__}."
        )
    alpha = 1.0 if alpha is None else as_real(alpha, "alpha", "a number in (0, 1]")
    centre = v is None if centre is None else bool(centre)
    loc, v_hat = 0.0, None
    if centre and y.shape[0]:
        loc_t, v_hat = estimator.location_and_moment(y, alpha, True)
        loc = float(loc_t)
    if v is None:
        if v_hat is None:  # no centring (or no data): the moment about 0
            v_hat = estimator.location_and_moment(y, alpha, False)[1] if y.shape[0] else 1.0
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
    if X.shape[0] and ((X < -1e-9) | (X > 1 + 1e-9)).any():
        raise ValueError(
            "`train_X` lies outside the unit cube [0, 1]^d, where the default kernel "
            "(SE, lengthscale 0.2) would give a zero mean almost everywhere: normalise "
            "the inputs (botorch.utils.transforms.normalize) or pass `covar_module`."
        )
    if targets is not None and X.shape[0] >= 2:
        return fit_kernel_on_targets(X, targets)
    kernel = RBFKernel().to(X)
    kernel.lengthscale = torch.tensor(DEFAULT_LENGTHSCALE, dtype=X.dtype, device=X.device)
    return kernel, None


class FittedTargetGP(NamedTuple):
    """Hyperparameters of a GP fitted on ``t`` targets, in the targets' units.

    Attributes:
        kernel: Frozen ``ScaleKernel`` (outputscale in target units²).
        lam: Noise variance ``λ`` in target units².
        mean: Fitted constant mean ``c`` in target units (0-dim tensor).
    """

    kernel: Kernel
    lam: float
    mean: Tensor


def fit_gp_on_targets(X: Tensor, targets: Tensor) -> FittedTargetGP:
    """BoTorch-fitted kernel, noise and constant mean of a GP on ``t`` targets.

    A ``SingleTaskGP(X, targets)`` (BoTorch's defaults: RBF with its dimension-scaled
    lengthscale prior, constant mean, Standardize, ``fit_gpytorch_mll``) supplies the
    lengthscales, the noise and the constant; converted from standardised units (outcome
    mean ``ȳ``, std ``s``): ``ScaleKernel`` with outputscale ``s²``, ``λ = η s²`` and
    ``c = ȳ + s c̃``. A zero-mean GP with this kernel and ``λ`` on ``targets − c`` has
    ``SingleTaskGP``'s posterior (plus ``c``). Hyperparameters are returned frozen. The fit
    runs in float64 whatever the data's dtype; the results follow the data's dtype and device.

    Args:
        X: ``t x d`` inputs (the kernel's lengthscale prior assumes the unit cube).
        targets: ``t`` targets.

    Returns:
        ``FittedTargetGP(kernel, lam, mean)``.

    Example:
        >>> X = torch.rand(12, 2, dtype=torch.float64)
        >>> fit = fit_gp_on_targets(X, 3.0 + torch.sin(5 * X[:, 0]))
        >>> fit.kernel.outputscale.shape, fit.lam > 0, fit.mean.shape
        (torch.Size([]), True, torch.Size([]))
    """
    # fitted in float64 whatever the data's dtype (a float32 marginal-likelihood fit can land
    # on other hyperparameters); the results are returned in the data's dtype
    fit_dtype = torch.promote_types(X.dtype, torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant (all-truncated) targets are legitimate
        gp = SingleTaskGP(X.to(fit_dtype), targets.to(fit_dtype).unsqueeze(-1),
                          outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    transform = gp.outcome_transform
    s = transform.stdvs.squeeze().detach()
    kernel = ScaleKernel(copy.deepcopy(gp.covar_module))
    kernel.outputscale = s.square()
    kernel = kernel.to(X)
    for p in kernel.parameters():
        p.requires_grad_(False)
    mean = transform.means.squeeze().detach() + s * gp.mean_module.constant.squeeze().detach()
    lam = float(gp.likelihood.noise.squeeze().detach() * s.square())
    return FittedTargetGP(kernel, lam, mean.to(X.dtype))


def fit_kernel_on_targets(X: Tensor, targets: Tensor) -> tuple[Kernel, float]:
    """BoTorch-fitted kernel and noise for a zero-mean GP on ``t`` (truncated) targets.

    :func:`fit_gp_on_targets` without the mean: ``(kernel, lam)``.
    """
    fit = fit_gp_on_targets(X, targets)
    return fit.kernel, fit.lam


def projection_levels(u_max: Tensor, t: int, alpha: float, v: float) -> Tensor:
    """Data-driven per-direction truncation levels of ATA-GP-UCB (paper 001, Algorithm 2).

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
    estimates ``E|y − loc|^{1+α}`` of one reward (a :class:`MomentEstimator`).

    Args:
        u_max: ``m`` largest weights ``max_τ |u_{i,τ}|`` per direction.
        t: Number of observations ``t ≥ 1``.
        alpha: Moment order ``α ∈ (0, 1]``.
        v: Moment estimate ``v > 0``.

    Returns:
        ``m`` levels ``b_{t,i}`` (dtype and device of ``u_max``).

    Example:
        >>> projection_levels(torch.tensor([0.25, 1.0]), t=16, alpha=1.0, v=4.0)
        tensor([2., 8.])
    """
    scale = v ** (1.0 / (1.0 + alpha)) * float(t) ** ((1.0 - alpha) / (2.0 * (1.0 + alpha)) + 0.5)
    return scale * u_max
