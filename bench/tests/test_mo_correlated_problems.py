"""Correlated suite problems: the documented construction, reproducibility, refusals."""

from __future__ import annotations

import pytest
import torch
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch.quasirandom import SobolEngine

from mtucb_bench.metrics import hypervolume_percent
from mtucb_bench.mo_correlated_problems import corr_rff, correlated_problem
from mtucb_bench.mo_suite_problems import make_suite_problem

DT = torch.float64


def test_correlated_problem_definition():
    """f_i = φ_i(a_iᵀ z) (no independent part): each objective is a monotone function of its
    own mixture of the standardised latents; correlations are strong, maximisers differ."""
    bounds = torch.stack([torch.zeros(2, dtype=DT), torch.ones(2, dtype=DT)])
    lat = [lambda X: -(X - 0.2).square().sum(-1), lambda X: -(X - 0.8).square().sum(-1)]
    p = correlated_problem(lat, 3, bounds, seed=3, spread=0.5, independent=0.0, units="raw")
    X = p.regret_X
    F = p.f(X)
    Z = torch.stack([fn(X) for fn in lat], -1)
    # the documented standardisation: over 4096 scrambled Sobol points (seed 99)
    S = SobolEngine(2, scramble=True, seed=99).draw(4096).to(DT)
    ZS = torch.stack([fn(S) for fn in lat], -1)
    Zs = (Z - ZS.mean(0)) / ZS.std(0)
    thetas = torch.linspace(0, 0.5, 3, dtype=DT)  # the loadings' angles, in some order
    for i in range(3):
        # F_i is an increasing function of exactly one of the mixtures: same ranks
        ranks = [torch.corrcoef(torch.stack([_rank(F[:, i]), _rank(Zs @ torch.stack(
            [torch.cos(th), torch.sin(th)]))]))[0, 1] for th in thetas]
        assert max(float(r) for r in ranks) > 1 - 1e-9
    C = torch.corrcoef(F.T)
    assert float(C.min()) > 0.6
    assert p.correlated and p.max_hv_source.startswith("estimate")


def test_correlated_problem_reproducible_and_conflicting():
    a, b = make_suite_problem("corr-rff", seed=0), make_suite_problem("corr-rff", seed=1)
    X = a.regret_X[:20]
    torch.testing.assert_close(a.f(X), correlated_again(0)(X))
    assert not torch.allclose(a.f(X), b.f(X))
    F = a.f(a.regret_X)
    assert float(torch.corrcoef(F.T).mean()) > 0.7
    assert int(is_non_dominated(F).sum()) >= 3  # a front, not one point
    assert 30 < hypervolume_percent(a, F) <= 100


def _rank(v: torch.Tensor) -> torch.Tensor:
    return torch.argsort(torch.argsort(v)).to(DT)


def correlated_again(seed: int):
    return corr_rff(seed=seed).f


def test_correlated_problem_refusals():
    bounds = torch.stack([torch.zeros(2, dtype=DT), torch.ones(2, dtype=DT)])
    with pytest.raises(ValueError, match="spread"):
        correlated_problem([lambda X: X[:, 0], lambda X: X[:, 1]], 2, bounds, spread=3.0)
    with pytest.raises(ValueError, match="latents"):
        correlated_problem([lambda X: X[:, 0]], 2, bounds)
    with pytest.raises(ValueError, match="num_objectives"):
        correlated_problem([lambda X: X[:, 0], lambda X: X[:, 1]], 1, bounds)
    with pytest.raises(ValueError, match="independent"):
        correlated_problem([lambda X: X[:, 0], lambda X: X[:, 1]], 2, bounds, independent=-1)
