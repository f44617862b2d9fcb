"""Issue-16 heavy-tailed registry entries: refit schedule, data-driven model, availability."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP, SingleTaskVariationalGP

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.algorithms import ALGORITHMS, RunConfig, get_algorithm
from mtucb_bench.heavy_tailed_problems import synthetic_heavy_tailed_problem
from mtucb_bench.ht_algorithms import ScheduledRefitModel
from mtucb_bench.problems import HeavyTailedProblem

DT = torch.float64
NEW = ("TGP-UCB-practical", "TGP-LogEI-practical", "GP-UCB-practical", "ATA-GP-UCB-practical",
       "STGP-UCB", "STGP-LogEI", "RRP-UCB", "RRP-LogEI", "StudentT-GP-UCB")


def test_refit_schedule_and_conditioning():
    builds = []

    def build(X, Y):
        builds.append(X.shape[0])
        return TruncatedGP(X, Y, 1.0, 1.0, truncate=False)

    g = torch.Generator().manual_seed(0)
    X = torch.rand(70, 1, dtype=DT, generator=g)
    Y = torch.randn(70, 1, dtype=DT, generator=g)
    m = ScheduledRefitModel(build, X[:0], Y[:0], refit_upto=4)
    for t in range(70):
        m = m.condition_on_observations(X[t:t + 1], Y[t:t + 1])
    assert builds == [0, 1, 2, 3, 4, 8, 16, 32, 64]  # every round to 4, then powers of two
    ref = TruncatedGP(X, Y, 1.0, 1.0, truncate=False)
    Xt = torch.rand(5, 1, dtype=DT, generator=g)
    with torch.no_grad():
        assert torch.allclose(m.posterior(Xt).mean, ref.posterior(Xt).mean, atol=1e-9)
    assert m.num_outputs == 1


def test_practical_entries_build_data_driven_and_fitted_models():
    problem = synthetic_heavy_tailed_problem("se", "student", seed=1)
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, problem.num_arms, (12,), generator=g)
    X, Y = problem.arms[idx], problem.sample_rewards(idx, g).unsqueeze(-1)
    cfg = RunConfig(horizon=20)
    setup = get_algorithm("TGP-UCB-practical").build(problem, cfg)
    model = setup.model_factory(X, Y)
    assert isinstance(model.inner, TruncatedGP) and model.inner.constants == "practical"
    acqf = setup.acquisition_factory(model, None)
    assert isinstance(acqf, HeavyTailedUCB) and float(acqf.beta) == 1.0
    assert model.inner.level == "current"  # as the issue-16 suite's practical_truncated_gp
    stgp = get_algorithm("STGP-UCB").build(problem, cfg).model_factory(X, Y)
    assert isinstance(stgp.inner, SingleTaskGP)
    ata = get_algorithm("ATA-GP-UCB-practical").build(problem, cfg)
    am = ata.model_factory(X, Y)
    assert isinstance(am.inner, AdaptiveTruncationGP) and am.inner.constants == "practical"
    assert am.inner.kind == "nystrom" and am.inner.location != 0.0
    a_acq = ata.acquisition_factory(am, None)
    assert isinstance(a_acq, HeavyTailedUCB) and float(a_acq.beta) == 1.0
    with torch.no_grad():
        vals = a_acq(problem.arms.unsqueeze(-2))
    assert vals.shape == (problem.num_arms,) and torch.isfinite(vals).all()
    am2 = am.condition_on_observations(X[:1], Y[:1])  # conditioned between refits
    assert am2.inner.num_observations == 13
    st = get_algorithm("StudentT-GP-UCB").build(problem, cfg)
    sm = st.model_factory(X, Y)
    assert isinstance(sm.inner, SingleTaskVariationalGP)
    sm2 = sm.condition_on_observations(X[:1], Y[:1])  # refit every round
    assert isinstance(sm2.inner, SingleTaskVariationalGP) and sm2.inner is not sm.inner
    with torch.no_grad():
        assert torch.isfinite(st.acquisition_factory(sm, None)(problem.arms.unsqueeze(-2))).all()
    prior = setup.model_factory(X[:1], Y[:1])  # t < 2: a plain GP prior, no fit
    assert isinstance(prior.inner, TruncatedGP) and not prior.inner.truncate
    for name in NEW:
        assert name in ALGORITHMS and ALGORITHMS[name].kind == "heavy_tailed"
    # the paper entries keep the paper's width
    paper = get_algorithm("TGP-UCB").build(problem, cfg)
    pm = paper.model_factory(X, Y)
    assert float(paper.acquisition_factory(pm, None).beta) == pm.beta() != 1.0


def test_practical_entries_need_coordinates():
    K = torch.eye(3, dtype=DT)
    problem = HeavyTailedProblem(
        name="toy", arms=torch.arange(3, dtype=DT).unsqueeze(-1),
        mean_rewards=torch.zeros(3, dtype=DT), regret_f=torch.zeros(3, dtype=DT),
        kernel=lambda: PrecomputedKernel(K), sample_rewards=lambda i, g: torch.zeros(i.shape),
        alpha=1.0, v=1.0, B=1.0,
    )
    for name in NEW:
        assert "arm coordinates" in get_algorithm(name).available(problem)
    assert get_algorithm("TGP-UCB").available(problem) is None


def test_practical_ucb_entries_take_a_width():
    """``NAME@beta=B``: μ + B σ for the heavy-tailed UCBs and BoTorch's UCB(β = B²)."""
    problem = synthetic_heavy_tailed_problem("se", "student", seed=2)
    g = torch.Generator().manual_seed(2)
    idx = torch.randint(0, problem.num_arms, (12,), generator=g)
    X, Y = problem.arms[idx], problem.sample_rewards(idx, g).unsqueeze(-1)
    cfg = RunConfig(horizon=20)
    Xa = problem.arms.unsqueeze(-2)
    for name in ("TGP-UCB-practical", "STGP-UCB"):
        setup = get_algorithm(f"{name}@beta=2.5").build(problem, cfg)
        model = setup.model_factory(X, Y)
        with torch.no_grad():
            post = model.inner.posterior(Xa)
            mean, sd = post.mean.reshape(-1), post.variance.reshape(-1).sqrt()
            vals = setup.acquisition_factory(model, None)(Xa)
        torch.testing.assert_close(vals, mean + 2.5 * sd, atol=1e-10, rtol=1e-10)
    assert get_algorithm("TGP-UCB-practical@beta=2.5").name == "TGP-UCB-practical@beta=2.5"
    with pytest.raises(ValueError, match="no tunable width"):
        get_algorithm("STGP-LogEI@beta=2")


def test_tgp_logei_entry_is_logei_on_the_data_driven_model():
    from botorch.acquisition import LogExpectedImprovement

    problem = synthetic_heavy_tailed_problem("se", "student", seed=3)
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(0, problem.num_arms, (12,), generator=g)
    X, Y = problem.arms[idx], problem.sample_rewards(idx, g).unsqueeze(-1)
    setup = get_algorithm("TGP-LogEI-practical").build(problem, RunConfig(horizon=20))
    model = setup.model_factory(X, Y)
    m = model.inner
    assert isinstance(m, TruncatedGP) and m.truncate and m.clip and m.level == "current"
    acqf = setup.acquisition_factory(model, None)
    assert isinstance(acqf, LogExpectedImprovement)
    with torch.no_grad():
        best = m.posterior(X.unsqueeze(-2)).mean.max()
        torch.testing.assert_close(acqf.best_f, best.expand_as(acqf.best_f))
        ref = LogExpectedImprovement(m, best_f=best)(problem.arms.unsqueeze(-2))
        torch.testing.assert_close(acqf(problem.arms.unsqueeze(-2)), ref)
