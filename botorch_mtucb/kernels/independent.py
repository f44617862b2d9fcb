"""Independent-task and sum-of-separable multi-task kernels (paper 000, §2)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from gpytorch.kernels import Kernel
from torch import Tensor
from torch.nn import ModuleList

from botorch_mtucb.kernels.base import MultiTaskKernel

__all__ = ["IndependentTasksKernel", "SumOfSeparableKernel"]


class IndependentTasksKernel(MultiTaskKernel):
    """Diagonal multi-task kernel Γ = diag(k_1, …, k_n): the IT-KB / IT-BKB baselines.

    Either one scalar kernel per task, or a single kernel shared by all tasks (pass a
    ``Kernel`` and ``num_tasks``); the shared case is ICM with B = I and gets the models'
    fast path.

    Example:
        >>> import torch
        >>> from gpytorch.kernels import MaternKernel, RBFKernel
        >>> kernel = IndependentTasksKernel([RBFKernel(), MaternKernel(nu=2.5)])
        >>> kernel(torch.rand(3, 1)).to_dense().shape   # (3·2) x (3·2), zero across tasks
        torch.Size([6, 6])
    """

    def __init__(
        self,
        data_covar_modules: Sequence[Kernel] | Kernel,
        num_tasks: int | None = None,
        **kwargs,
    ) -> None:
        """
        Args:
            data_covar_modules: ``n`` scalar kernels, or one kernel shared by all tasks.
            num_tasks: Number of tasks; required with a single shared kernel.
        """
        if isinstance(data_covar_modules, Kernel):
            if num_tasks is None:
                raise ValueError("`num_tasks` is required when a single kernel is shared.")
            if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
                raise ValueError(f"`num_tasks` must be a positive integer, got {num_tasks!r}.")
            modules = [data_covar_modules] * num_tasks
        else:
            modules = list(data_covar_modules)
            if len(modules) == 0 or not all(isinstance(k, Kernel) for k in modules):
                raise ValueError("`data_covar_modules` must be a non-empty list of Kernels.")
            if num_tasks is not None and num_tasks != len(modules):
                raise ValueError(
                    f"`num_tasks`={num_tasks} does not match {len(modules)} data kernels."
                )
        super().__init__(num_tasks=len(modules), **kwargs)
        self.data_covar_modules = ModuleList(modules)

    @property
    def task_covar_matrix(self) -> Tensor:
        """The identity ``n x n`` (each task with its own scalar kernel)."""
        ref = next(self.parameters(), None)
        kw = {"dtype": ref.dtype, "device": ref.device} if ref is not None else {}
        return torch.eye(self.num_tasks, **kw)

    def separable_components(self) -> list[tuple[Kernel, Tensor]]:
        """``[(k_i, e_i e_iᵀ)]``: task i's kernel on its own diagonal entry."""
        eye = self.task_covar_matrix
        return [(k, torch.outer(eye[i], eye[i])) for i, k in enumerate(self.data_covar_modules)]


class SumOfSeparableKernel(MultiTaskKernel):
    """Sum of separable kernels (linear model of coregionalization): Γ = Σ_j k_j B_j.

    Not diagonalisable in general, so models use their generic (dense) path for it unless all
    terms share one scalar kernel object.

    Example:
        >>> import torch
        >>> from gpytorch.kernels import MaternKernel, RBFKernel
        >>> from botorch_mtucb.kernels import ICMKernel
        >>> kernel = SumOfSeparableKernel([
        ...     ICMKernel(RBFKernel(), 2, task_covar=torch.ones(2, 2)),      # shared trend
        ...     ICMKernel(MaternKernel(), 2, task_covar=torch.eye(2)),       # own deviations
        ... ])
        >>> len(kernel.separable_components()), kernel(torch.rand(4, 1)).shape
        (2, torch.Size([8, 8]))
    """

    def __init__(self, kernels: Sequence[MultiTaskKernel], **kwargs) -> None:
        """
        Args:
            kernels: Multi-task kernels (e.g. ``ICMKernel``s) with a common ``num_tasks``.
        """
        kernels = list(kernels)
        if len(kernels) == 0 or not all(isinstance(k, MultiTaskKernel) for k in kernels):
            raise ValueError("`kernels` must be a non-empty list of multi-task kernels.")
        n = kernels[0].num_tasks
        if any(k.num_tasks != n for k in kernels):
            raise ValueError("All `kernels` must have the same `num_tasks`.")
        super().__init__(num_tasks=n, **kwargs)
        self.kernels = ModuleList(kernels)

    @property
    def task_covar_matrices(self) -> list[Tensor]:
        """The task matrices ``[B_j]`` of all separable terms."""
        return [B for _, B in self.separable_components()]

    def separable_components(self) -> list[tuple[Kernel, Tensor]]:
        """Every member's terms, in order."""
        return [c for k in self.kernels for c in k.separable_components()]
