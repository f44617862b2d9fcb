r"""Exact Gaussian marginal likelihood of ICM kernels from two small eigendecompositions.

For the ICM covariance Σ = K ⊗ B + ηI (``K``: ``t x t`` scalar kernel matrix, ``B``: ``n x n``
task matrix, GPyTorch's interleaved order: index ``point·n + task``, i.e. ``torch.kron(K, B)``)
and the eigendecompositions ``K = W diag(a) Wᵀ``, ``B = U diag(ξ) Uᵀ`` (paper 000, §3.3 and
Appendix A), with ``R`` the residual ``r`` reshaped ``t x n`` and ``Λ_pi = a_p ξ_i + η``:

.. math::
    r^T Σ^{-1} r = Σ_{p,i} (W^T R U)_{pi}^2 / Λ_{pi}, \qquad
    \log\det Σ = Σ_{p,i} \log Λ_{pi}.

The backward pass is closed-form (no differentiation through ``eigh``, whose gradient is
unstable for the clustered eigenvalues of smooth kernels). With ``A = Σ⁻¹r`` reshaped
``t x n``, ``c_p = Σ_i ξ_i / Λ_pi`` and ``e_i = Σ_p a_p / Λ_pi``:

    d(rᵀΣ⁻¹r)/dK = −A B Aᵀ,    d(log det Σ)/dK = W diag(c) Wᵀ,
    d(rᵀΣ⁻¹r)/dB = −Aᵀ K A,    d(log det Σ)/dB = U diag(e) Uᵀ,
    d(rᵀΣ⁻¹r)/dη = −‖A‖²,      d(log det Σ)/dη = Σ_{p,i} 1/Λ_pi,    d(rᵀΣ⁻¹r)/dr = 2 vec(A).

The cost is one ``t x t`` and one ``n x n`` eigendecomposition plus O(nt² + n²t), against
O(n³t³) for a Cholesky factor of the ``nt x nt`` matrix. For few tasks ``n`` Cholesky factors
of the blocks ``ξ_i K + ηI`` are cheaper (:mod:`~botorch_mtucb.linalg.icm_cholesky`);
:func:`icm_inv_quad_logdet` picks the route (``method="auto"``).

:class:`ICMKroneckerLinearOperator` (returned by the multi-task kernels for one separable term)
and :class:`ICMAddedDiagLinearOperator` (its sum with GPyTorch's homoscedastic noise) route
``ExactMarginalLogLikelihood`` → ``MultitaskGaussianLikelihood.marginal`` →
``MultitaskMultivariateNormal.log_prob`` → ``inv_quad_logdet`` through this computation.
BoTorch switches GPyTorch's ``fast_computations.log_prob`` off on import, which makes
``log_prob`` take a dense Cholesky factor of the ``nt x nt`` covariance whatever its structure;
:class:`ICMMultitaskMultivariateNormal` (the prior of ``ExactMultiTaskGP``, and hence its
marginal) evaluates ``log_prob`` through ``inv_quad_logdet`` whenever the covariance is an
:class:`ICMAddedDiagLinearOperator`, which is exact, so the setting's intent (no iterative
approximations) is kept.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from gpytorch.distributions import MultitaskMultivariateNormal
from gpytorch.lazy import LazyEvaluatedKernelTensor
from linear_operator.operators import (
    ConstantDiagLinearOperator,
    KroneckerProductAddedDiagLinearOperator,
    KroneckerProductLinearOperator,
)
from torch import Tensor
from torch.autograd.function import once_differentiable

from botorch_mtucb.linalg.icm_cholesky import (
    ICMCholeskyInvQuadLogdet,
    ICMFactorCache,
    ICMNotPositiveDefiniteError,
    icm_likelihood_method,
)

__all__ = [
    "ICMAddedDiagLinearOperator",
    "ICMInvQuadLogdet",
    "ICMKroneckerLinearOperator",
    "ICMMultitaskMultivariateNormal",
    "icm_inv_quad_logdet",
    "icm_likelihood_enabled",
    "use_icm_likelihood",
]

_ENABLED = [True]


def icm_likelihood_enabled() -> bool:
    """Whether multi-task kernels return :class:`ICMKroneckerLinearOperator` (the fast path).

    Example:
        >>> icm_likelihood_enabled()
        True
    """
    return _ENABLED[0]


@contextmanager
def use_icm_likelihood(enabled: bool = True) -> Iterator[None]:
    """Context manager switching the ICM likelihood fast path on or off (restored on exit).

    With ``enabled=False`` the multi-task kernels return plain
    ``KroneckerProductLinearOperator``\\ s and GPyTorch's generic path is used (for comparisons).

    Example:
        >>> with use_icm_likelihood(False):
        ...     print(icm_likelihood_enabled())
        False
        >>> icm_likelihood_enabled()
        True
    """
    old = _ENABLED[0]
    _ENABLED[0] = bool(enabled)
    try:
        yield
    finally:
        _ENABLED[0] = old


def _sum_to(x: Tensor, shape: torch.Size) -> Tensor:
    """Sum the broadcast dimensions of ``x`` away so that it has ``shape``."""
    if x.shape == shape:
        return x
    return x.sum_to_size(shape)


class ICMInvQuadLogdet(torch.autograd.Function):
    """``(rᵀΣ⁻¹r, log det Σ)`` for Σ = K ⊗ B + ηI with a closed-form backward.

    Inputs (all batch dimensions broadcast): ``K: batch x t x t``, ``B: batch x n x n``,
    ``eta: batch`` (one η per batch element; 0-dim for a single one), ``r: batch x (t·n)``,
    and an optional :class:`~botorch_mtucb.linalg.ICMFactorCache` which receives
    ``("eigh", (a, W))`` (``K = W diag(a) Wᵀ``, unbatched inputs only). Returns
    ``inv_quad`` of the broadcast batch shape of all four and ``logdet`` of the broadcast
    batch shape of ``K``, ``B`` and ``eta``. Eigenvalues of ``K`` and ``B`` are
    clamped at 0; all work is done in float64 and the results are cast back to the input dtype.
    Prefer :func:`icm_inv_quad_logdet`, which validates its arguments.

    Example:
        >>> import torch
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)   # t·n = 4
        >>> S = torch.kron(K, B) + 0.1 * torch.eye(4, dtype=torch.float64)   # Σ, dense
        >>> K.requires_grad_(True)   # doctest: +ELLIPSIS
        tensor(...)
        >>> quad, logdet = ICMInvQuadLogdet.apply(K, B, torch.tensor(0.1, dtype=K.dtype), r)
        >>> (quad + logdet).backward()
        >>> K.grad.shape   # t x t
        torch.Size([2, 2])
    """

    @staticmethod
    def forward(ctx, K: Tensor, B: Tensor, eta: Tensor, r: Tensor,
                cache: ICMFactorCache | None = None) -> tuple[Tensor, Tensor]:
        out_dtype = torch.promote_types(torch.promote_types(K.dtype, B.dtype), r.dtype)
        wd = torch.float64
        t, n = K.shape[-1], B.shape[-1]
        K64, B64 = K.to(wd), B.to(wd)
        a, W = torch.linalg.eigh(0.5 * (K64 + K64.mT))
        xi, U = torch.linalg.eigh(0.5 * (B64 + B64.mT))
        a, xi = a.clamp_min(0.0), xi.clamp_min(0.0)
        lam = a[..., :, None] * xi[..., None, :] + eta.to(wd)[..., None, None]  # batch x t x n
        R = r.to(wd).reshape(*r.shape[:-1], t, n)
        Rt = W.mT @ R @ U  # coordinates in the joint eigenbasis W ⊗ U
        Z = Rt / lam
        inv_quad = (Rt * Z).sum((-2, -1))
        logdet = lam.log().sum((-2, -1))
        if cache is not None and K.dim() == 2 and B.dim() == 2 and eta.dim() == 0:
            cache.store("eigh", (a, W))
        ctx.save_for_backward(W, U, a, xi, lam, Z)
        ctx.shapes = (K.shape, B.shape, eta.shape, r.shape)
        ctx.dtypes = (K.dtype, B.dtype, eta.dtype, r.dtype)
        return inv_quad.to(out_dtype), logdet.to(out_dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, g_quad: Tensor, g_logdet: Tensor):
        W, U, a, xi, lam, Z = ctx.saved_tensors
        K_shape, B_shape, eta_shape, r_shape = ctx.shapes
        wd = W.dtype
        gq = g_quad.to(wd)[..., None, None]
        gl = g_logdet.to(wd)[..., None]
        inv = lam.reciprocal()
        need = ctx.needs_input_grad
        gK = gB = geta = gr = None
        WZ = W @ Z if (need[0] or need[3]) else None  # = A U
        if need[0]:
            c = (xi[..., None, :] * inv).sum(-1)  # batch x t
            # reduce each part to K's batch shape, then combine (no double counting)
            logdet_part = (W * _sum_to(gl * c, W.shape[:-1])[..., None, :]) @ W.mT
            quad_part = _sum_to((gq * (WZ * xi[..., None, :])) @ WZ.mT, W.shape)
            gK = _sum_to(logdet_part - quad_part, K_shape)
        if need[1]:
            e = (a[..., :, None] * inv).sum(-2)  # batch x n
            inner = torch.diag_embed(_sum_to(gl * e, U.shape[:-1])) - _sum_to(
                gq * (Z.mT @ (a[..., :, None] * Z)), U.shape
            )
            gB = _sum_to(U @ inner @ U.mT, B_shape)
        if need[2]:
            geta = _sum_to(gl[..., 0] * inv.sum((-2, -1)), eta_shape) - _sum_to(
                gq[..., 0, 0] * Z.square().sum((-2, -1)), eta_shape
            )
        if need[3]:
            gr = (2.0 * gq * (WZ @ U.mT)).reshape(*WZ.shape[:-2], -1)
            gr = _sum_to(gr, r_shape)
        grads = zip((gK, gB, geta, gr), ctx.dtypes, strict=True)
        return (*(None if g is None else g.to(dt) for g, dt in grads), None)


def _apply(K: Tensor, B: Tensor, eta: Tensor, r: Tensor, method: str,
           cache: ICMFactorCache | None) -> tuple[Tensor, Tensor]:
    """The ICM Function of ``method`` (``"auto"``: :func:`icm_likelihood_method`); the
    Cholesky route falls back to the eigen route when a block is not positive definite."""
    if method == "auto":
        method = icm_likelihood_method(B.shape[-1], K.shape[-1])
    if method == "cholesky":
        try:
            return ICMCholeskyInvQuadLogdet.apply(K, B, eta, r, cache)
        except ICMNotPositiveDefiniteError:
            pass
    elif method != "eigh":
        raise ValueError(f"`method` must be 'auto', 'eigh' or 'cholesky', got {method!r}.")
    return ICMInvQuadLogdet.apply(K, B, eta, r, cache)


def icm_inv_quad_logdet(
    K: Tensor,
    B: Tensor,
    eta: Tensor | float,
    r: Tensor,
    check_eta: bool = True,
    method: str = "auto",
    cache: ICMFactorCache | None = None,
) -> tuple[Tensor, Tensor]:
    """Inverse quadratic form and log determinant of Σ = K ⊗ B + ηI (interleaved order).

    Computed with a closed-form backward (paper 000 §3.3 / Appendix A) either from
    ``eigh(K)`` and ``eigh(B)`` (:class:`ICMInvQuadLogdet`, module docstring) or from the
    ``n`` Cholesky factors of ``ξ_i K + ηI``
    (:class:`~botorch_mtucb.linalg.ICMCholeskyInvQuadLogdet`); ``method="auto"`` takes the
    cheaper (:func:`~botorch_mtucb.linalg.icm_likelihood_method`). When a block has no
    Cholesky factor (``K`` indefinite beyond round-off relative to η) the eigen route is
    used, which clamps the eigenvalues of ``K`` at 0. Eigenvalues of ``B`` are clamped at 0
    (both are PSD up to round-off). **float32 (and lower) inputs are upcast to float64
    internally**, so Λ = aξ + η ≥ η > 0 holds and the result is as accurate as the inputs;
    outputs and gradients are cast back to the input dtype.

    Args:
        K: ``batch_shape x t x t`` symmetric PSD scalar kernel matrix.
        B: ``batch_shape x n x n`` symmetric PSD task matrix.
        eta: Noise variance η > 0: a float, a 0-dim tensor, or ``batch_shape x 1`` (e.g. a
            GPyTorch likelihood's ``noise`` of shape ``(1,)``).
        r: ``batch_shape x (t·n)`` residual, index ``point·n + task``.
        check_eta: Check η > 0 (one host synchronisation; disable on hot paths where a
            constraint guarantees it).
        method: ``"auto"``, ``"eigh"`` or ``"cholesky"``.
        cache: An :class:`~botorch_mtucb.linalg.ICMFactorCache` receiving the factorisation
            (unbatched inputs).

    Returns:
        ``(inv_quad, logdet)``: rᵀΣ⁻¹r over the broadcast batch shape of all inputs and
        log det Σ over that of ``K``, ``B`` and ``eta``.

    Example:
        >>> import torch
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)   # t·n = 4
        >>> S = torch.kron(K, B) + 0.1 * torch.eye(4, dtype=torch.float64)   # Σ, dense
        >>> quad, logdet = icm_inv_quad_logdet(K, B, 0.1, r)
        >>> torch.allclose(quad, r @ torch.linalg.solve(S, r)), torch.allclose(logdet, S.logdet())
        (True, True)
    """
    for name, x in (("K", K), ("B", B), ("r", r)):
        if not torch.is_tensor(x) or not x.is_floating_point():
            raise ValueError(f"`{name}` must be a floating-point tensor.")
    if K.dim() < 2 or K.shape[-1] != K.shape[-2]:
        raise ValueError(f"`K` must have shape `batch_shape x t x t`, got {tuple(K.shape)}.")
    if B.dim() < 2 or B.shape[-1] != B.shape[-2]:
        raise ValueError(f"`B` must have shape `batch_shape x n x n`, got {tuple(B.shape)}.")
    t, n = K.shape[-1], B.shape[-1]
    if r.dim() < 1 or r.shape[-1] != t * n:
        raise ValueError(
            f"`r` must have shape `batch_shape x (t·n)` = `... x {t * n}`, got {tuple(r.shape)}."
        )
    eta = torch.as_tensor(eta, dtype=K.dtype, device=K.device)
    if eta.dim() > 0:
        if eta.shape[-1] != 1:
            raise ValueError(
                f"`eta` must be 0-dim or have shape `batch_shape x 1`, got {tuple(eta.shape)}."
            )
        eta = eta.squeeze(-1)
    if check_eta and not bool((eta > 0).all()):
        raise ValueError("`eta` (the noise variance η) must be positive.")
    try:
        torch.broadcast_shapes(K.shape[:-2], B.shape[:-2], eta.shape, r.shape[:-1])
    except RuntimeError as err:
        raise ValueError(
            f"Batch shapes of `K` {tuple(K.shape[:-2])}, `B` {tuple(B.shape[:-2])}, `eta` "
            f"{tuple(eta.shape)} and `r` {tuple(r.shape[:-1])} do not broadcast."
        ) from err
    return _apply(K, B, eta, r, method, cache)


class ICMKroneckerLinearOperator(KroneckerProductLinearOperator):
    """``K ⊗ B`` (interleaved) whose sum with a constant diagonal is an ICM likelihood operator.

    Behaves exactly as ``KroneckerProductLinearOperator`` (matmul, to_dense, diagonal, …) except
    that ``self + ConstantDiagLinearOperator`` (what ``MultitaskGaussianLikelihood`` adds for a
    homoscedastic noise η) and ``add_diagonal`` with a scalar return an
    :class:`ICMAddedDiagLinearOperator`. Any other sum keeps GPyTorch's generic path.

    Args:
        K: ``batch_shape x t x t'`` data covariance (tensor or linear operator).
        B: ``batch_shape x n x n`` task covariance.

    Example:
        >>> import torch
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)   # t·n = 4
        >>> S = torch.kron(K, B) + 0.1 * torch.eye(4, dtype=torch.float64)   # Σ, dense
        >>> op = ICMKroneckerLinearOperator(K, B)
        >>> noisy = op.add_diagonal(torch.tensor(0.1, dtype=torch.float64))
        >>> type(noisy).__name__, torch.allclose(noisy.to_dense(), S)
        ('ICMAddedDiagLinearOperator', True)
    """

    def _icm_ready(self) -> bool:
        return len(self.linear_ops) == 2 and self.is_square and self.linear_ops[0].is_square

    def __add__(self, other):
        if isinstance(other, ConstantDiagLinearOperator) and self._icm_ready():
            return ICMAddedDiagLinearOperator(self, other)
        return super().__add__(other)

    def add_diagonal(self, diag: Tensor):
        if self._icm_ready() and (diag.dim() == 0 or diag.shape[-1] == 1):
            values = diag.unsqueeze(-1) if diag.dim() == 0 else diag
            return ICMAddedDiagLinearOperator(
                self, ConstantDiagLinearOperator(values, diag_shape=self.shape[-1])
            )
        return super().add_diagonal(diag)


class ICMAddedDiagLinearOperator(KroneckerProductAddedDiagLinearOperator):
    """``K ⊗ B + ηI`` whose ``inv_quad_logdet`` uses the ICM likelihood (``method="auto"``).

    Everything else (solves, root decompositions, matmul) is inherited from
    ``KroneckerProductAddedDiagLinearOperator``. Exact for any size (no Lanczos / CG above
    ``max_cholesky_size``).

    Both Kronecker factors must be symmetric PSD (kernel and task matrices): their
    eigenvalues are clamped at 0. Built by :class:`ICMKroneckerLinearOperator`, not by users.

    Args:
        *linear_ops: An :class:`ICMKroneckerLinearOperator` (``batch_shape x tn x tn``) and a
            ``ConstantDiagLinearOperator`` (η, ``batch_shape x 1`` diagonal values).

    Example:
        >>> import torch
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)   # t·n = 4
        >>> S = torch.kron(K, B) + 0.1 * torch.eye(4, dtype=torch.float64)   # Σ, dense
        >>> noisy = ICMKroneckerLinearOperator(K, B).add_diagonal(torch.tensor(0.1).double())
        >>> quad, logdet = noisy.inv_quad_logdet(r.unsqueeze(-1), logdet=True)
        >>> torch.allclose(logdet, S.logdet()), torch.allclose(quad, r @ torch.linalg.solve(S, r))
        (True, True)
    """

    def _icm_parts(self) -> tuple[Tensor, Tensor, Tensor] | None:
        op = self.linear_op
        if not (
            isinstance(op, KroneckerProductLinearOperator)
            and len(op.linear_ops) == 2
            and isinstance(self.diag_tensor, ConstantDiagLinearOperator)
        ):
            return None
        eta = self.diag_tensor.diag_values.squeeze(-1)
        return op.linear_ops[0].to_dense(), op.linear_ops[1].to_dense(), eta

    def inv_quad_logdet(
        self,
        inv_quad_rhs: Tensor | None = None,
        logdet: bool | None = False,
        reduce_inv_quad: bool | None = True,
    ) -> tuple[Tensor | None, Tensor | None]:
        """``(inv_quad, logdet)`` as GPyTorch's, from :func:`icm_inv_quad_logdet`'s routes.

        Args:
            inv_quad_rhs: ``batch_shape x tn x M`` (or ``batch_shape x tn``) right-hand sides.
            logdet: Also return log det Σ (``batch_shape``).
            reduce_inv_quad: Sum the ``M`` quadratic forms (else ``batch_shape x M``).
        """
        parts = self._icm_parts()
        if parts is None:
            return super().inv_quad_logdet(inv_quad_rhs, logdet, reduce_inv_quad)
        if inv_quad_rhs is None and not logdet:
            return None, None
        K, B, eta = parts
        if inv_quad_rhs is None:
            quad_rhs = torch.zeros(self.shape[-1], 1, dtype=K.dtype, device=K.device)
        elif inv_quad_rhs.dim() == self.dim() - 1 and inv_quad_rhs.shape[-1] == self.shape[-1]:
            quad_rhs = inv_quad_rhs.unsqueeze(-1)  # one right-hand side, batch_shape x tn
        else:
            quad_rhs = inv_quad_rhs
        if quad_rhs.shape[-2] != self.shape[-1]:
            raise ValueError(
                f"`inv_quad_rhs` must have shape `batch_shape x {self.shape[-1]} x M`, got "
                f"{tuple(inv_quad_rhs.shape)}."
            )
        # the M right-hand sides become a batch dimension of the Function
        quad, ld = _apply(
            K.unsqueeze(-3), B.unsqueeze(-3), eta.unsqueeze(-1), quad_rhs.mT, "auto", None
        )
        ld = ld.squeeze(-1)
        if inv_quad_rhs is None:
            quad = None
        elif reduce_inv_quad:
            quad = quad.sum(-1)
        return quad, (ld if logdet else None)

    def _logdet(self) -> Tensor:
        if self._icm_parts() is None:
            return super()._logdet()
        return self.inv_quad_logdet(logdet=True)[1]

    def __add__(self, other):
        if isinstance(other, ConstantDiagLinearOperator) and self._icm_parts() is not None:
            return ICMAddedDiagLinearOperator(self.linear_op, self.diag_tensor + other)
        return super().__add__(other)


class ICMMultitaskMultivariateNormal(MultitaskMultivariateNormal):
    """``MultitaskMultivariateNormal`` whose ``log_prob`` uses the ICM eigen identity when it can.

    When the (interleaved) covariance is an :class:`ICMAddedDiagLinearOperator` (an ICM prior
    plus homoscedastic noise, as produced by ``MultitaskGaussianLikelihood.marginal``),
    ``log_prob`` is −½ (rᵀΣ⁻¹r + log det Σ + nt log 2π) from :class:`ICMInvQuadLogdet`, exact
    and independent of ``fast_computations`` / ``max_cholesky_size``; otherwise it is GPyTorch's.
    Same constructor as ``MultitaskMultivariateNormal``.

    Example:
        >>> import torch
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)   # t·n = 4
        >>> S = torch.kron(K, B) + 0.1 * torch.eye(4, dtype=torch.float64)   # Σ, dense
        >>> cov = ICMKroneckerLinearOperator(K, B).add_diagonal(torch.tensor(0.1).double())
        >>> mvn = ICMMultitaskMultivariateNormal(torch.zeros(2, 2, dtype=torch.float64), cov)
        >>> ref = torch.distributions.MultivariateNormal(torch.zeros(4).double(), S)
        >>> torch.allclose(mvn.log_prob(r.reshape(2, 2)), ref.log_prob(r))   # t x n value
        True
    """

    def log_prob(self, value: Tensor) -> Tensor:
        """Log density at ``value: batch_shape x t x n`` (result ``batch_shape``)."""
        covar = self.lazy_covariance_matrix
        if isinstance(covar, LazyEvaluatedKernelTensor):
            covar = covar.evaluate_kernel()
        if (
            not self._interleaved
            or not isinstance(covar, ICMAddedDiagLinearOperator)
            or covar._icm_parts() is None
        ):
            return super().log_prob(value)
        diff = value.reshape(*value.shape[:-2], -1) - self.loc
        quad, logdet = covar.inv_quad_logdet(diff.unsqueeze(-1), logdet=True)
        return -0.5 * (quad + logdet + diff.shape[-1] * math.log(2 * math.pi))
