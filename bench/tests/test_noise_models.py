"""Noise models of the heavy-tailed suite: laws, closed-form moments, seeding, parsing."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from mtucb_bench.noise_models import (
    ContaminatedNoise,
    GaussianNoise,
    ParetoNoise,
    RangeGaussianNoise,
    StudentTNoise,
    gaussian_abs_moment,
    parse_noise,
    reward_moment_bound,
)

N = 400_000


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_gaussian_abs_moment_closed_form():
    assert gaussian_abs_moment(2.0) == pytest.approx(1.0)
    assert gaussian_abs_moment(1.0) == pytest.approx(math.sqrt(2 / math.pi))
    assert gaussian_abs_moment(4.0) == pytest.approx(3.0)


@pytest.mark.parametrize("df", [0.7, 1.5, 2.0, 3.0, 7.5])
def test_student_t_law_matches_scipy(df):
    eps = StudentTNoise(df=df).sample((N,), _gen(1)).numpy()
    ks = stats.kstest(eps, stats.t(df).cdf)
    assert ks.pvalue > 1e-3  # fixed seed: deterministic
    wrong = stats.kstest(eps, stats.t(1.3 * df).cdf)  # the test has power against a wrong ν
    assert wrong.pvalue < 1e-4


@pytest.mark.parametrize("df, alpha", [(5.0, 1.0), (6.0, 0.5), (9.0, 1.0)])
def test_student_t_moments_monte_carlo(df, alpha):
    # MC is reliable only when |ε|^{1+α} has a finite variance: 2(1+α) < ν.
    noise = StudentTNoise(df=df, scale=0.7)
    eps = noise.sample((N,), _gen(2))
    mc = float(eps.abs().pow(1 + alpha).mean())
    assert mc == pytest.approx(noise.abs_moment(alpha), rel=0.03)
    exact = stats.t(df, scale=0.7).expect(lambda x: abs(x) ** (1 + alpha))
    assert noise.abs_moment(alpha) == pytest.approx(exact, rel=1e-6)


def test_student_t_infinite_moment():
    assert StudentTNoise(df=1.5).abs_moment(0.5) == math.inf
    assert math.isfinite(StudentTNoise(df=1.5).abs_moment(0.4))


@pytest.mark.parametrize("shape", [1.6, 2.0, 3.0])
def test_pareto_law_and_moments(shape):
    noise = ParetoNoise(shape=shape, scale=0.5)
    eps = noise.sample((N,), _gen(3))
    # |ε| is Lomax: P(|ε| > x) = (1 + x/S)^{-a}; ε symmetric.
    a = eps.abs().numpy()
    assert stats.kstest(a, stats.lomax(shape, scale=0.5).cdf).pvalue > 1e-3
    assert stats.kstest(a, stats.lomax(1.2 * shape, scale=0.5).cdf).pvalue < 1e-4
    assert abs(float((eps > 0).double().mean()) - 0.5) < 4e-3
    # A moment with finite MC variance: p = 0.5 (2p < a), checked against scipy.
    exact = stats.lomax(shape, scale=0.5).expect(lambda x: x**0.5)
    assert float(eps.abs().sqrt().mean()) == pytest.approx(exact, rel=0.02)
    alpha = noise.natural_alpha()
    p = 1 + alpha
    exact_p = stats.lomax(shape, scale=0.5).expect(lambda x: x**p)
    assert noise.abs_moment(alpha) == pytest.approx(exact_p, rel=1e-5)


def test_natural_alpha():
    assert StudentTNoise(df=1.5).natural_alpha() == pytest.approx(0.4)
    assert StudentTNoise(df=2.0).natural_alpha() == pytest.approx(0.9)
    assert StudentTNoise(df=3.0).natural_alpha() == 1.0
    assert ParetoNoise(shape=1.6).natural_alpha() == pytest.approx(0.5)
    assert ParetoNoise(shape=2.0).natural_alpha() == pytest.approx(0.9)
    assert GaussianNoise(0.1).natural_alpha() == 1.0
    with pytest.raises(ValueError, match="Student-t df 1.05"):
        StudentTNoise(df=1.05).natural_alpha()


def test_contaminated_law_and_moments():
    noise = ContaminatedNoise(rate=0.05, mult=100.0, scale=0.2)
    eps = noise.sample((N,), _gen(4))
    big = eps.abs() > 0.2 * 8  # a clean N(0, 0.2²) draw exceeds 8σ with prob ~1e-15
    assert abs(float(big.double().mean()) - 0.05 * 2 * stats.norm.sf(8 / 100)) < 2e-3
    for alpha in (0.5, 1.0):
        mc = float(eps.abs().pow(1 + alpha).mean())
        assert mc == pytest.approx(noise.abs_moment(alpha), rel=0.03)
    assert noise.abs_moment(1.0) == pytest.approx(0.04 * (0.95 + 0.05 * 1e4))


def test_gaussian_moments():
    noise = GaussianNoise(0.3)
    eps = noise.sample((N,), _gen(5))
    assert float(eps.std()) == pytest.approx(0.3, rel=0.01)
    assert noise.abs_moment(1.0) == pytest.approx(0.09)


def test_reward_moment_bound_holds():
    noise = StudentTNoise(df=5.0)
    eps = noise.sample((N,), _gen(6))
    for f in (-1.0, 0.3, 1.0):
        mc = float((f + eps).abs().pow(2.0).mean())
        assert mc <= reward_moment_bound(noise, 1.0, 1.0)
    with pytest.raises(ValueError, match="`B`"):
        reward_moment_bound(noise, 1.0, -1.0)


@pytest.mark.parametrize(
    "noise",
    [GaussianNoise(0.1), StudentTNoise(df=1.5), ParetoNoise(shape=1.6), ContaminatedNoise()],
)
def test_seeding_and_shapes(noise):
    a = noise.sample((7, 3), _gen(11))
    b = noise.sample((7, 3), _gen(11))
    c = noise.sample((7, 3), _gen(12))
    assert a.shape == (7, 3) and a.dtype == torch.float64
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert noise.sample((0,), _gen(1)).shape == (0,)
    # The global RNG is not used.
    torch.manual_seed(0)
    s0 = torch.rand(1)
    torch.manual_seed(0)
    noise.sample((5,), _gen(3))
    assert torch.equal(torch.rand(1), s0)


def test_parse_round_trip():
    cases = {
        "student-t:1.5": StudentTNoise(df=1.5),
        "student-t:2@0.5": StudentTNoise(df=2.0, scale=0.5),
        "pareto:1.6": ParetoNoise(shape=1.6),
        "Pareto:2.0@0.25": ParetoNoise(shape=2.0, scale=0.25),
        "contaminated:0.02x1000": ContaminatedNoise(rate=0.02, mult=1000.0),
        "contaminated:0.05x100@0.05": ContaminatedNoise(rate=0.05, mult=100.0, scale=0.05),
        "gaussian:0.1": GaussianNoise(0.1),
        " gaussian:1e-2 ": GaussianNoise(0.01),
        "gaussian-range:0.07": RangeGaussianNoise(0.07),
    }
    for spec, expected in cases.items():
        parsed = parse_noise(spec)
        assert parsed == expected
        assert parse_noise(parsed.spec) == parsed


@pytest.mark.parametrize(
    "spec, match",
    [
        ("cauchy:1", "Unknown noise kind 'cauchy'"),
        ("student-t", "Malformed noise spec"),
        ("student-t:abc", "Malformed"),
        ("student-t:0", "df` must be positive"),
        ("pareto:2@0", "`scale` must be positive"),
        ("contaminated:0.02", "RATExMULT"),
        ("contaminated:1.5x10", "rate` must lie in"),
        ("gaussian:-1", "Malformed"),
        ("gaussian-range:", "Malformed"),
    ],
)
def test_parse_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_noise(spec)
    with pytest.raises(ValueError, match="must be a string"):
        parse_noise(1.5)


def test_invalid_alpha():
    with pytest.raises(ValueError, match="`alpha` must lie in"):
        GaussianNoise(1.0).abs_moment(1.5)
