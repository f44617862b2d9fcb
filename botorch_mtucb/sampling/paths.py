r"""Sample paths of separable multi-task GPs: a random-feature prior and a Matheron update.

For a kernel that is a sum of separable terms Γ(x, x') = Σ_j k_j(x, x') B_j (ICM: one term)
a prior path is

.. math::
    f(x) = m(x) + Σ_j B_j^{1/2} g_j(x), \qquad g_j(x)_a = φ_j(x)^T w_{j,a},
    \quad w_{j,a} \sim N(0, I_F),

with φ_j random Fourier features of k_j (``k_j(x, x') ≈ φ_j(x)^T φ_j(x')``), so that
``Cov(f(x), f(x')) ≈ Σ_j k_j(x, x') B_j``. Given a prior path, Matheron's rule gives a path of
the posterior (pathwise conditioning: Wilson et al., "Efficiently sampling functions from
Gaussian process posteriors", ICML 2020; "Pathwise conditioning of Gaussian processes",
JMLR 2021):

.. math::
    f_{post}(x) = f(x) + Γ(x, X) (Γ(X, X) + Σ)^{-1} (y − f(X) − ε), \qquad ε \sim N(0, Σ).

In the ``N x n`` layout of the coefficients ``A`` (``vec`` in GPyTorch's interleaved order),
``Γ(x, X) vec(A) = Σ_j k_j(x, X) A B_j``, which :class:`SeparableUpdatePath` evaluates without
forming the ``(q·n) x (N·n)`` cross-covariance.

Output layout (BoTorch's, :func:`botorch.sampling.pathwise.draw_matheron_paths`): a path of an
``n``-output model maps ``batch_shape x q x d`` inputs to ``sample_shape x batch_shape x n x q``
(the outputs are the last batch dimension, aligned with the input's dimension ``-3`` when it
has one of size 1 or ``n``); a single-output path returns ``sample_shape x batch_shape x q``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from botorch.sampling.pathwise.features import KernelFeatureMap
from botorch.sampling.pathwise.paths import SamplePath
from gpytorch.kernels import Kernel
from linear_operator import to_dense
from torch import Tensor
from torch.nn import Module, ModuleList

__all__ = [
    "BatchMembersPath",
    "ConstantShift",
    "FeatureSpacePath",
    "SeparablePriorPath",
    "SeparableUpdatePath",
]


def _task_layout(values: Callable[[Tensor], Tensor], x: Tensor, n: int) -> Tensor:
    """Evaluate ``values`` (``... x P x d`` to ``... x P x n``) in BoTorch's output layout.

    Single output: ``... x q``. ``n`` outputs: ``... x n x q``, with the input's dimension
    ``-3`` (of size 1 or ``n``; a ``q x d`` input counts as ``1 x q x d``) taken as the output
    dimension, as for a batched multi-output BoTorch model.
    """
    if n == 1:
        return values(x)[..., 0]
    if x.dim() == 2:
        x = x.unsqueeze(0)
    m, q, d = x.shape[-3:]
    if m not in (1, n):
        raise ValueError(
            f"`x` of a {n}-output path must have shape `batch_shape x q x d` with dimension -3 "
            f"of size 1 or {n} (the output dimension), got {tuple(x.shape)}."
        )
    out = values(x.reshape(*x.shape[:-3], m * q, d))
    out = out.reshape(*out.shape[:-2], m, q, n)
    if m == 1:
        return out.squeeze(-3).transpose(-1, -2)
    return out.diagonal(dim1=-3, dim2=-1).transpose(-1, -2)  # output i at its own points


class _TaskPath(SamplePath):
    """Common part of the two paths: output layout, dtype cast, ensemble flag (no ensembles)."""

    def __init__(self, num_outputs: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.num_outputs = num_outputs
        self.dtype = dtype
        self.ensemble_as_batch = False

    def values(self, z: Tensor) -> Tensor:
        """Path values ``sample_shape x batch_shape' x P x n`` at points ``z: ... x P x d``."""
        raise NotImplementedError  # pragma: no cover

    def forward(self, x: Tensor, **kwargs) -> Tensor:
        """Path values at (input-transformed) ``x: batch_shape x q x d`` in BoTorch's layout
        (module docstring): ``sample_shape x batch_shape x n x q``, or ``... x q`` for one
        output."""
        return _task_layout(self.values, x.to(self.dtype), self.num_outputs)

    def set_ensemble_as_batch(self, ensemble_as_batch: bool) -> None:
        """Recorded only: these paths are not ensembles."""
        self.ensemble_as_batch = ensemble_as_batch


