"""AdaptiveTruncationGP numerics: float32 (accurate, never NaN; float64 where float32 cannot be
accurate) and CUDA against CPU. Split from ``test_adaptive_truncation_gp.py`` (its helpers)."""

from __future__ import annotations

import pytest
import torch
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.models import AdaptiveTruncationGP
from tests.heavy_tailed.test_adaptive import DT, F32, LAM, _heavy, _r, _rbf


@pytest.mark.parametrize("on_arms", [False, True], ids=["dense", "arms"])
def test_float32_small_lambda_is_accurate_not_nan(on_arms: bool) -> None:
    """The case that returned all-NaN (and made the UCB pick arm 0): QFF, λ = 1e-6, float32.

    ``V = ΦᵀΦ + λI`` has round-off eigenvalues of ΦᵀΦ (≈ ±eps32 · 50) far above λ; the fit now
    keeps every eigenvalue of ``V`` at least λ (SVD of Φ). Tolerance: the SVD fit's error
    model ``1e-3 · eps · κ̂ · |y|`` (``κ̂ = 1 + t/λ = 5e7``: 7e-3; measured ≤ 3.3e-4 over three
    seeds), variances to 1e-3 relative (measured ≤ 9e-5).
    """
    g = torch.Generator().manual_seed(0)
    arms = _r(torch.linspace(0, 1, 30, dtype=DT).unsqueeze(-1), F32)
    idx = torch.randint(0, 30, (50,), generator=g)
    X = arms[idx] if on_arms else torch.rand(50, 1, generator=g, dtype=DT)
    Y = torch.sin(6 * X) + 0.1 * torch.randn(50, 1, dtype=DT, generator=g)
    X, Y = _r(X, F32), _r(Y, F32)
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    lam = 1e-6
    kw = dict(lam=lam, arms=arms if on_arms else None, horizon=100)
    m32 = AdaptiveTruncationGP(X.float(), Y.float(), 1.0, 2.0, qff, **kw)
    m64 = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, **kw)
    cand = arms.unsqueeze(-2)
    mu32, var32 = m32.mean_and_variance(cand)
    mu64, var64 = m64.mean_and_variance(cand)
    assert mu32.dtype == F32 and torch.isfinite(mu32).all() and torch.isfinite(var32).all()
    kappa = 1 + 50 / lam
    atol = 1e-3 * torch.finfo(F32).eps * kappa * float(Y.abs().max())
    torch.testing.assert_close(mu32.to(DT), mu64, atol=atol, rtol=0)
    torch.testing.assert_close(var32.to(DT), var64, atol=0, rtol=1e-3)
    ucb32 = HeavyTailedUCB(m32, beta=1.0)(cand)
    ucb64 = HeavyTailedUCB(m64, beta=1.0)(cand)
    assert int(ucb32.argmax()) == int(ucb64.argmax()) != 0


@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_float32_upcasts_a_fit_it_cannot_make_accurately(kind: str) -> None:
    """λ = 1e-10 on 50 points: 1e-3 · eps32 · κ̂ ≈ 60 > 1e-3 → a NumericalWarning, a float64
    fit and float32 results equal to the float64 model's (same float32-rounded data)."""
    X, Y = _heavy(50, 12)
    X, Y = _r(X, F32), _r(Y, F32)

    def feats(dtype):
        if kind == "qff":
            return QuadratureFourierFeatures(0.2, 32, 1)
        return NystromFeatures(_rbf()).with_dictionary(X[:12].to(dtype))

    kw = dict(lam=1e-10, sample_dictionary=False) if kind == "nystrom" else dict(lam=1e-10)
    m64 = AdaptiveTruncationGP(X, Y, 1.0, 2.0, feats(DT), **kw)
    with pytest.warns(NumericalWarning, match="float32.*float64"):
        m32 = AdaptiveTruncationGP(X.float(), Y.float(), 1.0, 2.0, feats(F32), **kw)
    assert m32._cdtype == DT
    Xt = torch.linspace(0, 1, 17, dtype=DT).unsqueeze(-1)
    mu32, var32 = m32.mean_and_variance(Xt.float().unsqueeze(-2))
    mu64, var64 = m64.mean_and_variance(Xt.float().double().unsqueeze(-2))
    assert mu32.dtype == F32
    scale = float(mu64.abs().max() + var64.max())
    assert float((mu32.double() - mu64).abs().max()) < 1e-5 * scale
    assert float((var32.double() - var64).abs().max()) < 1e-5 * scale


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_cuda_matches_cpu(kind: str) -> None:
    arms = torch.linspace(0, 1, 20, dtype=DT).unsqueeze(-1)
    g = torch.Generator().manual_seed(14)
    X = arms[torch.randint(0, 20, (40,), generator=g)]
    _, Y = _heavy(40, 15, X=X)
    out = {}
    for dev in ("cpu", "cuda"):
        if kind == "qff":
            feats = QuadratureFourierFeatures(0.2, 16, 1)
        else:
            D = arms[::3].to(dev)  # q = 1e6: every pulled arm is redrawn (deterministic)
            feats = NystromFeatures(_rbf().to(dev), q=1e6).with_dictionary(D)
        m = AdaptiveTruncationGP(X[:30].to(dev), Y[:30].to(dev), 1.0, 2.0, feats, lam=LAM,
                                 arms=arms.to(dev), horizon=40, sample_dictionary=False)
        for s in range(30, 40):
            m = m.condition_on_observations(X[s : s + 1].to(dev), Y[s : s + 1].to(dev))
        out[dev] = m.mean_and_variance(arms.unsqueeze(-2).to(dev))
    assert out["cuda"][0].device.type == "cuda"
    for a, b in zip(out["cuda"], out["cpu"], strict=True):
        torch.testing.assert_close(a.cpu(), b, atol=1e-8, rtol=0)
