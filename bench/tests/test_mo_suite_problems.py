"""Multi-objective suite problems and metrics against BoTorch and brute-force references."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from botorch.test_functions.multi_objective import DTLZ2, ZDT1, BraninCurrin, VehicleSafety
from torch.quasirandom import SobolEngine

from mtucb_bench.metrics import hypervolume_curve
from mtucb_bench.mo_suite_problems import (
    MO_SUITE,
    SuiteProblem,
    hypervolume_percent,
    hypervolume_percent_curve,
    make_suite_problem,
    suite_metrics,
)
from mtucb_bench.problems import MultiTaskProblem

DT = torch.float64
CHEAP = ["branin-currin", "vehicle-safety", "car-side-impact", "zdt1", "zdt2", "zdt3", "dtlz2"]


def _hv_2d(Y: torch.Tensor, ref: torch.Tensor) -> float:
    """Brute-force 2-D hypervolume (maximisation): sweep the points by decreasing y1."""
    Y = Y[(Y > ref).all(dim=-1)]
    order = torch.argsort(Y[:, 0], descending=True)
    hv, best2 = 0.0, float(ref[1])
    for i in order.tolist():
        y1, y2 = float(Y[i, 0]), float(Y[i, 1])
        if y2 > best2:
            hv += (y1 - float(ref[0])) * (y2 - best2)
            best2 = y2
    return hv


@pytest.mark.parametrize(
    "name, make",
    [
        ("branin-currin", lambda: BraninCurrin(negate=True)),
        ("vehicle-safety", lambda: VehicleSafety(negate=True)),
        ("zdt1", lambda: ZDT1(dim=4, negate=True)),
        ("dtlz2", lambda: DTLZ2(dim=6, num_objectives=3, negate=True)),
    ],
)
def test_botorch_problems_match_botorch(name, make):
    """f, reference point and max HV are BoTorch's, negated, in both unit systems."""
    bt = make().to(DT)
    raw = make_suite_problem(name, units="raw")
    norm = make_suite_problem(name)
    X = raw.regret_X[:50]
    expected = -bt.evaluate_true(X)
    torch.testing.assert_close(raw.f(X), expected)
    torch.testing.assert_close(norm.f(X) * norm.scale + norm.raw_ref_point, expected)
    torch.testing.assert_close(raw.ref_point, bt.ref_point.to(DT))  # negated by BoTorch
    assert raw.max_hv == pytest.approx(bt.max_hv)
    assert norm.max_hv * float(norm.scale.prod()) == pytest.approx(bt.max_hv)
    torch.testing.assert_close(norm.ref_point, torch.zeros(bt.num_objectives, dtype=DT))
    torch.testing.assert_close(raw.bounds, bt.bounds.to(DT))
    assert raw.max_hv_source == "botorch" and not raw.correlated
    # hypervolume % is invariant to the normalisation
    F_raw, F_norm = raw.f(raw.regret_X), norm.f(norm.regret_X)
    assert hypervolume_percent(raw, F_raw) == pytest.approx(hypervolume_percent(norm, F_norm))


def test_hypervolume_percent_against_brute_force_2d():
    p = make_suite_problem("branin-currin")
    F = p.f(p.regret_X[:300])
    assert hypervolume_percent(p, F) == pytest.approx(
        100 * _hv_2d(F, p.ref_point) / p.max_hv, rel=1e-9
    )


def test_hypervolume_percent_against_monte_carlo_3d():
    p = make_suite_problem("vehicle-safety")
    F = p.f(p.regret_X[:200])
    lo, hi = p.ref_point, F.max(dim=0).values
    g = torch.Generator().manual_seed(0)
    Z = lo + (hi - lo) * torch.rand(200_000, 3, generator=g, dtype=DT)
    dominated = (F[None, :, :] >= Z[:, None, :]).all(dim=-1).any(dim=-1).double()
    mc = float(dominated.mean() * (hi - lo).prod())
    se = float(dominated.std() / math.sqrt(Z.shape[0]) * (hi - lo).prod())
    assert abs(hypervolume_percent(p, F) * p.max_hv / 100 - mc) < 4 * se + 1e-12


