"""Pieces of the multi-task GPs that need no model: the zero prior mean, training-data
validation and the assembly of the joint task posterior.

The posterior over ``q`` points and ``n`` tasks is one Gaussian with mean ``μ_t(x)``
(``batch_shape x q x n``) and the interleaved covariance ``[Γ_t(x_a, x_b)]_{ab}`` (index
``point·n + task``) of paper 000, eq. (1).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from gpytorch.distributions import MultitaskMultivariateNormal, MultivariateNormal
from gpytorch.means import Mean
from linear_operator.operators import (
    KroneckerProductLinearOperator,
    LinearOperator,
    MatmulLinearOperator,
    to_linear_operator,
)
from torch import Tensor

from botorch_mtucb.utils.validation import check_finite

__all__ = [
    "KroneckerLowRankCovariance",
    "ZeroMultitaskMean",
    "joint_task_mvn",
    "validate_train_data",
]

#: The dtypes the models compute in (bfloat16 and float16 lack the range and precision).
_DTYPES = (torch.float32, torch.float64)


class ZeroMultitaskMean(Mean):
    """Zero prior mean for ``n`` tasks: ``batch_shape x N x d -> batch_shape x N x n`` zeros.

    The paper's estimator (paper 000, eq. (1)); cheaper to build than a ``MultitaskMean`` of
    ``n`` ``ZeroMean`` modules.

    Example:
        >>> ZeroMultitaskMean(num_tasks=3)(torch.rand(5, 2)).shape  # 5 x 3
    """

    def __init__(self, num_tasks: int) -> None:
        super().__init__()
        self.num_tasks = num_tasks

    def forward(self, x: Tensor) -> Tensor:
        return x.new_zeros(*x.shape[:-1], self.num_tasks)


class KroneckerLowRankCovariance(NamedTuple):
    r"""A joint multi-task posterior covariance kept lazy: ``Σ = Σ_j K_j ⊗ B_j − R Rᵀ``.

    The prior covariance of ``q`` points under a separable kernel ``Γ = Σ_j k_j B_j`` is
    ``Σ_j K_j ⊗ B_j`` (``K_j = k_j(X_q, X_q)``, interleaved order), and the posterior
    subtracts a low-rank term ``R Rᵀ`` (paper 000, eq. (1)). For the ICM ``Γ = k B`` with
    ``B = Σ_i ξ_i u_i u_iᵀ`` the posterior is ``Σ_i S_i ⊗ u_i u_iᵀ``, ``S_i = ξ_i K_qq −
    A_i A_iᵀ`` (§3.3), i.e. ``K_qq ⊗ B − R Rᵀ`` with the columns of ``R`` the blocks
    ``A_i ⊗ u_i`` (:meth:`from_directions`). Its diagonal costs O(q n r) against O((q n)²)
    memory for the dense matrix; a sample still factors it densely.

    Attributes:
        terms: The pairs ``(K_j, B_j)``: ``batch x q x q`` lazily evaluated kernels and
            ``batch x n x n`` task matrices.
        root: ``batch x (q·n) x r`` ``R``.
    """

    terms: tuple[tuple[LinearOperator, Tensor], ...]
    root: Tensor

    @classmethod
    def from_directions(
        cls, data_covar: LinearOperator, U: Tensor, xi: Tensor, A: Tensor
    ) -> KroneckerLowRankCovariance:
        """The ICM posterior from ``B``'s eigenvectors ``U`` (``[batch x] n x n``, columns
        ``u_i``), eigenvalues ``ξ`` (``[batch x] n``, clamped at 0) and the direction roots
        ``A`` (``batch x n x q x r``)."""
        n, q, r = A.shape[-3], A.shape[-2], A.shape[-1]
        u = U.transpose(-1, -2).unsqueeze(-2).unsqueeze(-1)  # [batch x] i x 1 x a x 1
        root = (A.unsqueeze(-2) * u).movedim(-4, -2)  # batch x q x a x i x r
        B = (U * xi.unsqueeze(-2)) @ U.transpose(-1, -2)
        return cls.build([(data_covar, B)], root.reshape(*root.shape[:-4], q * n, n * r))

    @classmethod
    def build(
        cls, terms: list[tuple[LinearOperator, Tensor]], root: Tensor
    ) -> KroneckerLowRankCovariance:
        """``Σ_j K_j ⊗ B_j − R Rᵀ`` with every part expanded to one batch shape."""
        batch = torch.broadcast_shapes(
            root.shape[:-2], *(K.shape[:-2] for K, _ in terms), *(B.shape[:-2] for _, B in terms)
        )
        terms = tuple((K.expand(*batch, *K.shape[-2:]), B.expand(*batch, *B.shape[-2:]))
                      for K, B in terms)
        return cls(terms, root.expand(*batch, *root.shape[-2:]))

    def to(self, dtype: torch.dtype) -> KroneckerLowRankCovariance:
        """The same covariance in ``dtype``."""
        terms = tuple((K.to(dtype), B.to(dtype)) for K, B in self.terms)
        return KroneckerLowRankCovariance(terms, self.root.to(dtype))

    def subset(self, tasks: Tensor) -> KroneckerLowRankCovariance:
        """The covariance of the kept ``tasks`` (a LongTensor of task indices)."""
        K0, B0 = self.terms[0]
        n, q = B0.shape[-1], K0.shape[-1]
        flat = (torch.arange(q, device=tasks.device)[:, None] * n + tasks[None, :]).reshape(-1)
        terms = tuple((K, B[..., tasks, :][..., :, tasks]) for K, B in self.terms)
        return KroneckerLowRankCovariance(terms, self.root[..., flat, :])

    def operator(self) -> LinearOperator:
        """``Σ_j K_j ⊗ B_j − R Rᵀ`` as a ``LinearOperator``."""
        op = MatmulLinearOperator(-self.root, self.root.transpose(-1, -2))
        for K, B in self.terms:
            op = op + KroneckerProductLinearOperator(K, to_linear_operator(B))
        return op


def joint_task_mvn(
    mean: Tensor,
    cov: Tensor | KroneckerLowRankCovariance,
    noise: Tensor,
    observation_noise: bool | Tensor = False,
    output_indices: list[int] | None = None,
) -> MultivariateNormal:
    """The joint posterior distribution over ``q`` points and ``n`` tasks.

    Args:
        mean: ``batch_shape x q x n`` posterior mean.
        cov: ``batch_shape x (q·n) x (q·n)`` interleaved posterior covariance, or a
            :class:`KroneckerLowRankCovariance` (kept lazy: no dense ``(q·n)²`` matrix).
        noise: The homoscedastic noise η (added for ``observation_noise=True``): 0-dim, or
            ``batch_shape x 1 x 1`` (one η per member of batched training data).
        observation_noise: ``True`` adds η to the diagonal; a ``batch_shape x q x n`` tensor
            adds those (outcome-transformed) noise variances.
        output_indices: Tasks to keep (all by default).

    Returns:
        A ``MultitaskMultivariateNormal`` (interleaved, lazy covariance: no Cholesky until
        something samples), or a ``MultivariateNormal`` when one task is kept.

    Raises:
        BotorchTensorDimensionError: If ``observation_noise`` does not broadcast to the
            ``batch_shape x q x n`` of ``mean`` (as BoTorch's models).
        ValueError: If ``output_indices`` are not task indices.

    Example:
        >>> mean, cov = torch.zeros(4, 2, 3), torch.eye(6).expand(4, 6, 6)  # q = 2, n = 3
        >>> mvn = joint_task_mvn(mean, cov, torch.tensor(0.1), observation_noise=True)
        >>> mvn.mean.shape  # 4 x 2 x 3
    """
    n, q = mean.shape[-1], mean.shape[-2]
    extra = _observation_variances(mean, noise, observation_noise)  # batch x (q·n) or None
    lazy = isinstance(cov, KroneckerLowRankCovariance)
    if not lazy:
        cov = 0.5 * (cov + cov.transpose(-1, -2))
        if extra is not None:
            cov = cov + torch.diag_embed(extra)
    if output_indices is not None:
        idx = torch.as_tensor(output_indices, dtype=torch.long, device=mean.device)
        if idx.numel() == 0 or idx.min() < 0 or idx.max() >= n:
            raise ValueError(f"`output_indices` must be task indices in [0, {n - 1}].")
        flat = (torch.arange(q, device=mean.device)[:, None] * n + idx[None, :]).reshape(-1)
        mean = mean[..., idx]
        if lazy:
            cov = cov.subset(idx)
            extra = None if extra is None else extra[..., flat]
        else:
            cov = cov[..., flat[:, None], flat[None, :]]
    if lazy:  # K ⊗ B − R Rᵀ (+ noise): the diagonal without the dense (q·n)² matrix
        op = cov.operator()
        cov = op if extra is None else op.add_diagonal(extra.expand(op.shape[:-1]))
    if mean.shape[-1] == 1:
        mvn = MultivariateNormal(mean.squeeze(-1), to_linear_operator(cov))
    else:  # a LinearOperator covariance: no Cholesky until something samples
        mvn = MultitaskMultivariateNormal(mean, to_linear_operator(cov), interleaved=True)
    return mvn


def _observation_variances(
    mean: Tensor, noise: Tensor, observation_noise: bool | Tensor
) -> Tensor | None:
    """The noise variances ``joint_task_mvn`` adds to the diagonal: ``batch x (q·n)`` (or
    broadcastable to it), or ``None`` for ``observation_noise=False``."""
    n = mean.shape[-1]
    if observation_noise is True:
        eta = noise.reshape(*noise.shape[:-2], 1) if noise.dim() >= 2 else noise.reshape(1)
        return eta.expand(*eta.shape[:-1], mean.shape[-2] * n)
    if not torch.is_tensor(observation_noise):
        return None
    shape = tuple(observation_noise.shape)
    try:
        fits = len(shape) >= 2 and shape[-1] == n and (
            torch.broadcast_shapes(shape, mean.shape) == mean.shape
        )
    except RuntimeError:
        fits = False
    if not fits:
        raise BotorchTensorDimensionError(
            f"`observation_noise` must have shape `batch_shape x q x n` = "
            f"{tuple(mean.shape)} (or broadcast to it, with a last dimension of size {n}), "
            f"got {shape}."
        )
    return observation_noise.expand(mean.shape).reshape(*mean.shape[:-2], -1)


def validate_train_data(
    train_X: Tensor,
    train_Y: Tensor,
    names: tuple[str, str] = ("train_X", "train_Y"),
    allow_batch: bool = False,
) -> None:
    """Check ``[batch_shape x] N x d`` inputs and ``[batch_shape x] N x n`` observations.

    Finite, float32 or float64 of one dtype (as BoTorch's models), matching rows and (with
    ``allow_batch``) equal batch shapes.

    Raises:
        BotorchTensorDimensionError: On wrong shapes.
        InputDataError: If the two dtypes differ.
        ValueError: On NaN / inf, no rows, or tensors that are not float32 / float64.

    Example:
        >>> validate_train_data(train_X, train_Y)  # N x d, N x n: passes
    """
    nx, ny = names
    check_finite(train_X, nx)
    check_finite(train_Y, ny)
    batch = "[batch_shape x] " if allow_batch else ""
    if train_X.dim() < 2 or (train_X.dim() > 2 and not allow_batch):
        raise BotorchTensorDimensionError(
            f"`{nx}` must have shape `{batch}N x d`, got {tuple(train_X.shape)}."
        )
    if train_Y.dim() != train_X.dim():
        raise BotorchTensorDimensionError(
            f"`{ny}` must have shape `{batch}N x n` (one column per task) to match `{nx}` "
            f"{tuple(train_X.shape)}, got {tuple(train_Y.shape)}."
        )
    if train_X.shape[-2] != train_Y.shape[-2]:
        raise BotorchTensorDimensionError(
            f"`{nx}` and `{ny}` must have the same number of rows, got {train_X.shape[-2]} "
            f"and {train_Y.shape[-2]}."
        )
    if train_X.shape[:-2] != train_Y.shape[:-2]:
        raise BotorchTensorDimensionError(
            f"`{nx}` and `{ny}` must have the same batch shape, got {tuple(train_X.shape)} "
            f"and {tuple(train_Y.shape)}."
        )
    if train_X.shape[-2] == 0:
        raise ValueError(f"`{nx}` must hold at least one observation.")
    if not train_X.is_floating_point() or not train_Y.is_floating_point():
        raise ValueError(f"`{nx}` and `{ny}` must be floating-point tensors.")
    if train_X.dtype not in _DTYPES or train_Y.dtype not in _DTYPES:
        raise ValueError(
            f"`{nx}` and `{ny}` must be float32 or float64 tensors, got {train_X.dtype} and "
            f"{train_Y.dtype}."
        )
    if train_X.dtype != train_Y.dtype:
        raise InputDataError(
            f"Expected all inputs to share the same dtype. Got {train_X.dtype} for `{nx}` and "
            f"{train_Y.dtype} for `{ny}`."
        )
