"""Common base of the multi-task kernels Γ(x, x') ∈ R^{n×n} (paper 000, §2).

All multi-task kernels here are GPyTorch kernels with ``num_outputs_per_input = n`` that
return the ``(N1·n) x (N2·n)`` matrix in GPyTorch's interleaved order: entry
``[i·n + a, j·n + b]`` is ``Γ(x_i, x_j)_{ab}`` (the order of ``gpytorch.kernels.MultitaskKernel``).

Each of them is a sum of separable terms Γ = Σ_j k_j B_j and exposes those terms through
:meth:`MultiTaskKernel.separable_components`, so that models can take fast paths: when there is
a single term (ICM) the exact posterior only needs one eigendecomposition of the ``t x t``
scalar kernel matrix (paper 000, §3.3 and Appendix A).
"""

from __future__ import annotations

from abc import abstractmethod

import torch
from gpytorch.kernels import Kernel
from linear_operator import to_dense
from linear_operator.operators import (
    KroneckerProductLinearOperator,
    LinearOperator,
    to_linear_operator,
)
from torch import Tensor

from botorch_mtucb.linalg.icm_likelihood import ICMKroneckerLinearOperator, icm_likelihood_enabled

__all__ = ["MultiTaskKernel", "kron_interleaved"]


def kron_interleaved(data_covar: Tensor, task_covar: Tensor) -> Tensor:
    """Dense Kronecker product ``K ⊗ B`` in GPyTorch's interleaved order.

    Args:
        data_covar: ``batch_shape x N1 x N2`` scalar kernel matrix.
        task_covar: ``n x n`` (or ``batch_shape x n x n``) task matrix.

    Returns:
        ``batch_shape x (N1·n) x (N2·n)`` tensor with entry ``[i·n+a, j·n+b] = K_ij B_ab``.

    Example:
        >>> K, B = torch.tensor([[1.0, 0.5], [0.5, 1.0]]), torch.tensor([[2.0, 1.0], [1.0, 3.0]])
        >>> kron_interleaved(K, B)[1, 2]   # K[0, 1] · B[1, 0]
        tensor(0.5000)
    """
    n1, n2 = data_covar.shape[-2:]
    n = task_covar.shape[-1]
    out = data_covar[..., :, None, :, None] * task_covar[..., None, :, None, :]
    return out.reshape(*out.shape[:-4], n1 * n, n2 * n)


