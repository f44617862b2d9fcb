"""Continuous heavy-tailed suite problems: normalisation, optimum, noise, declared moments."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.test_functions import Branin, Hartmann

from mtucb_bench.ht_suite_problems import (
    DISHONEST_FACTOR,
    SUITE_NOISES,
    ht_suite_problem,
    sobol_unit_design,
)
from mtucb_bench.noise_models import StudentTNoise, parse_noise

DT = torch.float64


@pytest.mark.parametrize("name, fn", [("branin", Branin()), ("hartmann6", Hartmann(dim=6))])
def test_normalised_negated_objective(name, fn):
    p = ht_suite_problem(name, "gaussian:0.1")
    U = sobol_unit_design(64, p.dim, seed=3)
    lo, hi = fn.bounds.to(DT)
    raw = fn.evaluate_true(lo + (hi - lo) * U)  # the unnegated BoTorch function
    assert torch.allclose(p.f(U), -raw / p.scale)
    # unit standard deviation over the box, maximum at BoTorch's optimiser
    assert float(p.f(sobol_unit_design(4096, p.dim, seed=5)).std()) == pytest.approx(1, rel=0.03)
    X_opt = (fn.optimizers.to(DT) - lo) / (hi - lo)
    assert p.regret(X_opt).abs().max() < 1e-4
    assert (p.regret(U) > 0).all()
    assert p.B >= p.f(U).abs().max()


def test_observe_noise_and_seeding():
    p = ht_suite_problem("branin", "student-t:3")
    X = sobol_unit_design(2000, 2, seed=1)
    y1 = p.observe(X, torch.Generator().manual_seed(7))
    y2 = p.observe(X, torch.Generator().manual_seed(7))
    assert y1.shape == (2000, 1) and torch.equal(y1, y2)
    eps = y1.squeeze(-1) - p.f(X)
    expected = StudentTNoise(df=3.0).sample((2000,), torch.Generator().manual_seed(7))
    assert torch.allclose(eps, expected)


def test_declared_moments():
    p = ht_suite_problem("hartmann6", "pareto:1.6")
    assert p.alpha == pytest.approx(0.5)
    a = p.alpha
    v = 2**a * (p.B ** (1 + a) + p.noise.abs_moment(a))
    assert p.v_declared() == pytest.approx(v)
    assert p.v_declared(honest=False) == pytest.approx(v / DISHONEST_FACTOR)
    # Monte-Carlo check that the honest v bounds the reward's moment at the optimum
    X = torch.full((1, 6), 0.5, dtype=DT)
    q = ht_suite_problem("hartmann6", "student-t:9", alpha=1.0)
    y = q.f(X) + q.noise.sample((200_000,), torch.Generator().manual_seed(0))
    assert float(y.abs().pow(2).mean()) <= q.v_declared()
    with pytest.raises(ValueError, match="infinite"):
        ht_suite_problem("branin", "student-t:1.5", alpha=1.0).v_declared()


def test_suite_noises_parse_and_alpha():
    for spec in SUITE_NOISES:
        p = ht_suite_problem("branin", spec)
        assert p.name == f"branin/{parse_noise(spec).spec}"
        assert math.isfinite(p.v_declared())


def test_errors():
    with pytest.raises(ValueError, match="Unknown suite function 'ackley'"):
        ht_suite_problem("ackley", "gaussian:1")
    with pytest.raises(ValueError, match="Unknown noise kind"):
        ht_suite_problem("branin", "laplace:1")
    with pytest.raises(ValueError, match="`alpha` must lie"):
        ht_suite_problem("branin", "gaussian:1", alpha=2.0)
    with pytest.raises(ValueError, match="N x 2"):
        ht_suite_problem("branin", "gaussian:1").f(torch.zeros(3, 6, dtype=DT))
    with pytest.raises(ValueError, match="n >= 0"):
        sobol_unit_design(-1, 2, 0)
