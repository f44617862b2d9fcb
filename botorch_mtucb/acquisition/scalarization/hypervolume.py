"""The hypervolume scalarization s_λ(y) = min_i max(0, (y_i − z_i)/λ_i)ⁿ (Zhang & Golovin, 2020).

With λ uniform on the positive part of the unit sphere, S₊ = {λ ≻ 0, ‖λ‖₂ = 1}, the expected
best value of a finite set S ⊂ Rⁿ is its hypervolume above the reference point z, up to a
constant (Zhang & Golovin, "Random Hypervolume Scalarizations for Provable Multi-Objective
Black Box Optimization", ICML 2020):

    HV_z(S) = c_n · E_λ[max_{y∈S} s_λ(y)],       c_n = π^{n/2} / (2ⁿ Γ(n/2 + 1)),

c_n being the volume of the unit ball's positive orthant: in polar coordinates about z the
region S dominates is star-shaped and max_{y∈S} s_λ(y)^{1/n} is its radius along λ
(:func:`hypervolume_scalarization_constant`). So paper 000's Bayes regret for this P_λ is the
hypervolume regret divided by c_n; :meth:`HypervolumeScalarization.from_data` states the regret
argument and exactly what it assumes.

s_λ is monotone, and Lipschitz only on outcomes bounded above and for λ away from the axes
(:attr:`HypervolumeScalarization.lipschitz`). Its directional upper confidence bound takes the
n task axes as directions (σ_i² = Γ_ii): s_λ(f(x)) ≤ min_i max(0, (μ̃_i + β σ_i − z̃_i)/λ_i)ⁿ
(tildes: sign-corrected). The acquisition scores the n-th root of that bound before the clamp
at zero, a monotone transform with the same maximisers that keeps a gradient where some upper
bound lies below z (:meth:`HypervolumeScalarization.directional_ucb_from_variances`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from botorch_mtucb.acquisition.scalarization.base import (
    Scalarization,
    _as_vector,
    _front_summary,
    _safe_sqrt,
    _scaled,
)

__all__ = ["HypervolumeScalarization", "hypervolume_scalarization_constant"]

_SPHERE_ATOL = 1e-6


def hypervolume_scalarization_constant(n: int) -> float:
    """c_n = π^{n/2} / (2ⁿ Γ(n/2 + 1)), the volume of the unit n-ball's positive orthant.

    With λ uniform on the positive unit sphere, HV_z(S) = c_n · E_λ[max_{y∈S} s_λ(y)] for the
    hypervolume scalarization s_λ (Zhang & Golovin, 2020).

    Args:
        n: Number of objectives (≥ 1).

    Returns:
        c_n as a float.

    Example:
        >>> round(hypervolume_scalarization_constant(2), 6)  # π / 4
        0.785398
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"`n` must be a positive integer, got {n!r}.")
    return math.exp(0.5 * n * math.log(math.pi) - n * math.log(2.0) - math.lgamma(0.5 * n + 1))


def _sphere_weights(weights: Tensor | Sequence[float]) -> Tensor:
    """``weights`` as a 1-d tensor, checked to lie on the positive unit sphere."""
    lam = _as_vector(weights, "weights")
    if (lam <= 0).any() or abs(float(torch.linalg.vector_norm(lam)) - 1.0) > _SPHERE_ATOL:
        raise ValueError(
            "`weights` must lie on the positive part of the unit sphere (all > 0, Euclidean "
            f"norm 1), got {lam.tolist()} (norm {float(torch.linalg.vector_norm(lam)):.6g})."
        )
    return lam


