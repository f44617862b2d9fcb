r"""Hypervolume improvement of the optimistic outcome vector (UCB-HVI), q = 1.

The scalarized UCB of paper 000 targets one random direction λ_t of the front per round.
:class:`HypervolumeImprovementUCB` targets the front as a whole: it asks how much hypervolume
an evaluation at x could add if every objective came out at its upper confidence bound,

.. math::
    u_i(x) = μ_i(x) + β σ_i(x), \qquad σ_i^2(x) = Γ_{ii}(x, x),

    a(x) = \begin{cases}
        \mathrm{HVI}\big(u(x) \mid P, z\big) / \textstyle\prod_i r_i
            & \text{if } u(x) \text{ adds hypervolume,} \\
        -ε_τ\big(u(x) \mid P, z\big) & \text{otherwise,}
    \end{cases}

with (the front, its cells and the pending points are those of
:class:`~botorch_mtucb.acquisition.hypervolume_front.HypervolumeFrontAcquisition`)

* ``P`` the non-dominated posterior means μ(x_j) at the evaluated points ``X_baseline`` (the
  model's, not the raw readings, so that noise does not enter the front), plus the means at
  pending points;
* ``z`` the reference point (e.g. the one of
  :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data`, just below the nadir of
  the front) and ``r_i = max_j P_ji − z_i`` the front's ranges, so that a(x) does not depend
  on the objectives' units;
* HVI(u | P, z) the volume of the part of the box [z, u] that P does not dominate: with the
  region above z that P does not dominate split into boxes [l_c, h_c] (BoTorch's
  ``FastNondominatedPartitioning``), HVI(u) = Σ_c Π_i max(0, min(u_i, h_ci) − l_ci);
* ε(u | P, z) = min_c max_i max(0, l_ci − u_i) / r_i, the additive-ε distance from u to the
  non-dominated region (how far u must rise, in units of the ranges, to add any
  hypervolume), and ε_τ its smooth version: the max over objectives and the min over the C
  cells taken as log-sum-exp at temperature τ = :data:`EPSILON_TEMPERATURE` (in units of the
  ranges), then a softplus at the same τ. It keeps a gradient where u is dominated (HVI is
  flat zero there) without the exact distance's min–max ridges, on which L-BFGS-B's line
  search fails; |ε_τ − ε| ≤ τ (log max(n, C) + log 2), and ε_τ > 0, so that a(x) > 0
  exactly where u(x) adds hypervolume and a(x) < 0 where it does not. At the region's
  boundary a(x) jumps by at most τ (log n + log 2).

**What the bound says.** On the event of paper 000's Theorem 1, projected on the task axes
(the directional bound of :mod:`~botorch_mtucb.acquisition.multi_task_ucb`:
f_i(x) ≤ μ_i(x) + β_t σ_i(x) for all i, x and t at once), and since HVI(· | P, z) is monotone
(non-decreasing in every coordinate), HVI(u(x)) ≥ HVI(f(x)): a(x) is an upper confidence
bound on the hypervolume that evaluating x adds to the hypervolume of P. The rule is the
optimistic (UCB) choice for the hypervolume improvement; unlike paper 000's random
scalarizations (and the hypervolume scalarization of Zhang & Golovin, 2020, whose expectation
over λ is the hypervolume) it carries no regret bound of its own: it is greedy in the
improvement over the model's current front. With the practical width (β = 1) it is a
heuristic, as the practical UCB is.

**Cost.** The partition is built once per acquisition (at construction and when pending
points change); its number of boxes grows quickly with the number of objectives n (BoTorch's
box decompositions are exponential in n), so the acquisition suits n ≤ 4–5 best. An
evaluation costs one posterior (marginal means and variances) and a ``batch x cells x n``
tensor operation.

**Batches.** :meth:`HypervolumeImprovementUCB.set_X_pending` conditions the model on
hallucinated means at the pending points (GP-BUCB, as
:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`) and adds their means to P, so
``optimize_acqf(q=k, sequential=True)`` returns k distinct points.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.beta import BetaSchedule, check_width
from botorch_mtucb.acquisition.hypervolume_front import HypervolumeFrontAcquisition
from botorch_mtucb.acquisition.scalarization import Scalarization

__all__ = ["EPSILON_TEMPERATURE", "HypervolumeImprovementUCB"]

#: Temperature τ of the smoothed additive-ε distance ε_τ (units of the front's ranges).
EPSILON_TEMPERATURE = 1e-3


class HypervolumeImprovementUCB(HypervolumeFrontAcquisition):
    r"""UCB of the hypervolume improvement: a(x) = HVI(μ(x) + βσ(x) | P, z), or −ε_τ where
    that is 0 (module docstring).

    Scale-free: the hypervolume is measured in units of the front's ranges, so rescaling an
    objective (or its reference) leaves a(x) unchanged. Objectives listed in ``minimize`` are
    negated internally (give ``ref_point`` and the data in the original units). Works with any
    unbatched BoTorch model whose ``posterior(X)`` has ``mean`` and ``variance`` of shape
    ``batch_shape x 1 x n`` (the package's multi-task GPs, ``SingleTaskGP`` with n outputs,
    ``ModelListGP``); t-batches ``batch_shape x 1 x d``; differentiable for ``optimize_acqf``.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from botorch.optim import optimize_acqf
        >>> train_X = torch.rand(12, 2, dtype=torch.float64)
        >>> train_Y = torch.stack([train_X[:, 0], 1 - train_X[:, 0] * train_X[:, 1]], -1)
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> acqf = HypervolumeImprovementUCB(model, ref_point=[-0.1, -0.1], X_baseline=train_X)
        >>> acqf(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        torch.Size([5])
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> x, _ = optimize_acqf(acqf, bounds, q=2, num_restarts=2, raw_samples=32,
        ...                      sequential=True)
        >>> x.shape
        torch.Size([2, 2])
    """

    def __init__(
        self,
        model: Model,
        ref_point: Sequence[float] | Tensor,
        X_baseline: Tensor,
        beta: float | BetaSchedule = 1.0,
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
            beta: Width β ≥ 0 of the per-objective upper bounds (1.0: the practical width of
                :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`), or a
                :class:`~botorch_mtucb.acquisition.BetaSchedule` evaluated on ``model``.
            minimize: Optional ``n`` bools; ``True`` marks an objective to minimise.
            X_pending: Optional ``m x d`` points under evaluation (see :meth:`set_X_pending`).
            scalarization: Optional s_λ of the round, kept as ``self.scalarization`` for
                optimizers that pick an incumbent with it
                (:class:`~botorch_mtucb.acquisition.trust_region.TrustRegionOptimizer`); the
                value a(x) does not use it.

        Raises:
            TypeError: if ``beta`` is not a real number, tensor or schedule.
            ValueError: for a ``ref_point`` that is not ``n`` finite numbers, an empty or
                non-``t x d`` ``X_baseline``, a ``beta`` that is not one finite number
                ``≥ 0`` or a ``minimize`` that is not ``n`` booleans.
        """
        beta = check_width(beta)
        if isinstance(beta, BetaSchedule):
            beta = check_width(beta(model))
        super().__init__(model, ref_point, X_baseline, minimize, X_pending, scalarization)
        self.beta = beta

    def forward(self, X: Tensor) -> Tensor:
        """Evaluate a(x) on ``batch_shape x 1 x d`` candidates (a ``1 x d`` input is one point).

        Args:
            X: ``batch_shape x 1 x d`` candidates (q = 1).

        Returns:
            ``batch_shape`` acquisition values (> 0 where u(x) adds hypervolume, < 0 where it
            does not).

        Raises:
            ValueError: if ``X`` is not ``batch_shape x 1 x d`` or holds NaN / inf values.
        """
        mean, sd = self.scaled_marginals(X)
        u = (mean + self.beta * sd).unsqueeze(-2)  # batch x 1 x n, units of the ranges
        lower = self.cell_lower
        hvi = (torch.minimum(u, self.cell_upper) - lower).clamp_min(0.0).prod(dim=-1).sum(-1)
        tau = EPSILON_TEMPERATURE
        # ε_τ / τ: soft max over the objectives, soft min over the cells, then a softplus
        soft_eps = -torch.logsumexp(-torch.logsumexp((lower - u) / tau, dim=-1), dim=-1)
        eps = tau * torch.nn.functional.softplus(soft_eps)
        return torch.where(hvi > 0, hvi, -eps)

