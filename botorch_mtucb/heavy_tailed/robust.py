"""A robust default single-output model: leave-one-out screening of suspicious readings.

Corrupted observations come in kinds that call for opposite treatments: gross symmetric
outliers should be ignored, heavy-tailed noise everywhere should be averaged (clipping every
large reward at one level also clips the signal: the good and the bad rewards of a function
with a large range), and one-sided sensor failures (a reading far above every real value)
must not stay the largest target. :func:`robust_gp` needs no knowledge of the kind: it judges
each reading against what the *other* readings predict at its input.

The rule (:class:`RobustGP`), on the readings ``y``:

1. **Screening fit.** Kernel, ``λ`` and constant mean ``c`` fitted the BoTorch way on the raw
   readings ``y`` (:func:`~botorch_mtucb.heavy_tailed.moments.fit_gp_on_targets`, a
   ``SingleTaskGP`` with inputs normalised to the unit cube). Corrupted readings inflate ``λ``
   here, which can hide a milder one among them; winsorising ``y`` first (at paper 001's level
   ``b = v̂^{1/2} t^{1/4}``) would avoid that but clips the best clean readings too, and a
   kernel fitted on clipped peaks predicts them badly from their neighbours, so that the
   screening then flags the best clean readings. Missing a mild outlier costs less than
   discarding the best point. For the same reason a large minority of gross same-sign
   readings among few points (e.g. 3 of 15) can hide each other entirely.
2. **Leave-one-out residuals.** With ``A = K + λI`` and ``r = y − c``, the leave-one-out
   predictive mean and variance of reading ``i`` (Rasmussen & Williams 2006, eq. 5.12;
   :func:`loo_moments`) are

       m_i = y_i − [A⁻¹r]_i / [A⁻¹]_ii,      s²_i = 1 / [A⁻¹]_ii,

   both independent of ``y_i``; the standardised residual is ``e_i = (y_i − m_i) / s_i``.
3. **Flags.** Reading ``i`` is *suspicious* iff both

       |e_i| > c · max(f, ŝ)      and      |y_i − m_i| > k · σ_y,

   with ``c = SUSPICION_THRESHOLD``, ``k = SPREAD_THRESHOLD``, ``ŝ = 1.4826 · median_j |e_j|`` a
   robust scale of the residuals, ``f = SCALE_FLOOR`` and
   ``σ_y = 1.4826 · median_j |y_j − median(y)|`` the robust spread of the readings themselves
   (where at least half of the readings tie, e.g. a plateau, clipped or integer readings, that
   median is 0, and ``σ_y = √(π/2) · mean_j |y_j − median(y)|`` instead, the fallback of
   Iglewicz & Hoaglin's modified z-score, so that the second condition still holds back). The
   first condition asks that the reading be improbable under the model. ``ŝ ≈ 1`` for a calibrated
   model; ``ŝ > 1`` when the fitted noise is too small for the data (e.g. heavy tails everywhere),
   so ordinary noise is not flagged; ``ŝ < 1`` when corrupted readings have inflated the fitted
   ``λ``, which would otherwise hide them (masking). The floor ``f`` bounds how far an overdispersed
   fit may tighten the rule. The second condition asks that the reading also be far from its
   prediction on the scale of the data: a smooth GP's predictive spread is too small where the
   function is steeper or more peaked than its lengthscale allows, and there the best clean
   readings, at the top of a peak the fit under-predicts, have large standardised residuals; a
   deviation smaller than the readings' own spread is within what the function does over the domain,
   and is averaged, not removed. The rule is two-sided, so readings far above (sensor failures) and
   far below their neighbours are both caught, while a large reward that its neighbours explain (a
   peak) has a small residual, and one that nothing near it predicts has a large ``s_i``. Fewer than
   half of the readings can be flagged (``ŝ`` and ``σ_y`` are medians). No flags with fewer than
   ``MIN_SCREENED`` readings.
4. **Second pass.** The kernel and ``λ`` are refitted on the first pass's cleaned targets
   (step 5), and steps 2–3 are repeated with the readings flagged in the first pass left out
   of every conditioning (``ROBUST_PASSES = 2`` passes in all): for those, ``m_i`` and
   ``s²_i`` are the predictive moments given the other readings. A gross outlier drags its
   neighbours' first-pass predictions and inflates the first fit's ``λ``, which can get
   neighbours flagged or hide a second outlier; the second pass, which decides, judges them
   without it.
5. **Cleaning.** Flagged targets are replaced by their means ``m_i`` from the second pass (a
   failure reading then no longer pulls the fit up and is not the largest target); the others
   keep their raw values (no clipping of signal). The kernel and ``λ`` are refitted on the
   cleaned targets. A replaced reading adds no information about ``f``: its target is its
   predictive mean given the other readings, so the posterior mean is (up to the refit) that
   of the GP conditioned on the others. It does keep the posterior variance at its input
   small, as if it had been read there, so that the search does not return to re-read an
   input whose reading was judged corrupted (leaving flagged readings out of the
   conditioning instead sends it back; the benchmarks' docs measure both).

The final model is BoTorch's ``SingleTaskGP`` (Standardize, inputs normalised to the box) on the
cleaned readings, with the last fit's hyperparameters: a zero-mean GP on the cleaned targets less
the fitted constant ``c`` (:class:`~botorch_mtucb.models.TruncatedGP` with ``truncate=False``,
``c`` added back), on the caller's inputs. With no reading flagged it is ``SingleTaskGP`` fitted
on the raw readings, the same fit.
The unit-cube kernel ``k((x − lb)/w, (x' − lb)/w)`` is the same kernel on raw inputs with its
lengthscales multiplied by the box widths ``w``. :func:`recommend` returns the evaluated point with
the largest posterior mean among those with an unflagged reading.

Cost: ``ROBUST_PASSES + 1`` kernel fits and ``ROBUST_PASSES`` Cholesky factorisations of at
most ``t x t`` per model, no loop over observations.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from botorch.models.model import Model
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from botorch_mtucb.heavy_tailed.arms import check_training_data
from botorch_mtucb.heavy_tailed.moments import FittedTargetGP, fit_gp_on_targets
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.utils.incumbent import robust_incumbent
from botorch_mtucb.utils.initial_design import warn_outside_bounds

__all__ = [
    "MIN_SCREENED",
    "ROBUST_PASSES",
    "SCALE_FLOOR",
    "SPREAD_THRESHOLD",
    "SUSPICION_THRESHOLD",
    "RobustGP",
    "loo_moments",
    "recommend",
    "robust_gp",
]

#: ``c`` of the flag rule ``|e_i| > c · max(f, ŝ)`` and ``|y_i − m_i| > k · σ_y`` (module
#: docstring, step 3; a standardised Gaussian residual exceeds 3 with probability 0.27 %).
SUSPICION_THRESHOLD = 3.0

#: ``k`` of the flag rule's second condition ``|y_i − m_i| > k · σ_y`` (module docstring,
#: step 3).
SPREAD_THRESHOLD = 3.0

#: ``f`` of the flag rule ``|e_i| > c · max(f, ŝ)``: the smallest robust residual scale the
#: rule trusts (module docstring, step 3).
SCALE_FLOOR = 0.5

#: Screening passes (leave-one-out residuals and flags; from the second on, the previous
#: pass's flagged readings left out of the conditioning).
ROBUST_PASSES = 2

#: Fewest readings that are screened (fewer: no reading is flagged).
MIN_SCREENED = 5

_MAD_TO_SD = 1.4826  # 1 / Φ⁻¹(3/4): MAD of a standard normal → its standard deviation
_MEAN_AD_TO_SD = math.sqrt(math.pi / 2)  # mean absolute deviation of a normal → its sd


def loo_moments(
    kernel: Kernel, lam: float, X: Tensor, targets: Tensor, exclude: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Leave-one-out predictive means and variances of a zero-mean GP at its training inputs.

    Rasmussen & Williams (2006), eq. 5.12: with ``A = K(X, X) + λI``,
    ``m_i = y_i − [A⁻¹y]_i / [A⁻¹]_ii`` is the posterior mean at ``x_i`` of the GP
    conditioned on every reading but ``i`` (same hyperparameters), and ``s²_i = 1/[A⁻¹]_ii``
    its predictive variance of a new reading there (noise ``λ`` included).

    With ``exclude`` (``t`` bools, set ``E``), the readings in ``E`` are left out of every
    conditioning: for ``i ∉ E`` the formulas above on the readings outside ``E``; for ``i ∈ E``
    the predictive moments given the readings outside ``E``,
    ``m_i = k_iSᵀ A_SS⁻¹ y_S``, ``s²_i = k(x_i, x_i) + λ − k_iSᵀ A_SS⁻¹ k_iS``
    (``S`` the complement of ``E``, not empty).

    Args:
        kernel: Covariance function ``k``.
        lam: Noise variance ``λ > 0``.
        X: ``t x d`` inputs.
        targets: ``t`` targets ``y``.
        exclude: Optional ``t`` bools: readings to leave out of every conditioning.

    Returns:
        ``(m, s2)``, each ``t``, in the dtype and on the device of ``targets``.

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> X = torch.linspace(0, 1, 6, dtype=torch.float64).unsqueeze(-1)
        >>> y = torch.sin(3 * X[:, 0])
        >>> m, s2 = loo_moments(RBFKernel().to(X), 0.1, X, y)
        >>> m.shape, bool((s2 > 0.1).all())
        (torch.Size([6]), True)
        >>> y[2] = 50.0  # left out: no other moment changes, m[2] is a prediction
        >>> m2, _ = loo_moments(RBFKernel().to(X), 0.1, X, y, exclude=X[:, 0] == X[2, 0])
        >>> bool(abs(m2[2]) < 2)
        True
    """
    with torch.no_grad():
        K = kernel(X, X).to_dense().to(torch.float64)
        y = targets.to(torch.float64)
        t = y.shape[0]
        keep = None if exclude is None or not bool(exclude.any()) else ~exclude.to(torch.bool)
        S = slice(None) if keep is None else keep.nonzero().view(-1)
        A = K[S][:, S] + lam * torch.eye(K[S].shape[0], dtype=K.dtype, device=K.device)
        L = psd_safe_cholesky(A)
        A_inv = torch.cholesky_inverse(L)
        d = A_inv.diagonal()
        m = y[S] - (A_inv @ y[S]) / d
        s2 = d.reciprocal()
        if keep is not None:
            m_all, s2_all = y.new_empty(t), y.new_empty(t)
            m_all[S], s2_all[S] = m, s2
            E = (~keep).nonzero().view(-1)
            K_SE = K[S][:, E]
            W = torch.cholesky_solve(K_SE, L)  # A_SS⁻¹ k_S(x_i), one column per excluded i
            m_all[E] = W.mT @ y[S]
            s2_all[E] = K.diagonal()[E] + lam - (K_SE * W).sum(dim=0)
            m, s2 = m_all, s2_all
    return m.to(targets), s2.to(targets)


