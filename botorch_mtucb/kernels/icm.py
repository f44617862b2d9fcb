"""Intrinsic coregionalization kernel Γ(x, x') = k(x, x') B (paper 000, §2)."""

from __future__ import annotations

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.utils.validation import as_real, check_psd_matrix

__all__ = ["ICMKernel", "TaskSimilarityKernel", "initial_covar_factor"]


class ICMKernel(MultiTaskKernel):
    """Separable (ICM) multi-task kernel Γ(x, x') = k(x, x') B (paper 000, §2).

    ``B`` is either learnable, parametrised as ``F Fᵀ + diag(v)`` with ``F`` of shape
    ``n x rank`` and ``v > 0`` (positive semi-definite by construction, as GPyTorch's
    ``IndexKernel``), or a fixed user matrix that is validated to be symmetric PSD. The
    learnable ``F`` starts at :func:`initial_covar_factor` (deterministic, full column rank:
    a rank-one start would stay rank one under every gradient-based fit).

    With ``batch_shape`` (a GPyTorch kernel keyword) the learnable ``B`` is one per batch
    member (``batch_shape x n x n``), as the data kernel's hyperparameters of a batched model:
    a model of batched training data fits each member's ``B`` on its own data.

    Example:
        >>> import torch
        >>> from gpytorch.kernels import RBFKernel
        >>> kernel = ICMKernel(RBFKernel(), num_tasks=2, task_covar=torch.eye(2))
        >>> kernel(torch.rand(5, 1)).shape   # (5·2) x (5·2), interleaved
        torch.Size([10, 10])
    """

    def __init__(
        self,
        data_covar_module: Kernel,
        num_tasks: int,
        rank: int = 1,
        task_covar: Tensor | None = None,
        task_covar_prior: Prior | None = None,
        **kwargs,
    ) -> None:
        """
        Args:
            data_covar_module: Scalar kernel ``k`` on the inputs.
            num_tasks: Number of tasks ``n``.
            rank: Rank of the learnable low-rank factor ``F`` (ignored if ``task_covar``).
            task_covar: Optional fixed ``n x n`` PSD task matrix ``B``.
            task_covar_prior: Optional prior on the learnable ``B`` (refused with a fixed
                ``task_covar``).
            **kwargs: GPyTorch ``Kernel`` keywords, e.g. ``batch_shape`` (the learnable ``F``
                is ``batch_shape x n x rank``, ``v`` ``batch_shape x n``).
        """
        super().__init__(num_tasks=num_tasks, **kwargs)
        if not isinstance(data_covar_module, Kernel):
            raise ValueError("`data_covar_module` must be a gpytorch Kernel.")
        self.data_covar_module = data_covar_module
        if task_covar is not None:
            if task_covar_prior is not None:
                raise ValueError(
                    "`task_covar_prior` is a prior on a learnable B; with a fixed `task_covar` "
                    "there is nothing for it to act on (give one of the two)."
                )
            B = check_psd_matrix(task_covar, "task_covar", size=num_tasks)
            self.register_buffer("fixed_task_covar", B.clone())
            self.rank = None
        else:
            if not isinstance(rank, int) or not 1 <= rank <= num_tasks:
                raise ValueError(f"`rank` must be an integer in [1, {num_tasks}], got {rank!r}.")
            self.rank = rank
            self.fixed_task_covar = None
            batch = self.batch_shape
            factor = initial_covar_factor(num_tasks, rank).expand(*batch, num_tasks, rank)
            self.register_parameter("covar_factor", torch.nn.Parameter(factor.clone()))
            self.register_parameter(
                "raw_var", torch.nn.Parameter(torch.zeros(*batch, num_tasks))
            )
            self.register_constraint("raw_var", Positive())
            if task_covar_prior is not None:
                self.register_prior("task_covar_prior", task_covar_prior, _task_covar_matrix)

    @property
    def task_covar_matrix(self) -> Tensor:
        """The ``[batch_shape x] n x n`` task matrix ``B``."""
        if self.fixed_task_covar is not None:
            return self.fixed_task_covar
        var = self.raw_var_constraint.transform(self.raw_var)
        return self.covar_factor @ self.covar_factor.transpose(-1, -2) + torch.diag_embed(var)

    def separable_components(self) -> list[tuple[Kernel, Tensor]]:
        """The single term ``[(k, B)]``."""
        return [(self.data_covar_module, self.task_covar_matrix)]


