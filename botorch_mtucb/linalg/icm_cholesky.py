r"""The ICM marginal likelihood from ``n`` Cholesky factors, and the factor cache of a fit.

With ``B = U diag(ξ) Uᵀ`` the ICM covariance Σ = K ⊗ B + ηI (interleaved order, index
``point·n + task``) is block diagonal in the task eigenbasis (paper 000, §3.3, Appendix A):

.. math::
    (I ⊗ U)^T Σ (I ⊗ U) = \mathrm{blockdiag}_i(ξ_i K + ηI).

With ``R`` the residual reshaped ``t x n``, ``R̃ = R U``, ``L_i = chol(ξ_i K + ηI)``,
``α_i = (ξ_i K + ηI)⁻¹ r̃_i``, ``M_i = (ξ_i K + ηI)⁻¹`` and ``A = [α_1 … α_n] Uᵀ``:

    rᵀΣ⁻¹r = Σ_i r̃_iᵀ α_i,          log det Σ = Σ_i 2 Σ_p log (L_i)_pp,
    d(rᵀΣ⁻¹r)/dK = −A B Aᵀ,          d(log det Σ)/dK = Σ_i ξ_i M_i,
    d(rᵀΣ⁻¹r)/dB = −Aᵀ K A,          d(log det Σ)/dB = U diag(tr(K M_i)) Uᵀ,
    d(rᵀΣ⁻¹r)/dη = −‖A‖²,            d(log det Σ)/dη = Σ_i tr M_i,     d(rᵀΣ⁻¹r)/dr = 2 vec(A).

The ``t x t`` gradient matrix Σ_i ξ_i M_i is accumulated in the forward pass, one block at a
time; the backward combines the accumulator with the rank-``n`` parts. Each block is built,
factorised (``L_i`` overwrites ξ_i K + ηI) and inverted (``M_i`` overwrites ``L_i``) in place
in one buffer: a C-contiguous symmetric matrix is, transposed, the same matrix in the
column-major layout LAPACK overwrites, so the factorisation and the inverse work on that view
without copying. The accumulator is the buffer of the first block and one more buffer serves
the others: the pass holds ``K`` and at most two ``t x t`` buffers whatever ``n`` (one for
``n = 1``), and on the CPU allocates no other ``t x t`` temporary (other backends may copy
inside their inverse). The cost is ``n`` Cholesky factors and ``n`` inverses from them,
against one ``t x t`` eigendecomposition and one ``t x t`` product for
:class:`~botorch_mtucb.linalg.ICMInvQuadLogdet`; :func:`icm_likelihood_method` picks the
cheaper of the two.

:class:`ICMFactorCache` keeps the factorisation of the last evaluation with a key, so that a
posterior built at the same hyperparameters and data reuses it instead of factorising again
(:func:`icm_factor_cache`, :func:`take_icm_factors`).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

__all__ = [
    "ICMCholeskyInvQuadLogdet",
    "ICMFactorCache",
    "ICMNotPositiveDefiniteError",
    "icm_factor_cache",
    "icm_likelihood_method",
    "take_icm_factors",
]

#: Smallest ``t`` at which the Cholesky route is used, per number of tasks ``n`` (the eigen
#: route for larger ``n``): ``n`` Cholesky factors and inverses against one ``eigh`` and one
#: ``t x t`` product, plus a fixed overhead per block that favours ``eigh`` at small ``t``.
_CHOLESKY_MIN_T: dict[int, int] = {1: 50, 2: 100, 3: 300, 4: 1000}


def icm_likelihood_method(n: int, t: int) -> str:
    """The cheaper route for Σ = K ⊗ B + ηI: ``"cholesky"`` or ``"eigh"``.

    ``"cholesky"`` (``n`` Cholesky factors and inverses of ``ξ_i K + ηI``) for ``n ≤ 4``
    tasks and ``t`` at least ``50`` (``n = 1``), ``100`` (``n = 2``), ``300`` (``n = 3``) or
    ``1000`` (``n = 4``); ``"eigh"`` (one ``t x t`` eigendecomposition and one ``t x t``
    product) otherwise: per task the Cholesky route costs a fixed fraction of the eigen route
    at large ``t``, and a fixed overhead per block at small ``t``. The same rule chooses the
    posterior solver of :class:`~botorch_mtucb.models.ExactMultiTaskGP`.

    Args:
        n: Number of tasks (side of ``B``).
        t: Number of points (side of ``K``).

    Example:
        >>> [icm_likelihood_method(n, t) for n, t in ((2, 1000), (2, 10), (20, 1000))]
        ['cholesky', 'eigh', 'eigh']
    """
    min_t = _CHOLESKY_MIN_T.get(int(n))
    return "cholesky" if min_t is not None and t >= min_t else "eigh"


class ICMNotPositiveDefiniteError(RuntimeError):
    """A block ``ξ_i K + ηI`` is not numerically positive definite (its Cholesky failed)."""


class ICMFactorCache:
    """The factorisation of the last ICM likelihood evaluation, under a key.

    A likelihood evaluation given the cache (``cache=`` of
    :func:`~botorch_mtucb.linalg.icm_inv_quad_logdet`) stores its factors for unbatched
    inputs: ``("cholesky", (xi, U, L))`` with ``L: n x t x t`` the factors of ``ξ_i K + ηI``,
    or ``("eigh", (a, W))`` with ``K = W diag(a) Wᵀ`` (held by the backward pass anyway). The
    Cholesky route overwrites each factor by its inverse, so with ``keep_cholesky`` every
    evaluation given the cache factorises into ``n`` extra ``t x t`` buffers that outlive it
    (a copy of each is inverted); without it the Cholesky route stores nothing and a posterior
    factorises ``K`` again (``n`` Cholesky factors, the cost of the forward pass without its
    inverses). The caller names what the factors depend on with :meth:`begin`; :meth:`take`
    hands them out once, for an equal key.

    Args:
        keep_cholesky: Store the ``n`` Cholesky factors of the Cholesky route (``n`` extra
            ``t x t`` buffers per evaluation).

    Example:
        >>> import torch
        >>> from botorch_mtucb.linalg import icm_inv_quad_logdet
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)
        >>> cache = ICMFactorCache()
        >>> cache.begin((K.clone(),))
        >>> _ = icm_inv_quad_logdet(K, B, 0.1, r, method="cholesky", cache=cache)
        >>> method, (xi, U, L) = cache.take((K.clone(),))
        >>> method, L.shape, cache.take((K,))
        ('cholesky', torch.Size([2, 2, 2]), None)
    """

    def __init__(self, keep_cholesky: bool = True) -> None:
        self.keep_cholesky = keep_cholesky
        self.key: tuple[Tensor, ...] | None = None
        self.method: str | None = None
        self.factors: tuple[Tensor, ...] | None = None

    def begin(self, key: tuple[Tensor, ...]) -> None:
        """Drop the stored factors (freeing them before the next evaluation) and set ``key``."""
        self.method = self.factors = None
        self.key = tuple(k.detach().clone() for k in key)

    def store(self, method: str, factors: tuple[Tensor, ...]) -> None:
        """Record the factors of the evaluation that follows :meth:`begin`."""
        self.method, self.factors = method, factors

    def clear(self) -> None:
        """Forget key and factors."""
        self.key = self.method = self.factors = None

    def matches(self, key: tuple[Tensor, ...]) -> bool:
        """Whether factors are stored under a key equal (shapes, dtypes, values) to ``key``."""
        if self.factors is None or self.key is None or len(self.key) != len(key):
            return False
        return all(
            a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
            and torch.equal(a, b.detach())
            for a, b in zip(self.key, key, strict=True)
        )

    def take(self, key: tuple[Tensor, ...]) -> tuple[str, tuple[Tensor, ...]] | None:
        """``(method, factors)`` stored under ``key`` (then forgotten), else ``None``."""
        if not self.matches(key):
            return None
        out = (self.method, self.factors)
        self.clear()
        return out


_CACHES: weakref.WeakKeyDictionary[Any, ICMFactorCache] = weakref.WeakKeyDictionary()


def icm_factor_cache(owner: Any, keep_cholesky: bool = True) -> ICMFactorCache:
    """The :class:`ICMFactorCache` attached to ``owner`` (created on first use).

    Held in a weak mapping, so it is neither pickled nor deep-copied with ``owner`` and dies
    with it.

    Args:
        owner: Any weakly referenceable object (a model).
        keep_cholesky: ``keep_cholesky`` of a newly created cache.

    Example:
        >>> class Owner:
        ...     pass
        >>> owner = Owner()
        >>> icm_factor_cache(owner) is icm_factor_cache(owner)
        True
    """
    cache = _CACHES.get(owner)
    if cache is None:
        cache = _CACHES[owner] = ICMFactorCache(keep_cholesky)
    return cache


def take_icm_factors(owner: Any, key: tuple[Tensor, ...]) -> tuple[str, tuple[Tensor, ...]] | None:
    """The factors stored for ``owner`` under ``key`` (:meth:`ICMFactorCache.take`), or ``None``.

    Example:
        >>> take_icm_factors(object.__new__(ICMFactorCache), ()) is None
        True
    """
    cache = _CACHES.get(owner)
    return None if cache is None else cache.take(key)


def _sum_to(x: Tensor, shape: torch.Size) -> Tensor:
    """Sum the broadcast dimensions of ``x`` away so that it has ``shape``."""
    return x if x.shape == shape else x.sum_to_size(shape)


def _vdot(X: Tensor, Y: Tensor) -> Tensor:
    """``Σ_pq X_pq Y_pq`` over the last two dimensions without an elementwise product buffer."""
    t2 = X.shape[-1] * X.shape[-2]
    batch = torch.broadcast_shapes(X.shape[:-2], Y.shape[:-2])
    x = X.expand(*batch, *X.shape[-2:]).reshape(*batch, 1, t2)
    y = Y.expand(*batch, *Y.shape[-2:]).reshape(*batch, t2, 1)
    return (x @ y)[..., 0, 0]


def _not_pd() -> ICMNotPositiveDefiniteError:
    return ICMNotPositiveDefiniteError(
        "A block ξ_i K + ηI of the ICM covariance is not positive definite."
    )


def _factor_(S: Tensor) -> None:
    """``S ← chol(S)`` in place (lower factor, zeros above); raises if not positive definite.

    ``S`` (``batch x t x t``, C-contiguous, symmetric) transposed is the same matrix in
    column-major order, the layout LAPACK works on in place: its upper factor ``Lᵀ`` is the
    lower factor of ``S``.
    """
    F = S.mT
    _, info = torch.linalg.cholesky_ex(F, upper=True, out=(F, S.new_empty(0, dtype=torch.int32)))
    if bool((info != 0).any()):  # one host synchronisation per block
        raise _not_pd()


def _invert_(L: Tensor) -> None:
    """``L ← (L Lᵀ)⁻¹`` in place (both triangles) for a factor of :func:`_factor_`."""
    F = L.mT
    torch.cholesky_inverse(F, upper=True, out=F)


def _solve(L: Tensor, rhs: Tensor) -> Tensor:
    """``(L Lᵀ)⁻¹ rhs`` for a factor of :func:`_factor_` (``rhs``: ``batch x t x k``)."""
    y = torch.linalg.solve_triangular(L, rhs, upper=False)
    return torch.linalg.solve_triangular(L.mT, y, upper=True)


def _blocks(K: Tensor, xi: Tensor, eta: Tensor, Rt: Tensor, need_inv: bool, need_D: bool,
            keep: bool) -> tuple[Tensor, ...]:
    """The ``n`` blocks ``ξ_i K + ηI``, factorised and inverted in place, one at a time.

    Returns ``alpha: batch x t x n`` (rotated coordinates), ``log det Σ``, the accumulator
    ``D = Σ_i ξ_i M_i`` (``need_D``), ``tr M_i`` and ``tr(K M_i)`` (``batch x n``,
    ``need_inv``) and the factors ``L: n x t x t`` (``keep``; ``None`` otherwise). ``D`` is the
    work buffer of the first block and one more buffer serves the others; with ``keep`` each
    factor is computed in its own buffer and a copy of it is inverted.
    """
    t, n = K.shape[-1], xi.shape[-1]
    bk = torch.broadcast_shapes(K.shape[:-2], xi.shape[:-1], eta.shape)
    Kb = K.expand(*bk, t, t)
    D = K.new_empty(*bk, t, t) if need_D else None
    Ls = K.new_empty(n, t, t) if keep else None
    work = None
    alphas, tr_m, tr_km, logdet = [], [], [], K.new_zeros(bk)
    for i in range(n):
        xi_i = xi[..., i, None, None]
        if D is not None and i == 0:
            M = D
        else:
            M = work = K.new_empty(*bk, t, t) if work is None else work
        L = M if Ls is None else Ls[i]
        torch.mul(Kb, xi_i, out=L)
        L.diagonal(dim1=-2, dim2=-1).add_(eta[..., None])
        _factor_(L)
        logdet = logdet + 2.0 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        alphas.append(_solve(L, Rt[..., i : i + 1]))
        if not need_inv:
            continue
        if M is not L:
            M.copy_(L)
        _invert_(M)  # M_i = (ξ_i K + ηI)⁻¹
        tr_m.append(M.diagonal(dim1=-2, dim2=-1).sum(-1))
        tr_km.append(_vdot(K, M))  # tr(K M_i), exact also for ξ_i → 0
        if M is D:
            D.mul_(xi_i)
        elif D is not None:
            D.addcmul_(M, xi_i)
    del work
    return (torch.cat(alphas, dim=-1), logdet, D, torch.stack(tr_m, -1) if tr_m else None,
            torch.stack(tr_km, -1) if tr_km else None, Ls)


class ICMCholeskyInvQuadLogdet(torch.autograd.Function):
    """``(rᵀΣ⁻¹r, log det Σ)`` for Σ = K ⊗ B + ηI from ``n`` Cholesky factors (module docstring).

    Same inputs, outputs, batching and dtype policy as
    :class:`~botorch_mtucb.linalg.ICMInvQuadLogdet` (float64 inside, results cast back):
    ``K: batch x t x t``, ``B: batch x n x n``, ``eta: batch``, ``r: batch x (t·n)``, plus an
    optional :class:`ICMFactorCache` (unbatched inputs only). Eigenvalues of ``B`` are clamped
    at 0; ``K`` is used as given and taken to be symmetric (the factorisations read its lower
    triangle). Holds, beyond ``K`` in float64, the log-det gradient accumulator when ``K``
    requires a gradient and one work buffer (none for ``n = 1`` with the accumulator), plus
    the ``n`` factors when a cache keeps them; the backward allocates the ``K`` gradient.

    Raises:
        ICMNotPositiveDefiniteError: If a block ``ξ_i K + ηI`` has no Cholesky factor
            (:func:`~botorch_mtucb.linalg.icm_inv_quad_logdet` then takes the eigen route).

    Example:
        >>> import torch
        >>> K = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=torch.float64, requires_grad=True)
        >>> B = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
        >>> r = torch.tensor([0.1, -0.2, 0.3, 0.4], dtype=torch.float64)   # t·n = 4
        >>> eta = torch.tensor(0.1, dtype=torch.float64)
        >>> quad, logdet = ICMCholeskyInvQuadLogdet.apply(K, B, eta, r)
        >>> S = torch.kron(K.detach(), B) + 0.1 * torch.eye(4, dtype=torch.float64)
        >>> torch.allclose(logdet, S.logdet()), torch.allclose(quad, r @ torch.linalg.solve(S, r))
        (True, True)
        >>> (quad + logdet).backward()
        >>> K.grad.shape
        torch.Size([2, 2])
    """

    @staticmethod
    def forward(ctx, K: Tensor, B: Tensor, eta: Tensor, r: Tensor,
                cache: ICMFactorCache | None = None) -> tuple[Tensor, Tensor]:
        out_dtype = torch.promote_types(torch.promote_types(K.dtype, B.dtype), r.dtype)
        wd = torch.float64
        t, n = K.shape[-1], B.shape[-1]
        K64, eta64 = K.to(wd), eta.to(wd)
        B64 = 0.5 * (B.to(wd) + B.to(wd).mT)
        xi, U = torch.linalg.eigh(B64)
        xi = xi.clamp_min(0.0)
        need = ctx.needs_input_grad
        need_inv = need[0] or need[1] or need[2]
        keep = cache is not None and cache.keep_cholesky and K.dim() == 2 and B.dim() == 2 \
            and eta.dim() == 0
        Rt = r.to(wd).reshape(*r.shape[:-1], t, n) @ U  # batch x t x n
        alpha, logdet, D, tr_m, tr_km, Ls = _blocks(K64, xi, eta64, Rt, need_inv, need[0], keep)
        inv_quad = (Rt * alpha).sum((-2, -1))
        A = alpha @ U.mT  # Σ⁻¹r reshaped t x n
        KA = K64 @ A if need[1] else None
        if keep:
            cache.store("cholesky", (xi, U, Ls))
        ctx.save_for_backward(D, U, A, KA, B64, tr_m, tr_km)
        ctx.shapes = (K.shape, B.shape, eta.shape, r.shape)
        ctx.dtypes = (K.dtype, B.dtype, eta.dtype, r.dtype)
        return inv_quad.to(out_dtype), logdet.to(out_dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, g_quad: Tensor, g_logdet: Tensor):
        D, U, A, KA, B64, tr_m, tr_km = ctx.saved_tensors
        K_shape, B_shape, eta_shape, r_shape = ctx.shapes
        wd = U.dtype
        gq = g_quad.to(wd)[..., None, None]
        gl = g_logdet.to(wd)[..., None, None]
        need = ctx.needs_input_grad
        gK = gB = geta = gr = None
        if need[0]:
            P = gq * (A @ B64)  # batch x t x n
            gK = gl * D  # the one t x t buffer of the result
            if P.shape[:-2] == A.shape[:-2] == gK.shape[:-2]:
                t, n = A.shape[-2:]
                gK.view(-1, t, t).baddbmm_(P.reshape(-1, t, n), A.reshape(-1, t, n).mT,
                                           alpha=-1.0)
            else:
                gK = gK - _sum_to(P @ A.mT, gK.shape)
            gK = _sum_to(gK, K_shape)
        if need[1]:
            diag = torch.diag_embed(gl[..., 0] * tr_km)
            gB = _sum_to(U @ diag @ U.mT, B_shape) - _sum_to(gq * (A.mT @ KA), B_shape)
        if need[2]:
            geta = _sum_to(gl[..., 0, 0] * tr_m.sum(-1), eta_shape) - _sum_to(
                gq[..., 0, 0] * A.square().sum((-2, -1)), eta_shape
            )
        if need[3]:
            gr = _sum_to((2.0 * gq * A).reshape(*A.shape[:-2], -1), r_shape)
        grads = zip((gK, gB, geta, gr), ctx.dtypes, strict=True)
        return (*(None if g is None else g.to(dt) for g, dt in grads), None)
