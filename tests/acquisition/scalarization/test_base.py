"""Tests for the scalarizations s_λ and the weight distributions P_λ (paper 000, §2, §5, App. E)."""

from __future__ import annotations

import math

import pytest
import torch

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


# ----------------------------------------------------------------------------- directional
@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_directional_ucb_from_variances_matches_brute_force(kind, dtype):
    """Bound from projected variances = the App. B.1 formula written out with the blocks."""
    from botorch_mtucb.acquisition.scalarization.base import project_covariance

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


# ------------------------------------------------------------- augmented and scale-free


def test_augmented_chebyshev_hand_values_and_pieces():
    s = ChebyshevScalarization(_t([0.2, 0.8]), _t([1.0, -1.0]), augmentation=0.05)
    Y = _t([[3.0, 0.0], [1.0, 5.0]])
    p = torch.stack([0.2 * (Y[:, 0] - 1), 0.8 * (Y[:, 1] + 1)], -1)
    expected = p.min(-1).values + 0.05 * p.sum(-1)
    torch.testing.assert_close(s(Y), expected)
    torch.testing.assert_close(s.pieces(Y).min(-1).values, expected)
    assert math.isclose(float(s.lipschitz), 0.8 + 0.05 * math.hypot(0.2, 0.8))
    assert "augmentation=0.05" in repr(s)


def test_augmented_lipschitz_is_valid():
    s = ChebyshevScalarization(_t([0.3, 0.5, 0.2]), torch.zeros(3, dtype=DT), augmentation=0.1)
    g = _gen(0)
    A, B = torch.randn(4000, 3, generator=g, dtype=DT), torch.randn(4000, 3, generator=g, dtype=DT)
    ratio = (s(A) - s(B)).abs() / (A - B).norm(dim=-1)
    assert float(ratio.max()) <= float(s.lipschitz) + 1e-12


def test_augmented_directional_ucb_is_brute_force_upper_bound():
    """The bound dominates s(y) on the confidence ellipsoid {μ + β Γ^{1/2} u : ‖u‖ ≤ 1}, is
    attained there when Γ is diagonal with one σ_i, and is never looser than the spectral
    bound or than bounding the augmentation term axis by axis."""
    s = ChebyshevScalarization(_t([0.3, 0.7]), _t([-1.0, 0.5]), minimize=[False, True],
                               augmentation=0.05)
    g = _gen(1)
    mean = torch.randn(6, 2, generator=g, dtype=DT)
    A = torch.randn(6, 2, 2, generator=g, dtype=DT)
    cov = A @ A.transpose(-1, -2) + 0.01 * torch.eye(2, dtype=DT)
    beta = 1.5
    ucb = s.directional_ucb(mean, cov, _t(beta))
    signs, lam, z = _t([1.0, -1.0]), _t([0.3, 0.7]), _t([-1.0, 0.5])
    w = lam * signs
    sd = cov.diagonal(dim1=-2, dim2=-1).sqrt()
    gaps = lam * (mean * signs - z * signs)
    lin_sd = torch.einsum("i,bij,j->b", w, cov, w).sqrt()
    ref = (gaps + beta * lam * sd).min(-1).values + 0.05 * (gaps.sum(-1) + beta * lin_sd)
    torch.testing.assert_close(ucb, ref)
    L = torch.linalg.cholesky(cov)
    U = torch.randn(4000, 6, 2, generator=g, dtype=DT)
    U = U / U.norm(dim=-1, keepdim=True) * torch.rand(4000, 6, 1, generator=g, dtype=DT)
    Y = mean + beta * (L @ U.unsqueeze(-1)).squeeze(-1)
    assert bool((s(Y) <= ucb + 1e-12).all())
    per_axis = (gaps + beta * lam * sd).min(-1).values + 0.05 * (gaps + beta * lam * sd).sum(-1)
    spectral = s(mean) + s.lipschitz * beta * torch.linalg.eigvalsh(cov)[..., -1].sqrt()
    assert bool((ucb <= per_axis + 1e-12).all()) and bool((ucb <= spectral + 1e-12).all())
    # Γ = I: the augmentation width is β‖λ‖₂ along λ̃, against β Σ λ_i axis by axis
    eye = torch.eye(2, dtype=DT).expand(6, 2, 2)
    gaps_eye = gaps + beta * lam
    torch.testing.assert_close(
        s.directional_ucb(mean, eye, _t(beta)),
        gaps_eye.min(-1).values + 0.05 * (gaps.sum(-1) + beta * lam.norm()),
    )


