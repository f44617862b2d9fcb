"""Cholesky factor objects: solve, quadratic form, log-determinant, extension by new rows.

One place for the block-Cholesky algebra that the dense multi-task posterior, the Nyström
posterior and the Schur block of incremental ICM conditioning share. Factorisations follow
GPyTorch / linear_operator's jitter policy (``psd_safe_cholesky``: on failure, jitter of
``cholesky_jitter`` × 10^k is added to the diagonal with a ``NumericalWarning``, up to
``cholesky_max_tries`` times, then ``NotPSDError``), so a matrix that is PSD only up to
round-off is factored the way BoTorch's own models factor it, and never silently.
"""

from __future__ import annotations

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

__all__ = ["CholeskyFactor"]


class CholeskyFactor:
    """Lower Cholesky factor ``L`` of a (batched) SPD matrix ``A = L Lᵀ``.

    Example:
        >>> X = torch.linspace(0, 1, 5, dtype=torch.float64).unsqueeze(-1)
        >>> A = torch.exp(-((X - X.T) ** 2)) + 0.1 * torch.eye(5, dtype=torch.float64)
        >>> F = CholeskyFactor.from_matrix(A[:3, :3])
        >>> y = torch.ones(3, 1, dtype=torch.float64)
        >>> torch.allclose(A[:3, :3] @ F.solve(y), y)   # A⁻¹ y
        True
        >>> F = F.extend(A[:3, 3:], A[3:, 3:])   # the factor of all 5 rows
        >>> torch.allclose(F.logdet(), torch.logdet(A))
        True
    """

    def __init__(self, L: Tensor) -> None:
        """
        Args:
            L: ``batch_shape x t x t`` lower-triangular factor (``t`` may be 0).
        """
        self.L = L

    @classmethod
    def from_matrix(cls, A: Tensor) -> CholeskyFactor:
        """Factor a ``batch_shape x t x t`` SPD matrix (``psd_safe_cholesky`` jitter policy).

        The symmetrised matrix ``(A + Aᵀ)/2`` is factored with ``torch.linalg.cholesky_ex``,
        which reports failures in an error code instead of raising. The host reads that code
        once per call (one synchronisation on an accelerator, whatever the batch): a failure
        must be known on the host to retry with jitter, whose warning, error and jitter level
        are ``psd_safe_cholesky``'s (a ``NanError`` for NaN entries, jitter only on the failed
        batch members, ``NotPSDError`` after ``cholesky_max_tries``).

        Args:
            A: ``batch_shape x t x t`` symmetric positive-definite matrix (``t`` may be 0).

        Returns:
            The factor of ``(A + Aᵀ)/2``.
        """
        if A.shape[-1] == 0:
            return cls(A)
        sym = 0.5 * (A + A.transpose(-1, -2))
        L, info = torch.linalg.cholesky_ex(sym)
        if info.any():  # the one host read
            L = psd_safe_cholesky(sym)  # jitter retries, warnings and errors
        return cls(L)

    @property
    def size(self) -> int:
        """The side length ``t``."""
        return self.L.shape[-1]

    def solve_lower(self, rhs: Tensor) -> Tensor:
        """``L⁻¹ rhs`` for ``batch_shape x t x k`` right-hand sides."""
        if self.size == 0:
            return rhs
        return torch.linalg.solve_triangular(self.L, rhs, upper=False)

    def solve(self, rhs: Tensor) -> Tensor:
        """``A⁻¹ rhs`` for ``batch_shape x t x k`` right-hand sides."""
        if self.size == 0:
            return rhs
        return torch.cholesky_solve(rhs, self.L)

    def inv_quad(self, rhs: Tensor) -> Tensor:
        """Column-wise ``rhsᵀ A⁻¹ rhs``: ``batch_shape x k`` for ``batch_shape x t x k``."""
        return self.solve_lower(rhs).pow(2).sum(-2)

    def logdet(self) -> Tensor:
        """``log det A``, shape ``batch_shape``."""
        return 2.0 * self.L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def extend(self, C: Tensor, D: Tensor) -> CholeskyFactor:
        """Factor of ``[[A, C], [Cᵀ, D]]`` from this one, in O(t² m + m³).

        With ``S = L⁻¹ C`` the new factor is ``[[L, 0], [Sᵀ, chol(D − SᵀS)]]``.

        Args:
            C: ``batch_shape x t x m`` off-diagonal block.
            D: ``batch_shape x m x m`` new diagonal block (noise included).

        Returns:
            The ``(t+m) x (t+m)`` factor.
        """
        S = self.solve_lower(C)  # t x m
        schur = D - S.transpose(-1, -2) @ S
        L22 = CholeskyFactor.from_matrix(schur).L
        top = torch.cat([self.L, torch.zeros_like(C)], dim=-1)
        bottom = torch.cat([S.transpose(-1, -2), L22], dim=-1)
        return CholeskyFactor(torch.cat([top, bottom], dim=-2))