class HypervolumeScalarization(Scalarization):
    """s_λ(y) = min_i max(0, (y_i − z_i)/(r_i λ_i))ⁿ, maximised (Zhang & Golovin, 2020).

    λ lies on the positive unit sphere (``weights``), z is the reference point and r > 0 an
    optional per-objective ``scale`` (default 1: Zhang & Golovin's s_λ; with r, their s_λ of
    the normalised outcomes (y − z)/r, as :meth:`from_data` builds it). Minimised objectives
    are negated before scalarizing, with z and the outcome bound ``upper``
    (:mod:`~botorch_mtucb.acquisition.scalarization.base`). With a = r∘λ:

    * ``weights`` (the base class's simplex weights) is a / ‖a‖₁, the direction of the ray
      z + t a along which s_λ measures; ``sphere_weights`` is λ itself;
    * s_λ is the minimum of the n pieces max(0, (ỹ_i − z̃_i)/a_i)ⁿ (:meth:`pieces`), and
      s_λ = max(0, :meth:`root`)ⁿ with root(y) = min_i (ỹ_i − z̃_i)/a_i;
    * L_λ = n G^{n−1} / min_i a_i with G = min_i (ŭ_i − z̃_i)₊ / a_i, ŭ = sign-corrected
      ``upper``: the ℓ2- (and ℓ∞-) Lipschitz constant of s_λ on {ỹ ≤ ŭ}; infinite for n ≥ 2
      without ``upper`` (s_λ grows like ‖y‖ⁿ), 1/a_1 for n = 1;
    * the directional bound is s_λ(μ̃ + βσ) ≥ s_λ(f), σ_i² = Γ_ii; the acquisition value
      :meth:`directional_ucb_from_variances` is its n-th root before the clamp at zero.

    Example:
        >>> lam = torch.tensor([0.6, 0.8], dtype=torch.float64)
        >>> s = HypervolumeScalarization(lam, ref_point=[0.0, 0.0])
        >>> s(torch.tensor([[3.0, 8.0], [-1.0, 8.0]], dtype=torch.float64))  # min(5, 10)², 0
        tensor([25.,  0.], dtype=torch.float64)
        >>> s.root(torch.tensor([-1.0, 8.0], dtype=torch.float64))  # below z: no clamp
        tensor(-1.6667, dtype=torch.float64)
        >>> s.weights  # the simplex direction λ / ‖λ‖₁
        tensor([0.4286, 0.5714], dtype=torch.float64)
    """

    def __init__(
        self,
        weights: Tensor | Sequence[float],
        ref_point: Tensor | Sequence[float],
        minimize: Sequence[bool] | Tensor | None = None,
        scale: Tensor | Sequence[float] | None = None,
        upper: Tensor | Sequence[float] | None = None,
    ) -> None:
        """
        Args:
            weights: ``n`` weights λ on the positive unit sphere (all > 0, ‖λ‖₂ = 1), e.g.
                from ``sample_scalarization_weights(n, 1, "hypervolume")``.
            ref_point: ``n`` reference point z in original units (worse than the region of
                interest in every objective).
            minimize: Optional ``n`` booleans; ``True`` marks an objective to be minimised.
            scale: Optional ``n`` positive scales r (original units); default: ones.
            upper: Optional ``n`` upper end of the outcome range (original units; the lower
                end for a minimised objective) on which :attr:`lipschitz` holds; ``None``:
                no bound (then L_λ = ∞ for n ≥ 2, and so is the spectral bound).
        """
        lam = _sphere_weights(weights)
        r = torch.ones_like(lam) if scale is None else _as_vector(scale, "scale")
        if r.numel() != lam.numel() or (r <= 0).any():
            raise ValueError(
                f"`scale` must hold {lam.numel()} positive numbers, got {r.tolist()}."
            )
        a = r * lam
        super().__init__(a / a.sum(), minimize)
        self.sphere_weights = lam
        self.scale = r
        self.ref_point = self._vector(ref_point, "ref_point")
        self.upper = None if upper is None else self._vector(upper, "upper")

    def _vector(self, value: Tensor | Sequence[float], name: str) -> Tensor:
        v = _as_vector(value, name)
        if v.numel() != self.num_objectives:
            raise ValueError(
                f"`{name}` must have {self.num_objectives} entries (one per objective), got "
                f"{v.numel()}."
            )
        return v

    @classmethod
    def from_data(
        cls,
        weights: Tensor | Sequence[float],
        Y: Tensor,
        minimize: Sequence[bool] | Tensor | None = None,
        margin: float = 0.1,
        predicted: Tensor | None = None,
        span: Literal["all", "front"] = "all",
    ) -> HypervolumeScalarization:
        """Scale-free s_λ from observed outcomes: Zhang & Golovin's s_λ of normalised outcomes.

        With r_i the range of objective i (see ``span``), ñ_i and ĩ_i the worst and best
        values of objective i over the estimated Pareto front (sign-corrected), the result is

            s_λ(y) = min_i max(0, (ỹ_i − z̃_i) / (r_i λ_i))ⁿ,   z̃ = ñ − margin · r,

        with ``upper`` ŭ = ĩ + margin · r. Rescaling an objective's units rescales r_i, z_i and
        ŭ_i with it and leaves s_λ unchanged (and the directional UCB on it; the spectral
        UCB's width ‖Γ(x, x)‖ stays in raw units), and z sits just below the nadir of the
        non-dominated points, so the rays z + t r∘λ meet the front.

        Regret. In the normalised outcomes ŷ = (ỹ − z̃)/r:

        1. *Hypervolume*: for λ uniform on the positive unit sphere S₊ and any set S,
           E_λ[max_{y∈S} s_λ(y)] = HV_z(S) / (c_n ∏_i r_i), c_n =
           :func:`hypervolume_scalarization_constant` (n). Paper 000's Bayes regret
           R_B(T) = E_λ[max_x s_λ(f(x)) − max_{x∈X_T} s_λ(f(x))] is therefore the hypervolume
           regret (HV_z(f(𝒳)) − HV_z(f(X_T))) / (c_n ∏_i r_i), exactly.
        2. *Monotone and Lipschitz*: s_λ is nondecreasing in every objective. On the
           outcomes bounded above, Y = {ỹ ≤ ŭ} (no lower bound is needed: the clamp is flat),
           |s_λ(y) − s_λ(y')| ≤ L_λ ‖y − y'‖_∞ ≤ L_λ ‖y − y'‖₂ with L_λ = n G_λ^{n−1} / min_i a_i,
           a = r∘λ, G_λ = min_i (ŭ_i − z̃_i)/a_i (:attr:`lipschitz`): s_λ^{1/n} is
           (1/min_i a_i)-Lipschitz in ℓ∞ and at most G_λ on Y, and t ↦ tⁿ is
           n G_λ^{n−1}-Lipschitz on [0, G_λ]. As max_i λ_i ≥ 1/√n, G_λ ≤ √n R̄ with
           R̄ = max_i (ŭ_i − z̃_i)/r_i, so for λ in Λ_δ = {λ ∈ S₊ : min_i λ_i ≥ δ}, δ > 0,
           L_λ ≤ L = n^{(n+1)/2} R̄^{n−1} / (δ min_i r_i).
        3. *Theorem 2*: assume f(x), μ_t(x) (spectral bound) and μ̃_t(x) + β_t σ_t(x)
           (directional bound) lie in Y for all x and t, and P_λ is uniform on Λ_δ. Then
           L_λ ≤ L for all λ, the hypothesis of paper 000's Theorem 2, whose argument carries
           over unchanged: the directional bound s_λ(μ̃ + βσ) lies between s_λ(f) and
           s_λ(μ̃) + L_λ β ‖Γ‖^{1/2} on Y, and the acquisition maximises it (the transform
           of :meth:`directional_ucb_from_variances` has the same maximisers). Theorem 2
           bounds the cumulative scalarized regret R_C(T), and R_B(T) ≤ R_C(T)/T + o(1)
           (paper 000, §2; s_λ is Lipschitz in λ on Λ_δ for outcomes in Y).
        4. *Truncation*: the identity of 1 is for the uniform law on all of S₊ (what
           ``ScalarizationSampler(kind="hypervolume")`` draws; every draw has a finite L_λ,
           but the law has no uniform bound). For outcomes in Y the two laws' Bayes regrets
           differ by at most p_δ (√n R̄)ⁿ, p_δ = P(min_i λ_i < δ) → 0 as δ → 0, since
           0 ≤ r_λ ≤ max_{y∈Y} s_λ(y) ≤ (√n R̄)ⁿ.

        ``upper`` is estimated from the data here (the best observed or predicted value plus
        ``margin`` · r); the guarantee needs it to bound the outcomes.

        Args:
            weights: ``n`` weights λ on the positive unit sphere (e.g. from
                ``sample_scalarization_weights(n, 1, "hypervolume")``).
            Y: ``N x n`` observed outcomes (original units, ``N ≥ 1``).
            minimize: Optional ``n`` booleans marking minimised objectives.
            margin: Offset of z below the nadir and of ``upper`` above the best values, in
                units of the range (≥ 0).
            predicted: Optional ``M x n`` predicted outcomes (e.g. the model's payoff table
                :func:`~botorch_mtucb.acquisition.scalarization.chebyshev.predicted_anchors`),
                as in ``ChebyshevScalarization.from_data``: the nadir is then taken over the
                observed non-dominated points and the non-dominated points of the observed and
                predicted outcomes together.
            span: ``"all"`` (default): r_i is the range of all observed outcomes; ``"front"``:
                the range of the non-dominated points above where it is positive.

        Returns:
            A :class:`HypervolumeScalarization` in the original units of ``Y``.

        Example:
            >>> Y = torch.tensor([[0.0, 10.0], [1.0, 0.0], [0.5, 5.0]], dtype=torch.float64)
            >>> s = HypervolumeScalarization.from_data([0.6, 0.8], Y)
            >>> s.ref_point  # the front's nadir (0, 0) minus 0.1 of the ranges (1, 10)
            tensor([-0.1000, -1.0000], dtype=torch.float64)
            >>> s.scale
            tensor([ 1., 10.], dtype=torch.float64)
            >>> t = HypervolumeScalarization.from_data([0.6, 0.8], Y * torch.tensor([1.0, 1e3]))
            >>> torch.allclose(s(Y), t(Y * torch.tensor([1.0, 1e3])))  # unit-free
            True
        """
        lam = _sphere_weights(weights)
        n = lam.numel()
        if not math.isfinite(float(margin)) or float(margin) < 0:
            raise ValueError(f"`margin` must be a finite number >= 0, got {margin!r}.")
        signs, r, nadir, ideal = _front_summary(Y, n, minimize, predicted, span)
        dtype = Y.dtype if Y.is_floating_point() else lam.dtype
        return cls(
            lam,
            ((nadir - float(margin) * r) * signs).to(dtype),
            minimize,
            scale=r.to(dtype),
            upper=((ideal + float(margin) * r) * signs).to(dtype),
        )

    @property
    def lipschitz(self) -> Tensor:
        """L_λ = n G^{n−1} / min_i a_i, G = min_i (ŭ_i − z̃_i)₊ / a_i, a = r∘λ (0-dim tensor).

        The ℓ2-Lipschitz constant of s_λ on the outcomes below ``upper`` (sign-corrected);
        ``inf`` for n ≥ 2 without ``upper`` (see :meth:`from_data` for the argument).
        """
        a = self.scale * self.sphere_weights
        n = self.num_objectives
        if self.upper is None:
            room = torch.full_like(a, math.inf)
        else:
            signs = 1.0 - 2.0 * self.minimize.to(a)
            room = ((self.upper - self.ref_point).to(a) * signs).clamp_min(0.0)
        G = (room / a).min()
        return n * G.pow(n - 1) / a.min()

    def _extra_constants(self, like: Tensor, signs: Tensor) -> dict[str, Tensor]:
        inv_a = 1.0 / (self.scale * self.sphere_weights).to(like)
        z = self.ref_point.to(like) * signs
        return {"signed_ref": z, "inv_axes": inv_a, "signed_inv_axes": inv_a * signs,
                "neg_ref_over_axes": -(z * inv_a)}

    def _ratios(self, Y: Tensor) -> Tensor:
        """(ỹ_i − z̃_i)/a_i on sign-corrected ``... x n`` outcomes."""
        c = self._constants(Y)
        return (Y - c["signed_ref"]) * c["inv_axes"]

    def _scalarize(self, Y: Tensor) -> Tensor:
        return self.from_root(self._ratios(Y).min(dim=-1).values)

    def _pieces(self, Y: Tensor) -> Tensor:
        return self.from_root(self._ratios(Y))

    def root(self, Y: Tensor) -> Tensor:
        """min_i (ỹ_i − z̃_i)/a_i, so that s_λ(y) = max(0, root(y))ⁿ (no clamp: negative
        below z, informative there).

        Args:
            Y: ``batch_shape x n`` outcomes (original units).

        Returns:
            ``batch_shape`` values.
        """
        self._check_last_dim(Y, "Y")
        return self._ratios(Y * self.signs(Y)).min(dim=-1).values

    def from_root(self, value: Tensor) -> Tensor:
        """max(0, value)ⁿ: s_λ from :meth:`root`, and the directional upper bound from
        :meth:`directional_ucb_from_variances`.

        Args:
            value: Tensor of any shape.

        Returns:
            Tensor of the same shape.
        """
        return value.clamp_min(0.0).pow(self.num_objectives)

    def directions(self, like: Tensor) -> None:
        """``None``: the marginal variances Γ_ii (one direction e_i per objective)."""
        return None

    def directional_ucb_from_variances(
        self, mean: Tensor, var: Tensor, beta: Tensor | float
    ) -> Tensor:
        """min_i (μ̃_i + β σ_i − z̃_i)/a_i, σ_i² = Γ_ii (``var``: ``batch x n``), tildes:
        sign-corrected: the n-th root of the directional bound before the clamp at zero.

        The upper bound on s_λ(f(x)) is :meth:`from_root` of this value; it is a
        nondecreasing function of the value, strictly increasing where positive, so both have
        the same maximisers (every x is a maximiser of the bound when it is zero everywhere),
        and the value keeps a gradient where some upper bound lies below z.

        Args:
            mean: ``batch x n`` posterior mean μ(x) (original units).
            var: ``batch x n`` marginal variances Γ_ii(x, x).
            beta: Confidence radius β (0-dim tensor, or a number).

        Returns:
            ``batch`` acquisition values.
        """
        c = self._constants(mean)
        wb = c["inv_axes"] * beta if torch.is_tensor(beta) else _scaled(c, "inv_axes", beta)
        ratios = torch.addcmul(
            torch.addcmul(c["neg_ref_over_axes"], c["signed_inv_axes"], mean),
            wb, _safe_sqrt(var),
        )
        return ratios.min(dim=-1).values

    def __repr__(self) -> str:
        return (
            f"HypervolumeScalarization(weights={self.sphere_weights.tolist()}, "
            f"ref_point={self.ref_point.tolist()})"
        )
