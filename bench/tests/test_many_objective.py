"""Many-objective suite: the Monte-Carlo hypervolume against BoTorch's exact one, DTLZ7's
maximum hypervolume, the problems' construction and registration, and a suite smoke run."""

from __future__ import annotations

import json
import math
import sys
import time

import pytest
import torch
from botorch.test_functions.multi_objective import DTLZ1, DTLZ2, DTLZ7
from botorch.utils.multi_objective.box_decompositions.dominated import DominatedPartitioning
from botorch.utils.multi_objective.pareto import is_non_dominated

from mtucb_bench.experiments import EXPERIMENTS
from mtucb_bench.hypervolume_mc import (
    box_hypervolume,
    exact_is_feasible,
    hypervolume,
    mc_hypervolume,
    mc_hypervolume_curve,
    union_hypervolume,
)
from mtucb_bench.many_objective_problems import (
    DTLZ_K,
    MANY_SUITE,
    dtlz7_max_hv,
    make_many_problem,
)
from mtucb_bench.mo_suite_base import sobol_points

DT = torch.float64


def _exact(Y, ref):
    Y = Y[(Y > ref).all(-1)]
    Y = Y[is_non_dominated(Y)]
    return float(DominatedPartitioning(ref_point=ref, Y=Y).compute_hypervolume())


def _front(n, P, seed, concave=True):
    g = torch.Generator().manual_seed(seed)
    Y = torch.rand(P, n, generator=g, dtype=DT)
    return Y / (Y.norm(dim=-1, keepdim=True) if concave else Y.sum(-1, keepdim=True))


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_mc_estimators_agree_with_exact_within_a_few_standard_errors(n):
    """Both estimators on small fronts (sphere and simplex points, a shifted reference)."""
    for seed, concave in ((0, True), (1, False)):
        Y = _front(n, 12 + 4 * n, seed, concave)
        ref = torch.full((n,), 0.05 * seed, dtype=DT)
        exact = _exact(Y, ref)
        for est in (box_hypervolume(Y, ref, None, 2**15, seed=3),
                    union_hypervolume(Y, ref, 2**15, seed=3)):
            value, se = est
            assert se > 0
            assert abs(value - exact) < 4 * se, (n, seed, value, exact, se)
            assert se < 0.05 * exact  # and the error is small at S = 2^15


def test_mc_standard_error_falls_as_one_over_root_samples():
    Y, ref = _front(4, 20, 0), torch.zeros(4, dtype=DT)
    exact = _exact(Y, ref)
    for fn in (lambda S, s: box_hypervolume(Y, ref, None, S, s),
               lambda S, s: union_hypervolume(Y, ref, S, s)):
        se1, se16 = fn(2**12, 0)[1], fn(2**16, 0)[1]
        assert se16 / se1 == pytest.approx(0.25, rel=0.1)
        # the reported error is the actual spread over seeds
        vals = torch.tensor([fn(2**10, s)[0] for s in range(200)], dtype=DT)
        assert float(vals.std()) == pytest.approx(fn(2**10, 0)[1], rel=0.25)
        assert abs(float(vals.mean()) - exact) < 4 * float(vals.std()) / math.sqrt(200)


def test_box_estimator_is_exact_formula_on_one_box():
    """One point y: the dominated region is the whole box [r, y], so p = 1 and se = 0."""
    y = torch.tensor([[0.5, 2.0, 1.0]], dtype=DT)
    v, se = box_hypervolume(y, torch.zeros(3, dtype=DT), None, 1000)
    assert v == pytest.approx(1.0) and se == 0.0
    # with a larger box the fraction is the volume ratio
    v, se = box_hypervolume(y, torch.zeros(3, dtype=DT), torch.ones(3, dtype=DT) * 2, 2**16)
    assert abs(v - 1.0) < 4 * se and se > 0


def test_curve_is_the_prefix_estimate_on_one_sample():
    Y = torch.cat([_front(5, 30, 2), torch.full((1, 5), -1.0, dtype=DT)])  # last: outside
    ref = torch.zeros(5, dtype=DT)
    curve, se = mc_hypervolume_curve(Y, ref, None, 2**14, seed=7)
    assert curve.shape == (31,) and bool((curve.diff() >= 0).all())
    u = Y[:30].max(0).values
    for t in (0, 9, 29):
        v, s = box_hypervolume(Y[: t + 1], ref, u, 2**14, seed=7)
        assert float(curve[t]) == pytest.approx(v, rel=1e-12)
        assert float(se[t]) == pytest.approx(s, rel=1e-12)
    assert float(curve[-1]) == float(curve[-2])
    assert abs(float(curve[-1]) - _exact(Y, ref)) < 4 * float(se[-1])


