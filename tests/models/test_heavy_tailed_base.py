"""Shared pieces of the heavy-tailed models (``models/heavy_tailed_base.py``)."""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.models.heavy_tailed_base import spectral_ridge
from tests.models.test_adaptive_truncation_gp import DT, F32, _r, _tol


@pytest.mark.parametrize("t, m", [(50, 16), (10, 24), (0, 8), (5, 0)])
@pytest.mark.parametrize("path", ["gram", "svd"])
def test_spectral_ridge_against_brute_force(t: int, m: int, path: str) -> None:
    """``V = ΦᵀΦ + λI = W diag(e) Wᵀ`` with ``e ≥ λ`` and ``V^{-1/2} Φᵀ``, by both routes.

    Gram route: float64, ``eps · tr/λ ≈ 1e-14``. SVD route: float32 with ``λ = 1e-2``
    (``eps · tr/λ ≈ 1e-3 > 1e-6``); reference: ``eigh`` of ``V`` itself in float64 on the
    same rounded ``Φ``, tolerance ``4 · eps32 · κ̂``.
    """
    dtype, lam = (DT, 0.7) if path == "gram" else (F32, 1e-2)
    g = torch.Generator().manual_seed(16)
    Phi = _r(torch.randn(t, m, dtype=DT, generator=g) / max(m, 1) ** 0.5, dtype)
    W, e, Phi_Vmh = spectral_ridge(Phi.to(dtype), lam)
    assert W.shape == (m, m) and e.shape == (m,) and Phi_Vmh.shape == (m, t)
    Phi_Vmh = Phi_Vmh.T
    assert W.dtype == e.dtype == Phi_Vmh.dtype == dtype and bool((e >= lam).all())
    if m == 0:  # no features: nothing to factor, no rows
        return
    V = Phi.T @ Phi + lam * torch.eye(m, dtype=DT)
    ev, Q = torch.linalg.eigh(V)
    ref_rows = Phi @ (Q * ev.rsqrt()) @ Q.T
    kappa = 1 + float(Phi.square().sum()) / lam
    tol = _tol(dtype, 1e-12, kappa)
    W, e, Phi_Vmh = W.to(DT), e.to(DT), Phi_Vmh.to(DT)
    torch.testing.assert_close(W.T @ W, torch.eye(m, dtype=DT), atol=tol, rtol=0)
    torch.testing.assert_close((W * e) @ W.T, V, atol=tol * max(1.0, float(ev.max())), rtol=0)
    torch.testing.assert_close(Phi_Vmh, ref_rows, atol=tol, rtol=0)
    torch.testing.assert_close(e.sort().values, ev, atol=tol * float(ev.max()), rtol=0)


def test_moving_a_heavy_tailed_model_is_refused_not_silent() -> None:
    from botorch_mtucb.features import QuadratureFourierFeatures
    from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP

    X, Y = torch.rand(6, 1, dtype=DT), torch.randn(6, 1, dtype=DT)
    qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=8, dim=1)
    for model in (TruncatedGP(X, Y, alpha=1.0, v=4.0), AdaptiveTruncationGP(X, Y, 1.0, 4.0, qff)):
        assert model.to(DT) is model  # a move that changes nothing is fine
        with pytest.raises(NotImplementedError, match="cannot be moved"):
            model.to(F32)
        assert model.posterior(torch.rand(2, 1, 1, dtype=DT)).mean.dtype == DT
