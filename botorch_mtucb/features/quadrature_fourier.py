"""Quadrature Fourier features (QFF) for the squared-exponential kernel.

Paper 001, §5.1 (a), eq. (1) (after Mutný & Krause, 2018). For the SE kernel
``k(x, y) = exp(-‖x − y‖² / (2 l²))`` the spectral density factorises over dimensions, and

    k(x, y) = π^{-d/2} ∫ exp(-‖z‖²) cos(√2 zᵀ(x − y) / l) dz
            ≈ Σ_j ν_j cos(√2 z_jᵀ(x − y) / l),

with ``z_j`` the tensor grid of the ``m̄`` Gauss–Hermite nodes in each dimension and
``ν_j = Π_i w_{j_i} / √π`` the product of the normalised Gauss–Hermite weights. Splitting
``cos(a − b) = cos a cos b + sin a sin b`` gives the ``2 m̄^d``-dimensional feature map

    φ(x) = [√ν_j cos(√2 z_jᵀx / l)]_{j ≤ m̄^d}  ⊕  [√ν_j sin(√2 z_jᵀx / l)]_{j ≤ m̄^d},

so that ``φ(x)ᵀφ(y)`` equals the quadrature rule exactly. The error decays exponentially once
``m̄ > 1/l²`` (paper 001, discussion after Lemma 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral

import numpy as np
import torch
from torch import Tensor

from botorch_mtucb.utils.validation import check_finite

__all__ = ["MAX_QFF_FEATURES", "QuadratureFourierFeatures"]

#: Largest feature count ``2 m̄^d`` a :class:`QuadratureFourierFeatures` may have. Above it the
#: ``m x m`` matrices of ATA-GP-UCB no longer fit comfortably in memory / time.
MAX_QFF_FEATURES = 20_000

#: numpy's ``hermgauss`` is accurate to about this order; beyond it the weights underflow.
_MAX_NODES = 150


class QuadratureFourierFeatures:
    """Deterministic quadrature Fourier feature map of the SE kernel on ``[0, 1]^d``.

    A plain (non-Module) callable: ``X`` of shape ``... x d`` maps to ``... x m`` with
    ``m = 2 · num_nodes^dim``. Computations follow the dtype and device of ``X``.

    Example:
        >>> qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=32, dim=1)
        >>> X = torch.linspace(0, 1, 100, dtype=torch.float64).unsqueeze(-1)
        >>> qff(X).shape
        torch.Size([100, 64])
        >>> qff.kernel_error(X) < 1e-6
        tensor(True)
    """

    def __init__(
        self,
        lengthscale: float | Sequence[float] | Tensor,
        num_nodes: int,
        dim: int,
        max_features: int = MAX_QFF_FEATURES,
    ) -> None:
        """
        Args:
            lengthscale: SE lengthscale ``l > 0``; a scalar, or one value per dimension
                (``dim`` values) for an ARD kernel.
            num_nodes: Gauss–Hermite order ``m̄ ≥ 1`` per dimension (paper: ``m̄ > 1/l²``; a
                Python or NumPy integer).
            dim: Input dimension ``d ≥ 1`` (a Python or NumPy integer).
            max_features: Refuse maps with more than this many features ``2 m̄^d``.

        Raises:
            ValueError: on a non-positive lengthscale, ``num_nodes``/``dim`` not positive
                integers, ``num_nodes > 150`` (Gauss–Hermite weights underflow) or a feature
                count ``2 m̄^d`` above ``max_features``.
        """
        if isinstance(dim, bool) or not isinstance(dim, Integral) or dim < 1:
            raise ValueError(f"`dim` must be a positive integer, got {dim!r}.")
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, Integral) or num_nodes < 1:
            raise ValueError(f"`num_nodes` must be a positive integer, got {num_nodes!r}.")
        dim, num_nodes = int(dim), int(num_nodes)
        if num_nodes > _MAX_NODES:
            raise ValueError(
                f"`num_nodes` must be at most {_MAX_NODES} (Gauss–Hermite weights underflow "
                f"beyond that), got {num_nodes}."
            )
        ls = torch.as_tensor(lengthscale, dtype=torch.float64).reshape(-1)
        if ls.numel() == 1:
            ls = ls.expand(dim).clone()
        if ls.numel() != dim:
            raise ValueError(
                f"`lengthscale` must be a scalar or hold `dim`={dim} values, got {ls.numel()}."
            )
        if not torch.isfinite(ls).all() or (ls <= 0).any():
            raise ValueError(f"`lengthscale` must be positive and finite, got {ls.tolist()}.")
        # Compare in log space first so that huge num_nodes**dim is never materialised.
        if dim * math.log(num_nodes) + math.log(2) > math.log(max_features) + 1e-12:
            raise ValueError(
                f"QuadratureFourierFeatures with num_nodes={num_nodes} and dim={dim} would have "
                f"2 * {num_nodes}^{dim} features, more than max_features={max_features}. "
                "QFF grows exponentially with the dimension: lower `num_nodes`, use "
                "NystromFeatures, or raise `max_features` if you really mean it."
            )
        self.lengthscale = ls
        self.num_nodes = num_nodes
        self.dim = dim

        nodes_np, weights_np = np.polynomial.hermite.hermgauss(num_nodes)
        nodes = torch.as_tensor(nodes_np, dtype=torch.float64)
        weights = torch.as_tensor(weights_np, dtype=torch.float64) / math.sqrt(math.pi)
        # Tensor grid: frequencies z_j (M x d) and product weights ν_j (M), M = m̄^d.
        grids = torch.meshgrid(*([nodes] * dim), indexing="ij")
        wgrids = torch.meshgrid(*([weights] * dim), indexing="ij")
        self.nodes = torch.stack([g.reshape(-1) for g in grids], dim=-1)
        self.weights = torch.stack([w.reshape(-1) for w in wgrids], dim=-1).prod(dim=-1)
        # Frequencies already scaled by √2 / l (per dimension): M x d.
        self._freqs = self.nodes * (math.sqrt(2.0) / ls)
        self._sqrt_w = self.weights.sqrt()

    @property
    def num_features(self) -> int:
        """Feature dimension ``m = 2 m̄^d``."""
        return 2 * self.weights.numel()

    def __call__(self, X: Tensor) -> Tensor:
        """Evaluate the feature map (paper 001, eq. (1)).

        Args:
            X: ``... x d`` inputs (the theory assumes ``[0, 1]^d``).

        Returns:
            ``... x m`` features, ``m = 2 m̄^d`` (cosines first, then sines).

        Shapes and dtype are checked; values are not (this is a posterior's hot path, and a
        finiteness check would synchronise with the device on every call: models validate
        their training data, and :meth:`kernel_error` validates its input).
        """
        self._check_inputs(X, finite=False)
        freqs = self._freqs.to(X)
        sw = self._sqrt_w.to(X)
        proj = X @ freqs.transpose(-1, -2)  # ... x M
        return torch.cat([sw * torch.cos(proj), sw * torch.sin(proj)], dim=-1)

    def kernel(self, X1: Tensor, X2: Tensor) -> Tensor:
        """The exact SE kernel ``exp(-Σ_i (x_i − y_i)² / (2 l_i²))`` being approximated.

        Args:
            X1: ``... x n1 x d``.
            X2: ``... x n2 x d``.

        Returns:
            ``... x n1 x n2`` kernel matrix.
        """
        self._check_inputs(X1, "X1")
        self._check_inputs(X2, "X2")
        ls = self.lengthscale.to(X1)
        diff = (X1.unsqueeze(-2) - X2.unsqueeze(-3)) / ls
        return torch.exp(-0.5 * diff.pow(2).sum(-1))

    def kernel_error(self, X: Tensor) -> Tensor:
        """Sup-norm approximation error ``max_{x, y ∈ X} |k(x, y) − φ(x)ᵀφ(y)|`` on given points.

        Args:
            X: ``n x d`` points.

        Returns:
            0-dim tensor (dtype of ``X``).
        """
        self._check_inputs(X)
        if X.dim() != 2:
            raise ValueError(f"`X` must be an n x d matrix, got shape {tuple(X.shape)}.")
        phi = self(X)
        return (self.kernel(X, X) - phi @ phi.transpose(-1, -2)).abs().max()

    def _check_inputs(self, X: Tensor, name: str = "X", finite: bool = True) -> None:
        if not torch.is_tensor(X):
            raise ValueError(f"`{name}` must be a torch.Tensor, got {type(X).__name__}.")
        if finite:
            check_finite(X, name)
        if X.dim() < 1 or X.shape[-1] != self.dim:
            raise ValueError(
                f"`{name}` must have a last dimension of size dim={self.dim}, "
                f"got shape {tuple(X.shape)}."
            )
        if not X.is_floating_point():
            raise ValueError(f"`{name}` must be a floating-point tensor, got {X.dtype}.")

    def __repr__(self) -> str:
        return (
            f"QuadratureFourierFeatures(lengthscale={self.lengthscale.tolist()}, "
            f"num_nodes={self.num_nodes}, dim={self.dim})"
        )