def test_hypervolume_size_rule_and_methods():
    assert exact_is_feasible(3, 10**6) and exact_is_feasible(5, 200)
    assert not exact_is_feasible(5, 201) and not exact_is_feasible(8, 5)
    Y = _front(3, 20, 0)
    ref = torch.zeros(3, dtype=DT)
    est = hypervolume(Y, ref)
    assert est.method == "exact" and est.se == 0 and est.value == pytest.approx(_exact(Y, ref))
    Y8 = _front(8, 30, 0)
    est = hypervolume(Y8, torch.zeros(8, dtype=DT), 2**14)
    assert est.method in ("box", "union") and est.se > 0 and est.num_samples == 2**14
    # the chosen estimator is the more precise one here: the union's error is far smaller
    assert est.method == "union"
    assert est.se < 0.5 * box_hypervolume(Y8, torch.zeros(8, dtype=DT), None, 2**14)[1]
    v, se, used = mc_hypervolume(Y8, torch.zeros(8, dtype=DT), 2**14, estimator="union")
    assert (v, se, used) == (est.value, est.se, "union")
    assert hypervolume(torch.full((2, 8), -1.0, dtype=DT), torch.zeros(8, dtype=DT)).value == 0
    with pytest.raises(ValueError, match="ref_point"):
        hypervolume(Y, torch.zeros(2, dtype=DT))
    with pytest.raises(ValueError, match="method"):
        hypervolume(Y, ref, method="wfg")


def test_dtlz7_max_hv_matches_botorch_front():
    """The quadrature against the exact HV of BoTorch's DTLZ7 on a dense grid of its Pareto
    set (x_m = 0): a lower bound that approaches it."""
    n, k = 3, 4
    p = DTLZ7(dim=n + k - 1, num_objectives=n).to(DT)
    u = torch.linspace(0, 1, 121, dtype=DT)
    U = torch.cartesian_prod(u, u)
    F = p(torch.cat([U, torch.zeros(U.shape[0], k, dtype=DT)], -1), noise=False)
    hv_grid = _exact(-F, -p.ref_point)  # maximised form
    hv = dtlz7_max_hv(n)
    assert hv_grid <= hv * (1 + 1e-9) and hv_grid > hv * (1 - 2e-3)


def test_dtlz7_max_hv_branches_agree():
    """ref ≥ 2n (closed form) against the quasi-Monte-Carlo expectation written out here."""
    n, ref = 6, 15.0
    w = torch.linspace(0, 1, 200_001, dtype=DT)
    H = torch.cummax(0.5 * w * (1 + torch.sin(3 * math.pi * w)), 0).values
    Z = ref * torch.quasirandom.SobolEngine(n - 1, scramble=True, seed=1).draw(2**18, dtype=DT)
    idx = (Z.clamp(max=1.0) * 200_000).round().long()
    qmc = ref ** (n - 1) * float((ref - 2 * n + 2 * H[idx].sum(-1)).clamp_min(0).mean())
    assert dtlz7_max_hv(n) == pytest.approx(qmc, rel=1e-4)
    # ref < 2n: the positive part matters; the value is below the linear formula's
    assert 0 < dtlz7_max_hv(10) < 15.0**10


@pytest.mark.parametrize("kind,cls", [("dtlz1", DTLZ1), ("dtlz2", DTLZ2), ("dtlz7", DTLZ7)])
def test_dtlz_problems(kind, cls):
    for n in (5, 10):
        name = f"{kind}-n{n}"
        assert f"many-{name}" in EXPERIMENTS
        p, raw = make_many_problem(name), make_many_problem(name, units="raw")
        d = n + DTLZ_K[kind] - 1
        bp = cls(dim=d, num_objectives=n, negate=True).to(DT)
        assert (p.num_objectives, p.dim) == (n, d)
        assert torch.equal(raw.ref_point, bp.ref_point.to(DT))
        assert torch.equal(p.ref_point, torch.zeros(n, dtype=DT))
        X = sobol_points(512, p.bounds, 3)
        Fr = bp(X, noise=False)
        assert torch.allclose(raw.f(X), Fr)
        assert torch.allclose(p.f(X) * p.scale + bp.ref_point, Fr)
        assert float(p.f(X).max()) <= 1 + 1e-12  # the scale's upper point is the ideal point
        if kind != "dtlz7":
            assert raw.max_hv == pytest.approx(float(bp.max_hv))
            assert p.max_hv_source == "botorch"
        else:
            assert raw.max_hv == pytest.approx(dtlz7_max_hv(n)) and "dtlz7" in p.max_hv_source
        assert p.max_hv == pytest.approx(raw.max_hv / float(p.scale.prod()))
        assert p.max_hv_se == 0
        assert p.initial_design == "paper"  # the experiment stamps "sobol"
        assert EXPERIMENTS[f"many-{name}"].initial_design == "sobol"


