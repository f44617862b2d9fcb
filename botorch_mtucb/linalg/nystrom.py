"""One Nyström implementation: pseudo-inverse square roots and pivoted Cholesky of a Gram.

Both MT-BKB (paper 000, §3.2, Appendix A) and ATA-GP-UCB's Nyström features (paper 001, §5.1 (b))
embed a point ``x`` as ``φ(x) = (K_D^{1/2})⁺ k_D(x)`` for a dictionary ``D``. Rank deficiency
of ``K_D`` is normal (repeated or nearby points, smooth kernels), so both factor it with a
relative cut-off that depends on the dtype:

* :func:`reduced_pinv_sqrt` — ``eigh`` of the Gram, eigenvalues at or below
  ``rtol · λ_max`` dropped, returned in reduced coordinates ``diag(λ_r^{-1/2}) Q_rᵀ``;
* :func:`pivoted_cholesky` — a greedy pivoted Cholesky stopped once every residual diagonal
  entry is at most ``rtol · max diag``: a basis of the same span from ``r`` pivots in
  O(N r²) (the posterior depends on the dictionary only through that span, paper 000, Lemma 8).

Cut-off (:func:`default_pinv_rtol`): eigenvalues of a Gram computed in a dtype are only known to
about ``N · eps · λ_max``, and an inverse square root of an eigenvalue at that level amplifies
round-off by ``λ^{-1/2}``. The default keeps directions down to ``1000 · eps`` in float64 (the
posterior then agrees with the exact one to ~1e-9) and ``100 · eps`` (≈1.2e-5) in float32, where
``1000 · eps`` would already drop informative directions and a smaller cut-off would invert noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["default_pinv_rtol", "pivoted_cholesky", "psd_pinv_sqrt_factor", "reduced_pinv_sqrt"]

#: Device types on which reading a value on the host costs no synchronisation (no queue to
#: drain): :func:`pivoted_cholesky` checks its stopping test after every pivot there.
FREE_READ_DEVICES = frozenset({"cpu"})

#: Multiples of the machine epsilon used as the relative cut-off, by dtype.
_EPS_MULTIPLE = {torch.float64: 1000.0, torch.float32: 100.0, torch.float16: 10.0,
                 torch.bfloat16: 10.0}


def default_pinv_rtol(dtype: torch.dtype) -> float:
    """Default relative eigenvalue cut-off of a Gram's pseudo-inverse square root.

    ``1000 · eps`` in float64 (≈2.2e-13), ``100 · eps`` in float32 (≈1.2e-5); see the module
    docstring.

    Args:
        dtype: A floating-point dtype.

    Returns:
        The cut-off ``rtol``, relative to the largest eigenvalue.

    Example:
        >>> default_pinv_rtol(torch.float32) == 100 * torch.finfo(torch.float32).eps
        True
    """
    if not dtype.is_floating_point:
        raise ValueError(f"`dtype` must be a floating-point dtype, got {dtype}.")
    return _EPS_MULTIPLE.get(dtype, 1000.0) * float(torch.finfo(dtype).eps)


def psd_pinv_sqrt_factor(gram: Tensor, rtol: float | None = None) -> tuple[Tensor, Tensor]:
    """Kept eigenpairs of ``(G^{1/2})⁺ = Q diag(s) Qᵀ`` for a symmetric PSD ``G``.

    Eigenvalues ``λ ≤ rtol · λ_max`` (and all of them when ``λ_max ≤ 0``) are dropped, so an
    inverse square root is never taken of round-off.

    Args:
        gram: ``m x m`` symmetric PSD matrix (``m`` may be 0); symmetrised for ``eigh``.
        rtol: Relative cut-off; ``None`` uses :func:`default_pinv_rtol` of ``gram.dtype``.

    Returns:
        ``(Q, s)``: ``m x r`` orthonormal eigenvectors and the ``r`` values ``λ^{-1/2}``.

    Example:
        >>> v = torch.tensor([[1.0], [2.0], [2.0]], dtype=torch.float64)
        >>> Q, s = psd_pinv_sqrt_factor(v @ v.T)   # rank one: eigenvalue 9
        >>> Q.shape, s
        (torch.Size([3, 1]), tensor([0.3333], dtype=torch.float64))
    """
    m = gram.shape[-1]
    if m == 0:
        return gram.new_zeros(0, 0), gram.new_zeros(0)
    rtol = default_pinv_rtol(gram.dtype) if rtol is None else float(rtol)
    evals, evecs = torch.linalg.eigh(0.5 * (gram + gram.transpose(-1, -2)))
    lam_max = evals.max()
    # eigenvalues ascend, so the kept ones are the last r: one host read for the rank
    r = int(((evals > rtol * lam_max) & (evals > 0)).sum())
    return evecs[:, m - r :], evals[m - r :].rsqrt()


def reduced_pinv_sqrt(gram: Tensor, rtol: float | None = None) -> Tensor:
    """Reduced pseudo-inverse square root ``diag(λ_r^{-1/2}) Q_rᵀ`` of a PSD matrix.

    For ``gram = Q diag(λ) Qᵀ`` keeps the ``r`` eigenvalues with ``λ > rtol · λ_max``; then
    ``(gram^{1/2})⁺ = Q_r · reduced_pinv_sqrt(gram)``.

    Args:
        gram: ``m x m`` symmetric PSD matrix (``m`` may be 0).
        rtol: Relative cut-off (``None``: :func:`default_pinv_rtol`).

    Returns:
        ``r x m`` matrix (``r = 0`` when nothing survives the cut-off).

    Example:
        >>> X = torch.tensor([[0.0], [0.0], [1.0]], dtype=torch.float64)   # a repeated point
        >>> reduced_pinv_sqrt(torch.exp(-((X - X.T) ** 2))).shape   # rank 2 of 3
        torch.Size([2, 3])
    """
    if gram.shape[-1] == 0:
        return gram.new_zeros(0, 0)
    Q, s = psd_pinv_sqrt_factor(gram, rtol)
    return (Q * s).transpose(-1, -2)


def pivoted_cholesky(
    diag: Tensor,
    column: Callable[[Tensor], Tensor],
    rtol: float | None = None,
    *,
    check_growth: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Greedy pivoted Cholesky of a PSD matrix given by its diagonal and columns.

    Stops when every residual diagonal entry is at most ``rtol · max(diag)``, so it costs
    O(N r²) arithmetic and ``r`` column evaluations for a matrix of numerical rank ``r``
    (the loop runs over the rank, never over the ``N`` points).

    On the CPU, where a read costs nothing, the host reads the stopping test after every pivot
    and updates the residual diagonal and the factor in place. Elsewhere the pivot choice, the
    stopping test and the factor's update stay on the device: once the test fails, the
    remaining steps are masked (zero columns, no pivot counted), and the host reads the number
    of accepted pivots only at check points, to end the loop and to truncate the factor (the
    rank decides the shapes that follow): after 16 pivots and then at counts growing by
    ``check_growth`` (≈ 15 reads up to ``r`` = 1000, at most ``(check_growth − 1) · r``
    masked steps). Both schedules give the same pivots and the same factor.

    Args:
        diag: ``N`` diagonal of the matrix.
        column: ``column(i)`` returns column ``i`` (``N`` entries, any shape), where ``i`` is a
            one-element LongTensor on ``diag``'s device: index with it (``A[:, i]``,
            ``X[i]``) rather than converting it to a Python ``int``, which would read the
            device.
        rtol: Relative stopping tolerance on the residual diagonal (``None``:
            :func:`default_pinv_rtol` of ``diag.dtype``).
        check_growth: Growth factor (``> 1``) of the pivot counts at which the host reads the
            stopping test; ``None``: every pivot on the CPU, ``1.25`` on other devices.

    Returns:
        ``(pivots, L)``: ``r`` LongTensor and the ``r x r`` lower-triangular factor with
        ``L Lᵀ = A[pivots][:, pivots]``.

    Example:
        >>> X = torch.tensor([[0.0], [0.0], [1.0]], dtype=torch.float64)   # a repeated point
        >>> A = torch.exp(-((X - X.T) ** 2))
        >>> pivots, L = pivoted_cholesky(A.diagonal(), lambda i: A[:, i])
        >>> len(pivots), torch.allclose(L @ L.T, A[pivots][:, pivots])
        (2, True)
    """
    N = diag.numel()
    if N == 0:
        return torch.zeros(0, dtype=torch.long, device=diag.device), diag.new_zeros(0, 0)
    rtol = default_pinv_rtol(diag.dtype) if rtol is None else float(rtol)
    if check_growth is not None and not check_growth > 1.0:
        raise ValueError(f"`check_growth` must be greater than 1, got {check_growth}.")
    if check_growth is None and diag.device.type in FREE_READ_DEVICES:
        piv, F = _pivots_read_each(diag, column, rtol)
    else:
        growth = 1.25 if check_growth is None else float(check_growth)
        piv, F = _pivots_masked(diag, column, rtol, _check_points(N, growth))
    return piv, F.index_select(1, piv).transpose(0, 1).tril()


