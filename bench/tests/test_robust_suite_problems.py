"""Robust-suite problems and corruption kinds: laws vs their definitions, f*, cells, seeding."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.test_functions import Ackley, Branin, Hartmann, Levy, StyblinskiTang
from scipy import stats

from mtucb_bench.ht_suite_problems import sobol_unit_design
from mtucb_bench.noise_models import (
    GrossOutlierNoise,
    SensorFailureNoise,
    parse_noise,
)
from mtucb_bench.robust_suite_problems import (
    CELLS,
    KINDS,
    n_init,
    robust_suite_problem,
    select_cells,
)

DT = torch.float64
N = 200_000


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _binomial_ok(count: int, n: int, p: float, z: float = 4.5) -> bool:
    return abs(count - n * p) <= z * math.sqrt(n * p * (1 - p))


def test_gross_law_matches_definition():
    noise = GrossOutlierNoise(scale=0.1, rate=0.04, low=5.0, high=20.0)
    eps = noise.sample((N,), _gen(1))
    out = eps.abs() > 2.5  # base part 0.1 Z never reaches 2.5; outliers are >= 5 - 0.6
    assert _binomial_ok(int(out.sum()), N, 0.04)
    # inliers: N(0, 0.1²)
    assert stats.kstest(eps[~out].numpy(), stats.norm(scale=0.1).cdf).pvalue > 1e-3
    # outliers: symmetric, |ε| = U ± 0.1 Z with U ~ U(5, 20): quantiles of U within 0.05
    o = eps[out]
    assert _binomial_ok(int((o > 0).sum()), o.numel(), 0.5)
    q = torch.tensor([0.1, 0.25, 0.5, 0.75, 0.9], dtype=DT)
    assert torch.allclose(o.abs().quantile(q), 5.0 + 15.0 * q, atol=0.25)
    assert float(o.abs().min()) > 5.0 - 0.6 and float(o.abs().max()) < 20.0 + 0.6


def test_gross_moments_exact_and_monte_carlo():
    noise = GrossOutlierNoise(scale=0.1, rate=0.04, low=5.0, high=20.0)
    # p = 2 in closed form: σ² + r (LO² + LO·HI + HI²) / 3
    assert noise.abs_moment(1.0) == pytest.approx(0.01 + 0.04 * (25 + 100 + 400) / 3, rel=1e-9)
    eps = noise.sample((N,), _gen(2))
    for alpha in (0.3, 0.7):
        mc = float(eps.abs().pow(1 + alpha).mean())
        assert noise.abs_moment(alpha) == pytest.approx(mc, rel=0.03)
    # outliers of size 0 offset nothing: the Gaussian moment
    g = GrossOutlierNoise(scale=0.1, rate=0.5, low=0.0, high=0.0)
    assert g.abs_moment(0.5) == pytest.approx(parse_noise("gaussian:0.1").abs_moment(0.5))


def test_failure_readings_match_definition():
    p = robust_suite_problem("branin/failure")
    X = sobol_unit_design(N // 4, 2, seed=3)
    F = p.f(X)
    y = p.observe(X, _gen(4)).squeeze(-1)
    failed = y == p.optimum + 10.0
    assert _binomial_ok(int(failed.sum()), F.numel(), 0.05)
    # the failed reading is one constant far above f*, above every true value
    assert p.optimum + 10.0 > float(F.max()) + 9.9
    assert torch.unique(y[failed]).numel() == 1
    # the rest is f + N(0, 0.1²)
    resid = (y - F)[~failed].numpy()
    assert stats.kstest(resid, stats.norm(scale=0.1).cdf).pvalue > 1e-3


def test_failure_is_not_additive_noise():
    noise = parse_noise("failure:0.05+10@0.1")
    assert noise == SensorFailureNoise(rate=0.05, offset=10.0, scale=0.1)
    with pytest.raises(ValueError, match="readings"):
        noise.sample((3,), _gen())
    with pytest.raises(ValueError, match="moments"):
        noise.abs_moment(1.0)
    with pytest.raises(ValueError, match="`optimum`"):
        noise.readings(torch.zeros(3, dtype=DT), _gen())


@pytest.mark.parametrize("kind, df", [("t1.5", 1.5), ("t3", 3.0)])
def test_student_t_kinds_scale(kind, df):
    noise = parse_noise(KINDS[kind])
    eps = noise.sample((N,), _gen(5)).numpy()
    assert stats.kstest(eps, stats.t(df, scale=0.1).cdf).pvalue > 1e-3
    assert stats.kstest(eps, stats.t(df, scale=0.13).cdf).pvalue < 1e-4  # has power


def test_parse_new_specs_round_trip_and_errors():
    cases = {
        "gross:0.04x5-20@0.1": GrossOutlierNoise(rate=0.04, low=5.0, high=20.0, scale=0.1),
        "gross:0.1x1-2": GrossOutlierNoise(rate=0.1, low=1.0, high=2.0),
        "failure:0.05+10": SensorFailureNoise(rate=0.05, offset=10.0),
        "failure:0.2+3@0.5": SensorFailureNoise(rate=0.2, offset=3.0, scale=0.5),
    }
    for spec, expected in cases.items():
        assert parse_noise(spec) == expected
        assert parse_noise(expected.spec) == expected
    for spec, match in [("gross:0.04x20-5", "low"), ("gross:1.5x5-20", "rate"),
                        ("gross:0.04x5", "Malformed"), ("failure:0.05", "Malformed"),
                        ("failure:0.05+0", "offset")]:
        with pytest.raises(ValueError, match=match):
            parse_noise(spec)
    # the existing specs still parse
    assert parse_noise("contaminated:0.02x1000").spec == "contaminated:0.02x1000"


def test_seeding_same_stream_and_global_rng_untouched():
    F = torch.linspace(-1, 1, 50, dtype=DT)
    for spec in KINDS.values():
        noise = parse_noise(spec)
        a = noise.readings(F, _gen(7), optimum=2.0)
        assert torch.equal(a, noise.readings(F, _gen(7), optimum=2.0))
        assert not torch.equal(a, noise.readings(F, _gen(8), optimum=2.0))
        torch.manual_seed(0)
        s0 = torch.rand(1)
        torch.manual_seed(0)
        noise.readings(F, _gen(3), optimum=2.0)
        assert torch.equal(torch.rand(1), s0)


@pytest.mark.parametrize("name, fn", [
    ("branin", Branin()), ("ackley3", Ackley(dim=3)), ("levy4", Levy(dim=4)),
    ("styblinski_tang4", StyblinskiTang(dim=4)), ("hartmann6", Hartmann(dim=6)),
])
def test_cells_normalised_negated_with_optimum(name, fn):
    p = robust_suite_problem(f"{name}/clean")
    assert p.name == f"{name}/clean" and p.kind == "clean" and p.dim == fn.dim
    U = sobol_unit_design(64, p.dim, seed=3)
    lo, hi = fn.bounds.to(DT)
    assert torch.allclose(p.f(U), -fn.evaluate_true(lo + (hi - lo) * U) / p.scale)
    assert float(p.f(sobol_unit_design(4096, p.dim, seed=5)).std()) == pytest.approx(1, rel=0.05)
    X_opt = (fn.optimizers.to(DT) - lo) / (hi - lo)
    assert p.regret(X_opt).abs().max() < 1e-4
    assert (p.regret(U) > 0).all()
    assert n_init(p.dim) == max(5, 2 * fn.dim)


def test_cell_selection_and_errors():
    assert len(CELLS) == 25 and len(set(CELLS)) == 25
    assert select_cells(None) == list(CELLS)
    assert select_cells(["branin/*"]) == [f"branin/{k}" for k in KINDS]
    assert select_cells(["*/gross", "levy4/clean"]) == [  # in CELLS order
        c for c in CELLS if c == "levy4/clean" or c.endswith("/gross")
    ]
    with pytest.raises(ValueError, match="matches no cell"):
        select_cells(["nope/*"])
    for bad in ("branin", "branin/cauchy", "rosenbrock/clean"):
        with pytest.raises(ValueError, match="`cell`"):
            robust_suite_problem(bad)