def test_augmentation_makes_the_maximiser_pareto_optimal():
    """Plain Chebyshev ties a weakly dominated point with a Pareto point; ρ > 0 breaks it."""
    Y = _t([[1.0, 1.0], [1.0, 3.0]])  # (1, 3) dominates (1, 1)
    plain = ChebyshevScalarization(_t([0.5, 0.5]), torch.zeros(2, dtype=DT))
    aug = ChebyshevScalarization(_t([0.5, 0.5]), torch.zeros(2, dtype=DT), augmentation=0.05)
    assert float(plain(Y)[0]) == float(plain(Y)[1])
    assert float(aug(Y)[1]) > float(aug(Y)[0])


def test_from_data_is_scale_free_and_uses_the_nondominated_nadir():
    g = _gen(2)
    Y = torch.randn(20, 3, generator=g, dtype=DT)
    lam = _t([0.2, 0.3, 0.5])
    s = ChebyshevScalarization.from_data(lam, Y)
    # brute force: normalise by the range, z = nadir of the non-dominated rows - 0.1 range
    nd = [i for i in range(20) if not any(bool((Y[j] >= Y[i]).all() & (Y[j] > Y[i]).any())
                                          for j in range(20))]
    span = Y.max(0).values - Y.min(0).values
    z = Y[nd].min(0).values - 0.1 * span
    Yn, zn = Y / span, z / span
    p = lam * (Yn - zn)
    ref = p.min(-1).values + 0.05 * p.sum(-1)
    c = float((lam / span).sum())
    torch.testing.assert_close(s(Y) * c, ref)
    torch.testing.assert_close(s.ref_point, z)
    # rescaling objective 1 (units) gives the same scalarization up to a positive factor
    D = _t([1000.0, 1.0, 0.01])
    s2 = ChebyshevScalarization.from_data(lam, Y * D)
    v1, v2 = s(Y), s2(Y * D)
    assert torch.allclose(v2 / v1, (v2 / v1)[0].expand(20))
    assert float((v2 / v1)[0]) > 0


def test_from_data_minimize_equals_negated_data():
    g = _gen(3)
    Y = torch.randn(15, 2, generator=g, dtype=DT)
    lam = _t([0.4, 0.6])
    a = ChebyshevScalarization.from_data(lam, Y, minimize=[False, True])
    b = ChebyshevScalarization.from_data(lam, Y * _t([1.0, -1.0]))
    torch.testing.assert_close(a(Y), b(Y * _t([1.0, -1.0])))


def test_from_data_and_augmentation_bad_inputs():
    with pytest.raises(ValueError, match="augmentation"):
        ChebyshevScalarization(_t([0.5, 0.5]), torch.zeros(2, dtype=DT), augmentation=-1.0)
    with pytest.raises(ValueError, match="`Y` must be an N x n"):
        ChebyshevScalarization.from_data(_t([0.5, 0.5]), torch.zeros(3, 3, dtype=DT))
    with pytest.raises(ValueError, match="`Y` must be an N x n"):
        ChebyshevScalarization.from_data(_t([0.5, 0.5]), torch.zeros(0, 2, dtype=DT))
    with pytest.raises(ValueError, match="margin"):
        ChebyshevScalarization.from_data(_t([0.5, 0.5]), torch.ones(3, 2, dtype=DT), margin=-1)
    one = ChebyshevScalarization.from_data(_t([0.5, 0.5]), _t([[2.0, 3.0]]))  # one point
    torch.testing.assert_close(one.ref_point, _t([1.9, 2.9]))
