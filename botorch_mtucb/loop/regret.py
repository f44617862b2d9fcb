"""The instantaneous scalarized regret that :func:`botorch_mtucb.loop.run_bo_loop` records.

Paper 000, §2: with λ_t ~ P_λ and x_t the point chosen for it,

    r_t = s_{λ_t}(f(x*_{λ_t})) − s_{λ_t}(f(x_t)),   x*_λ = argmax_x s_λ(f(x)),

and the cumulative scalarized regret R_C(T) = Σ_t r_t (its expectation over P_λ is the
Bayes regret the paper bounds). Single-objective runs (no scalarization) use s(f) = f.

On a finite arm set the maximum is exact. On a continuous domain x*_λ is approximated by the
best point of a dense reference set together with x_t itself (so r_t ≥ 0), optionally
polished by a local ascent of the true objective inside a box
(:func:`~botorch_mtucb.utils.optimum.polish_maxima`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.utils.optimum import polish_maxima

__all__ = ["ScalarizedRegret"]


class ScalarizedRegret:
    """r_t = max_{x ∈ X_ref ∪ {x_t}} s_λ(f(x)) − s_λ(f(x_t)) for a known, noise-free f.

    The objective f is evaluated once on the reference set (at construction) and once per
    call at x_t.

    Example:
        >>> X_ref = torch.linspace(0, 1, 11, dtype=torch.float64).unsqueeze(-1)
        >>> regret = ScalarizedRegret(lambda X: -(X - 0.5) ** 2, X_ref)
        >>> round(regret(None, torch.tensor([[0.2]], dtype=torch.float64)), 6)
        0.09
    """

    def __init__(
        self,
        true_f: Callable[[Tensor], Tensor],
        regret_X: Tensor,
        regret_bounds: Tensor | None = None,
    ) -> None:
        """
        Args:
            true_f: Noise-free ``N x d -> N x n`` objective (differentiable with torch
                autograd when ``regret_bounds`` is given).
            regret_X: ``M x d`` reference points over which max_x s_λ(f(x)) is taken.
            regret_bounds: Optional ``2 x d`` box in which the best reference point is
                polished by SLSQP on x ↦ s_λ(f(x)).
        """
        self.true_f = true_f
        self.regret_X = regret_X
        self.regret_bounds = regret_bounds
        self.F_ref = true_f(regret_X).detach()

    def __call__(self, scalarization: Scalarization | None, x: Tensor) -> float:
        """The regret of ``x`` under ``scalarization``.

        Args:
            scalarization: s_{λ_t}, or ``None`` for a single-objective run (then ``true_f``
                must have one output).
            x: ``1 x d`` chosen point x_t.

        Returns:
            r_t ≥ 0 as a float.
        """
        pieces = _pieces(scalarization, self.F_ref.shape[-1])
        v_ref = pieces(self.F_ref).min(dim=-1).values
        v_x = pieces(self.true_f(x).detach()).min(dim=-1).values
        best = torch.maximum(v_ref.max(), v_x.max())
        if self.regret_bounds is not None:
            start = self.regret_X[v_ref.argmax()].unsqueeze(0).to(self.regret_bounds)
            _, v_pol = polish_maxima(
                lambda X: pieces(self.true_f(X)), start, self.regret_bounds
            )
            best = torch.maximum(best, v_pol[0].to(best))
        return float(best - v_x[0])


def _pieces(scalarization: Scalarization | None, n: int) -> Callable[[Tensor], Tensor]:
    """``F -> ... x P`` pieces whose minimum is s_λ(F) (one piece, f itself, without s_λ)."""
    if scalarization is not None:
        return scalarization.pieces
    if n != 1:
        raise ValueError("Single-objective regret needs a 1-output `true_f`.")

    def identity(F: Tensor) -> Tensor:
        return F[..., :1]

    return identity