class SeparablePriorPath(_TaskPath):
    r"""Random-feature prior path ``f(x) = m(x) + Σ_j φ_j(x) V_j`` of Γ = Σ_j k_j B_j.

    ``V_j = W_j B_j^{1/2}`` with ``W_j`` standard normal (``F x n`` per sample), so that
    ``Cov(f(x), f(x')) = Σ_j φ_j(x)^T φ_j(x') B_j ≈ Γ(x, x')`` (module docstring).

    Args:
        feature_maps: One BoTorch ``KernelFeatureMap`` ``φ_j`` per separable term (``F_j``
            features each, e.g. from ``botorch.sampling.pathwise.gen_kernel_features``).
        weights: The ``V_j``, each ``sample_shape x batch_shape x F_j x n``.
        mean_module: Prior mean ``m`` returning ``... x P x n`` (``None``: zero).
        num_outputs: ``n``.

    Example:
        >>> from botorch.sampling.pathwise import gen_kernel_features
        >>> from gpytorch.kernels import RBFKernel
        >>> phi = gen_kernel_features(RBFKernel(), num_inputs=1, num_outputs=64)
        >>> path = SeparablePriorPath([phi], [torch.randn(8, 64, 2)], num_outputs=2)
        >>> path(torch.rand(5, 1)).shape  # sample x n x q
        torch.Size([8, 2, 5])
    """

    def __init__(
        self,
        feature_maps: Sequence[KernelFeatureMap],
        weights: Sequence[Tensor],
        mean_module: Module | None = None,
        num_outputs: int = 1,
    ) -> None:
        super().__init__(num_outputs, weights[0].dtype)
        self.feature_maps = ModuleList(feature_maps)
        self.mean_module = mean_module
        for j, w in enumerate(weights):
            self.register_buffer(f"weight_{j}", w)
        self.num_terms = len(weights)

    def values(self, z: Tensor) -> Tensor:
        out = self.centred_values(z)
        return out if self.mean_module is None else out + self.mean_module(z)

    def centred_values(self, z: Tensor) -> Tensor:
        """The zero-mean part ``Σ_j φ_j(z) V_j``: ``sample_shape x batch_shape' x P x n`` at
        ``z: ... x P x d``."""
        out = None
        for j, phi in enumerate(self.feature_maps):
            term = phi(z) @ getattr(self, f"weight_{j}")
            out = term if out is None else out + term
        return out


