"""Posterior solvers for multi-task kernel regression (paper 000, §3.1, §3.3, Appendix A).

A solver holds the factorisation of one training set under one set of hyperparameters and
answers three questions: the posterior mean, the posterior covariance (joint over ``q``
points and ``n`` tasks, or only the ``n x n`` block of each point) and the information gain.
The BoTorch model chooses the solver from the kernel's structure and caches it.

* :class:`DenseSolver` — any multi-task kernel: one Cholesky factor of the ``nt x nt`` matrix
  ``G_t + ηI`` (paper 000, eq. (1) and §3.1).
* :class:`ICMSolver` — Γ = k·B: one eigendecomposition ``K_t = W diag(a) Wᵀ`` of the ``t x t``
  scalar kernel matrix and ``B = U diag(ξ) Uᵀ`` serve all ``n`` problems (§3.3):

      μ_t(x)     = Σ_i ξ_i k_t(x)ᵀ(ξ_i K_t + ηI)⁻¹ Y_t u_i · u_i
      Γ_t(x, x') = Σ_i ξ_i (k(x, x') − ξ_i k_t(x)ᵀ(ξ_i K_t + ηI)⁻¹ k_t(x')) u_i u_iᵀ
      ½ log det(I_{nt} + η⁻¹G_t) = ½ Σ_i Σ_j log(1 + ξ_i a_j / η).

All tensors follow GPyTorch's interleaved multi-task order (index ``point·n + task``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel

__all__ = [
    "DenseSolver",
    "ICMSolver",
    "MultiTaskSolver",
    "cross_kernel",
    "extend_solver",
    "interleave_blocks",
]


def interleave_blocks(cov: Tensor) -> Tensor:
    """Reshape ``batch x q x n x q x n`` into the interleaved ``batch x (q·n) x (q·n)``."""
    q, n = cov.shape[-4], cov.shape[-3]
    return cov.reshape(*cov.shape[:-4], q * n, q * n)


class MultiTaskSolver(ABC):
    """Factorisation of a multi-task kernel regression problem.

    Args (of every implementation):
        kernel: The multi-task kernel Γ.
        train_X: ``t x d`` training inputs (already input-transformed).
        train_resid: ``t x n`` training targets minus the prior mean.
        noise: Regulariser η > 0 (a scalar tensor).
    """

    num_tasks: int

    @abstractmethod
    def mean(self, X: Tensor) -> Tensor:
        """Posterior mean minus prior mean, ``batch x q x n`` for ``X: batch x q x d``."""

    @abstractmethod
    def covariance(self, X: Tensor) -> Tensor:
        """Joint posterior covariance, interleaved ``batch x (q·n) x (q·n)``."""

    @abstractmethod
    def task_blocks(self, X: Tensor) -> Tensor:
        """Per-point ``n x n`` posterior covariances Γ_t(x, x), ``batch x q x n x n``."""

    @abstractmethod
    def information_gain(self) -> Tensor:
        """½ log det(I_{nt} + η⁻¹ G_t), a scalar tensor."""

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        """Mean and covariance in one call (implementations share the cross-kernel work).

        Args:
            X: ``batch x q x d`` inputs.
            full_cov: Joint interleaved ``batch x (q·n) x (q·n)`` covariance if ``True``,
                else the per-point blocks ``batch x q x n x n``.
        """
        cov = self.covariance(X) if full_cov else self.task_blocks(X)
        return self.mean(X), cov


def cross_kernel(kernel: Kernel, X: Tensor, train_X: Tensor) -> Tensor:
    """Dense ``kernel(X, train_X)`` for ``X: batch x q x d``, as one flat evaluation.

    The ``batch·q`` test points are stacked into a single matrix (valid for kernels without
    a batch shape, as in these non-batched models), which avoids GPyTorch broadcasting the
    training inputs over the batch. Returns ``batch x (q·o) x (t·o)`` with ``o`` outputs per
    input.
    """
    if len(getattr(kernel, "batch_shape", torch.Size())) > 0:
        out = kernel.forward(X, train_X)
        return out.to_dense() if hasattr(out, "to_dense") else out
    out = kernel.forward(X.reshape(-1, X.shape[-1]), train_X)
    out = out.to_dense() if hasattr(out, "to_dense") else out
    return out.reshape(*X.shape[:-2], -1, out.shape[-1])


class DenseSolver(MultiTaskSolver):
    """Generic solver: Cholesky of the dense ``nt x nt`` matrix ``G_t + ηI``.

    Costs O(n³t³) to build; used for kernels that are not a single separable term.
    """

    def __init__(
        self,
        kernel: MultiTaskKernel,
        train_X: Tensor,
        train_resid: Tensor,
        noise: Tensor,
        chol: Tensor | None = None,
    ) -> None:
        self.kernel = kernel
        self.train_X = train_X
        self.noise = noise
        self.num_tasks = n = train_resid.shape[-1]
        t = train_X.shape[-2]
        if chol is None:
            G = kernel.forward(train_X, train_X).to_dense()
            G = G + noise * torch.eye(n * t, dtype=G.dtype, device=G.device)
            chol = torch.linalg.cholesky(G)
        self.chol = chol
        y = train_resid.reshape(n * t, 1)
        self.alpha = torch.cholesky_solve(y, chol)  # (G + ηI)⁻¹ vec(Y)

    def _cross(self, X: Tensor) -> Tensor:
        return cross_kernel(self.kernel, X, self.train_X)  # batch x (q·n) x (t·n)

    def _solve(self, cross: Tensor) -> Tensor:
        """``L⁻¹ crossᵀ`` as ``batch x (t·n) x (q·n)``, with one flat triangular solve."""
        flat = cross.reshape(-1, cross.shape[-1]).transpose(0, 1)
        v = torch.linalg.solve_triangular(self.chol, flat, upper=False)
        return v.transpose(0, 1).reshape(cross.shape).transpose(-1, -2)

    def mean(self, X: Tensor) -> Tensor:
        return self.predict(X, full_cov=False)[0]

    def covariance(self, X: Tensor) -> Tensor:
        return self.predict(X, full_cov=True)[1]

    def task_blocks(self, X: Tensor) -> Tensor:
        return self.predict(X, full_cov=False)[1]

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        n = self.num_tasks
        if not full_cov:  # one point per block: batch x q x 1 x d
            mean, cov = self.predict(X.unsqueeze(-2), full_cov=True)
            return mean.squeeze(-2), cov.reshape(*X.shape[:-1], n, n)
        cross = self._cross(X)
        mean = (cross @ self.alpha).reshape(*X.shape[:-1], n)
        prior = self.kernel.forward(X, X).to_dense()
        v = self._solve(cross)
        return mean, prior - v.transpose(-1, -2) @ v

    def information_gain(self) -> Tensor:
        nt = self.chol.shape[-1]
        logdet = 2 * torch.log(torch.diagonal(self.chol)).sum()
        return 0.5 * (logdet - nt * torch.log(self.noise))


class ICMSolver(MultiTaskSolver):
    """ICM solver for Γ = k·B (paper 000, §3.3 and Appendix A).

    One ``t x t`` eigendecomposition of ``K_t`` and one ``n x n`` of ``B``; never forms the
    ``nt x nt`` system.
    """

    def __init__(
        self,
        data_kernel: Kernel,
        task_covar: Tensor,
        train_X: Tensor,
        train_resid: Tensor,
        noise: Tensor,
        K: Tensor | None = None,
    ) -> None:
        self.data_kernel = data_kernel
        self.train_X = train_X
        self.noise = noise
        self.num_tasks = train_resid.shape[-1]
        xi, U = torch.linalg.eigh(task_covar)
        self.xi = xi.clamp_min(0.0)  # n
        self.U = U  # n x n, columns u_i
        if K is None:
            K = data_kernel.forward(train_X, train_X)
            K = K.to_dense() if hasattr(K, "to_dense") else K
        self.K = K  # t x t, kept so that conditioning can extend it
        a, W = torch.linalg.eigh(K)
        eig_K = (a.clamp_min(0.0), W)
        self.a, self.W = eig_K  # t, t x t
        # inv_diag[j, i] = 1 / (ξ_i a_j + η): the spectrum of (ξ_i K_t + ηI)⁻¹
        self.inv_diag = 1.0 / (self.a[:, None] * self.xi[None, :] + noise)  # t x n
        # Mean coefficients C (t x n): column i is ξ_i (ξ_i K + ηI)⁻¹ Y u_i, expressed in the
        # eigenbasis of K (so that μ(x) = (k_t(x)ᵀ W) C Uᵀ).
        proj = self.W.transpose(-1, -2) @ (train_resid @ U)  # t x n: Wᵀ Y u_i
        self.coef = self.xi[None, :] * self.inv_diag * proj

    def _proj(self, X: Tensor) -> Tensor:
        """``k_t(X)ᵀ W``: ``batch x q x t``."""
        return cross_kernel(self.data_kernel, X, self.train_X) @ self.W

    def _mean_from_proj(self, P: Tensor) -> Tensor:
        flat = P.reshape(-1, P.shape[-1])  # one (batch·q) x t matmul, not batch tiny ones
        return ((flat @ self.coef) @ self.U.transpose(-1, -2)).reshape(*P.shape[:-1], -1)

    def mean(self, X: Tensor) -> Tensor:
        return self._mean_from_proj(self._proj(X))

    def eigen_variances(self, X: Tensor, P: Tensor | None = None) -> Tensor:
        """Eigenvalues s_i(x) of Γ_t(x, x) along u_i, ``batch x q x n``.

        s_i(x) = ξ_i (k(x, x) − ξ_i k_t(x)ᵀ(ξ_i K_t + ηI)⁻¹ k_t(x)); the spectral norm of
        Γ_t(x, x) is max_i s_i(x) (paper 000, §3.3).
        """
        P = self._proj(X) if P is None else P
        kxx = self.data_kernel.forward(X, X, diag=True)
        quad = ((P**2).reshape(-1, P.shape[-1]) @ self.inv_diag).reshape(*P.shape[:-1], -1)
        s = self.xi * kxx.unsqueeze(-1) - self.xi**2 * quad
        return s.clamp_min(0.0)

    def task_blocks(self, X: Tensor) -> Tensor:
        return self.predict(X, full_cov=False)[1]

    def covariance(self, X: Tensor) -> Tensor:
        return self.predict(X, full_cov=True)[1]

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        P = self._proj(X)  # batch x q x t
        mean = self._mean_from_proj(P)
        if not full_cov or X.shape[-2] == 1:  # for q = 1 the joint covariance is the block
            s = self.eigen_variances(X, P)  # batch x q x n
            blocks = (self.U * s.unsqueeze(-2)) @ self.U.transpose(-1, -2)
            if not full_cov:
                return mean, blocks
            return mean, blocks.squeeze(-3)
        return mean, self._joint_covariance(X, P)

    def _joint_covariance(self, X: Tensor, P: Tensor) -> Tensor:
        Kqq = self.data_kernel.forward(X, X)
        Kqq = Kqq.to_dense() if hasattr(Kqq, "to_dense") else Kqq
        # S_i = ξ_i K_qq − ξ_i² P diag(1/(ξ_i a + η)) Pᵀ, stacked as batch x n x q x q
        Pw = P.unsqueeze(-3) * self.inv_diag.transpose(-1, -2).unsqueeze(-2)
        S = self.xi[:, None, None] * Kqq.unsqueeze(-3) - (self.xi**2)[:, None, None] * (
            Pw @ P.unsqueeze(-3).transpose(-1, -2)
        )
        # cov[p, a, r, b] = Σ_i S_i[p, r] U[a, i] U[b, i]
        cov = torch.einsum("...ipr,ai,bi->...parb", S, self.U, self.U)
        return interleave_blocks(cov)

    def information_gain(self) -> Tensor:
        return 0.5 * torch.log1p(self.a[:, None] * self.xi[None, :] / self.noise).sum()


def extend_solver(
    solver: MultiTaskSolver, new_X: Tensor, train_X: Tensor, train_resid: Tensor
) -> MultiTaskSolver:
    """Solver for the training set extended by ``new_X``, reusing the old factorisation.

    The dense solver extends its Cholesky factor by one block row (O(n³t²m) instead of
    O(n³t³)); the ICM solver reuses the old ``t x t`` block of ``K_t`` (the eigendecomposition
    itself has to be recomputed).

    Args:
        solver: Solver of the old training set (its ``train_X`` is the first ``t`` rows).
        new_X: ``m x d`` appended inputs.
        train_X: ``(t+m) x d`` full training inputs.
        train_resid: ``(t+m) x n`` full targets minus the prior mean.
    """
    if isinstance(solver, ICMSolver):
        k = solver.data_kernel
        K12 = k.forward(solver.train_X, new_X)
        K22 = k.forward(new_X, new_X)
        K12 = K12.to_dense() if hasattr(K12, "to_dense") else K12
        K22 = K22.to_dense() if hasattr(K22, "to_dense") else K22
        K = torch.cat(
            [torch.cat([solver.K, K12], dim=-1), torch.cat([K12.transpose(-1, -2), K22], dim=-1)],
            dim=-2,
        )
        B = (solver.U * solver.xi) @ solver.U.transpose(-1, -2)
        return ICMSolver(k, B, train_X, train_resid, solver.noise, K=K)
    if isinstance(solver, DenseSolver):
        kern = solver.kernel
        C = kern.forward(solver.train_X, new_X).to_dense()  # tn x mn
        D = kern.forward(new_X, new_X).to_dense()
        D = D + solver.noise * torch.eye(D.shape[-1], dtype=D.dtype, device=D.device)
        S = torch.linalg.solve_triangular(solver.chol, C, upper=False).transpose(-1, -2)
        L22 = torch.linalg.cholesky(D - S @ S.transpose(-1, -2))
        top = torch.cat([solver.chol, torch.zeros_like(C)], dim=-1)
        chol = torch.cat([top, torch.cat([S, L22], dim=-1)], dim=-2)
        return DenseSolver(kern, train_X, train_resid, solver.noise, chol=chol)
    raise NotImplementedError(f"Cannot extend a {type(solver).__name__}.")
