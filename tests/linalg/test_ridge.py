"""``linalg.ridge.spectral_ridge`` against a float64 brute force, both routes, and its float32
policy (float64 where float32 would be inaccurate)."""

from __future__ import annotations

import pytest
import torch
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.linalg import spectral_ridge
from botorch_mtucb.linalg.ridge import arm_ridge_rows, low_rank_factor, truncated_ridge

DT = torch.float64
F32 = torch.float32


def _tol(dtype: torch.dtype, f64_tol: float, kappa: float, scale: float = 1.0) -> float:
    """float64: the given tolerance; float32: ``4 · eps · κ̂ · scale``."""
    if dtype == torch.float64:
        return f64_tol
    return 4.0 * torch.finfo(dtype).eps * kappa * scale


def _r(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` rounded to ``dtype`` and back to float64 (the data a ``dtype`` model sees)."""
    return x.to(dtype).to(DT)


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


def test_float32_beyond_the_budget_is_factored_in_float64() -> None:
    """λ = 1e-9, ‖φ‖ ≈ 1, t = 50: 1e-3 · eps32 · κ̂ ≈ 6 > 1e-3 → float64, with a warning."""
    g = torch.Generator().manual_seed(3)
    Phi = _r(torch.randn(50, 8, dtype=DT, generator=g) / 8**0.5, F32)
    with pytest.warns(NumericalWarning, match="float64"):
        W, e, U = spectral_ridge(Phi.float(), 1e-9)
    assert W.dtype == e.dtype == U.dtype == DT
    W64, e64, U64 = spectral_ridge(Phi, 1e-9)
    torch.testing.assert_close(e, e64, atol=0, rtol=1e-12)
    torch.testing.assert_close(U.abs(), U64.abs(), atol=1e-10, rtol=0)  # up to signs


def test_truncated_ridge_equals_algorithm_2_by_brute_force() -> None:
    g = torch.Generator().manual_seed(5)
    Phi = torch.randn(30, 6, dtype=DT, generator=g) / 6**0.5
    y = torch.randn(30, dtype=DT, generator=g) ** 3
    lam, b = 0.4, 0.3
    ev, Q = torch.linalg.eigh(Phi.T @ Phi + lam * torch.eye(6, dtype=DT))
    Vmh = (Q * ev.rsqrt()) @ Q.T
    U = Vmh @ Phi.T * y  # u_{i,τ} y_τ
    theta_ref = Vmh @ (U * (U.abs() <= b)).sum(-1)
    theta, B = truncated_ridge(Phi, y, lam, b)
    torch.testing.assert_close(theta, theta_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(B @ B.T, torch.linalg.inv(Phi.T @ Phi + lam * torch.eye(6,
                               dtype=DT)), atol=1e-12, rtol=0)
    assert bool((U.abs() > b).any())  # the level truncates something here


def test_low_rank_factor_and_arm_ridge_rows() -> None:
    g = torch.Generator().manual_seed(6)
    F = torch.randn(9, 3, dtype=DT, generator=g) @ torch.randn(3, 5, dtype=DT, generator=g)
    Fp, W = low_rank_factor(F)  # rank 3 of a 9 x 5 matrix
    assert Fp.shape == (9, 3) and W.shape == (5, 3)
    torch.testing.assert_close(Fp @ W.T, F, atol=1e-12, rtol=0)
    n = torch.tensor([3.0, 0, 1, 2, 0, 5, 1, 0, 2], dtype=DT)
    lam = 0.2
    Z, P = arm_ridge_rows(Fp, n, lam)
    C = Fp.T @ (n[:, None] * Fp) + lam * torch.eye(3, dtype=DT)
    ev, Q = torch.linalg.eigh(C)
    torch.testing.assert_close(Z, (Q * ev.rsqrt()) @ Q.T, atol=1e-12, rtol=0)
    torch.testing.assert_close(P, Fp @ Z, atol=1e-12, rtol=0)


@pytest.mark.parametrize("lam", [0.0, -0.1, float("inf"), float("nan"), True, "0.5", None])
def test_a_regulariser_that_is_not_positive_and_finite_is_refused_by_name(lam):
    """λ ≤ 0 gave NaN factors (−0.1) or a bare ZeroDivisionError (0), and a negative λ
    passed the strict float32 check: every entry point now names `lam`."""
    from botorch_mtucb.linalg import check_float_conditioning, regularised_condition

    Phi = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="`lam` must be a positive finite number"):
        spectral_ridge(Phi, lam)
    with pytest.raises(ValueError, match="`lam` must be a positive finite number"):
        regularised_condition(1.0, lam)
    with pytest.raises(ValueError, match="`lam` must be a positive finite number"):
        check_float_conditioning(1e30, lam, torch.float32, "M")
    with pytest.raises(ValueError, match="`lam` must be a positive finite number"):
        spectral_ridge(Phi[:0], lam)  # the empty path too