def _screen(fit: FittedTargetGP, U: Tensor, y: Tensor, exclude: Tensor | None,
            threshold: float, spread_threshold: float) -> tuple[Tensor, Tensor, Tensor]:
    """One pass of steps 2–3 and step 5's replacement: ``(flags, cleaned targets,
    standardised residuals)``; the readings in ``exclude`` (the previous pass's flags) are
    left out of the conditioning."""
    m, s2 = loo_moments(fit.kernel, fit.lam, U, y - fit.mean, exclude)
    m = m + fit.mean
    e = (y - m) / s2.sqrt()
    if y.shape[0] < MIN_SCREENED:
        flags = torch.zeros_like(y, dtype=torch.bool)
    else:
        scale = (_MAD_TO_SD * e.abs().median()).clamp_min(SCALE_FLOOR)
        dev = (y - y.median()).abs()
        spread = _MAD_TO_SD * dev.median()  # 0 when half the readings tie: the mean deviation
        spread = torch.where(spread > 0, spread, _MEAN_AD_TO_SD * dev.mean())
        flags = (e.abs() > threshold * scale) & ((y - m).abs() > spread_threshold * spread)
    return flags, torch.where(flags, m, y), e


def _normalising_box(X: Tensor, bounds: Tensor | None) -> tuple[Tensor, Tensor]:
    """``(lower, width)`` of the box mapped to the unit cube (``d`` each)."""
    d = X.shape[-1]
    if bounds is None:
        lower, upper = X.min(dim=0).values, X.max(dim=0).values
        width = upper - lower
        return lower, torch.where(width > 0, width, torch.ones_like(width))
    if not torch.is_tensor(bounds) or bounds.shape != (2, d):
        shape = tuple(bounds.shape) if torch.is_tensor(bounds) else type(bounds).__name__
        raise ValueError(f"`bounds` must be a 2 x d = 2 x {d} tensor (lower; upper), got {shape}.")
    bounds = bounds.to(X)
    if not bool(bounds.isfinite().all()) or not bool((bounds[1] > bounds[0]).all()):
        raise ValueError("`bounds` must be finite with upper > lower in every dimension.")
    warn_outside_bounds(X, bounds)
    return bounds[0], bounds[1] - bounds[0]


