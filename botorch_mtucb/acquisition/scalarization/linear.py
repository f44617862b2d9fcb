"""The linear scalarization s_λ(y) = Σ_i λ_i y_i (paper 000, §2).

Its Lipschitz constant is L_λ = ‖λ‖₂, and its directional upper confidence bound needs one
direction, the signed weights w (λ with the signs of minimised objectives flipped):

    s_λ(f(x)) ≤ wᵀμ(x) + β √(wᵀ Γ(x, x) w)      (paper 000, App. B.1 with the direction w).
"""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_mtucb.acquisition.scalarization.base import Scalarization, _safe_sqrt

__all__ = ["LinearScalarization"]


class LinearScalarization(Scalarization):
    """s_λ(y) = Σ_i λ_i y_i (maximised), L_λ = ‖λ‖₂ (paper 000, §2).

    Minimised objectives (``minimize``) enter with a negative sign, s_λ(y) = Σ_i λ_i s_i y_i
    with s_i = ±1; see :mod:`~botorch_mtucb.acquisition.scalarization.base`. Constructed as
    :class:`~botorch_mtucb.acquisition.scalarization.base.Scalarization` (``weights``,
    ``minimize``).

    Example:
        >>> s = LinearScalarization(torch.tensor([0.25, 0.75], dtype=torch.float64))
        >>> s(torch.tensor([[1.0, 2.0]], dtype=torch.float64))
        tensor([1.7500], dtype=torch.float64)
        >>> LinearScalarization([0.5, 0.5], minimize=[False, True])(torch.tensor([1.0, 2.0]))
        tensor(-0.5000)
    """

    @property
    def lipschitz(self) -> Tensor:
        """L_λ = ‖λ‖₂, a 0-dim tensor."""
        return torch.linalg.vector_norm(self.weights)

    def _scalarize(self, Y: Tensor) -> Tensor:
        return Y @ self._constants(Y)["weights"]

    def _pieces(self, Y: Tensor) -> Tensor:
        return self._scalarize(Y).unsqueeze(-1)

    def _extra_constants(self, like: Tensor, signs: Tensor) -> dict[str, Tensor]:
        w = self.weights.to(like) * signs
        return {"signed_weights": w, "directions": w.unsqueeze(-1)}

    def directions(self, like: Tensor) -> Tensor:
        """``n x 1``: w = λ with the signs of minimised objectives flipped."""
        return self._constants(like)["directions"]

    def directional_ucb_from_variances(
        self, mean: Tensor, var: Tensor, beta: Tensor | float
    ) -> Tensor:
        """wᵀμ + β √(wᵀΓw) (signed w), from ``var = wᵀΓw``.

        Args:
            mean: ``batch x n`` posterior mean μ(x) (original units).
            var: ``batch x 1`` variance wᵀ Γ(x, x) w along :meth:`directions`.
            beta: Confidence radius β (0-dim tensor, or a number).

        Returns:
            ``batch`` upper bounds.
        """
        w = self._constants(mean)["signed_weights"]
        if torch.is_tensor(beta):
            return mean @ w + beta * _safe_sqrt(var[..., 0])
        return torch.add(mean @ w, _safe_sqrt(var[..., 0]), alpha=beta)