def test_hypervolume_curve_matches_botorch_hypervolume():
    p = make_suite_problem("dtlz2")
    F = p.f(p.regret_X[:120])
    curve = hypervolume_percent_curve(p, F)
    ref = hypervolume_curve(F, p.ref_point) * 100 / p.max_hv  # BoTorch's Hypervolume class
    torch.testing.assert_close(curve, ref)
    assert curve[-1] > 0 and bool((curve.diff() >= 0).all())


@pytest.mark.parametrize("name", ["zdt1", "dtlz2"])
def test_pareto_set_reaches_max_hypervolume(name):
    """Points of the known Pareto set reach (almost) 100 % and never more."""
    p = make_suite_problem(name)
    if name == "zdt1":
        X = torch.zeros(400, 4, dtype=DT)
        X[:, 0] = torch.linspace(0, 1, 400, dtype=DT)
    else:  # DTLZ2: distance variables at 0.5, position variables on a grid
        s = torch.linspace(0, 1, 30, dtype=DT)
        G = torch.cartesian_prod(s, s)
        X = torch.cat([G, torch.full((G.shape[0], 4), 0.5, dtype=DT)], dim=-1)
    pct = hypervolume_percent(p, p.f(X))
    assert 97.0 < pct <= 100.0 + 1e-6


def test_all_problems_are_multitask_problems():
    for name in CHEAP:
        p = make_suite_problem(name)
        assert isinstance(p, MultiTaskProblem) and isinstance(p, SuiteProblem)
        n = p.num_objectives
        assert p.task_covar.shape == (n, n) and p.b > 0 and p.bounds.shape == (2, p.dim)
        assert bool((torch.linalg.eigvalsh(p.task_covar) > -1e-9).all())
        Y = p.observer(torch.Generator().manual_seed(0))(p.regret_X[:3])
        torch.testing.assert_close(Y, p.f(p.regret_X[:3]))  # noise-free by default
        k = p.scalar_kernel()
        torch.testing.assert_close(k.lengthscale[0], 0.2 * (p.bounds[1] - p.bounds[0]))


def test_noise_is_added():
    p = make_suite_problem("zdt1", noise_std=0.05)
    X = p.regret_X[:2000]
    Y = p.observer(torch.Generator().manual_seed(1))(X)
    assert float((Y - p.f(X)).std()) == pytest.approx(0.05, rel=0.05)


def test_suite_metrics_against_brute_force():
    p = dataclasses.replace(make_suite_problem("branin-currin"), polish_regret=False)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(8, 2, generator=g, dtype=DT)
    W = torch.softmax(torch.randn(5, 2, generator=g, dtype=DT), -1)
    out = suite_metrics(p, X, W, wall_time=torch.tensor([1.0, 2, 3, 4, 5]), num_initial=3)
    F, F_ref = p.f(X), p.f(p.regret_X)
    r = []
    for t in range(5):
        s_ref = (W[t] * (F_ref - p.ref_point)).min(-1).values.max()
        s_x = (W[t] * (F[3 + t] - p.ref_point)).min()
        r.append(float(torch.clamp(s_ref - s_x, min=0)))
    r = torch.tensor(r, dtype=DT)
    torch.testing.assert_close(out["time_average_regret"], r.cumsum(0) / torch.arange(1, 6))
    assert out["hv_pct"] == pytest.approx(hypervolume_percent(p, F))
    assert out["wall_time_per_round"] == pytest.approx(3.0)
    br = out["bayes_regret"]
    assert br.shape == (8,) and bool((br.diff() <= 1e-12).all()) and bool((br >= 0).all())
    # the polished version can only find larger optima: regrets >= the grid ones
    polished = suite_metrics(make_suite_problem("branin-currin"), X, W, num_initial=3)
    assert bool((polished["time_average_regret"] >= out["time_average_regret"] - 1e-12).all())