class TaskSimilarityKernel(MultiTaskKernel):
    """Task-similarity kernel of Evgeniou et al.: Γ = k·B_ω, B_ω = ωI + (1−ω) 11ᵀ/n.

    ``ω = 1`` makes the tasks unrelated, ``ω = 0`` identical (paper 000, §2 and Lemma 1).

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> kernel = TaskSimilarityKernel(RBFKernel(), num_tasks=2, omega=0.5)
        >>> kernel.task_covar_matrix   # 0.5 I + 0.5 · 11ᵀ/2
        tensor([[0.7500, 0.2500],
                [0.2500, 0.7500]], dtype=torch.float64)
    """

    def __init__(
        self,
        data_covar_module: Kernel,
        num_tasks: int,
        omega: float = 0.5,
        learn_omega: bool = False,
        **kwargs,
    ) -> None:
        """
        Args:
            data_covar_module: Scalar kernel ``k`` on the inputs.
            num_tasks: Number of tasks ``n``.
            omega: Similarity parameter ω ∈ [0, 1] (the initial value when learnable).
            learn_omega: Learn ω (constrained to (0, 1)) instead of keeping it fixed.
            **kwargs: GPyTorch ``Kernel`` keywords, e.g. ``batch_shape`` (a learnable ω per
                batch member).
        """
        super().__init__(num_tasks=num_tasks, **kwargs)
        if not isinstance(data_covar_module, Kernel):
            raise ValueError("`data_covar_module` must be a gpytorch Kernel.")
        omega_f = as_real(omega, "omega", "a number in [0, 1]")
        if not 0.0 <= omega_f <= 1.0:
            raise ValueError(f"`omega` must lie in [0, 1], got {omega!r}.")
        self.data_covar_module = data_covar_module
        self.learn_omega = learn_omega
        if learn_omega:
            if not 0.0 < omega_f < 1.0:
                raise ValueError("A learnable `omega` must start strictly inside (0, 1).")
            self.register_parameter("raw_omega", torch.nn.Parameter(torch.zeros(self.batch_shape)))
            self.register_constraint("raw_omega", Interval(0.0, 1.0))
            self.initialize(omega=omega_f)
        else:
            self.register_buffer("fixed_omega", torch.tensor(omega_f, dtype=torch.float64))

    @property
    def omega(self) -> Tensor:
        """The similarity parameter ω ∈ [0, 1] (0-dim, or ``batch_shape`` when learnable)."""
        if self.learn_omega:
            return self.raw_omega_constraint.transform(self.raw_omega)
        return self.fixed_omega

    @omega.setter
    def omega(self, value: float | Tensor) -> None:
        value = torch.as_tensor(value, dtype=torch.float64)
        if not bool(((value >= 0.0) & (value <= 1.0)).all()):
            raise ValueError(f"`omega` must lie in [0, 1], got {value!r}.")
        if self.learn_omega:
            if not bool(((value > 0.0) & (value < 1.0)).all()):  # the logit would be infinite
                raise ValueError(
                    f"A learnable `omega` must lie strictly inside (0, 1), got {value!r}."
                )
            self.initialize(raw_omega=self.raw_omega_constraint.inverse_transform(value))
        else:
            self.fixed_omega = value.to(self.fixed_omega)

    @property
    def task_covar_matrix(self) -> Tensor:
        """``B_ω = ωI + (1−ω) 11ᵀ/n``, ``[batch_shape x] n x n``."""
        n = self.num_tasks
        omega = self.omega[..., None, None]
        eye = torch.eye(n, dtype=omega.dtype, device=omega.device)
        return omega * eye + (1 - omega) * torch.ones_like(eye) / n

    def separable_components(self) -> list[tuple[Kernel, Tensor]]:
        """The single term ``[(k, B_ω)]``."""
        return [(self.data_covar_module, self.task_covar_matrix)]


def _task_covar_matrix(kernel: ICMKernel) -> Tensor:
    """The prior's closure (a module-level function, so that the kernel pickles)."""
    return kernel.task_covar_matrix


def initial_covar_factor(num_tasks: int, rank: int) -> Tensor:
    r"""The starting factor ``F`` (``num_tasks x rank``) of a learnable ICM ``B = F Fᵀ + diag(v)``.

    ``F₀ = 0.5 · 1 1ᵀ / √rank + 0.1 · I_{n x rank}``: every task starts with the same mean
    correlation (``B₀ ≈ ¼ 1 1ᵀ + diag(softplus(0))``) but the columns differ. A rank-one start
    (GPyTorch's constant alternative, all columns equal) is a fixed point of the column
    structure: the gradient of any objective with respect to ``F`` is ``2 G F`` (``G`` the
    gradient with respect to ``B``), so ``F = u cᵀ`` stays ``u' cᵀ`` under gradient descent and
    L-BFGS, and a "rank-``r``" B would stay rank one plus diagonal. ``F₀`` has full column rank.
    ``rank = 1`` keeps the plain ``0.5 · 1``.

    Args:
        num_tasks: ``n``.
        rank: Number of columns, ``1 ≤ rank ≤ n``.

    Returns:
        The ``num_tasks x rank`` factor in the default dtype.

    Example:
        >>> initial_covar_factor(3, 2).shape
        torch.Size([3, 2])
    """
    F = 0.5 * torch.ones(num_tasks, rank) / rank**0.5
    if rank > 1:
        F = F + 0.1 * torch.eye(num_tasks, rank)
    return F
