"""The interface every multi-task posterior solver implements, and its shared kernel helpers.

Private module behind :mod:`botorch_mtucb.multitask.solvers.exact` (paper 000, §3.1): the abstract
:class:`~botorch_mtucb.multitask.solvers.exact.MultiTaskSolver` (posterior mean, covariance, per-point
task blocks and information gain of one factorised training set) and the two helpers the
solvers share, :func:`~botorch_mtucb.multitask.solvers.exact.dense` and
:func:`~botorch_mtucb.multitask.solvers.exact.cross_kernel`. The implementations (dense Cholesky, ICM)
live in :mod:`botorch_mtucb.multitask.solvers.exact`, which re-exports these names; the Nyström
solvers (:mod:`botorch_mtucb.multitask.solvers.nystrom`) implement the same interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from gpytorch.kernels import Kernel
from linear_operator.operators import LinearOperator
from torch import Tensor

from botorch_mtucb.linalg.icm import Affine, ProjectedICMPredictor

__all__: list[str] = []


def dense(x: Tensor | LinearOperator) -> Tensor:
    """A kernel output as a dense tensor (kernels return tensors or ``LinearOperator``\\ s)."""
    return x.to_dense() if isinstance(x, LinearOperator) else x


class MultiTaskSolver(ABC):
    """Factorisation of a multi-task kernel regression problem.

    Args (of every implementation):
        kernel: The multi-task kernel Γ.
        train_X: ``t x d`` training inputs (already input-transformed).
        train_resid: ``t x n`` training targets minus the prior mean.
        noise: Regulariser η > 0 (a scalar tensor).
    """

    num_tasks: int
    train_X: Tensor

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the solver computes in (inputs are cast to it by the model)."""
        return self.train_X.dtype

    def mean(self, X: Tensor) -> Tensor:
        """Posterior mean minus prior mean, ``batch x q x n`` for ``X: batch x q x d``."""
        return self.predict(X, full_cov=False)[0]

    def covariance(self, X: Tensor) -> Tensor:
        """Joint posterior covariance, interleaved ``batch x (q·n) x (q·n)``."""
        return self.predict(X, full_cov=True)[1]

    def task_blocks(self, X: Tensor) -> Tensor:
        """Per-point ``n x n`` posterior covariances Γ_t(x, x), ``batch x q x n x n``."""
        return self.predict(X, full_cov=False)[1]

    @abstractmethod
    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        """Mean and covariance in one call (implementations share the cross-kernel work).

        Args:
            X: ``batch x q x d`` inputs.
            full_cov: Joint interleaved ``batch x (q·n) x (q·n)`` covariance if ``True``,
                else the per-point blocks ``batch x q x n x n``.
        """

    @abstractmethod
    def information_gain(self) -> Tensor:
        """½ log det(I_{nt} + η⁻¹ G_t), a scalar tensor."""

    def projected_variances(self, X: Tensor, W: Tensor) -> tuple[Tensor, Tensor]:
        """Mean (``batch x q x n``) and ``w_jᵀ Γ_t(x, x) w_j`` (``batch x q x k``), ``W: n x k``."""
        mean, blocks = self.predict(X, full_cov=False)
        return mean, torch.einsum("...ab,ak,bk->...k", blocks, W, W)

    def projected_predictor(
        self, directions: Tensor, out_scale: Tensor, out_shift: Tensor, in_affine: Affine
    ) -> ProjectedICMPredictor | None:
        """The frozen hot-path :class:`~botorch_mtucb.linalg.icm.ProjectedICMPredictor`, or
        ``None`` where the solver has none (the default).

        Args:
            directions: ``n x k`` directions ``W`` (original outcome scale).
            out_scale: ``n`` outcome scale σ; out_shift: ``n`` outcome shift.
            in_affine: ``(offset, coefficient)`` of an affine input transform, or ``None``.
        """
        return None


def cross_kernel(kernel: Kernel, X: Tensor, train_X: Tensor) -> Tensor:
    """Dense ``kernel(X, train_X)`` for ``X: batch x q x d``, as one flat evaluation.

    The ``batch·q`` test points are stacked into a single matrix (valid for kernels without
    a batch shape, as in these non-batched models), which avoids GPyTorch broadcasting the
    training inputs over the batch. Returns ``batch x (q·o) x (t·o)`` with ``o`` outputs per
    input.
    """
    if len(kernel.batch_shape) > 0 or train_X.dim() > 2:  # batched models broadcast
        return dense(kernel.forward(X, train_X))
    out = dense(kernel.forward(X.reshape(-1, X.shape[-1]), train_X))
    return out.reshape(*X.shape[:-2], -1, out.shape[-1])