def test_correlated_problem():
    p = make_many_problem("corr-mix-n6")
    assert (p.num_objectives, p.dim) == (6, 6) and p.correlated
    F = p.f(sobol_points(1024, p.bounds, 5))
    C = torch.corrcoef(F.T)
    assert float(C.min()) > 0.3 and float(C.mean()) > 0.7  # correlated objectives
    front = F[is_non_dominated(F)]
    assert front.shape[0] > 6  # ... that still conflict
    # the reference point rule: 10 % quantiles over 4096 Sobol points (normalised: 0)
    G = p.f(sobol_points(4096, p.bounds, 99)) * p.scale + p.raw_ref_point  # raw units
    assert torch.allclose(p.raw_ref_point, G.quantile(0.1, dim=0))
    assert float(p.f(sobol_points(4096, p.bounds, 7)).max()) <= 1 + 1e-9  # u: the ideal point
    # the max HV estimate bounds what a dense sample reaches and carries its error
    est = hypervolume(F, p.ref_point, 2**15)
    assert 0 < p.max_hv_se < 0.01 * p.max_hv and est.value < p.max_hv
    assert p.max_hv_source.startswith("estimate")
    assert set(MANY_SUITE) >= {"corr-mix-n6", "corr-mix-n8"}
    with pytest.raises(ValueError, match="Unknown many-objective problem"):
        make_many_problem("dtlz3-n5")


def test_suite_smoke(tmp_path, monkeypatch):
    """1 trial, T = 3, two problems, two methods: run (the CLI), then summarize."""
    from mtucb_bench.suites import many_suite

    t0 = time.perf_counter()
    out, results = tmp_path / "runs", tmp_path / "results"
    monkeypatch.setattr(sys, "argv", ["many_suite"])
    many_suite.main(["run", "--problems", "dtlz1-n5", "dtlz2-n5", "--trials", "1",
                     "--horizon", "3", "--workers", "0", "--algorithms", "MT-UCB", "Sobol",
                     "--out", str(out)])
    many_suite.main(["summarize", "--rounds", "3", "--samples", "4096", "--out", str(out),
                     "--results", str(results), "--cache", str(tmp_path / "cache.json")])
    summary = json.loads((results / "summary.json").read_text())
    assert "commit" in summary["provenance"]
    probs = summary["problems"]
    assert set(probs) == {"dtlz1-n5", "dtlz2-n5"}
    for v in probs.values():
        assert v["problem"]["n"] == 5
        assert set(v["algorithms"]) == {"MT-UCB", "Sobol"}
        for row in v["algorithms"].values():
            assert row["trials"] == 1 and row["k3"]["methods"] == ["exact"]
            assert row["k3"]["hv_pct"][0] >= row["k0"]["hv_pct"][0] >= 0
        assert v["paired_MT-UCB"]["Sobol"]["3"]["trials"] == 1
    assert "many-dtlz1-n5" in (results / "tables.md").read_text()
    # the cache reproduces the summary
    again = many_suite.summarize_runs(
        many_suite.load_runs(out, [3], 4096, json.loads((tmp_path / "cache.json").read_text())),
        [3], "MT-UCB")[0]
    assert json.loads(json.dumps(again["dtlz1-n5"]["algorithms"]["Sobol"]["k3"])) == \
        probs["dtlz1-n5"]["algorithms"]["Sobol"]["k3"]
    assert time.perf_counter() - t0 < 120


def test_suite_summarize_without_trials_writes_nothing(tmp_path, capsys):
    from mtucb_bench.suites import many_suite

    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(SystemExit) as exit_:
            many_suite.main(["summarize", "--out", str(out), "--results", str(tmp_path / "res")])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.startswith(f"error: No trial files under {out}")
    assert not (tmp_path / "res").exists()


def test_suite_summarize_refuses_a_trial_found_twice(tmp_path, capsys, monkeypatch):
    """The same trial of one algorithm in a problem's folder and its +tag folder: a usage
    error naming it, nothing written (no traceback)."""
    import json

    from mtucb_bench.suites import many_suite

    monkeypatch.setattr(many_suite, "trial_metrics", lambda rec, rounds, samples: {})
    for folder in ("many-dtlz2-n5", "many-dtlz2-n5+rerun"):
        (tmp_path / "out" / folder).mkdir(parents=True)
        (tmp_path / "out" / folder / "trial0_MT-UCB.json").write_text(
            json.dumps({"algorithm": "MT-UCB", "trial": 0}))
    with pytest.raises(SystemExit) as exit_:
        many_suite.main(["summarize", "--out", str(tmp_path / "out"), "--results",
                         str(tmp_path / "res")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: many-dtlz2-n5: MT-UCB trial 0 appears twice")
    assert not (tmp_path / "res").exists()
