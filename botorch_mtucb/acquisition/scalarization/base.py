"""The scalarization contract s_λ: Rⁿ → R and its sign convention (paper 000, §2).

A scalarization maps n objective values to one number that is maximised; it is monotone
(better in every objective ⇒ larger s_λ) and L_λ-Lipschitz in the ℓ2-norm, the two properties
the regret bounds of paper 000 use. :class:`Scalarization` is the base class of
:class:`~botorch_mtucb.acquisition.scalarization.linear.LinearScalarization`,
:class:`~botorch_mtucb.acquisition.scalarization.chebyshev.ChebyshevScalarization` and
:class:`~botorch_mtucb.acquisition.scalarization.hypervolume.HypervolumeScalarization`.

Sign convention (one rule everywhere): **every scalarization is maximised, and so is every
objective** unless it is listed in ``minimize``. An objective ``i`` listed in ``minimize`` is
negated before scalarizing (``y_i → −y_i``, and likewise ``z_i → −z_i`` for a reference
point), so the caller keeps data, models and the reference point in their original units. With
this rule a larger scalarized value is always better, the scalarizations stay monotone and
their Lipschitz constants are unchanged.

Each s_λ is the minimum of ``P`` smooth pieces (:meth:`Scalarization.pieces`; ``P = 1`` for
the linear one), and each gives the directional upper confidence bound of
:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` from the posterior variances along
its own directions W (:meth:`Scalarization.directions`, :func:`project_covariance`).

Weights lie on the simplex Λ = {λ ≥ 0, ‖λ‖₁ = 1} (the paper asks λ ≻ 0; zero weights are
accepted but make s_λ only weakly monotone in the corresponding objective). The hypervolume
scalarization takes λ on the positive unit sphere and keeps its direction on the simplex as
``weights``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import torch
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from botorch_mtucb.utils.validation import as_flag_vector, as_float_vector, check_finite

__all__ = ["Scalarization", "check_scalarization", "project_covariance"]

_SIMPLEX_ATOL = 1e-6


def _as_vector(value: Tensor | Sequence[float], name: str) -> Tensor:
    """Return ``value`` as a fresh finite 1-d floating tensor (a floating tensor keeps its
    dtype; lists and other numbers are read in float64)."""
    return as_float_vector(value, name)


class Scalarization(ABC):
    """Base class: a monotone, L_λ-Lipschitz map s_λ: Rⁿ → R, maximised (paper 000, §2).

    A subclass gives s_λ as the minimum of smooth pieces (``_pieces``), its ℓ2-Lipschitz
    constant L_λ (what the spectral bound u(x) = s_λ(μ(x)) + L_λ β ‖Γ(x, x)‖^{1/2} of paper 000,
    eq. (2) needs) and its directional bound (:meth:`directions`,
    :meth:`directional_ucb_from_variances`). Outcomes are passed in original units; minimised
    objectives are negated inside (module docstring). The weights, ``minimize`` and the
    reference point are converted once per dtype and device and cached, so they are fixed once
    a scalarization has been used: build a new one for new weights.

    Attributes:
        weights: ``n`` weight vector λ on the simplex.
        minimize: ``n`` boolean tensor; objectives negated before scalarizing.
        lipschitz: L_λ, a 0-dim tensor (ℓ2-Lipschitz constant of s_λ, paper 000 §2).

    Example:
        >>> from botorch_mtucb.acquisition import LinearScalarization
        >>> s = LinearScalarization([0.5, 0.5], minimize=[False, True])
        >>> isinstance(s, Scalarization), s.num_objectives
        (True, 2)
        >>> s.signs(torch.zeros(2))
        tensor([ 1., -1.])
    """

    def __init__(
        self, weights: Tensor | Sequence[float], minimize: Sequence[bool] | Tensor | None = None
    ) -> None:
        """
        Args:
            weights: ``n`` nonnegative weights λ summing to one.
            minimize: Optional ``n`` booleans; ``True`` marks an objective to be minimised.
        """
        w = _as_vector(weights, "weights")
        if (w < 0).any() or abs(float(w.sum()) - 1.0) > _SIMPLEX_ATOL:
            raise ValueError(
                "`weights` must lie on the simplex (nonnegative, summing to 1), got "
                f"{w.tolist()} (sum {float(w.sum()):.6g})."
            )
        self.weights = w
        n = w.numel()
        if minimize is None:
            mins = torch.zeros(n, dtype=torch.bool)
        else:
            mins = as_flag_vector(minimize, "minimize", n).cpu()
        self.minimize = mins

    @property
    def num_objectives(self) -> int:
        """Number of objectives ``n``."""
        return self.weights.numel()

    def signs(self, like: Tensor) -> Tensor:
        """``n`` vector of ±1 (−1 for minimised objectives) with ``like``'s dtype/device."""
        return self._constants(like)["signs"]

    def _constants(self, like: Tensor) -> dict[str, Tensor]:
        """Weights, signs (and the Chebyshev reference point) on ``like``'s dtype and device.

        Converted once per (dtype, device) and cached, so the acquisition's hot path does no
        conversions; the weights, ``minimize`` and reference point are therefore fixed once a
        scalarization has been used (build a new one for new weights).
        """
        key = (like.dtype, like.device)
        cache = self.__dict__.setdefault("_constant_cache", {})
        consts = cache.get(key)
        if consts is None:
            signs = (1.0 - 2.0 * self.minimize.to(torch.float64)).to(like)
            consts = {"signs": signs, "weights": self.weights.to(like)}
            consts.update(self._extra_constants(like, signs))
            cache[key] = consts
        return consts

    def _extra_constants(self, like: Tensor, signs: Tensor) -> dict[str, Tensor]:
        """Subclass constants for :meth:`_constants` (none by default)."""
        return {}

    @property
    @abstractmethod
    def lipschitz(self) -> Tensor:
        """L_λ, the ℓ2-Lipschitz constant of s_λ."""

    def _check_last_dim(self, Y: Tensor, name: str) -> None:
        if Y.dim() < 1 or Y.shape[-1] != self.num_objectives:
            raise ValueError(
                f"`{name}` must have a last dimension of size {self.num_objectives} (one entry "
                f"per objective), got shape {tuple(Y.shape)}."
            )

    def __call__(self, Y: Tensor) -> Tensor:
        """s_λ(Y).

        Args:
            Y: ``batch_shape x n`` outcomes (original units).

        Returns:
            ``batch_shape`` scalarized values.
        """
        self._check_last_dim(Y, "Y")
        return self._scalarize(Y * self.signs(Y))

    def pieces(self, Y: Tensor) -> Tensor:
        """``... x P`` smooth pieces of s_λ: s_λ(Y) = their minimum over the last dimension.

        ``P = 1`` (λᵀy) for the linear scalarization and ``P = n`` (λ_i (y_i − z_i)) for the
        Chebyshev one; what an exact maximiser of a non-smooth s_λ needs (epigraph form, see
        :func:`~botorch_mtucb.utils.optimum.polish_maxima`).
        """
        self._check_last_dim(Y, "Y")
        return self._pieces(Y * self.signs(Y))

    def _scalarize(self, Y: Tensor) -> Tensor:
        """s_λ on sign-corrected (all-maximised) ``... x n`` outcomes."""
        return self._pieces(Y).min(dim=-1).values

    @abstractmethod
    def _pieces(self, Y: Tensor) -> Tensor:
        """The ``... x P`` pieces on sign-corrected (all-maximised) ``... x n`` outcomes."""

    @abstractmethod
    def directions(self, like: Tensor) -> Tensor | None:
        """The ``n x k`` directions W whose variances wᵀΓ(x, x)w the directional bound needs.

        ``None`` stands for the identity (the ``n`` marginal variances Γ_ii, Chebyshev); the
        linear scalarization needs one direction (the signed weights, ``k = 1``). See
        :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` (paper 000, App. B.1).
        """

    @abstractmethod
    def directional_ucb_from_variances(self, mean: Tensor, var: Tensor, beta: Tensor) -> Tensor:
        """The directional upper bound from the variances along :meth:`directions`.

        Args:
            mean: ``batch x n`` posterior mean μ(x) (original units).
            var: ``batch x k`` variances wⱼᵀ Γ(x, x) wⱼ along the ``k`` directions
                (``batch x n`` marginal variances when :meth:`directions` is ``None``).
            beta: Confidence radius β (0-dim tensor, or a number).

        Returns:
            ``batch`` upper bounds (or, where a subclass documents it, values with the same
            maximisers: the hypervolume scalarization returns the n-th root of its bound
            before the clamp at zero).
        """

    def directional_ucb(self, mean: Tensor, task_covar: Tensor, beta: Tensor) -> Tensor:
        """The tighter (directional) upper bound on s_λ(f(x)); see ScalarizedMultiTaskUCB.

        Args:
            mean: ``batch x n`` posterior mean μ(x) (original units).
            task_covar: ``batch x n x n`` posterior task covariance Γ(x, x).
            beta: Confidence radius β (0-dim tensor).

        Returns:
            ``batch`` upper bounds (as :meth:`directional_ucb_from_variances`).
        """
        return self.directional_ucb_from_variances(
            mean, project_covariance(task_covar, self.directions(mean)), beta
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(weights={self.weights.tolist()})"


def project_covariance(task_covar: Tensor, directions: Tensor | None) -> Tensor:
    """Variances wⱼᵀ Γ wⱼ along the columns of ``directions`` (``n x k``), ``batch x k``.

    ``directions=None`` gives the diagonal Γ_ii (``batch x n``), read without copying.

    Args:
        task_covar: ``batch x n x n`` task covariances Γ(x, x).
        directions: ``n x k`` directions W, or ``None`` for the n task axes.

    Returns:
        ``batch x k`` variances (``batch x n`` for ``None``).

    Example:
        >>> G = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
        >>> project_covariance(G, torch.tensor([[1.0], [1.0]])), project_covariance(G, None)
        (tensor([7.]), tensor([2., 3.]))
    """
    if directions is None:
        return torch.diagonal(task_covar, dim1=-2, dim2=-1)
    return ((task_covar @ directions) * directions).sum(dim=-2)


def _scaled(consts: dict, name: str, factor: float) -> Tensor:
    """``consts[name] * factor``, cached in ``consts`` (a Python-number factor)."""
    key = (name, factor)
    out = consts.get(key)
    if out is None:
        out = consts[key] = consts[name] * factor
    return out


def _safe_sqrt(var: Tensor) -> Tensor:
    """√var with var clamped at a tiny floor, so the gradient stays finite at zero variance."""
    return var.clamp_min(1e-30).sqrt()


def check_scalarization(scalarization: object, num_outputs: int) -> None:
    """Refuse anything but a :class:`Scalarization` of ``num_outputs`` objectives.

    Args:
        scalarization: The scalarization an acquisition was given.
        num_outputs: The model's number of outputs ``n``.

    Example:
        >>> from botorch_mtucb.acquisition import LinearScalarization
        >>> check_scalarization(LinearScalarization(torch.tensor([0.5, 0.5])), 2)
        >>> check_scalarization(LinearScalarization(torch.tensor([0.5, 0.5])), 3)
        Traceback (most recent call last):
        ...
        ValueError: `scalarization` has 2 weights but the model has 3 outputs.
    """
    if not isinstance(scalarization, Scalarization):
        raise ValueError(
            "`scalarization` must be a Scalarization (LinearScalarization, "
            "ChebyshevScalarization or HypervolumeScalarization), got "
            f"{type(scalarization).__name__}."
        )
    if scalarization.num_objectives != num_outputs:
        raise ValueError(
            f"`scalarization` has {scalarization.num_objectives} weights but the model has "
            f"{num_outputs} outputs."
        )


def _front_summary(
    Y: Tensor,
    n: int,
    minimize: Sequence[bool] | Tensor | None,
    predicted: Tensor | None,
    span: str,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Signs, ranges r, nadir and ideal point (sign-corrected, float64) of the estimated front.

    The front is the non-dominated observed points and, with ``predicted``, the non-dominated
    points of the observed and predicted outcomes together; r is the range of all observed
    outcomes (``span="all"``) or of that front where positive (``"front"``), 1 where zero.
    """
    if Y.dim() != 2 or Y.shape[-1] != n or Y.shape[0] == 0:
        raise ValueError(
            f"`Y` must be an N x n tensor with N >= 1 and n = {n} (one column per weight), "
            f"got shape {tuple(Y.shape)}."
        )
    check_finite(Y, "Y")
    if span not in ("all", "front"):
        raise ValueError(f"`span` must be 'all' or 'front', got {span!r}.")
    signs = torch.ones(n, dtype=torch.float64)
    if minimize is not None:
        signs = 1.0 - 2.0 * as_flag_vector(minimize, "minimize", n).cpu().to(torch.float64)
    Ys = Y.detach().to(torch.float64) * signs
    front = Ys[is_non_dominated(Ys)]
    best = Ys.max(dim=0).values
    if predicted is not None:
        if not torch.is_tensor(predicted) or predicted.dim() != 2 or (
            predicted.shape[-1] != n or predicted.shape[0] == 0
        ):
            raise ValueError(
                f"`predicted` must be an M x n tensor with M >= 1 and n = {n}, got "
                f"{tuple(predicted.shape) if torch.is_tensor(predicted) else predicted!r}."
            )
        check_finite(predicted, "predicted")
        both = torch.cat([Ys, predicted.detach().to(Ys) * signs])
        front = torch.cat([front, both[is_non_dominated(both)]])
        best = both.max(dim=0).values
    r = Ys.max(dim=0).values - Ys.min(dim=0).values
    if span == "front":
        r_front = front.max(dim=0).values - front.min(dim=0).values
        r = torch.where(r_front > 0, r_front, r)
    r = torch.where(r > 0, r, torch.ones_like(r))  # one point: unit scale
    return signs, r, front.min(dim=0).values, best