def _grow(F: Tensor, cap: int) -> Tensor:
    """``F`` with zero rows appended up to ``cap`` rows."""
    return torch.cat([F, F.new_zeros(cap - F.shape[0], F.shape[1])], dim=0)


def _pivots_read_each(
    diag: Tensor, column: Callable[[Tensor], Tensor], rtol: float
) -> tuple[Tensor, Tensor]:
    """Pivots and the ``r x N`` factor rows, reading the stopping test after every pivot.

    Nothing is masked (every computed pivot is accepted), and the residual diagonal and the
    factor rows are updated in place unless autograd tracks them.
    """
    N = diag.numel()
    d = diag.clone()
    stop = max(float(rtol * d.detach().max()), 0.0)  # accept dii > stop
    index = torch.arange(N, device=d.device)
    cap = min(N, 64)
    F = d.new_zeros(cap, N)  # row j = j-th column of the factor (contiguous)
    pivots: list[int] = []
    for j in range(N):
        i = int(torch.argmax(d.detach()))
        dii = d[i]
        if not float(dii.detach()) > stop:  # also stops on NaN, as the masked schedule does
            break
        if j == cap:
            cap = min(N, 2 * cap)
            F = _grow(F, cap)
        c = column(index[i : i + 1]).reshape(N)
        if j:
            c = c - F[:j, i] @ F[:j]
        if d.requires_grad or c.requires_grad:
            col = c / dii.sqrt()
            F[j] = col
            d = (d - col * col).clamp_min(0.0)
            d[i] = 0.0
        else:
            col = torch.div(c, dii.sqrt(), out=F[j])
            d.sub_(col * col).clamp_min_(0.0)
            d[i : i + 1].zero_()
        pivots.append(i)
    r = len(pivots)
    return torch.tensor(pivots, dtype=torch.long, device=d.device), F[:r]