def test_bad_inputs_are_refused():
    p = make_suite_problem("zdt1")
    with pytest.raises(ValueError, match="Unknown suite problem"):
        make_suite_problem("zdt9")
    with pytest.raises(ValueError, match="units"):
        make_suite_problem("zdt1", units="si")
    with pytest.raises(ValueError, match="noise_std"):
        make_suite_problem("zdt1", noise_std=-1.0)
    with pytest.raises(ValueError, match="`Y` must be an N x n"):
        hypervolume_percent(p, torch.zeros(3, 5, dtype=DT))
    with pytest.raises(ValueError, match="`weights` must be T x n"):
        suite_metrics(p, p.regret_X[:4], torch.ones(2, 2, dtype=DT) / 2, num_initial=1)
    with pytest.raises(ValueError, match="`X` must be N x d"):
        suite_metrics(p, torch.zeros(3, 2, dtype=DT))
    with pytest.raises(ValueError, match="max_hv"):
        dataclasses.replace(p, max_hv=0.0)
    assert set(CHEAP) < set(MO_SUITE)


def test_run_suite_protocol_is_the_suite_loop_with_the_trial_seeds():
    """The scripts' shared protocol equals run_bo_loop called with the suite's settings."""
    import warnings

    from botorch_mtucb.acquisition import ScalarizationSampler, ScalarizedMultiTaskUCB
    from botorch_mtucb.loop import BoxOptimizer, run_bo_loop
    from botorch_mtucb.models import practical_multitask_gp
    from botorch_mtucb.utils import sobol_initial_design
    from mtucb_bench.mo_suite_problems import run_suite_protocol

    p, s = make_suite_problem("zdt1", seed=0), 3
    X0 = sobol_initial_design(p.bounds, seed=s)

    def mf(X, Y):
        return practical_multitask_gp(X, Y, p.bounds)

    def acq(m, scal):
        return ScalarizedMultiTaskUCB(m, scal, 1.0, bound="directional")

    # BoTorch's fit retries and optimize_acqf's second try draw from the global RNG: the same
    # state for both runs (the test's result must not depend on the tests run before it).
    torch.manual_seed(s)
    got = run_suite_protocol(p, X0, 1, mf, acq, s)
    torch.manual_seed(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = run_bo_loop(
            observe=p.observer(torch.Generator().manual_seed(s + 2)), initial_X=X0, num_rounds=1,
            model_factory=mf, acquisition_factory=acq,
            optimizer=BoxOptimizer(p.bounds, num_restarts=4, raw_samples=256, seed=s),
            scalarization_sampler=ScalarizationSampler(2, "chebyshev", ref_point=p.ref_point),
            update="refit", generator=torch.Generator().manual_seed(s + 3),
        )
    assert torch.equal(got.rounds[0].weights, ref.rounds[0].weights)
    torch.testing.assert_close(got.X, ref.X, atol=1e-6, rtol=0)


def test_trial_sobol_points_are_the_scripts_design_and_its_continuation():
    """The component-swap scripts' design: scrambled Sobol (seed + 1) on the box; a prefix of
    a longer draw equals the shorter draw (the Sobol arm continues the design)."""
    from botorch_mtucb.utils import initial_design_size
    from mtucb_bench.mo_suite_problems import trial_sobol_points

    p = make_suite_problem("vehicle-safety", seed=4)
    n0 = initial_design_size(p.dim)
    U = SobolEngine(p.dim, scramble=True, seed=5).draw(n0).to(torch.float64)
    ref = p.bounds[0] + (p.bounds[1] - p.bounds[0]) * U
    assert torch.equal(trial_sobol_points(p, 4, n0), ref)
    assert torch.equal(trial_sobol_points(p, 4, n0 + 7)[:n0], ref)
    X = trial_sobol_points(p, 4, 64)
    assert bool((X >= p.bounds[0]).all() and (X <= p.bounds[1]).all())
    assert not torch.equal(trial_sobol_points(p, 5, n0), ref)
