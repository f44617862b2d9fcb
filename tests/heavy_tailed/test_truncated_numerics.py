"""TruncatedGP numerics: the float32 policy (float64 working dtype with a NumericalWarning),
Cholesky jitter, and CUDA against CPU. Helpers from ``test_truncated.py``."""

from __future__ import annotations

import warnings

import pytest
import torch
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import TruncatedGP
from tests.heavy_tailed.test_truncated import DT, LAM, _arm_problem, _rbf


@pytest.mark.parametrize("on_arms", [False, True], ids=["dense", "arms"])
def test_float32_upcasts_what_it_cannot_solve_accurately(on_arms: bool) -> None:
    """λ = 1e-6 on 200 points: κ̂ = 2e8, 0.2 · eps32 · κ̂ = 5 (float64: 1e-8, fine): the
    float32 model warns, works in float64 and matches the float64 model in float32 results."""
    arms = torch.linspace(0, 1, 20).to(DT).unsqueeze(-1)  # float32-representable arms
    g = torch.Generator().manual_seed(10)
    X = arms[torch.randint(0, 20, (200,), generator=g)]
    Y = torch.randn(200, 1, dtype=DT, generator=g)
    kw = dict(covar_module=_rbf(), lam=1e-6, arms=arms if on_arms else None)

    def close(m32: TruncatedGP, m64: TruncatedGP) -> None:
        p32, p64 = m32.posterior(arms.float()), m64.posterior(arms)
        assert p32.mean.dtype == torch.float32
        scale = p64.mean.abs().max() + p64.variance.max()
        assert (p32.mean.double() - p64.mean).abs().max() < 1e-5 * scale
        assert (p32.variance.double() - p64.variance).abs().max() < 1e-5 * scale

    ref = TruncatedGP(X, Y, 1.0, 2.0, **kw)  # float64 is accurate here
    with pytest.warns(NumericalWarning, match="float32.*float64"):
        m = TruncatedGP(X.float(), Y.float(), 1.0, 2.0, **kw)
    assert m._cdtype == torch.float64
    close(m, TruncatedGP(X.float().double(), Y.float().double(), 1.0, 2.0, **kw))
    del ref
    # Conditioning past the limit switches to float64 once (rank-one and block-Cholesky
    # paths): 0.2 · eps32 · (1 + t/λ) crosses 1e-3 at t ≈ 42 with λ = 1e-3.
    kw["lam"] = 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # t = 20 is accurate in float32
        m = TruncatedGP(X[:20].float(), Y[:20].float(), 1.0, 2.0, **kw)
    m64 = TruncatedGP(X[:20].float().double(), Y[:20].float().double(), 1.0, 2.0, **kw)
    assert m._cdtype == torch.float32
    with pytest.warns(NumericalWarning, match="float32"):
        for s in range(20, 60):
            m = m.condition_on_observations(X[s : s + 1].float(), Y[s : s + 1].float())
            m64 = m64.condition_on_observations(X[s : s + 1].float().double(),
                                                Y[s : s + 1].float().double())
    assert m._cdtype == torch.float64 and m.num_observations == 60
    close(m, m64)


def test_failed_cholesky_adds_jitter_with_numerical_warning() -> None:
    """A kernel matrix that is PSD only to round-off: K + λI indefinite by 4e-9."""
    Q = torch.linalg.qr(torch.randn(3, 3, dtype=DT, generator=torch.Generator().manual_seed(0))).Q
    K = (Q * torch.tensor([1.0, 0.5, -5e-9], dtype=DT)) @ Q.T
    kern = PrecomputedKernel(K)  # passes its PSD check (relative tolerance 1e-8)
    X, Y = torch.arange(3, dtype=DT).unsqueeze(-1), torch.ones(3, 1, dtype=DT)
    with pytest.warns(NumericalWarning, match="jitter"):
        m = TruncatedGP(X, Y, 1.0, 2.0, kern, lam=1e-9)
    assert torch.isfinite(m.posterior(X).mean).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-posed model factors without jitter
        TruncatedGP(X, Y, 1.0, 2.0, kern, lam=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("on_arms", [False, True], ids=["dense", "arms"])
def test_cuda_matches_cpu(on_arms: bool) -> None:
    arms, _ = _arm_problem(20)
    g = torch.Generator().manual_seed(11)
    X = arms[torch.randint(0, 20, (30,), generator=g)]
    Y = torch.randn(30, 1, dtype=DT, generator=g)
    models = {}
    for dev in ("cpu", "cuda"):
        kw = dict(lam=LAM, arms=arms.to(dev) if on_arms else None)
        m = TruncatedGP(X[:20].to(dev), Y[:20].to(dev), 1.0, 2.0, _rbf().to(dev), **kw)
        for s in range(20, 30):
            m = m.condition_on_observations(X[s : s + 1].to(dev), Y[s : s + 1].to(dev))
        models[dev] = m
    mean_c, var_c = models["cpu"].mean_and_variance(arms.unsqueeze(-2))
    mean_g, var_g = models["cuda"].mean_and_variance(arms.unsqueeze(-2).cuda())
    assert mean_g.device.type == "cuda"
    torch.testing.assert_close(mean_g.cpu(), mean_c, atol=1e-9, rtol=0)
    torch.testing.assert_close(var_g.cpu(), var_c, atol=1e-9, rtol=0)
