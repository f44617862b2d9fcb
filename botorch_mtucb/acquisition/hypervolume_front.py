r"""What the front-based hypervolume acquisitions share: the model's front and its cells.

:class:`HypervolumeFrontAcquisition` is the base of
:class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB` and
:class:`~botorch_mtucb.acquisition.LogExpectedHypervolumeImprovement`. It holds

* ``P``, the non-dominated posterior means μ(x_j) at the evaluated points ``X_baseline`` (the
  model's, not the raw readings, so that noise does not enter the front), plus the means at
  pending points;
* the reference point ``z`` (e.g. the one of
  :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data`, just below the nadir of
  the front) and the front's ranges ``r_i = max_j P_ji − z_i``, the unit in which the
  subclasses measure hypervolume, so that their values do not depend on the objectives' units;
* the region above z that P does not dominate, split into boxes [l_c, h_c] (BoTorch's
  ``FastNondominatedPartitioning``), in units of r: the hypervolume that an outcome vector y
  adds to P is Σ_c Π_i max(0, min(y_i, h_ci) − l_ci).

Objectives listed in ``minimize`` are negated internally. Pending points are hallucinated at
their means (GP-BUCB) and their means join P, so that ``optimize_acqf(q=k,
sequential=True)`` returns k distinct points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from botorch.utils.multi_objective.box_decompositions.non_dominated import (
    FastNondominatedPartitioning,
)
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from botorch_mtucb.acquisition.moments import projected_moments, refuse_kronecker_multitask_gp
from botorch_mtucb.acquisition.pending import PendingState, check_pending
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.protocols import ProjectedTaskPosteriorModel
from botorch_mtucb.utils.validation import as_flag_vector, as_float_vector, check_test_tensor

__all__ = ["HypervolumeFrontAcquisition"]


class HypervolumeFrontAcquisition(AcquisitionFunction):
    r"""Base of the q = 1 acquisitions that score an outcome vector against the model's front.

    Subclasses implement :meth:`forward` from :meth:`scaled_marginals` and the cells
    ``cell_lower`` / ``cell_upper`` (``C x n``, units of the ranges, upper bounds possibly
    ``inf``). Works with any unbatched BoTorch model whose ``posterior(X)`` has ``mean`` and
    ``variance`` of shape ``batch_shape x 1 x n``; a
    :class:`~botorch_mtucb.protocols.ProjectedTaskPosteriorModel` (the package's multi-task
    models) is asked for its means and per-objective variances directly
    (:func:`~botorch_mtucb.acquisition.moments.projected_moments`), with no posterior object.

    Attributes:
        ref_point: ``n`` reference point z, maximisation convention (negated for minimised
            objectives).
        signs: ``n`` entries, −1 for a minimised objective, +1 otherwise.
        ranges: ``n`` ranges r of the front above z.
        cell_lower: ``C x n`` lower corners l_c of the cells, ``(l − z) / r``.
        cell_upper: ``C x n`` upper corners h_c of the cells, ``(h − z) / r``.
        X_baseline: ``t x d`` evaluated inputs.
        X_pending: ``m x d`` pending inputs, or ``None``.
        scalarization: The round's s_λ when given (for optimizers that pick an incumbent with
            it), else ``None``.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from botorch_mtucb.acquisition import HypervolumeImprovementUCB
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> Y = torch.stack([X[:, 0], 1 - X[:, 0] * X[:, 1]], -1)
        >>> acqf = HypervolumeImprovementUCB(SingleTaskGP(X, Y), [-0.1, -0.1], X)
        >>> isinstance(acqf, HypervolumeFrontAcquisition)
        True
        >>> mean, sd = acqf.scaled_marginals(torch.rand(5, 1, 2, dtype=torch.float64))
        >>> mean.shape, sd.shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(
        self,
        model: Model,
        ref_point: Sequence[float] | Tensor,
        X_baseline: Tensor,
        minimize: Sequence[bool] | Tensor | None = None,
        X_pending: Tensor | None = None,
        scalarization: Scalarization | None = None,
    ) -> None:
        """
        Args:
            model: A fitted multi-output model (n ≥ 2 outputs, the objectives).
            ref_point: ``n`` reference point z in the objectives' original units (below every
                objective's range of interest; for minimised objectives, above it).
            X_baseline: ``t x d`` evaluated inputs (``t ≥ 1``); the front P is the
                non-dominated set of the posterior means there.
            minimize: Optional ``n`` bools; ``True`` marks an objective to minimise.
            X_pending: Optional ``m x d`` points under evaluation (see :meth:`set_X_pending`).
            scalarization: Optional s_λ of the round, kept as ``self.scalarization``; the
                value of the acquisition does not use it.

        Raises:
            ValueError: for a model with fewer than 2 outputs, a ``ref_point`` that is not ``n``
                finite numbers, an empty or non-``t x d`` ``X_baseline`` or a ``minimize`` of
                the wrong length.
        """
        refuse_kronecker_multitask_gp(model, type(self).__name__)
        super().__init__(model)
        X_baseline = check_baseline(X_baseline)
        n = model.num_outputs
        if n < 2:
            raise ValueError(
                f"{type(self).__name__} needs a model with n >= 2 outputs (the objectives), "
                f"got {n}; for one objective use a single-objective acquisition (e.g. BoTorch's "
                "LogExpectedImprovement or robust_acquisition)."
            )
        like = X_baseline
        z = as_float_vector(ref_point, "ref_point", n).to(like)
        signs = torch.ones(n, dtype=like.dtype, device=like.device)
        if minimize is not None:
            mask = as_flag_vector(minimize, "minimize", n).to(like.device)
            signs = torch.where(mask, -signs, signs)
        self.scalarization = scalarization
        self.register_buffer("signs", signs)
        self.register_buffer("ref_point", z * signs)  # maximisation convention
        self.register_buffer("X_baseline", X_baseline.clone())
        self._pending = PendingState(model)
        self._input_dim = X_baseline.shape[-1]
        self._eye = torch.eye(n, dtype=like.dtype, device=like.device)  # W = I: the σ_i²
        self.set_X_pending(X_pending)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Self:
        """``nn.Module._apply`` (``.to``, ...), extended to the model of the real data and the
        pending points (:meth:`PendingState.apply`) and to the identity of the variances."""
        super()._apply(fn, recurse)
        self._pending.apply(fn)
        self._eye = fn(self._eye)
        return self

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """Hallucinate pending points (GP-BUCB) and add their means to the front P.

        Args:
            X_pending: ``m x d`` pending points, or ``None`` / an empty tensor for none.
        """
        X = check_pending(X_pending, self._input_dim)
        if X is not None:
            X = X.to(self.X_baseline)
        self.model = self._pending.update(X)
        self._projected = isinstance(self.model, ProjectedTaskPosteriorModel)
        self.X_pending = X
        points = self.X_baseline if X is None else torch.cat([self.X_baseline, X])
        with torch.no_grad():
            front = self.model.posterior(points).mean * self.signs
        self._set_front(front)

    def _set_front(self, front: Tensor) -> None:
        """Ranges r, the cells [l_c, h_c] of the region P does not dominate (units of r)."""
        z = self.ref_point
        front = front[is_non_dominated(front)]
        span = front.max(dim=0).values - z
        spread = front.max(dim=0).values - front.min(dim=0).values
        ones = torch.ones_like(span)
        ranges = torch.where(span > 0, span, torch.where(spread > 0, spread, ones))
        lower, upper = FastNondominatedPartitioning(ref_point=z, Y=front).get_hypercell_bounds()
        self.register_buffer("ranges", ranges)
        self.register_buffer("cell_lower", (lower - z) / ranges)
        self.register_buffer("cell_upper", (upper - z) / ranges)

    def scaled_marginals(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """The posterior marginals at ``X`` in units of the ranges, above the reference point.

        Args:
            X: ``batch_shape x 1 x d`` candidates (q = 1; a ``1 x d`` input is one point).

        Returns:
            ``((μ·signs − z) / r, σ / r)``, each ``batch_shape x n`` (σ floored at 1e-15 so
            that its gradient stays finite).

        Raises:
            ValueError: if ``X`` is not ``batch_shape x 1 x d`` or holds NaN / inf values.
        """
        check_test_tensor(X, "X")
        if X.dim() == 2:
            X = X.unsqueeze(0)
        if X.dim() < 2 or X.shape[-2] != 1:
            raise ValueError(
                f"{type(self).__name__} supports q = 1 only: `X` must be batch_shape x 1 x "
                f"d, got shape {tuple(X.shape)}. For batches use optimize_acqf(..., q=k, "
                "sequential=True) (pending points)."
            )
        if self._projected:  # no posterior object: the model's frozen predictor where it has one
            mean, var = projected_moments(self.model, X, self._eye, self._input_dim)
        else:
            posterior = self.model.posterior(X)
            mean, var = posterior.mean[..., 0, :], posterior.variance[..., 0, :]
        sd = var.clamp_min(1e-30).sqrt()
        return (mean * self.signs - self.ref_point) / self.ranges, sd / self.ranges


def check_baseline(X: Tensor) -> Tensor:
    """``X`` if it is a non-empty finite ``t x d`` tensor.

    Raises:
        ValueError: otherwise, naming ``X_baseline``.
    """
    if not torch.is_tensor(X) or X.dim() != 2 or X.shape[0] < 1:
        shape = tuple(X.shape) if torch.is_tensor(X) else type(X).__name__
        raise ValueError(f"`X_baseline` must be a non-empty t x d tensor, got {shape}.")
    check_test_tensor(X, "X_baseline")
    return X
