"""Frozen cross-covariances of stationary kernels: the acquisition hot path's kernel call.

Inside ``optimize_acqf`` the posterior is evaluated hundreds of times against the *same*
training inputs with the *same* hyperparameters. GPyTorch's kernel ``forward`` re-reads the
constrained lengthscale and re-scales (and re-centres) both inputs on every call. For the
stationary kernels BoTorch uses by default — ``RBFKernel`` and ``MaternKernel`` (ν ∈ {½, 3/2,
5/2}), optionally inside a ``ScaleKernel`` — :class:`FrozenStationaryCross` reads the
hyperparameters once, keeps the scaled training inputs and their squared norms, and evaluates

    k(x, z) = s · κ(‖x/ℓ − z/ℓ‖),   ‖u − v‖² = ‖u‖² − 2uᵀv + ‖v‖²  (clamped at 0),

with κ the RBF or Matérn profile (the formulas of GPyTorch's kernels), plus the constant prior
variance k(x, x) = s. Gradients flow to ``x``; the hyperparameters are constants (use it only
where the posterior's caches are detached, as in GPyTorch's ``detach_test_caches``).
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel, ScaleKernel
from torch import Tensor

__all__ = ["FrozenStationaryCross"]


class FrozenStationaryCross:
    """``k(X, Z)`` for fixed ``Z`` and fixed hyperparameters of an RBF / Matérn kernel.

    Build with :meth:`maybe` (``None`` for any other kernel, a kernel with a batch shape or
    ``active_dims``, or a batched ``Z``).
    """

    def __init__(self, base: Kernel, scale: Tensor, Z: Tensor) -> None:
        self.nu = base.nu if isinstance(base, MaternKernel) else None
        self.lengthscale = base.lengthscale.detach().reshape(1, -1).to(Z)
        self.scale = scale.detach().reshape(()).to(Z)
        self.Zs = Z / self.lengthscale  # t x d
        self.ZsT = self.Zs.transpose(0, 1).contiguous()  # d x t
        self.Zs_sq = self.Zs.pow(2).sum(-1)  # t
        self.Zs_half_sq = -0.5 * self.Zs_sq

    @classmethod
    def maybe(cls, kernel: Kernel, Z: Tensor) -> FrozenStationaryCross | None:
        """A frozen evaluator for ``kernel`` against ``Z``, or ``None`` when not applicable."""
        scale = torch.ones((), dtype=Z.dtype, device=Z.device)
        base = kernel
        if isinstance(kernel, ScaleKernel):
            if len(kernel.batch_shape) > 0 or kernel.active_dims is not None:
                return None
            scale, base = kernel.outputscale, kernel.base_kernel
        supported = type(base) is RBFKernel or (
            type(base) is MaternKernel and base.nu in (0.5, 1.5, 2.5)
        )
        if not supported or len(base.batch_shape) > 0 or base.active_dims is not None:
            return None
        if Z.dim() != 2 or base.lengthscale.numel() not in (1, Z.shape[-1]):
            return None
        return cls(base, scale, Z)

    def __call__(self, X: Tensor) -> Tensor:
        """``k(X, Z)``: ``batch x q x t`` for ``X: batch x q x d``."""
        Xs = X / self.lengthscale
        k = self.profile(Xs.reshape(-1, Xs.shape[-1]))
        return (self.scale * k).reshape(*X.shape[:-1], self.Zs.shape[0])

    def profile(self, Xs: Tensor) -> Tensor:
        """κ(‖x/ℓ − z/ℓ‖) without the outputscale: ``N x t`` for scaled inputs ``Xs: N x d``.

        The RBF profile exp(−½‖u − v‖²) is evaluated as exp(min(uᵀv − ½‖u‖² − ½‖v‖², 0)) in
        four autograd nodes (what the acquisition hot path differentiates through).
        """
        if self.nu is None:
            half = torch.addmm(self.Zs_half_sq, Xs, self.ZsT)  # uᵀv − ½‖v‖²
            half = torch.sub(half, Xs.pow(2).sum(-1, keepdim=True), alpha=0.5)
            return torch.exp(half.clamp_max(0.0))
        sq = torch.addmm(self.Zs_sq, Xs, self.ZsT, alpha=-2.0)
        sq = (sq + Xs.pow(2).sum(-1, keepdim=True)).clamp_min(0.0)
        dist = sq.clamp_min(1e-30).sqrt()
        root = math.sqrt(2.0 * self.nu)
        k = torch.exp(-root * dist)
        if self.nu == 1.5:
            k = k * (1.0 + root * dist)
        elif self.nu == 2.5:
            k = k * (1.0 + root * dist + (5.0 / 3.0) * sq)
        return k

    def diag(self, X: Tensor) -> Tensor:
        """``k(x, x) = s`` at ``X: batch x q x d``: ``batch x q``."""
        return self.scale.expand(X.shape[:-1])