def _raw_input_kernel(kernel: Kernel, width: Tensor) -> Kernel:
    """The fitted unit-cube kernel as a kernel on raw inputs: lengthscales times ``width``."""
    kernel = copy.deepcopy(kernel)
    base = kernel.base_kernel
    lengthscale = base.lengthscale.detach() * width.to(base.lengthscale)
    base.register_constraint("raw_lengthscale", Positive())  # widths < 1 may leave the prior box
    base.lengthscale = lengthscale
    for p in kernel.parameters():
        p.requires_grad_(False)
    return kernel


class _FixedLocation:
    """A :class:`~botorch_mtucb.heavy_tailed.moments.MomentEstimator` returning a given centre."""

    def __init__(self, loc: Tensor) -> None:
        self.loc = loc

    def location_and_moment(self, y: Tensor, alpha: float, centre: bool) -> tuple[Tensor, Tensor]:
        return self.loc.to(y), torch.ones((), dtype=y.dtype, device=y.device)


class RobustGP(TruncatedGP):
    """GP on readings screened by leave-one-out residuals (module docstring, steps 1–5).

    A :class:`~botorch_mtucb.models.TruncatedGP` without truncation (``truncate=False``) whose
    targets are the cleaned rewards (flagged readings replaced by their predictive means given
    the other readings, step 5) and whose kernel and ``λ`` are fitted on them; predictions
    in the rewards' units on the caller's inputs. ``beta()`` is the practical width
    (:data:`~botorch_mtucb.heavy_tailed.moments.PRACTICAL_WIDTH`), for
    :class:`~botorch_mtucb.acquisition.HeavyTailedUCB`. Build it with :func:`robust_gp`.

    Attributes:
        suspicious: ``t`` bool tensor, ``True`` for the readings judged suspicious (their
            targets replaced); ``False`` for readings added by ``condition_on_observations``
            (not screened: rebuild the model to screen them).
        residuals: ``t₀`` standardised leave-one-out residuals ``e_i`` of the second pass
            (``t₀`` the readings the model was built on).
        threshold: ``c`` of the flag rule.
        spread_threshold: ``k`` of the flag rule.

    ``train_Y`` holds the cleaned rewards; ``raw_Y`` the readings as given.

    Example:
        >>> X = torch.rand(30, 2, dtype=torch.float64)
        >>> Y = torch.sin(4 * X[:, :1]) + 0.05 * torch.randn(30, 1, dtype=torch.float64)
        >>> Y[3] = 20.0  # a sensor failure
        >>> model = RobustGP(X, Y)
        >>> bool(model.suspicious[3]), model.suspicious.shape
        (True, torch.Size([30]))
        >>> abs(float(model.train_Y[3])) < 2.0  # replaced by its neighbours' prediction
        True
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor | None = None,
        *,
        threshold: float = SUSPICION_THRESHOLD,
        spread_threshold: float = SPREAD_THRESHOLD,
    ) -> None:
        """
        Args:
            train_X: ``t x d`` inputs (any box; ``t ≥ 1``; fewer than
                :data:`MIN_SCREENED` readings are not screened).
            train_Y: ``t x 1`` raw rewards (maximisation).
            bounds: ``2 x d`` box (lower; upper) normalised to the unit cube for the kernel
                fit (its lengthscale prior assumes the unit cube). ``None``: the data's own
                min/max box (as BoTorch's learned ``Normalize``; a dimension without spread
                gets width 1).
            threshold: ``c > 0`` of the flag rule (module docstring, step 3).
            spread_threshold: ``k ≥ 0`` of the flag rule's second condition
                ``|y_i − m_i| > k · σ_y`` (``0``: the first condition alone).

        Raises:
            TypeError: if ``train_X`` / ``train_Y`` are not float tensors.
            ValueError: for wrong shapes, non-finite values, ``t = 0``, bad ``bounds``,
                ``threshold`` or ``spread_threshold``.
        """
        X, y = check_training_data(train_X, train_Y)
        if X.shape[0] < 1:
            raise ValueError("`train_X` must hold at least 1 observation, got 0.")
        threshold, spread_threshold = float(threshold), float(spread_threshold)
        if not threshold > 0.0 or threshold == float("inf"):
            raise ValueError(f"`threshold` must be a positive finite number, got {threshold!r}.")
        if not spread_threshold >= 0.0 or spread_threshold == float("inf"):
            raise ValueError(
                f"`spread_threshold` must be a finite number >= 0, got {spread_threshold!r}."
            )
        lower, width = _normalising_box(X, bounds)
        U = (X - lower) / width  # new tensors: the caller's are never written to
        fit = fit_gp_on_targets(U, y)  # step 1
        flags = None
        for _ in range(ROBUST_PASSES):  # steps 2-5, bounded; the last fit is the model's
            flags, targets, residuals = _screen(fit, U, y, flags, threshold, spread_threshold)
            fit = fit_gp_on_targets(U, targets)
        super().__init__(
            X, targets.unsqueeze(-1), v=1.0,
            covar_module=_raw_input_kernel(fit.kernel, width), lam=fit.lam,
            constants="practical", truncate=False, centre=True,
            moment_estimator=_FixedLocation(fit.mean),
        )
        self.threshold, self.spread_threshold = threshold, spread_threshold
        self._suspicious = flags
        self._residuals = residuals
        self._raw_y = y.clone()

    _STATE = (*TruncatedGP._STATE, "threshold", "spread_threshold")

    def _extra_primary(self) -> dict:
        return {**super()._extra_primary(), "suspicious": self._suspicious.clone(),
                "residuals": self._residuals.detach().clone(), "raw_y": self._raw_y.clone()}

    def _import_extra(self, state: dict) -> None:
        super()._import_extra(state)
        self._suspicious = state["suspicious"].to(device=state["X"].device, dtype=torch.bool)
        self._residuals, self._raw_y = state["residuals"], state["raw_y"]

    @property
    def suspicious(self) -> Tensor:
        """``t`` bools: the readings judged suspicious (later conditioned readings: ``False``)."""
        extra = self.num_observations - self._suspicious.shape[0]
        if extra == 0:
            return self._suspicious
        return torch.cat([self._suspicious, self._suspicious.new_zeros(extra)])

    @property
    def residuals(self) -> Tensor:
        """``t₀`` standardised leave-one-out residuals ``e_i`` of the screened readings."""
        return self._residuals

    @property
    def raw_Y(self) -> Tensor:
        """``t x 1`` readings as observed (``train_Y`` holds the cleaned ones)."""
        cleaned = self.train_Y
        raw = self._raw_y.to(cleaned).unsqueeze(-1)
        return torch.cat([raw, cleaned[raw.shape[0]:]]) if cleaned.shape[0] > raw.shape[0] else raw


def robust_gp(train_X: Tensor, train_Y: Tensor, bounds: Tensor | None = None) -> RobustGP:
    """The default robust single-output model: a :class:`RobustGP` (module docstring).

    Needs no knowledge of the kind of corruption (gross outliers, heavy-tailed noise, one-sided
    failures): readings are judged against their leave-one-out predictions. Hyperparameters
    are fitted here; rebuild the model each round.

    Args:
        train_X: ``t x d`` inputs in any box (``t ≥ 1``; float32 or float64, the model follows
            their dtype and device).
        train_Y: ``t x 1`` raw rewards (maximisation), same dtype.
        bounds: ``2 x d`` box of the search space, mapped to the unit cube for the kernel fit;
            ``None``: the data's own min/max box (like BoTorch's learned ``Normalize``). The
            posterior is on the caller's (unnormalised) inputs either way.

    Returns:
        A fitted :class:`RobustGP` with its ``suspicious`` flags (``t`` bools).

    Raises:
        TypeError: if ``train_X`` / ``train_Y`` are not float tensors.
        ValueError: for batched or wrongly shaped data, non-finite values, ``t = 0`` or bad
            ``bounds``.

    Warns:
        InputDataWarning: If rows of ``train_X`` lie outside ``bounds``.

    Example:
        >>> from botorch.optim import optimize_acqf
        >>> from botorch_mtucb.acquisition import robust_acquisition
        >>> bounds = torch.tensor([[-5.0, 0.0], [5.0, 2.0]], dtype=torch.float64)
        >>> X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(20, 2, dtype=torch.float64)
        >>> Y = -(X[:, :1] / 5).square() + 0.01 * torch.randn(20, 1, dtype=torch.float64)
        >>> Y[0] = -50.0  # a gross outlier
        >>> model = robust_gp(X, Y, bounds)
        >>> bool(model.suspicious[0])
        True
        >>> candidate, _ = optimize_acqf(
        ...     robust_acquisition(model), bounds, q=1, num_restarts=2, raw_samples=32
        ... )
        >>> recommend(model, X).shape
        torch.Size([1, 2])
    """
    if torch.is_tensor(train_X) and torch.is_tensor(train_Y) and (
        train_X.dim() != 2 or train_Y.dim() != 2
    ):
        raise ValueError(
            f"`train_X` must be t x d and `train_Y` t x 1, got {tuple(train_X.shape)} and "
            f"{tuple(train_Y.shape)} (batched data is not supported here)."
        )
    return RobustGP(train_X, train_Y, bounds)


def _clipped_readings(model: Model) -> Tensor | None:
    """``t`` bools: the readings a :class:`~botorch_mtucb.models.TruncatedGP` truncated or
    clipped (its targets differ from the centred raw rewards); ``None`` for other models."""
    if not isinstance(model, TruncatedGP) or not model.truncate:
        return None
    with torch.no_grad():
        centred = model.train_Y[:, 0] - model.location
        return model.train_targets != centred


def recommend(model: Model, X: Tensor) -> Tensor:
    """The recommended point: the best posterior mean among points with a trusted reading.

    Rule: a row ``x`` of ``X`` is a candidate unless every training reading at ``x`` (same
    input) is flagged, i.e. a point whose only readings are suspicious is never returned; a
    point also read once without a flag stays a candidate. Among the candidates, the row
    with the largest posterior mean ``μ(x)`` is returned. Flags: ``model.suspicious``
    (:class:`RobustGP`); for a truncating :class:`~botorch_mtucb.models.TruncatedGP`, the
    readings it truncated or clipped (a failure reading clipped to the level stays the
    largest target); none for any other single-output model (plain ``argmax μ``). Rows of
    ``X`` without a training reading are candidates.

    Args:
        model: A single-output BoTorch model.
        X: ``t x d`` evaluated points (usually the training inputs), on the model's input scale.

    Returns:
        ``1 x d``: a row of ``X``.

    Raises:
        ValueError: if ``model`` has more than one output (for several objectives use
            :func:`~botorch_mtucb.acquisition.recommend_pareto_set`), if ``X`` is not a
            non-empty ``t x d`` tensor, or every row is excluded.

    Example:
        >>> X = torch.rand(30, 2, dtype=torch.float64)
        >>> Y = torch.sin(4 * X[:, :1]) + 0.05 * torch.randn(30, 1, dtype=torch.float64)
        >>> Y[5] = 20.0  # a failure reading: the largest reward, but never recommended
        >>> model = robust_gp(X, Y)
        >>> bool((recommend(model, X) == X[5]).all())
        False
    """
    outputs = getattr(model, "num_outputs", 1)
    if outputs != 1:
        raise ValueError(
            f"`model` must have a single output (one objective), got {outputs} outputs; for "
            "several objectives use botorch_mtucb.acquisition.recommend_pareto_set."
        )
    if not torch.is_tensor(X) or X.dim() != 2 or X.shape[0] == 0:
        shape = tuple(X.shape) if torch.is_tensor(X) else type(X).__name__
        raise ValueError(f"`X` must be a non-empty t x d tensor of evaluated points, got {shape}.")
    flags: Any = getattr(model, "suspicious", None)
    if flags is None:
        flags = _clipped_readings(model)
    index, _ = robust_incumbent(model, X, suspicious=flags)
    return X[index].unsqueeze(0).clone()
