"""Regularised feature-space (ridge) factorisations, accurate in any dtype.

``V = ΦᵀΦ + λI`` and ``V^{-1/2} Φᵀ`` for ATA-GP-UCB (paper 001, Algorithm 2), with the
float32 policy of :mod:`botorch_mtucb.linalg.precision` (float64 where float32 would be
inaccurate).
"""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_mtucb.linalg.precision import (
    check_regulariser,
    regularised_condition,
    working_dtype,
)

__all__ = [
    "RIDGE_ERROR_FACTOR",
    "arm_ridge_rows",
    "low_rank_factor",
    "spectral_ridge",
    "truncated_ridge",
]

#: ``eps · tr(ΦᵀΦ)/λ`` up to which ``eigh`` of the Gram is accurate enough (else SVD of Φ).
_GRAM_OK = 1e-6
#: Error constant ``c`` of the SVD-based fit, relative error ≈ ``c · eps · κ``.
RIDGE_ERROR_FACTOR = 1e-3


def spectral_ridge(
    Phi: Tensor, lam: float, what: str = "AdaptiveTruncationGP", rows: bool = True
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``V = ΦᵀΦ + λI = W diag(e) Wᵀ`` (every ``e ≥ λ``) and ``V^{-1/2} Φᵀ``, accurately.

    Paper 001, Algorithm 2: ``V_t`` and the rows ``u_iᵀ`` of ``V_t^{-1/2} Φ_tᵀ``. When
    ``eps · tr(ΦᵀΦ)/λ ≤ 1e-6`` the Gram's eigendecomposition is used with its eigenvalues
    clamped at 0, then ``λ`` is added (never an inverse square root of round-off); otherwise
    the SVD ``Φ = U S Wᵀ`` gives ``e = S² + λ`` and ``V^{-1/2} Φᵀ = W diag(S/√(S² + λ)) Uᵀ``
    without squaring the condition number. Where even that is not accurate in ``Φ``'s
    dtype (``1e-3 · eps · κ̂ > PRECISION_BUDGET``, :func:`~botorch_mtucb.linalg.working_dtype`)
    the factorisation is done in float64, with a ``NumericalWarning``. One host sync (the
    trace).

    Args:
        Phi: ``t x m`` matrix (``t`` or ``m`` may be 0).
        lam: Regulariser ``λ > 0``.
        what: Model name for the warning.
        rows: ``False`` skips ``V^{-1/2} Φᵀ`` on the Gram path (returned as ``None``; then
            ``W diag(e^{-1/2}) Wᵀ Φᵀ`` is as accurate as it gets).

    Returns:
        ``(W, e, U)`` in the working dtype (``Φ``'s, or float64): ``m x m`` orthonormal,
        ``m`` eigenvalues and the ``m x t`` matrix ``U = V^{-1/2} Φᵀ`` whose rows are
        Algorithm 2's ``u_iᵀ`` (or ``None``).

    Example:
        >>> Phi = torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        >>> W, e, U = spectral_ridge(Phi, 0.5)
        >>> V = Phi.T @ Phi + 0.5 * torch.eye(3, dtype=torch.float64)
        >>> torch.allclose((W * e) @ W.T, V), torch.allclose(U.T @ U, Phi @ V.inverse() @ Phi.T)
        (True, True)
    """
    lam = check_regulariser(lam)
    t, m = Phi.shape
    if t == 0 or m == 0:
        W = torch.eye(m, dtype=Phi.dtype, device=Phi.device)
        return W, torch.full((m,), lam, dtype=Phi.dtype, device=Phi.device), Phi.new_zeros(m, t)
    gram = Phi.transpose(-1, -2) @ Phi
    trace = float(gram.diagonal().sum())
    cdt = working_dtype(Phi.dtype, regularised_condition(trace, lam), f"{what}'s ridge fit",
                        RIDGE_ERROR_FACTOR)
    if cdt != Phi.dtype:
        Phi = Phi.to(cdt)
        gram = Phi.transpose(-1, -2) @ Phi
    if torch.finfo(Phi.dtype).eps * trace / lam <= _GRAM_OK:
        s2, W = torch.linalg.eigh(gram)
        e = s2.clamp_min(0.0) + lam
        if not rows:
            return W, e, None
        return W, e, ((W * e.rsqrt()) @ W.transpose(-1, -2)) @ Phi.transpose(-1, -2)
    U, S, Wh = torch.linalg.svd(Phi, full_matrices=t < m)
    k, W = S.shape[0], Wh.transpose(-1, -2)
    e = torch.cat([S.square(), S.new_zeros(m - k)]) + lam
    shrink = S * (S.square() + lam).rsqrt()
    return W, e.clamp_min(lam), (W[:, :k] * shrink) @ U[:, :k].transpose(-1, -2)


def truncated_ridge(
    Phi: Tensor, y: Tensor, lam: float, b: float, what: str = "AdaptiveTruncationGP"
) -> tuple[Tensor, Tensor]:
    """ATA-GP-UCB's estimate on a ``t x m`` feature matrix (paper 001, Algorithm 2).

    ``u_{i,τ} = [V^{-1/2} φ(x_τ)]_i``, ``r̂_i = Σ_τ u_{i,τ} y_τ 1{|u_{i,τ} y_τ| ≤ b}``,
    ``θ = V^{-1/2} r̂`` (symmetric square root, :func:`spectral_ridge`).

    Args:
        Phi: ``t x m`` features ``Φ``.
        y: ``t`` rewards.
        lam: ``λ > 0``.
        b: Truncation level (``inf``: plain ridge regression).
        what: Model name for the precision warning.

    Returns:
        ``(θ, B)`` with ``B Bᵀ = V⁻¹`` (``m``, ``m x m``), in the working dtype.
    """
    W, e, U = spectral_ridge(Phi, lam, what)  # U = V^{-1/2}Φᵀ, m x t
    if Phi.shape[0] and Phi.shape[1]:
        U = U * y.to(U)  # u_{i,τ} y_τ
        r_hat = (U * (U.abs() <= b)).sum(-1)
        theta = W @ (e.rsqrt() * (W.transpose(-1, -2) @ r_hat))
    else:
        theta = W.new_zeros(Phi.shape[1])
    return theta, W * e.rsqrt()


def low_rank_factor(F: Tensor) -> tuple[Tensor, Tensor]:
    """``F = F' Wᵀ`` with ``W`` (``m x r``) orthonormal: thin SVD of the ``A x m`` matrix
    ``F``, singular values below ``max(1e-13, 10 eps) s_max`` dropped."""
    U, S, Wh = torch.linalg.svd(F, full_matrices=False)
    rtol = max(1e-13, 10.0 * torch.finfo(F.dtype).eps)
    keep = S > rtol * S.max().clamp_min(1e-30) if S.numel() else S > 0
    return U[:, keep] * S[keep], Wh[keep].transpose(-1, -2)


def arm_ridge_rows(Fp: Tensor, n: Tensor, lam: float) -> tuple[Tensor, Tensor]:
    """``C^{-1/2}`` and the rows ``P = F' C^{-1/2}`` of an arm-space ridge fit.

    ``C = F'ᵀ diag(n) F' + λI_r`` (``F'`` the ``A x r`` arm features, ``n`` the pull counts)
    from :func:`spectral_ridge` of ``diag(√n) F'``; on its SVD path the pulled arms' rows are
    its ``Φ V^{-1/2}`` divided by ``√n_a`` (computing them as ``F' C^{-1/2}`` would amplify
    round-off by up to ``λ^{-1/2}``).

    Returns:
        ``(Z, P)``: ``r x r`` and ``A x r``, in the working dtype.
    """
    sqrt_n = n.sqrt().unsqueeze(-1)
    Wc, e, DPt = spectral_ridge(sqrt_n * Fp, lam, rows=False)
    Z = (Wc * e.rsqrt()) @ Wc.transpose(-1, -2)
    P = Fp.to(Z) @ Z
    if DPt is not None:
        sqrt_n = sqrt_n.to(Z)
        P = torch.where(sqrt_n > 0, DPt.transpose(-1, -2) / sqrt_n.clamp_min(1e-30), P)
    return Z, P