class SeparableUpdatePath(_TaskPath):
    r"""Matheron update path ``u(x) = Γ(x, X) vec(A) = Σ_j k_j(x, X) A B_j``.

    ``A = (Γ(X, X) + Σ)^{-1} (y − f(X) − ε)`` in the ``N x n`` layout, computed by the caller
    (module docstring). Evaluated in the dtype of the coefficients (the model's working dtype)
    and returned in ``out_dtype``.

    Args:
        kernels: The scalar kernels ``k_j`` (in the coefficients' dtype).
        points: ``batch_shape x N x d`` training inputs ``X`` (input-transformed).
        coefficients: The ``C_j = A B_j``, each ``sample_shape x batch_shape x N x n``.
        num_outputs: ``n``.
        out_dtype: Dtype of the returned values (default: the coefficients').

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> X = torch.rand(4, 1)
        >>> path = SeparableUpdatePath([RBFKernel()], X, [torch.randn(8, 4, 2)], num_outputs=2)
        >>> path(torch.rand(5, 1)).shape  # sample x n x q
        torch.Size([8, 2, 5])
    """

    def __init__(
        self,
        kernels: Sequence[Kernel],
        points: Tensor,
        coefficients: Sequence[Tensor],
        num_outputs: int = 1,
        out_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(num_outputs, coefficients[0].dtype)
        self.kernels = ModuleList(kernels)
        self.register_buffer("points", points)
        for j, c in enumerate(coefficients):
            self.register_buffer(f"coefficient_{j}", c)
        self.out_dtype = self.dtype if out_dtype is None else out_dtype

    def values(self, z: Tensor) -> Tensor:
        X = self.points
        batch = torch.broadcast_shapes(z.shape[:-2], X.shape[:-2])
        z = z.expand(*batch, *z.shape[-2:])
        X = X.expand(*batch, *X.shape[-2:])
        out = None
        for j, k in enumerate(self.kernels):
            term = to_dense(k.forward(z, X)) @ getattr(self, f"coefficient_{j}")
            out = term if out is None else out + term
        return out.to(self.out_dtype)


class FeatureSpacePath(SamplePath):
    r"""Path of a Bayesian linear model on a fixed feature map: ``f(x) = c + φ(x)^T w``.

    With ``w ~ N(θ, λ B Bᵀ)`` this is an exact draw of the posterior ``N(c + φ(x)^T θ,
    λ φ(x)^T B B^T φ(x'))`` (no random-feature approximation: the features are the model's).

    Args:
        features: The feature map ``φ`` (``... x q x d`` to ``... x q x m``, a callable that
            need not be a module), evaluated in the weights' dtype.
        weight: ``sample_shape x m`` weights ``w``.
        shift: The constant ``c``.
        out_dtype: Dtype of the returned values (default: the weights').

    Example:
        >>> phi = lambda x: torch.cat([x, x.square()], dim=-1)  # m = 2 for d = 1
        >>> path = FeatureSpacePath(phi, torch.randn(8, 2), shift=1.0)
        >>> path(torch.rand(5, 1)).shape  # sample x q
        torch.Size([8, 5])
    """

    def __init__(
        self,
        features: Callable[[Tensor], Tensor],
        weight: Tensor,
        shift: float = 0.0,
        out_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.features = features
        self.register_buffer("weight", weight)
        self.shift = float(shift)
        self.out_dtype = weight.dtype if out_dtype is None else out_dtype
        self.ensemble_as_batch = False

    def forward(self, x: Tensor, **kwargs) -> Tensor:
        """Values ``sample_shape x batch_shape x q`` at ``x: batch_shape x q x d``."""
        phi = self.features(x.to(self.weight.dtype))
        out = (phi @ self.weight.unsqueeze(-1)).squeeze(-1) + self.shift
        return out.to(self.out_dtype)

    def set_ensemble_as_batch(self, ensemble_as_batch: bool) -> None:
        """Recorded only: this path is not an ensemble."""
        self.ensemble_as_batch = ensemble_as_batch


class ConstantShift(Module):
    """Output transform ``y ↦ y + c`` (a module, so that paths stay picklable).

    Example:
        >>> ConstantShift(2.0)(torch.zeros(3))
        tensor([2., 2., 2.])
    """

    def __init__(self, constant: float) -> None:
        super().__init__()
        self.constant = float(constant)

    def forward(self, values: Tensor) -> Tensor:
        return values + self.constant


class BatchMembersPath(SamplePath):
    r"""Paths of a batch of independent models, one path per member, stacked along the batch.

    Member ``i`` (row-major over ``batch_shape``) is evaluated at its own slice of the input,
    so the batch of paths has BoTorch's batched layout: inputs ``batch' x batch_shape x q x d``
    (single output) or ``batch' x batch_shape x m x q x d`` with ``m ∈ {1, n}`` (``n``
    outputs, dimension ``-3`` the output dimension as in :class:`SeparablePriorPath`), where
    ``batch'`` broadcasts with the members' ``sample_shape`` and the batch dimensions may be
    1 (or missing); values ``sample_shape x batch' x batch_shape x q`` or
    ``... x batch_shape x n x q``.

    Args:
        paths: ``prod(batch_shape)`` member paths (each mapping ``... x q x d``, resp.
            ``... x m x q x d``, to ``sample_shape x ... x q``, resp. ``... x n x q``).
        batch_shape: The batch shape of the members' layout.
        num_outputs: ``n``.

    Example:
        >>> phi = lambda x: torch.cat([x, x.square()], dim=-1)
        >>> members = [FeatureSpacePath(phi, torch.randn(8, 2)) for _ in range(3)]
        >>> path = BatchMembersPath(members, torch.Size([3]))
        >>> path(torch.rand(5, 1)).shape  # sample x batch x q
        torch.Size([8, 3, 5])
        >>> path(torch.rand(8, 3, 5, 1)).shape  # one input per sample and member
        torch.Size([8, 3, 5])
    """

    def __init__(
        self, paths: Sequence[SamplePath], batch_shape: torch.Size, num_outputs: int = 1
    ) -> None:
        super().__init__()
        batch_shape = torch.Size(batch_shape)
        if len(paths) != batch_shape.numel() or not len(paths):
            raise ValueError(f"{len(paths)} member paths for batch shape {tuple(batch_shape)}.")
        self.paths = ModuleList(paths)
        self.batch_shape = batch_shape
        self.num_outputs = num_outputs
        self.ensemble_as_batch = False

    def forward(self, x: Tensor, **kwargs) -> Tensor:
        """Member values stacked along the batch (class docstring), at ``x`` as above."""
        core = 2 if self.num_outputs == 1 else 3  # (q, d) or (m, q, d)
        if x.dim() < core:
            x = x.unsqueeze(0)
        b = self.batch_shape
        lead = x.shape[:-core]
        if len(lead) < len(b):
            x = x.reshape(*(1,) * (len(b) - len(lead)), *x.shape)
            lead = x.shape[:-core]
        outer, inner = lead[: len(lead) - len(b)], lead[len(lead) - len(b):]
        if any(i not in (1, j) for i, j in zip(inner, b, strict=True)):
            raise ValueError(
                f"`x` of shape {tuple(x.shape)} does not broadcast with the batch shape "
                f"{tuple(b)} of the paths (expected batch' x {' x '.join(map(str, b))} x "
                f"{'q x d' if core == 2 else 'm x q x d'})."
            )
        tail = x.shape[-core:]
        x = x.expand(*outer, *b, *tail).reshape(*outer, b.numel(), *tail)
        outs = [path(xi, **kwargs) for path, xi in zip(self.paths, x.unbind(len(outer)),
                                                         strict=True)]
        at = -(core - 1) - 1  # the members' dimension: in front of q (and n)
        out = torch.stack(outs, dim=at)
        cut = out.dim() + at
        return out.reshape(*out.shape[:cut], *b, *out.shape[cut + 1:])

    def set_ensemble_as_batch(self, ensemble_as_batch: bool) -> None:
        """Passed to the members (these batches are not ensembles)."""
        self.ensemble_as_batch = ensemble_as_batch
        for path in self.paths:
            path.set_ensemble_as_batch(ensemble_as_batch)
