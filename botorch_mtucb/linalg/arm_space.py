"""GP posteriors over a finite arm set from pull counts and reward sums (TGP-UCB's fast path).

With ``A`` arms, kernel matrix ``K_A``, pull counts ``n`` and per-arm sums of (truncated)
rewards ``s``, a GP with noise variance ``λ`` observed ``t = Σ n_a`` times depends on the data
only through ``(n, s)``. With ``D = diag(√n)`` and ``M = D K_A D + λI`` (``A x A``, paper 001,
Algorithm 1 on a finite domain):

    μ_A = K_A D M⁻¹ (s/√n),   Σ_A = K_A − K_A D M⁻¹ D K_A,
    ln det(I_t + λ⁻¹K_t) = ln det M − A ln λ            (Sylvester).

One new observation at arm ``a`` is a rank-one (Kalman) update in ``O(A²)``:
``c = λ + Σ_A[a, a]``, ``h = Σ_A[:, a]/√c``, ``μ ← μ + h (y − μ[a])/√c``, ``Σ ← Σ − h hᵀ``,
``ln det ← ln det + ln(c/λ)``; and ``μ_A = Σ_A s / λ`` holds for any ``(n, s)`` (posterior
precision ``K_A⁻¹ + diag(n)/λ``).

Both updates at once (:func:`augmented_rank_one`, TGP-UCB's per-round step): in the symmetric
``(A+1) x (A+1)`` matrix ``S = [[Σ_A, μ_A], [μ_Aᵀ, ·]]`` (:func:`augmented_state`), with
``u = S[a] − y e_{A+1} = [Σ_A[a], μ_a − y]`` and ``h = u/√c``,

    S ← S − h hᵀ   (the ``Σ_A`` block as above, and ``μ_A ← μ_A + Σ_A[:, a] (y − μ_a)/c``),

one symmetric rank-one update; the last diagonal entry is not used.
"""

from __future__ import annotations

import math

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

__all__ = [
    "arm_space_factor",
    "arm_space_posterior",
    "augmented_rank_one",
    "augmented_state",
    "kalman_rank_one",
]


def arm_space_factor(K: Tensor, n: Tensor, lam: float) -> tuple[Tensor, Tensor, Tensor]:
    """Cholesky ``L`` of ``M = D K D + λI``, ``d = √n`` and ``ln det(I_t + λ⁻¹K_t)``.

    Args:
        K: ``A x A`` kernel matrix of the arms.
        n: ``A`` pull counts (in ``K``'s dtype).
        lam: Noise variance / regulariser ``λ > 0``.

    Returns:
        ``(L, d, log_det)``.
    """
    d = n.sqrt()
    eye = torch.eye(K.shape[0], dtype=K.dtype, device=K.device)
    L = psd_safe_cholesky(d.unsqueeze(-1) * K * d + lam * eye)
    return L, d, 2.0 * L.diagonal().log().sum() - K.shape[0] * math.log(lam)


def arm_space_posterior(
    K: Tensor, n: Tensor, s: Tensor, lam: float
) -> tuple[Tensor, Tensor, Tensor]:
    """``(μ_A, Σ_A, ln det(I_t + λ⁻¹K_t))`` from counts ``n`` and sums ``s`` in ``O(A³)``.

    Args:
        K: ``A x A`` kernel matrix.
        n: ``A`` pull counts.
        s: ``A`` sums of the (truncated) rewards per arm.
        lam: ``λ > 0``.
    """
    L, d, log_det = arm_space_factor(K, n, lam)
    w = torch.where(n > 0, s / d.clamp_min(1e-30), torch.zeros_like(s))
    c = d * torch.cholesky_solve(w.unsqueeze(-1), L).squeeze(-1)
    Z = torch.linalg.solve_triangular(L, d.unsqueeze(-1) * K, upper=False)
    return K @ c, K - Z.transpose(-1, -2) @ Z, log_det


def kalman_rank_one(
    mean: Tensor | None, cov: Tensor, a: int, y: Tensor, lam: Tensor
) -> tuple[Tensor | None, Tensor, Tensor]:
    """One observation ``y`` at arm ``a``: the updated ``(μ_A, Σ_A)`` and ``c = λ + Σ_aa``.

    Only tensor–tensor operations (a Python scalar in an operation costs as much as the
    operation itself at these sizes); ``Σ_aa`` is clamped at 0 ahead of the inverse square root.

    Args:
        mean: ``A`` posterior mean, or ``None`` to update the covariance only.
        cov: ``A x A`` posterior covariance (symmetric).
        a: The arm.
        y: 0-dim observation.
        lam: 0-dim ``λ`` in ``cov``'s dtype.

    Returns:
        ``(mean, cov, c)`` (``ln det`` grows by ``ln(c/λ)``).
    """
    col = cov[a]  # row a = column a
    c = col[a].clamp_min(0.0) + lam
    r = c.rsqrt()
    h = col * r
    new_mean = None if mean is None else torch.addcmul(mean, h, (y - mean[a]) * r)
    return new_mean, torch.addr(cov, h, h, alpha=-1.0), c


def augmented_state(mean: Tensor, cov: Tensor) -> Tensor:
    """``S = [[Σ, μ], [μᵀ, 0]]`` for :func:`augmented_rank_one`.

    Args:
        mean: ``A`` posterior mean.
        cov: ``A x A`` posterior covariance.

    Returns:
        ``(A+1) x (A+1)`` contiguous matrix (``S[-1, :-1] = μ``, ``S[:-1, :-1] = Σ``).
    """
    A = mean.shape[-1]
    S = cov.new_zeros(A + 1, A + 1)
    S[:A, :A] = cov
    S[A, :A] = mean
    S[:A, A] = mean
    return S


def augmented_rank_one(
    S: Tensor, a: int, y: float | None, lam: Tensor, e_last: Tensor
) -> tuple[Tensor, Tensor]:
    """One observation ``y`` at arm ``a`` as one symmetric rank-one update of ``S``.

    ``S − h hᵀ`` with ``h = (S[a] − y e_{A+1})/√c``, ``c = λ + max(Σ_aa, 0)`` (module
    docstring): the Kalman update of ``μ_A`` and ``Σ_A`` in 8 tensor operations.

    Args:
        S: ``(A+1) x (A+1)`` augmented state (:func:`augmented_state`).
        a: The arm.
        y: The observation (a Python number), or ``None`` to update the ``Σ_A`` block only
            (``S[-1, :-1]`` then does not hold the mean).
        lam: 0-dim ``λ`` in ``S``'s dtype.
        e_last: ``A+1`` unit vector ``e_{A+1}`` in ``S``'s dtype.

    Returns:
        ``(S_new, c)`` (``ln det`` grows by ``ln(c/λ)``).
    """
    u = S[a] if y is None else torch.sub(S[a], e_last, alpha=y)  # [Σ_A[a], μ_a − y]
    c = u[a].clamp_min(0.0).add_(lam)
    h = u * c.rsqrt()
    return torch.addr(S, h, h, alpha=-1.0), c
