"""The Chebyshev scalarization s_λ(y) = min_i λ_i (y_i − z_i) (paper 000, §2).

* plain: s_λ(y) = min_i λ_i (y_i − z_i), L_λ = max_i λ_i;
* augmented (``augmentation=ρ``): s_λ(y) = min_i λ_i (y_i − z_i) + ρ Σ_i λ_i (y_i − z_i),
  L_λ = max_i λ_i + ρ ‖λ‖₂; with ρ > 0 every maximiser is Pareto optimal, not only weakly.

The reference point z (``ref_point``) should be a point that every interesting outcome
improves on: a lower bound on each maximised objective (an upper bound on each minimised one,
in original units). Then all terms λ_i (y_i − z_i) are ≥ 0 and s_λ rewards the *worst*
weighted improvement over z, which is what steers a random λ to different parts of the Pareto
front. :meth:`ChebyshevScalarization.from_data` places z and the scales from observed data
(scale-free weights, z below the estimated front's nadir), and :func:`predicted_anchors`
estimates that front's extreme points from the model.

The directional upper confidence bound takes the n task axes as directions (σ_i² = Γ_ii):
s_λ(f(x)) ≤ min_i λ_i (μ̃_i(x) + β σ_i(x) − z̃_i) (paper 000, App. B.1; tildes: sign-corrected).
With augmentation the linear term ρ λᵀ(f̃ − z̃) is bounded along its own direction λ̃ (λ with
the signs of minimised objectives): ρ (λᵀ(μ̃ − z̃) + β √(λ̃ᵀΓλ̃)). Since √(λ̃ᵀΓλ̃) ≤ Σ_i λ_i σ_i
(|Γ_ij| ≤ σ_i σ_j) and ≤ ‖λ‖₂ ‖Γ‖^{1/2}, this is tighter than bounding each axis and never
looser than the spectral bound s_λ(μ) + L_λ β ‖Γ‖^{1/2}.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral
from typing import Literal

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.generation.gen import gen_candidates_scipy
from botorch.models.model import Model
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition.moments import refuse_kronecker_multitask_gp
from botorch_mtucb.acquisition.scalarization.base import (
    Scalarization,
    _as_vector,
    _front_summary,
    _safe_sqrt,
    _scaled,
)
from botorch_mtucb.protocols import ProjectedTaskPosteriorModel
from botorch_mtucb.utils.validation import as_flag_vector, check_finite

__all__ = ["ChebyshevScalarization", "predicted_anchors"]


class ChebyshevScalarization(Scalarization):
    """s_λ(y) = min_i λ_i (y_i − z_i) [+ ρ Σ_i λ_i (y_i − z_i)] (maximised; paper 000, §2).

    What is maximised is the smallest weighted improvement over the reference point z; see the
    module docstring for how to choose z, and
    :mod:`~botorch_mtucb.acquisition.scalarization.base` for minimised objectives (y_i and z_i
    are negated before scalarizing). L_λ = max_i λ_i + ρ ‖λ‖₂.

    Example:
        >>> s = ChebyshevScalarization(
        ...     torch.tensor([0.5, 0.5], dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
        ... )
        >>> s(torch.tensor([[1.0, 4.0]], dtype=torch.float64))
        tensor([0.5000], dtype=torch.float64)
        >>> s.pieces(torch.tensor([1.0, 4.0], dtype=torch.float64))  # s = their minimum
        tensor([0.5000, 2.0000], dtype=torch.float64)
    """

    def __init__(
        self,
        weights: Tensor | Sequence[float],
        ref_point: Tensor | Sequence[float],
        minimize: Sequence[bool] | Tensor | None = None,
        augmentation: float = 0.0,
    ) -> None:
        """
        Args:
            weights: ``n`` nonnegative weights summing to one.
            ref_point: ``n`` reference point z in original units (worse than the region of
                interest in every objective).
            minimize: Optional ``n`` booleans; ``True`` marks an objective to be minimised.
            augmentation: ρ ≥ 0 of the augmented Chebyshev scalarization
                s_λ(y) = min_i λ_i (y_i − z_i) + ρ Σ_i λ_i (y_i − z_i) (ParEGO uses 0.05).
                With ρ > 0 every maximiser is Pareto optimal, not only weakly: the objectives
                that do not attain the minimum still count. ``0`` (default) is paper 000's s_λ.
        """
        super().__init__(weights, minimize)
        z = _as_vector(ref_point, "ref_point")
        if z.numel() != self.num_objectives:
            raise ValueError(
                f"`ref_point` must have {self.num_objectives} entries (one per objective), got "
                f"{z.numel()}."
            )
        rho = float(augmentation)
        if not math.isfinite(rho) or rho < 0:
            raise ValueError(f"`augmentation` must be a finite number >= 0, got {augmentation!r}.")
        self.ref_point = z
        self.augmentation = rho

    @classmethod
    def from_data(
        cls,
        weights: Tensor | Sequence[float],
        Y: Tensor,
        minimize: Sequence[bool] | Tensor | None = None,
        augmentation: float = 0.05,
        margin: float = 0.1,
        predicted: Tensor | None = None,
        span: Literal["all", "front"] = "all",
    ) -> ChebyshevScalarization:
        """Scale-free s_λ from observed outcomes: λ acts on objectives normalised by their range.

        With r_i the range of objective i (see ``span``), ñ_i the worst value of objective i
        over the estimated Pareto front (sign-corrected) and z_i = ñ_i − ``margin`` · r_i, the
        result is the augmented Chebyshev scalarization of the normalised objectives,

            s(y) = [min_i λ_i (y_i − z_i) / r_i + ρ Σ_i λ_i (y_i − z_i) / r_i] / c,
            c = Σ_i λ_i / r_i,

        i.e. weights λ_i / r_i renormalised to the simplex (dividing by c > 0 changes neither
        the maximisers nor the UCB's argmax). Rescaling an objective's units leaves it the same
        function up to that positive factor, so no objective decides the round through its
        units alone (with the directional UCB, the default; the spectral one's width
        ‖Γ(x, x)‖ stays in raw units). The reference point sits just below the nadir of the
        non-dominated points (not below the worst of all data), so the rays z + t/λ meet the
        front, and ρ > 0 makes every maximiser Pareto optimal.

        Args:
            weights: ``n`` weights λ on the simplex (e.g. from
                :func:`~botorch_mtucb.acquisition.sample_scalarization_weights`).
            Y: ``N x n`` observed outcomes (original units, ``N ≥ 1``).
            minimize: Optional ``n`` booleans marking minimised objectives.
            augmentation: ρ ≥ 0 (default 0.05, ParEGO's).
            margin: Reference-point offset below the nadir, in units of the range (≥ 0).
            predicted: Optional ``M x n`` predicted outcomes (e.g. the model's payoff table
                :func:`predicted_anchors`, original units). The nadir ñ is then the
                per-objective minimum over the observed non-dominated points *and* the
                non-dominated points of the observed and predicted outcomes together, so z
                never lies above the default. This matters once one observed point dominates
                all others: the observed nadir is then that point, and without ``predicted``
                the maximiser of s_λ is that evaluated point for every λ. ``None`` (default):
                the observed points only.
            span: ``"all"`` (default): r_i is the range of all observed outcomes; ``"front"``:
                the range of the non-dominated points above (with ``predicted``: of both
                sets), where it is positive, else the range of all observed outcomes.

        Returns:
            A :class:`ChebyshevScalarization` in the original units of ``Y``.

        Example:
            >>> Y = torch.tensor([[0.0, 10.0], [1.0, 0.0], [0.5, 5.0]], dtype=torch.float64)
            >>> s = ChebyshevScalarization.from_data([0.5, 0.5], Y)
            >>> s.ref_point  # the front's nadir (0, 0) minus 0.1 of the ranges (1, 10)
            tensor([-0.1000, -1.0000], dtype=torch.float64)
            >>> s.weights  # λ_i / r_i on the simplex
            tensor([0.9091, 0.0909], dtype=torch.float64)
        """
        w = _as_vector(weights, "weights")
        signs, r, nadir, _ = _front_summary(Y, w.numel(), minimize, predicted, span)
        if not math.isfinite(float(margin)) or float(margin) < 0:
            raise ValueError(f"`margin` must be a finite number >= 0, got {margin!r}.")
        z = (nadir - float(margin) * r) * signs
        scaled = w.to(torch.float64) / r
        return cls(
            (scaled / scaled.sum()).to(w), z.to(Y.dtype if Y.is_floating_point() else w.dtype),
            minimize, augmentation,
        )

    @property
    def lipschitz(self) -> Tensor:
        """max_i λ_i + ρ ‖λ‖₂ (the plain s_λ: max_i λ_i)."""
        lip = self.weights.max()
        if self.augmentation:
            lip = lip + self.augmentation * torch.linalg.vector_norm(self.weights)
        return lip

    def _pieces(self, Y: Tensor) -> Tensor:
        c = self._constants(Y)
        pieces = c["weights"] * (Y - c["signed_ref"])
        if self.augmentation:  # min_j (p_j + ρ Σ_i p_i) = min_j p_j + ρ Σ_i p_i
            pieces = pieces + self.augmentation * pieces.sum(dim=-1, keepdim=True)
        return pieces

    def _extra_constants(self, like: Tensor, signs: Tensor) -> dict[str, Tensor]:
        w, z = self.weights.to(like), self.ref_point.to(like) * signs
        n = w.numel()
        axes_and_weights = torch.cat(
            [torch.eye(n, dtype=like.dtype, device=like.device), (w * signs).unsqueeze(-1)], -1
        )
        return {"signed_ref": z, "signed_weights": w * signs, "neg_weighted_ref": -(w * z),
                "directions": axes_and_weights}

    def directions(self, like: Tensor) -> Tensor | None:
        """``None``: the marginal variances Γ_ii (one direction e_i per objective); with
        augmentation ``n x (n + 1)``: the n task axes and λ̃ (the signed weights), whose
        variance bounds the augmentation term."""
        if not self.augmentation:
            return None
        return self._constants(like)["directions"]

    def directional_ucb_from_variances(
        self, mean: Tensor, var: Tensor, beta: Tensor | float
    ) -> Tensor:
        """min_i λ_i (μ̃_i + β σ_i − z̃_i), σ_i² = Γ_ii, tildes: sign-corrected; written as
        (λ∘s)μ + (λβ)σ − λ∘z̃ (two fused multiply-adds). With augmentation ρ, plus
        ρ (λᵀ(μ̃ − z̃) + β √(λ̃ᵀΓλ̃)) (module docstring).

        Args:
            mean: ``batch x n`` posterior mean μ(x) (original units).
            var: ``batch x n`` marginal variances Γ_ii; with augmentation ``batch x (n + 1)``,
                the last column λ̃ᵀΓλ̃ (the variances along :meth:`directions`).
            beta: Confidence radius β (0-dim tensor, or a number).

        Returns:
            ``batch`` upper bounds.
        """
        c = self._constants(mean)
        n = c["weights"].shape[-1]
        wb = c["weights"] * beta if torch.is_tensor(beta) else _scaled(c, "weights", beta)
        gaps = torch.addcmul(c["neg_weighted_ref"], c["signed_weights"], mean)  # λ_i(μ̃_i − z̃_i)
        pieces = torch.addcmul(gaps, wb, _safe_sqrt(var[..., :n]))
        if self.augmentation:  # the linear term along its own direction λ̃
            width = _safe_sqrt(var[..., n]) * beta
            return pieces.min(dim=-1).values + self.augmentation * (gaps.sum(dim=-1) + width)
        return pieces.min(dim=-1).values

    def __repr__(self) -> str:
        aug = f", augmentation={self.augmentation}" if self.augmentation else ""
        return (
            f"ChebyshevScalarization(weights={self.weights.tolist()}, "
            f"ref_point={self.ref_point.tolist()}{aug})"
        )


def predicted_anchors(
    model: Model,
    bounds: Tensor,
    Y: Tensor,
    eps: float = 1e-3,
    num_restarts: int = 4,
    raw_samples: int = 256,
    seed: int | None = None,
    minimize: Sequence[bool] | Tensor | None = None,
) -> Tensor:
    """The model's payoff table: posterior means at its per-objective optima, ``n x n``.

    Row i is μ(x_i*) with x_i* = argmax_x μ̃_i(x)/r_i + ε Σ_j μ̃_j(x)/r_j (r: the observed
    ranges of ``Y``; μ̃_j = ±μ_j, sign-corrected so that every objective is maximised). The ε
    term is a lexicographic tie-break (ε → 0): x_i* is then Pareto optimal under μ, not only
    weakly (a plain argmax of μ_i may leave the other objectives anywhere), while a large ε
    would be a linear scalarization, which on a concave front goes to the other extreme. The
    table's column minima estimate the front's nadir; pass it as
    ``ChebyshevScalarization.from_data(..., predicted=...)``. The n problems are solved as
    one multi-start L-BFGS-B (``gen_candidates_scipy``) from the best scrambled-Sobol raw
    samples of each.

    Args:
        model: A fitted BoTorch model with ``n`` outputs (original units).
        bounds: ``2 x d`` search box.
        Y: ``N x n`` observed outcomes (for the ranges r_i).
        eps: Tie-break weight ε ≥ 0.
        num_restarts: L-BFGS-B starts per objective (its best raw samples; a positive Python
            or NumPy integer).
        raw_samples: Scrambled-Sobol raw samples (shared by the objectives; a positive
            integer).
        seed: Seed of the raw samples; ``None``: a random scramble.
        minimize: Optional ``n`` booleans marking minimised objectives (as ``from_data``'s).

    Returns:
        ``n x n`` tensor, row i = μ(x_i*), in the original units (signs not applied).

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> Y = torch.stack([X.sum(-1), (1 - X).prod(-1)], dim=-1)
        >>> model = SingleTaskGP(X, Y)
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> table = predicted_anchors(model, bounds, Y, seed=0)
        >>> table.shape
        torch.Size([2, 2])
        >>> s = ChebyshevScalarization.from_data([0.5, 0.5], Y, predicted=table, span="front")
    """
    refuse_kronecker_multitask_gp(model, "predicted_anchors (the predicted front)")
    if Y.dim() != 2 or Y.shape[0] == 0 or Y.shape[-1] != model.num_outputs:
        raise ValueError(
            f"`Y` must be an N x n tensor with N >= 1 and n = {model.num_outputs} (the model's "
            f"outputs), got shape {tuple(Y.shape)}."
        )
    if not (math.isfinite(float(eps)) and float(eps) >= 0):
        raise ValueError(f"`eps` must be a finite number >= 0, got {eps!r}.")
    for name, count in (("num_restarts", num_restarts), ("raw_samples", raw_samples)):
        if isinstance(count, bool) or not isinstance(count, Integral) or count < 1:
            raise ValueError(f"`{name}` must be a positive integer, got {count!r}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, Integral)):
        raise ValueError(f"`seed` must be an integer or None, got {seed!r}.")
    seed = None if seed is None else int(seed)
    check_finite(Y, "Y")
    n = Y.shape[-1]
    signs = torch.ones(n, dtype=Y.dtype, device=Y.device)
    if minimize is not None:
        m = as_flag_vector(minimize, "minimize", n)
        signs = 1.0 - 2.0 * m.to(signs)
    r = (Y.detach().max(dim=0).values - Y.detach().min(dim=0).values).clamp_min(1e-12)
    W = (float(eps) / r).expand(n, n).clone()
    W.diagonal().add_(1.0 / r)
    W = W * signs  # row i: objective i's weights on the sign-corrected means
    b = bounds.to(Y)
    engine = SobolEngine(b.shape[-1], scramble=True, seed=seed)
    R = b[0] + (b[1] - b[0]) * engine.draw(raw_samples).to(Y)  # raw x d
    value = _PayoffTableValue(model, W)
    with torch.no_grad():
        values = value.means(R.unsqueeze(-2)).squeeze(-2) @ W.T  # raw x n
    k = min(int(num_restarts), R.shape[0])
    starts = R[values.topk(k, dim=0).indices]  # k x n x d: objective i's best raw points
    cands, _ = gen_candidates_scipy(
        starts, value, lower_bounds=b[0], upper_bounds=b[1], options={"maxiter": 200},
    )
    with torch.no_grad():
        mu = value.means(cands.detach().reshape(-1, 1, b.shape[-1]))
        mu = mu.reshape(k, n, n)  # restart, objective i's point, outputs
        best = (mu * W).sum(-1).argmax(dim=0)  # per objective, its best restart
        return mu[best, torch.arange(n)]


class _PayoffTableValue(AcquisitionFunction):
    """Σ_i w_iᵀ μ(x_i) of a ``batch x n x d`` set (point i: row i of ``W``): the n problems of
    the payoff table, decoupled, as one L-BFGS-B problem (one optimisation, not n)."""

    def __init__(self, model: Model, W: Tensor) -> None:
        super().__init__(model)
        self.W = W
        # a model that gives projected moments skips the n x n blocks: means only (no
        # direction, built once: its predictors are cached by the directions' identity)
        self._direction = (
            W.new_zeros(W.shape[-1], 0) if isinstance(model, ProjectedTaskPosteriorModel)
            else None
        )

    def means(self, X: Tensor) -> Tensor:
        """Posterior means ``batch x q x n`` at ``batch x q x d``."""
        if self._direction is not None:
            return self.model.projected_task_posterior(X, self._direction)[0]
        return self.model.posterior(X).mean

    def forward(self, X: Tensor) -> Tensor:
        mu = self.means(X.reshape(-1, 1, X.shape[-1]))  # points one by one
        return (mu.reshape(*X.shape[:-1], -1) * self.W).sum(dim=(-1, -2))