class MultiTaskKernel(Kernel):
    """Abstract multi-task kernel Γ(x, x') = Σ_j k_j(x, x') B_j.

    Subclasses implement :meth:`separable_components`; this base class provides the GPyTorch
    ``forward`` (interleaved ``(N1·n) x (N2·n)`` output) and the ICM detection used by models.

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> class Identical(MultiTaskKernel):   # Γ = k · 11ᵀ: every task the same function
        ...     def __init__(self, n):
        ...         super().__init__(num_tasks=n)
        ...         self.k = RBFKernel()
        ...     def separable_components(self):
        ...         return [(self.k, torch.ones(self.num_tasks, self.num_tasks))]
        >>> Identical(3)(torch.rand(4, 1)).shape   # (4·3) x (4·3)
        torch.Size([12, 12])
    """

    def __init__(self, num_tasks: int, **kwargs) -> None:
        if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
            raise ValueError(f"`num_tasks` must be a positive integer, got {num_tasks!r}.")
        super().__init__(**kwargs)
        self.num_tasks = num_tasks

    @abstractmethod
    def separable_components(self) -> list[tuple[Kernel, Tensor]]:
        """The separable terms ``[(k_j, B_j)]`` with Γ = Σ_j k_j B_j, each ``B_j`` ``n x n``
        (``batch_shape x n x n`` for a kernel with a batch of hyperparameters)."""

    def icm_components(self) -> tuple[Kernel, Tensor] | None:
        """``(k, B)`` when Γ = k·B with a single scalar kernel ``k``, else ``None``.

        Components that share one scalar kernel object are merged (their task matrices add up).
        """
        comps = self.separable_components()
        kernel = comps[0][0]
        if all(k is kernel for k, _ in comps):
            return kernel, sum(B for _, B in comps)
        return None

    def num_outputs_per_input(self, x1: Tensor, x2: Tensor) -> int:
        """``n``: GPyTorch's number of outputs per input point."""
        return self.num_tasks

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params):
        """Interleaved multi-task kernel matrix.

        Args:
            x1: ``batch_shape x N1 x d`` inputs.
            x2: ``batch_shape x N2 x d`` inputs.
            diag: Return only the diagonal, ``batch_shape x (N1·n)``.

        Returns:
            ``batch_shape x (N1·n) x (N2·n)`` kernel matrix, or its diagonal. A sum of terms
            with distinct scalar kernels is one dense tensor (each scalar kernel evaluated
            once). A single separable term (ICM, after merging terms that share one scalar
            kernel) is an :class:`~botorch_mtucb.linalg.ICMKroneckerLinearOperator`, whose
            sum with the likelihood's homoscedastic noise evaluates the marginal likelihood
            from ``eigh(K)`` and ``eigh(B)`` (see :mod:`botorch_mtucb.linalg.icm_likelihood`;
            switched off by ``use_icm_likelihood(False)``).
        """
        comps = [(k, B if B.dtype == x1.dtype and B.device == x1.device
                  else B.to(dtype=x1.dtype, device=x1.device))
                 for k, B in self.separable_components()]  # a fixed B follows the inputs
        if any(getattr(m, "active_dims", None) is not None for k, _ in comps for m in k.modules()):
            raise ValueError(
                f"{type(self).__name__} evaluates its scalar kernels on all input dimensions; "
                "a scalar kernel with `active_dims` is not supported (slice the inputs, or "
                "give the kernel ARD lengthscales)."
            )
        kernel = comps[0][0]
        single = all(k is kernel for k, _ in comps)  # ICM: one (merged) Kronecker term
        if not diag and single and icm_likelihood_enabled():
            B = sum(B for _, B in comps)
            return ICMKroneckerLinearOperator(*self._kron_factors(kernel, B, x1, x2, params))
        if not diag and not single:  # a sum of terms: its solves factorise it densely anyway
            return self._dense_sum(comps, x1, x2, params)
        res = None
        for k, B in comps:
            if diag:
                kd = k.forward(x1, x2, diag=True, **params)
                Bd = torch.diagonal(B, dim1=-2, dim2=-1).to(kd.dtype)
                term = kd[..., :, None] * Bd.unsqueeze(-2)
                term = term.reshape(*term.shape[:-2], -1)
            else:
                term = KroneckerProductLinearOperator(*self._kron_factors(k, B, x1, x2, params))
            res = term if res is None else res + term
        return res

    @staticmethod
    def _dense_sum(
        comps: list[tuple[Kernel, Tensor]], x1: Tensor, x2: Tensor, params: dict
    ) -> Tensor:
        """``Σ_j k_j(x1, x2) ⊗ B_j`` as one dense interleaved tensor, each distinct scalar
        kernel evaluated once (no lazy Kronecker operators: their sum has no structured solve
        and is densified by every use)."""
        evaluated: dict[int, Tensor] = {}
        res = None
        for k, B in comps:
            kx = evaluated.get(id(k))
            if kx is None:
                kx = evaluated[id(k)] = to_dense(k.forward(x1, x2, **params))
            term = kron_interleaved(kx, B.to(kx.dtype))
            res = term if res is None else res + term
        return res

    @staticmethod
    def _kron_factors(
        k: Kernel, B: Tensor, x1: Tensor, x2: Tensor, params: dict
    ) -> tuple[LinearOperator, LinearOperator]:
        """``(k(x1, x2), B)`` as linear operators expanded to the common batch shape (that of
        the inputs, of the kernel's hyperparameters and of ``B``)."""
        kx = to_linear_operator(k.forward(x1, x2, **params))
        B = B.to(kx.dtype)  # the scalar kernel's dtype (its parameters'), as GPyTorch's kernels
        batch_shape = torch.broadcast_shapes(
            x1.shape[:-2], x2.shape[:-2], kx.shape[:-2], B.shape[:-2]
        )
        if kx.shape[:-2] != batch_shape:
            kx = kx.expand(*batch_shape, *kx.shape[-2:])
        if B.shape[:-2] != batch_shape:
            B = B.expand(*batch_shape, *B.shape[-2:])
        return kx, to_linear_operator(B)
