"""Nyström features vs direct solves with the kernel matrix, and the dictionary sampling law.

float32 runs compare with float64 on the same rounded inputs. ``φ = k_D (K_D^{1/2})⁺`` amplifies
round-off in ``K_D`` by ``√cond(K_D)`` (through the inverse square root of its eigenvalues), so
the float32 tolerance of ``φᵀφ`` is ``10 · eps32 · √cond(K_D)`` (measured ≈ 1.2 · eps · √cond).
"""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.features import NystromFeatures
from botorch_mtucb.features.nystrom import psd_pinv_sqrt, psd_pinv_sqrt_factor, unique_rows
from botorch_mtucb.linalg.nystrom import psd_pinv_sqrt_factor as linalg_factor

DT = torch.float64
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])


def _kernel(lengthscale: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


@DTYPES
def test_embedding_reproduces_projection_kernel(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    k = _kernel()  # float64 parameters: the features follow the inputs' dtype anyway
    D = torch.rand(8, 1, dtype=DT, generator=g).to(dtype)
    X = torch.rand(20, 1, dtype=DT, generator=g).to(dtype)
    nys = NystromFeatures(k).with_dictionary(D)
    phi_X, phi_D = nys(X), nys(D)
    assert phi_X.shape == (20, 8) and phi_X.dtype == dtype
    phi_X, phi_D, D, X = phi_X.to(DT), phi_D.to(DT), D.to(DT), X.to(DT)
    with torch.no_grad():
        K_D, k_XD, K_X = k(D, D).to_dense(), k(X, D).to_dense(), k(X, X).to_dense()
    # φ(x)ᵀφ(y) = k_D(x)ᵀ K_D⁻¹ k_D(y) (K_D is well conditioned here), and exact on D.
    ref = k_XD @ torch.linalg.solve(K_D, k_XD.T)
    tol = 1e-8
    if dtype != DT:
        tol = 10 * torch.finfo(dtype).eps * float(torch.linalg.cond(K_D)) ** 0.5
    torch.testing.assert_close(phi_X @ phi_X.T, ref, atol=tol, rtol=0)
    torch.testing.assert_close(phi_D @ phi_D.T, K_D, atol=tol, rtol=0)
    # Nyström never over-estimates the kernel diagonal: k(x,x) − ‖φ(x)‖² ≥ 0.
    assert (K_X.diagonal() - phi_X.square().sum(-1)).min() > -max(1e-10, tol)


@DTYPES
def test_psd_pinv_sqrt_identities(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(1)
    A = torch.randn(6, 6, dtype=DT, generator=g)
    M = A @ A.T + 0.1 * torch.eye(6, dtype=DT)
    P = psd_pinv_sqrt(M.to(dtype))
    assert P.dtype == dtype
    # P M P = I to eps · cond(M) (one inverse square root on each side).
    tol = 1e-10 if dtype == DT else 10 * torch.finfo(dtype).eps * float(torch.linalg.cond(M))
    torch.testing.assert_close(P.to(DT) @ M @ P.to(DT), torch.eye(6, dtype=DT), atol=tol, rtol=0)
    torch.testing.assert_close(P, P.T)
    # Rank 3 of 6 with a known spectrum: (M^{1/2})⁺ = Q diag(e^{-1/2}) Qᵀ.
    Q = torch.linalg.qr(torch.randn(6, 3, dtype=DT, generator=g)).Q
    e = torch.tensor([2.0, 0.5, 0.01], dtype=DT)
    P2 = psd_pinv_sqrt(Q @ torch.diag(e) @ Q.T)
    torch.testing.assert_close(P2, Q @ torch.diag(e.rsqrt()) @ Q.T, atol=1e-9, rtol=0)


def test_default_cut_off_is_dtype_aware_and_explicit_rtol_still_works() -> None:
    """One implementation (linalg.nystrom): default cut-off 1000 eps (f64) / 100 eps (f32)."""
    g = torch.Generator().manual_seed(2)
    Q = torch.linalg.qr(torch.randn(5, 5, dtype=DT, generator=g)).Q
    e = torch.tensor([1.0, 0.3, 1e-3, 1e-11, 1e-15], dtype=DT)  # 1e-15 < 1000 eps < 1e-11
    M = (Q * e) @ Q.T
    Qk, s = psd_pinv_sqrt_factor(M)
    assert s.numel() == 4  # the old fixed rtol = 1e-10 dropped the 1e-11 direction
    torch.testing.assert_close(s.sort().values, e[:4].rsqrt().sort().values, rtol=1e-4, atol=0)
    assert psd_pinv_sqrt_factor(M, rtol=1e-10)[1].numel() == 3
    Ql, sl = linalg_factor(M)
    torch.testing.assert_close(sl, s, rtol=0, atol=0)
    torch.testing.assert_close(Ql, Qk, rtol=0, atol=0)
    # float32: 1e-3 is kept, 1e-11 (below 100 eps ≈ 1.2e-5) dropped.
    assert psd_pinv_sqrt_factor(M.float())[1].numel() == 3
    # NystromFeatures uses the same default, and an explicit rtol.
    D = torch.linspace(0, 1, 30, dtype=DT).unsqueeze(-1)  # smooth kernel: rank-deficient K_D
    with torch.no_grad():
        K_D = _kernel()(D, D).to_dense()
    r_default = NystromFeatures(_kernel()).with_dictionary(D).factor[1].numel()
    r_loose = NystromFeatures(_kernel(), rtol=1e-6).with_dictionary(D).factor[1].numel()
    assert r_default == psd_pinv_sqrt_factor(K_D)[1].numel()
    assert r_loose == psd_pinv_sqrt_factor(K_D, 1e-6)[1].numel() < r_default


@DTYPES
def test_resample_all_points_when_p_is_one_and_duplicates_collapse(dtype: torch.dtype) -> None:
    X = torch.tensor([[0.1], [0.5], [0.1], [0.9], [0.5]], dtype=dtype)
    nys = NystromFeatures(_kernel(), generator=torch.Generator().manual_seed(0))
    out = nys.resample(X, torch.ones(5, dtype=dtype), q=10.0)
    torch.testing.assert_close(out.dictionary, torch.tensor([[0.1], [0.5], [0.9]], dtype=dtype))
    assert out.num_features == 3 and nys.num_features == 0  # original object untouched
    torch.testing.assert_close(unique_rows(X), out.dictionary)
    # The factor lives in the dictionary's dtype (float64 kernel parameters notwithstanding).
    Q, scale = out.factor
    assert Q.dtype == scale.dtype == out.transform.dtype == dtype


def test_a_draw_that_keeps_nothing_keeps_the_point_closest_to_acceptance() -> None:
    """Tiny inclusion probabilities: independent draws would usually give an empty
    dictionary; the mask then holds exactly the point with the smallest u_i / p_i, the draws
    otherwise unchanged (a draw that keeps something is returned as drawn)."""
    var = torch.tensor([1e-6, 3e-6, 2e-6], dtype=DT)
    for seed in range(20):
        features = NystromFeatures(_kernel(), generator=torch.Generator().manual_seed(seed))
        mask = features.sample_mask(var, 1.0)
        u = torch.rand(3, generator=torch.Generator().manual_seed(seed), dtype=DT)
        drawn = u < var
        expected = drawn if bool(drawn.any()) else torch.arange(3) == int((u / var).argmin())
        assert mask.tolist() == expected.tolist() and int(mask.sum()) >= 1
    zero = NystromFeatures(_kernel(), generator=torch.Generator().manual_seed(0))
    assert not bool(zero.sample_mask(torch.zeros(3, dtype=DT), 1.0).any())  # p = 0: nothing


def test_resample_inclusion_probability() -> None:
    """Each distinct point enters with probability min{q σ², 1} (binomial check, 5 sd)."""
    t, reps, q = 40, 2000, 2.0
    X = torch.linspace(0, 1, t, dtype=DT).unsqueeze(-1)
    var = torch.linspace(0.01, 0.8, t, dtype=DT)
    nys = NystromFeatures(_kernel(), generator=torch.Generator().manual_seed(3))
    hits = torch.zeros(t, dtype=DT)
    for _ in range(reps):
        hits += nys.sample_mask(var, q).to(DT)
    p = (q * var).clamp_max(1.0)
    sd = (p * (1 - p) / reps).sqrt().clamp_min(1e-3)
    assert ((hits / reps - p).abs() / sd).max() < 5.0
    # resample keeps exactly the drawn points: same generator state ⇒ same mask.
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    mask = NystromFeatures(_kernel(), generator=g1).sample_mask(var, q)
    D = NystromFeatures(_kernel(), generator=g2).resample(X, var, q).dictionary
    torch.testing.assert_close(D, X[mask])


@DTYPES
def test_empty_dictionary(dtype: torch.dtype) -> None:
    nys = NystromFeatures(_kernel())
    X = torch.rand(4, 3, 1, dtype=dtype)
    assert nys(X).shape == (4, 3, 0)
    out = nys.resample(X[0], torch.zeros(3, dtype=dtype), q=5.0)  # σ² = 0 ⇒ p = 0
    assert out.num_features == 0 and out(X).shape == (4, 3, 0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(q=0.0), "q"),
        (dict(q=-1.0), "q"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=1.0), "epsilon"),
        (dict(generator=1), "generator"),
        (dict(rtol=0.0), "rtol"),
        (dict(rtol=2.0), "rtol"),
        (dict(q="a"), "`q`"),
        (dict(q=[1.0]), "`q`"),
        (dict(epsilon="a"), "`epsilon`"),
        (dict(epsilon=None), "`epsilon`"),
        (dict(rtol="a"), "`rtol`"),
    ],
)
def test_nystrom_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        NystromFeatures(_kernel(), **kwargs)


def test_nystrom_bad_kernel_and_variances() -> None:
    with pytest.raises(ValueError, match="base_kernel"):
        NystromFeatures("rbf")  # type: ignore[arg-type]
    nys = NystromFeatures(_kernel())
    X = torch.rand(3, 1, dtype=DT)
    with pytest.raises(ValueError, match="q"):
        nys.resample(X, torch.ones(3, dtype=DT))  # no q anywhere
    with pytest.raises(ValueError, match="variances"):
        nys.resample(X, torch.ones(4, dtype=DT), q=1.0)


def test_resample_refuses_an_infinite_q_as_the_constructor_does():
    """``q = inf`` made ``q σ²`` NaN at zero-variance points: refused like in ``__init__``."""
    X = torch.rand(6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    features = NystromFeatures(RBFKernel().double(), q=2.0)
    with pytest.raises(ValueError, match="`q` must be positive and finite"):
        features.resample(X, torch.zeros(6, dtype=torch.float64), q=float("inf"))
