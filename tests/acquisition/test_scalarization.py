"""Tests for the scalarizations s_λ and the weight distributions P_λ (paper 000, §2, §5, App. E)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    LinearScalarization,
    ScalarizationSampler,
    sample_scalarization_weights,
)

DT = torch.float64


def _t(x):
    return torch.tensor(x, dtype=DT)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- values


def test_linear_hand_values():
    s = LinearScalarization(_t([0.25, 0.75]))
    Y = _t([[1.0, 2.0], [-4.0, 0.0]])
    torch.testing.assert_close(s(Y), _t([0.25 * 1 + 0.75 * 2, 0.25 * -4 + 0.0]))
    assert math.isclose(float(s.lipschitz), math.sqrt(0.25**2 + 0.75**2))


def test_chebyshev_hand_values():
    s = ChebyshevScalarization(_t([0.2, 0.8]), ref_point=_t([-1.0, 0.5]))
    Y = _t([[1.0, 2.0], [0.0, 0.5], [3.0, 10.0]])
    expected = _t(
        [
            min(0.2 * (1 + 1), 0.8 * (2 - 0.5)),
            min(0.2 * (0 + 1), 0.8 * (0.5 - 0.5)),
            min(0.2 * (3 + 1), 0.8 * (10 - 0.5)),
        ]
    )
    torch.testing.assert_close(s(Y), expected)
    assert math.isclose(float(s.lipschitz), 0.8)


def test_batch_shapes_and_dtype_follow_input():
    s = ChebyshevScalarization(_t([0.5, 0.3, 0.2]), _t([0.0, 0.0, 0.0]))
    Y = torch.rand(4, 5, 3, dtype=torch.float32)
    out = s(Y)
    assert out.shape == (4, 5) and out.dtype == torch.float32
    lin = LinearScalarization([0.5, 0.3, 0.2])
    assert lin(Y).shape == (4, 5)


def test_minimize_equals_negating_objective_and_ref_point():
    g = _gen(0)
    Y = torch.randn(20, 3, generator=g, dtype=DT)
    w = _t([0.2, 0.5, 0.3])
    z = _t([-1.0, 2.0, 0.5])
    flip = _t([1.0, -1.0, 1.0])
    cheb_min = ChebyshevScalarization(w, z, minimize=[False, True, False])
    cheb_ref = ChebyshevScalarization(w, z * flip)
    torch.testing.assert_close(cheb_min(Y), cheb_ref(Y * flip))
    lin_min = LinearScalarization(w, minimize=[False, True, False])
    torch.testing.assert_close(lin_min(Y), Y @ (w * flip))
    # minimised objective: lowering it increases (never decreases) the scalarization
    Y2 = Y.clone()
    Y2[:, 1] -= 1.0
    assert (cheb_min(Y2) >= cheb_min(Y)).all() and (lin_min(Y2) > lin_min(Y)).all()


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_lipschitz_constant_is_valid_and_tight(kind):
    g = _gen(1)
    w = sample_scalarization_weights(4, 1, kind=kind, generator=g)[0]
    s = LinearScalarization(w) if kind == "linear" else ChebyshevScalarization(w, torch.zeros(4))
    U = torch.randn(5000, 4, generator=g, dtype=DT)
    V = U + 0.3 * torch.randn(5000, 4, generator=g, dtype=DT)
    ratio = (s(U) - s(V)).abs() / (U - V).norm(dim=-1)
    L = float(s.lipschitz)
    assert ratio.max() <= L * (1 + 1e-12)
    # the constant is attained: along λ (linear) or along the largest-weight axis (Chebyshev)
    if kind == "linear":
        direction = w
    else:
        direction = torch.zeros(4, dtype=DT)
        direction[w.argmax()] = 1.0
    u = torch.zeros(4, dtype=DT)
    if kind == "chebyshev":  # make the largest-weight coordinate the active minimum
        u = torch.full((4,), 10.0, dtype=DT)
        u[w.argmax()] = 0.0
    v = u + 0.01 * direction / direction.norm()
    assert math.isclose(float((s(v) - s(u)).abs() / (v - u).norm()), L, rel_tol=1e-9)


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_monotone(kind):
    g = _gen(2)
    w = sample_scalarization_weights(3, 1, kind=kind, generator=g)[0]
    s = LinearScalarization(w) if kind == "linear" else ChebyshevScalarization(w, -torch.ones(3))
    U = torch.randn(1000, 3, generator=g, dtype=DT)
    V = U + torch.rand(1000, 3, generator=g, dtype=DT)  # V dominates U in every coordinate
    assert (s(V) > s(U)).all()


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "weights",
    [[0.5, 0.6], [1.2, -0.2], [[0.5, 0.5]], [], [float("nan"), 1.0]],
)
def test_weights_off_simplex_raise(weights):
    with pytest.raises(ValueError, match="weights"):
        LinearScalarization(torch.tensor(weights, dtype=DT))
    with pytest.raises(ValueError, match="weights"):
        ChebyshevScalarization(torch.tensor(weights, dtype=DT), torch.zeros(2, dtype=DT))


def test_bad_ref_point_minimize_and_outcome_shape_raise():
    with pytest.raises(ValueError, match="ref_point"):
        ChebyshevScalarization(_t([0.5, 0.5]), _t([0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="ref_point"):
        ChebyshevScalarization(_t([0.5, 0.5]), _t([0.0, float("inf")]))
    with pytest.raises(ValueError, match="minimize"):
        LinearScalarization(_t([0.5, 0.5]), minimize=[True])
    s = LinearScalarization(_t([0.5, 0.5]))
    with pytest.raises(ValueError, match="last dimension of size 2"):
        s(torch.zeros(4, 3, dtype=DT))
    with pytest.raises(ValueError, match="ref_point"):
        ScalarizationSampler(2, "chebyshev")
    with pytest.raises(ValueError, match="kind"):
        ScalarizationSampler(2, "pareto")


# ----------------------------------------------------------------------------- sampler


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_sampler_on_simplex_and_seeded(kind):
    W = sample_scalarization_weights(5, 1000, kind=kind, generator=_gen(3))
    assert W.shape == (1000, 5) and W.dtype == DT
    assert (W > 0).all()
    torch.testing.assert_close(W.sum(-1), torch.ones(1000, dtype=DT))
    W2 = sample_scalarization_weights(5, 1000, kind=kind, generator=_gen(3))
    assert torch.equal(W, W2)
    W3 = sample_scalarization_weights(5, 1000, kind=kind, generator=_gen(4))
    assert not torch.equal(W, W3)


def _ratio_cdf(a: np.ndarray) -> np.ndarray:
    """CDF of U1/(U1+U2) for independent U1, U2 ~ U[0,1] (derived by hand).

    P(U1 ≤ c U2), c = a/(1−a): c/2 if c ≤ 1, else 1 − 1/(2c).
    """
    a = np.clip(a, 1e-300, 1 - 1e-16)
    c = a / (1 - a)
    return np.where(c <= 1, c / 2, 1 - 1 / (2 * c))


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_sampler_law_n2_matches_exact_cdf(kind):
    # n = 2: linear λ_1 = u1/(u1+u2); Chebyshev λ_1 = (1/u1)/(1/u1+1/u2) = u2/(u1+u2):
    # both have the law of U1/(U1+U2), whose CDF is derived in _ratio_cdf.
    W = sample_scalarization_weights(2, 20000, kind=kind, generator=_gen(5))
    res = stats.kstest(W[:, 0].numpy(), _ratio_cdf)
    assert res.pvalue > 1e-3
    # the test has power: a uniform λ_1 is rejected
    res_bad = stats.kstest(np.random.default_rng(0).uniform(size=20000), _ratio_cdf)
    assert res_bad.pvalue < 1e-6


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_sampler_law_n3_matches_independent_construction(kind):
    # Two-sample KS against the construction of §5 / Appendix E written in numpy.
    rng = np.random.default_rng(7)
    u = rng.uniform(size=(20000, 3))
    if kind == "chebyshev":
        alpha = u.sum(1, keepdims=True) / u
        ref = alpha / alpha.sum(1, keepdims=True)
    else:
        ref = u / u.sum(1, keepdims=True)
    W = sample_scalarization_weights(3, 20000, kind=kind, generator=_gen(8))
    for i in range(3):
        assert stats.ks_2samp(W[:, i].numpy(), ref[:, i]).pvalue > 1e-3
    # and the two kinds really differ at n = 3 (the test can tell them apart)
    other = sample_scalarization_weights(
        3, 20000, kind="linear" if kind == "chebyshev" else "chebyshev",
        generator=_gen(9),
    )
    assert stats.ks_2samp(other[:, 0].numpy(), ref[:, 0]).pvalue < 1e-6


def test_sampler_bad_args():
    with pytest.raises(ValueError, match="`n`"):
        sample_scalarization_weights(0, 3)
    with pytest.raises(ValueError, match="num_samples"):
        sample_scalarization_weights(2, 0)
    with pytest.raises(ValueError, match="kind"):
        sample_scalarization_weights(2, 3, kind="uniform")


def test_scalarization_sampler_draws_fresh_weights():
    g = _gen(10)
    sampler = ScalarizationSampler(3, "chebyshev", ref_point=[0.0, 0.0, 0.0], minimize=[1, 0, 0])
    s1, s2 = sampler(g), sampler(g)
    assert isinstance(s1, ChebyshevScalarization)
    assert not torch.equal(s1.weights, s2.weights)
    assert s1.minimize.tolist() == [True, False, False]
    g2 = _gen(10)
    expected = sample_scalarization_weights(3, 1, "chebyshev", g2)[0]
    torch.testing.assert_close(s1.weights, expected)
    assert isinstance(ScalarizationSampler(2, "linear")(g), LinearScalarization)


# ----------------------------------------------------------------------------- directional
@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_directional_ucb_from_variances_matches_brute_force(kind, dtype):
    """Bound from projected variances = the App. B.1 formula written out with the blocks."""
    from botorch_mtucb.acquisition.scalarization import project_covariance

    g = _gen(4)
    n = 3
    lam = torch.tensor([0.2, 0.5, 0.3], dtype=DT)
    z = torch.tensor([-1.0, 0.5, -0.2], dtype=DT)
    mins = [False, True, False]
    A = torch.randn(6, n, n, generator=g, dtype=DT)
    cov = (A @ A.transpose(-1, -2)).to(dtype)
    mean = torch.randn(6, n, generator=g, dtype=DT).to(dtype)
    beta = torch.tensor(1.3, dtype=dtype)
    sgn = torch.tensor([1.0, -1.0, 1.0], dtype=DT).to(dtype)
    if kind == "linear":
        s = LinearScalarization(lam, minimize=mins)
        w = (lam.to(dtype) * sgn)
        ref = mean @ w + beta * torch.einsum("i,bij,j->b", w, cov, w).sqrt()
    else:
        s = ChebyshevScalarization(lam, z, minimize=mins)
        sig = cov.diagonal(dim1=-2, dim2=-1).sqrt()
        ref = (lam.to(dtype) * (mean * sgn + beta * sig - z.to(dtype) * sgn)).min(-1).values
    W = s.directions(mean)
    var = project_covariance(cov, W)
    assert var.shape == ((6, 1) if kind == "linear" else (6, n))
    out = s.directional_ucb_from_variances(mean, var, beta)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert out.dtype == dtype
    torch.testing.assert_close(out, ref, atol=tol, rtol=tol)
    torch.testing.assert_close(s.directional_ucb(mean, cov, beta), ref, atol=tol, rtol=tol)
    # the constants are converted once per dtype and reused
    assert s._constants(mean)["weights"] is s._constants(mean)["weights"]
    assert s._constants(mean)["weights"].dtype == dtype
