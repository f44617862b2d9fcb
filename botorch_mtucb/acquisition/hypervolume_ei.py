r"""Expected hypervolume improvement over the model's front, in log space (LogEHVI), q = 1.

:class:`LogExpectedHypervolumeImprovement` scores a candidate x by the hypervolume that its
outcome vector is expected to add to the model's front,

.. math::
    a(x) = \log \mathbb{E}\Big[\mathrm{HVI}\big(Y \mid P, z\big)\Big] − \log \textstyle\prod_i r_i,
    \qquad Y_i \sim \mathcal N\big(μ_i(x), σ_i^2(x)\big) \text{ independent},

with P, z, the ranges r and the cells [l_c, h_c] of the region P does not dominate those of
:class:`~botorch_mtucb.acquisition.hypervolume_front.HypervolumeFrontAcquisition` (P: the
non-dominated posterior means at the evaluated points). Since HVI(y) = Σ_c Π_i (min(y_i, h_ci)
− l_ci)₊ and the factors of one cell depend on one coordinate each, under independent
marginals the expectation is exact in closed form (the analytic EHVI of Emmerich et al. 2006,
Yang et al. 2019; BoTorch's ``ExpectedHypervolumeImprovement``):

.. math::
    \mathbb{E}\big[(\min(Y_i, h) − l)_+\big] = \int_l^h P(Y_i > t)\,dt
        = σ_i\big(ψ(ζ_l) − ψ(ζ_h)\big), \quad ζ_t = \frac{t − μ_i}{σ_i},
        \quad ψ(ζ) = φ(ζ) − ζ\,(1 − Φ(ζ)),

so a(x) = logsumexp_c Σ_i log[σ_i (ψ(ζ_{l,ci}) − ψ(ζ_{h,ci}))], every term evaluated in log
space (log ψ by BoTorch's ``_log_ei_helper``, the difference by ``log1mexp``), in the units of
the ranges (a(x) is scale-free). Unlike the plain EHVI, whose value and gradient underflow to
zero far from the front (the reason for BoTorch's LogEI family, Ament et al. 2023), a(x) is
finite with a useful gradient everywhere.

**Which marginals.** The expectation uses the posterior marginal of each objective and
ignores their correlation at x: exact for independent objectives (a ``ModelListGP``), the
EHVI of the product of the marginals for the multi-task GPs (whose outputs at one x are
correlated through B). The front P is a point estimate: unlike BoTorch's qLogNEHVI, which
integrates over the joint posterior of the front and the candidate, a(x) treats P as known.
With noisy readings the posterior at a front point keeps a variance, and a(x) there stays
positive (re-reading the point looks like room for improvement); on deterministic objectives
P is, up to the fitted noise, the observed front.

**When to use it.** Over the project's multi-objective suite it is level with or ahead of
:class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB` on noise-free problems and
behind it under observation noise (the benchmarks' documentation has the figures);
:func:`~botorch_mtucb.loop.log_ehvi_factory` makes it the loop's acquisition. Its cost is
that of :class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB`: one posterior and a
``batch x cells x n`` tensor operation per evaluation, with BoTorch's box decomposition
(exponential in n) built once, so it suits n ≤ 4–5.
"""

from __future__ import annotations

import torch
from botorch.acquisition.analytic import _log_ei_helper
from botorch.utils.safe_math import log1mexp
from torch import Tensor

from botorch_mtucb.acquisition.hypervolume_front import HypervolumeFrontAcquisition

__all__ = ["LogExpectedHypervolumeImprovement"]


class LogExpectedHypervolumeImprovement(HypervolumeFrontAcquisition):
    r"""Log of the expected hypervolume improvement over the model's front (module docstring).

    ``exp(a(x)) · Π_i r_i`` equals BoTorch's analytic ``ExpectedHypervolumeImprovement`` with
    the same reference point and the partitioning of P, for a model with independent outputs.
    Scale-free (hypervolume in units of the front's ranges); objectives listed in
    ``minimize`` are negated internally. Works with any unbatched BoTorch model whose
    ``posterior(X)`` has ``mean`` and ``variance`` of shape ``batch_shape x 1 x n`` (the
    package's multi-task GPs, ``SingleTaskGP`` with n outputs, ``ModelListGP``); t-batches
    ``batch_shape x 1 x d``; differentiable for ``optimize_acqf``.

    Args:
        model: A fitted multi-output model (n ≥ 2 outputs, the objectives).
        ref_point: ``n`` reference point z in the objectives' original units (below every
            objective's range of interest; for minimised objectives, above it).
        X_baseline: ``t x d`` evaluated inputs (``t ≥ 1``); the front P is the non-dominated
            set of the posterior means there.
        minimize: Optional ``n`` bools; ``True`` marks an objective to minimise.
        X_pending: Optional ``m x d`` points under evaluation (``set_X_pending``: hallucinated
            at their means, which join P).
        scalarization: Optional s_λ of the round, kept as ``self.scalarization``; a(x) does
            not use it.

    Raises:
        ValueError: for a ``ref_point`` that is not ``n`` finite numbers, an empty or
            non-``t x d`` ``X_baseline`` or a ``minimize`` of the wrong length.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from botorch.optim import optimize_acqf
        >>> train_X = torch.rand(12, 2, dtype=torch.float64)
        >>> train_Y = torch.stack([train_X[:, 0], 1 - train_X[:, 0] * train_X[:, 1]], -1)
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> acqf = LogExpectedHypervolumeImprovement(model, [-0.1, -0.1], train_X)
        >>> acqf(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        torch.Size([5])
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=32)
        >>> x.shape
        torch.Size([1, 2])
    """

    def forward(self, X: Tensor) -> Tensor:
        """Evaluate a(x) on ``batch_shape x 1 x d`` candidates (a ``1 x d`` input is one point).

        Args:
            X: ``batch_shape x 1 x d`` candidates (q = 1).

        Returns:
            ``batch_shape`` values of log EHVI − log Π r_i (finite).

        Raises:
            ValueError: if ``X`` is not ``batch_shape x 1 x d`` or holds NaN / inf values.
        """
        mean, sd = self.scaled_marginals(X)
        mean, sd = mean.unsqueeze(-2), sd.unsqueeze(-2)  # batch x 1 x n
        lower, upper = self.cell_lower, self.cell_upper  # C x n
        bounded = upper.isfinite()
        upper = torch.where(bounded, upper, lower + 1.0)  # any finite value; masked below
        log_psi_lower = _log_ei_helper((mean - lower) / sd)  # log ψ(ζ_l), ψ(ζ) = h(−ζ)
        log_psi_upper = _log_ei_helper((mean - upper) / sd)
        # log(ψ(ζ_l) − ψ(ζ_h)); ψ decreasing, so the ratio is < 1 (clamped against rounding)
        log_gap = log1mexp((log_psi_upper - log_psi_lower).clamp_max(-1e-12))
        log_gap = torch.where(bounded, log_gap, torch.zeros_like(log_gap))
        log_factor = sd.log() + log_psi_lower + log_gap  # batch x C x n
        return torch.logsumexp(log_factor.sum(dim=-1), dim=-1)