def _pivots_masked(
    diag: Tensor, column: Callable[[Tensor], Tensor], rtol: float, checks: list[int]
) -> tuple[Tensor, Tensor]:
    """Pivots and the ``r x N`` factor rows, reading the number of accepted pivots only after
    the pivot counts in ``checks``; the steps after the stop are masked on the device."""
    N = diag.numel()
    d = diag.clone()
    threshold = (rtol * d.detach().max()).clamp_min(0.0).reshape(1)  # accept dii > threshold
    cap = min(N, 64)
    F = d.new_zeros(cap, N)  # row j = j-th column of the factor (contiguous)
    piv = torch.zeros(cap, dtype=torch.long, device=d.device)
    count = torch.zeros(1, dtype=torch.long, device=d.device)  # accepted pivots
    ok = torch.ones(1, dtype=torch.bool, device=d.device)
    done = r = 0  # pivots computed so far, pivots accepted (host)
    for check in checks:
        for j in range(done, check):
            if j == cap:
                cap = min(N, max(2 * cap, check))
                F, piv = _grow(F, cap), torch.cat([piv, piv.new_zeros(cap - piv.shape[0])])
            i = torch.argmax(d.detach()).reshape(1)
            dii = d.gather(0, i)
            ok &= dii.detach() > threshold  # stays False once False
            c = column(i).reshape(N)
            if j:
                c = c - F[:j].index_select(1, i).reshape(j) @ F[:j]
            col = torch.where(ok, c / torch.where(ok, dii, 1.0).sqrt(), 0.0)  # masked: zero
            F[j] = col
            if d.requires_grad or col.requires_grad:
                d = (d - col * col).clamp_min(0.0).index_fill(0, i, 0.0)
            else:
                d.sub_(col * col).clamp_min_(0.0).index_fill_(0, i, 0.0)
            count += ok
            piv[j : j + 1] = i
        done = check
        r = int(count)  # the host read of this check point
        if r < check:
            break
    return piv[:r], F[:r]


def _check_points(N: int, growth: float) -> list[int]:
    """Pivot counts after which :func:`_pivots_masked` reads its stopping test: 16 and then
    counts growing by ``growth``; always ending at ``N``."""
    points, k = [], min(N, 16)
    while k < N:
        points.append(k)
        k = min(N, max(k + 1, math.ceil(k * growth)))
    return [*points, N]
