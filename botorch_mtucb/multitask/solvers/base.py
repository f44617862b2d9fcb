r"""The interface of the multi-task posterior solvers and the kernel helpers they share.

A solver holds the factorisation of one training set ``(X_t, Y_t)`` under one set of
hyperparameters and answers, for the multi-task kernel regression of paper 000, eq. (1),

.. math::
    μ_t(x) = G_t(x)^T (G_t + ηI_{nt})^{-1} Y_t, \qquad
    Γ_t(x, x') = Γ(x, x') − G_t(x)^T (G_t + ηI_{nt})^{-1} G_t(x'),

the posterior mean, the posterior covariance (joint over ``q`` points and ``n`` tasks, or
only the ``n x n`` block of each point) and the information gain
½ log det(I_{nt} + η⁻¹ G_t). :class:`MultiTaskSolver` is that contract; the exact solvers
(:mod:`~botorch_mtucb.multitask.solvers.exact`) and the Nyström solvers
(:mod:`~botorch_mtucb.multitask.solvers.nystrom`,
:mod:`~botorch_mtucb.multitask.solvers.nystrom_icm`) implement it.

All tensors follow GPyTorch's interleaved multi-task order (index ``point·n + task``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from gpytorch.kernels import Kernel
from linear_operator.operators import LinearOperator
from torch import Tensor

from botorch_mtucb.linalg.icm import Affine, ProjectedICMPredictor
from botorch_mtucb.linalg.separable import ProjectedSeparablePredictor
from botorch_mtucb.multitask.utils import KroneckerLowRankCovariance

__all__ = ["MultiTaskSolver", "ProjectedPredictor", "cross_kernel", "dense"]

#: A frozen hot-path predictor: ``X -> (mean, quad)`` (``batch x n``, ``batch x k``).
ProjectedPredictor = ProjectedICMPredictor | ProjectedSeparablePredictor


def dense(x: Tensor | LinearOperator) -> Tensor:
    """A kernel output as a dense tensor (kernels return tensors or ``LinearOperator``\\ s)."""
    return x.to_dense() if isinstance(x, LinearOperator) else x


class MultiTaskSolver(ABC):
    """Factorisation of a multi-task kernel regression problem (paper 000, eq. (1)).

    Implementations answer :meth:`predict` and :meth:`information_gain`; the other queries
    derive from :meth:`predict` unless an implementation has a cheaper route. Solvers are
    built by the models (:meth:`~botorch_mtucb.multitask.base.MultiTaskGPBase.solver`), which
    choose the implementation from the kernel's structure.

    Args (of every implementation):
        kernel: The multi-task kernel Γ.
        train_X: ``t x d`` training inputs (already input-transformed).
        train_resid: ``t x n`` training targets minus the prior mean.
        noise: Regulariser η > 0 (a scalar tensor).

    Example:
        >>> from botorch_mtucb.multitask.solvers.exact import DenseSolver
        >>> eta = torch.tensor(0.1, dtype=torch.float64)
        >>> solver = DenseSolver(kernel, train_X, train_resid, eta)  # t x d, t x n
        >>> mean, blocks = solver.predict(X, full_cov=False)  # b x q x n, b x q x n x n
        >>> gain = solver.information_gain()  # 0-dim
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

    def predict_lazy_joint(self, X: Tensor) -> tuple[Tensor, KroneckerLowRankCovariance] | None:
        """Mean (``batch x q x n``) and the joint covariance kept lazy
        (``Σ_j K_j ⊗ B_j − R Rᵀ``), where the solver has that structure (the exact solvers and
        the Nyström ICM one); ``None`` (the default: :meth:`predict` forms it densely)."""
        return None

    @abstractmethod
    def information_gain(self) -> Tensor:
        """½ log det(I_{nt} + η⁻¹ G_t), a scalar tensor."""

    def projected_variances(self, X: Tensor, W: Tensor) -> tuple[Tensor, Tensor]:
        """Mean (``batch x q x n``) and ``w_jᵀ Γ_t(x, x) w_j`` (``batch x q x k``), ``W: n x k``;
        ``k = 0``: the mean only (:meth:`mean`), no covariance formed."""
        if W.shape[-1] == 0:
            mean = self.mean(X)
            return mean, mean.new_zeros(*mean.shape[:-1], 0)
        mean, blocks = self.predict(X, full_cov=False)
        return mean, torch.einsum("...ab,ak,bk->...k", blocks, W, W)

    def projected_predictor(
        self, directions: Tensor, out_scale: Tensor, out_shift: Tensor, in_affine: Affine
    ) -> ProjectedPredictor | None:
        """The frozen hot-path predictor (:class:`~botorch_mtucb.linalg.icm.ProjectedICMPredictor`,
        :class:`~botorch_mtucb.linalg.separable.ProjectedSeparablePredictor`), or ``None``
        where the solver has none (the default).

        Args:
            directions: ``n x k`` directions ``W`` (original outcome scale).
            out_scale: ``n`` outcome scale σ; out_shift: ``n`` outcome shift.
            in_affine: ``(offset, coefficient)`` of an affine input transform, or ``None``.
        """
        return None

    def extend(self, new_X: Tensor, train_X: Tensor, train_resid: Tensor) -> MultiTaskSolver:
        """The solver of the training set extended by ``new_X``, reusing this factorisation.

        Args:
            new_X: ``m x d`` appended inputs (input-transformed).
            train_X: ``(t+m) x d`` all training inputs (the first ``t`` rows are this solver's).
            train_resid: ``(t+m) x n`` all targets minus the prior mean.

        Raises:
            NotImplementedError: For a solver without an incremental update (the default).
        """
        raise NotImplementedError(f"Cannot extend a {type(self).__name__}.")


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
