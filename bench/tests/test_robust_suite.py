"""Robust suite: methods, common random numbers, resumable runs, paired summaries."""

from __future__ import annotations

import json

import pytest
import torch
from usage_errors import assert_usage_error

from mtucb_bench.noise_models import GrossOutlierNoise
from mtucb_bench.robust_methods import (
    METHODS,
    PRODUCT_METHODS,
    available_methods,
    run_robust_trial,
    split_replicate,
)
from mtucb_bench.robust_suite_problems import robust_suite_problem
from mtucb_bench.suites import robust_suite as rs

DT = torch.float64
CHEAP = ["STGP-LogEI", "TGP-UCB", "TGP-LogEI", "ATA-UCB", "ATA-LogEI"]


def test_common_random_numbers_same_design_and_noise_stream():
    p = robust_suite_problem("branin/gross")
    a = run_robust_trial(p, "STGP-LogEI", seed=3, rounds=2)
    b = run_robust_trial(p, "TGP-UCB", seed=3, rounds=2)
    n0 = a["n_init"]
    assert n0 == b["n_init"] == 5
    assert a["inputs"][:n0] == b["inputs"][:n0]
    assert a["observations"][:n0] == b["observations"][:n0]
    # the noise of every evaluation is the stream's next draw (design, then one per round),
    # whatever point the method chose
    gen = torch.Generator().manual_seed(3 + 1)
    noise = GrossOutlierNoise(scale=0.1, rate=0.04, low=5.0, high=20.0)
    stream = torch.cat([noise.sample((n0,), gen), noise.sample((1,), gen),
                        noise.sample((1,), gen)])
    for rec in (a, b):
        X = torch.tensor(rec["inputs"], dtype=DT)
        eps = torch.tensor(rec["observations"], dtype=DT) - p.f(X)
        assert torch.allclose(eps, stream, atol=1e-12)
    assert len(a["simple_regret"]) == 3 and len(a["seconds"]) == 2
    # another seed: another design
    c = run_robust_trial(p, "STGP-LogEI", seed=4, rounds=0)
    assert c["inputs"][:n0] != a["inputs"][:n0]


def test_simple_regret_is_of_the_posterior_mean_argmax():
    p = robust_suite_problem("branin/clean")
    rec = run_robust_trial(p, "TGP-LogEI", seed=0, rounds=1)
    X = torch.tensor(rec["inputs"][:-1], dtype=DT)  # data of the last model: all but the last
    x_rec = torch.tensor(rec["recommendations"][-2], dtype=DT)
    assert any(torch.equal(x_rec, x) for x in X)
    assert rec["simple_regret"][-2] == pytest.approx(float(p.regret(x_rec.unsqueeze(0))))


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_runs_two_rounds(method):
    if method in PRODUCT_METHODS and method not in available_methods():
        pytest.skip("botorch_mtucb does not export robust_gp / robust_acquisition / recommend")
    rec = run_robust_trial(robust_suite_problem("branin/failure"), method, seed=1, rounds=2,
                           num_restarts=2, raw_samples=32)
    assert len(rec["simple_regret"]) == 3 and all(r >= -1e-9 for r in rec["simple_regret"])
    assert len(rec["seconds"]) == 2 and len(rec["inputs"]) == rec["n_init"] + 2


def test_unknown_method():
    with pytest.raises(ValueError, match="Unknown method"):
        run_robust_trial(robust_suite_problem("branin/clean"), "nope", seed=0)
    with pytest.raises(ValueError, match="Unknown method"):
        run_robust_trial(robust_suite_problem("branin/clean"), "nope@1", seed=0)
    for bad in ("STGP-LogEI@0", "STGP-LogEI@x", "STGP-LogEI@", "STGP-LogEI@-1"):
        with pytest.raises(ValueError, match="integer >= 1"):
            split_replicate(bad)
    assert split_replicate("STGP-LogEI") == ("STGP-LogEI", 0)
    assert split_replicate("ROBUST-UCB@2") == ("ROBUST-UCB", 2)


def test_replicate_shares_design_and_readings_not_the_restarts(monkeypatch):
    """``"<method>@k"``: the same design and reading stream, restarts seeded apart."""
    import mtucb_bench.robust_methods as rm

    seeds = []
    real = torch.manual_seed
    monkeypatch.setattr(rm.torch, "manual_seed", lambda s: seeds.append(s) or real(s))
    p = robust_suite_problem("levy4/gross")
    a = run_robust_trial(p, "STGP-LogEI", seed=2, rounds=3, num_restarts=2, raw_samples=16)
    b = run_robust_trial(p, "STGP-LogEI@1", seed=2, rounds=3, num_restarts=2, raw_samples=16)
    assert seeds == [4, 5, 6, 4 + rm.REPLICATE_SEED_STRIDE, 5 + rm.REPLICATE_SEED_STRIDE,
                     6 + rm.REPLICATE_SEED_STRIDE]
    n0 = a["n_init"]
    assert a["inputs"][:n0] == b["inputs"][:n0] and a["method"] == "STGP-LogEI"
    assert b["method"] == "STGP-LogEI@1" and a["inputs"] != b["inputs"]
    # the readings' noise is the stream's, wherever each run evaluated
    for rec in (a, b):
        X = torch.tensor(rec["inputs"], dtype=DT)
        eps = torch.tensor(rec["observations"], dtype=DT) - p.f(X)
        assert torch.allclose(eps, torch.tensor(a["observations"], dtype=DT)
                              - p.f(torch.tensor(a["inputs"], dtype=DT)), atol=1e-12)


def _fake_record(u: dict) -> dict:
    return {"cell": u["cell"], "method": u["method"], "seed": u["seed"], "rounds": u["rounds"],
            "num_restarts": 4, "raw_samples": 256, "simple_regret": [1.0] * (u["rounds"] + 1),
            "seconds": [0.1] * u["rounds"], "fit_seconds": [0.05] * u["rounds"]}


def test_run_is_resumable_and_never_overwrites(tmp_path, monkeypatch, capsys):
    out = tmp_path / "runs"
    args = ["run", "--trials", "1", "--rounds", "1", "--cells", "branin/clean",
            "--methods", "TGP-UCB", "--num-restarts", "2", "--raw-samples", "16",
            "--out", str(out)]
    with pytest.raises(SystemExit) as exit_:
        rs.main(args)  # a real unit
    assert exit_.value.code == 0
    path = out / "branin__clean" / "TGP-UCB_r1_t0.json"
    rec = json.loads(path.read_text())
    assert rec["cell"] == "branin/clean" and rec["kind"] == "clean"
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    calls = []
    monkeypatch.setattr(rs, "run_unit", lambda u: calls.append(u) or {"unit": u,
                                                                      "record": _fake_record(u)})
    with pytest.raises(SystemExit):
        rs.main(args[:2] + ["2"] + args[3:])  # trials 0 and 1: only trial 1 runs
    assert [(u["method"], u["seed"]) for u in calls] == [("TGP-UCB", 1)]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert "1 of 2 units to run (1 finished, kept)" in capsys.readouterr().out
    # a unit finished by someone else while this run computed it is kept, not overwritten
    other = out / "branin__clean" / "TGP-UCB_r1_t2.json"

    def racing(u):
        other.write_text('{"planted": true}')
        return {"unit": u, "record": _fake_record(u)}

    monkeypatch.setattr(rs, "run_unit", racing)
    with pytest.raises(SystemExit):
        rs.main(args[:2] + ["1"] + args[3:] + ["--first-trial", "2"])
    assert json.loads(other.read_text()) == {"planted": True}
    assert "exists, kept" in capsys.readouterr().out


def _rec(cell, method, seed, final, mid=9.0, seconds=(0.1, 0.1)):
    return {"cell": cell, "method": method, "seed": seed, "rounds": 2, "num_restarts": 4,
            "raw_samples": 256, "simple_regret": [10.0, mid, final], "seconds": list(seconds),
            "fit_seconds": [s / 2 for s in seconds]}


def _fixture() -> list[dict]:
    g, c = "branin/gross", "branin/clean"
    recs = []
    for s, (st, rr, ro) in enumerate([(1.0, 2.0, 0.5), (2.0, 1.0, 1.5), (3.0, 3.0, 3.0),
                                      (4.0, 0.5, 1.0)]):
        recs += [_rec(g, "STGP-LogEI", s, st, seconds=(0.2, 0.2)),
                 _rec(g, "RRP-LogEI", s, rr, seconds=(1.0, 1.0)),
                 _rec(g, "ROBUST-UCB", s, ro, mid=2.0 * s, seconds=(0.1, 0.1))]
        recs += [_rec(c, "STGP-LogEI", s, 1.0), _rec(c, "RRP-LogEI", s, 2.0, seconds=(1.0, 1.0)),
                 _rec(c, "ROBUST-UCB", s, 1.2, seconds=(0.6, 0.6))]
    return recs


def test_summarize_paired_counts_by_hand():
    recs = [r for r in _fixture() if r["cell"] == "branin/gross"]
    cell = rs.summarize_cell(recs, at=1)
    rob = cell["ROBUST-UCB"]
    assert rob["final"]["mean"] == pytest.approx(1.5)
    assert rob["round_1"]["mean"] == pytest.approx(3.0)  # mid = 0, 2, 4, 6
    assert rob["seconds_per_round"] == pytest.approx(0.1)
    p = rob["paired"]
    # ROBUST-UCB [0.5, 1.5, 3, 1] vs STGP [1, 2, 3, 4]: 3 wins, 1 tie; vs RRP [2, 1, 3, 0.5]: 1-1-2
    assert {k: p["STGP-LogEI"][k] for k in ("n", "wins", "ties", "losses")} == {
        "n": 4, "wins": 3, "ties": 1, "losses": 0}
    assert p["STGP-LogEI"]["sign_test_p"] == pytest.approx(0.25)
    assert (p["RRP-LogEI"]["wins"], p["RRP-LogEI"]["ties"], p["RRP-LogEI"]["losses"]) == (1, 1, 2)
    # the better baseline by mean: RRP (1.625 < 2.5); per-seed min [1, 1, 3, 0.5]: 1-1-2
    assert p["best_baseline"]["baseline"] == "RRP-LogEI"
    assert (p["best_baseline"]["wins"], p["best_baseline"]["losses"]) == (1, 2)
    assert (p["per_seed_min"]["wins"], p["per_seed_min"]["ties"],
            p["per_seed_min"]["losses"]) == (1, 1, 2)
    # baselines against each other: STGP vs RRP [1,2,3,4] vs [2,1,3,0.5]: 1-1-2
    q = cell["STGP-LogEI"]["paired"]["RRP-LogEI"]
    assert (q["wins"], q["ties"], q["losses"]) == (1, 1, 2)
    assert "per_seed_min" not in cell["STGP-LogEI"]["paired"]
    assert cell["RRP-LogEI"]["paired"].get("best_baseline") is None  # it is the best


def test_targets_by_hand():
    recs = _fixture()
    cells = {c: rs.summarize_cell([r for r in recs if r["cell"] == c], at=1)
             for c in ("branin/gross", "branin/clean")}
    t = rs.targets(cells)
    # gross: 1.5 <= 1.2 × 1.625 pass; clean: 1.2 <= 1.2 × 1.0 pass (min baseline STGP = 1)
    reg = t["regret_vs_best_baseline"]
    assert (reg["passed"], reg["of"]) == (2, 2)
    assert reg["cells"]["branin/gross"]["ratio"] == pytest.approx(1.5 / 1.625)
    # every seed is common here: the same check
    com = t["regret_vs_best_baseline_common_seeds"]
    assert (com["passed"], com["of"]) == (2, 2)
    assert com["cells"]["branin/gross"]["ratio"] == pytest.approx(1.5 / 1.625)
    assert com["cells"]["branin/gross"]["seeds"] == 4
    # clean: 1.2 > 1.1 × 1.0 fails
    cl = t["clean_vs_stgp"]
    assert (cl["passed"], cl["of"]) == (0, 1) and not cl["cells"]["branin/clean"]["pass"]
    # time: gross 0.1 / 1.0 pass, clean 0.6 / 1.0 fails; pooled 0.35 / 1.0 fails
    tm = t["time_vs_rrp"]
    assert (tm["passed"], tm["of"]) == (1, 2)
    assert tm["pooled"]["ratio"] == pytest.approx(0.35) and not tm["pooled"]["pass"]


def test_common_seed_target_uses_only_the_seeds_every_method_ran():
    """RRP on seeds 0 and 3 only: means over those two seeds (ROBUST [0.5, 1], STGP [1, 4],
    RRP [2, 0.5]): 0.75 vs min(2.5, 1.25) = 1.25, ratio 0.6; on all seeds RRP's mean is
    (2 + 0.5) / 2 = 1.25 against ROBUST's 1.5 over four seeds."""
    recs = [r for r in _fixture() if r["cell"] == "branin/gross"
            and (r["method"] != "RRP-LogEI" or r["seed"] in (0, 3))]
    t = rs.targets({"branin/gross": rs.summarize_cell(recs, at=1)})
    assert t["regret_vs_best_baseline"]["cells"]["branin/gross"]["ratio"] == pytest.approx(
        1.5 / 1.25)
    com = t["regret_vs_best_baseline_common_seeds"]["cells"]["branin/gross"]
    assert com["seeds"] == 2 and com["ratio"] == pytest.approx(0.75 / 1.25) and com["pass"]


def _write_fixture(tmp_path):
    """The fixture's units under ``tmp_path/runs``; returns ``(runs, results)`` folders."""
    out = tmp_path / "runs"
    for r in _fixture():
        p = rs.unit_path(out, r)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(r))
    return out, tmp_path / "res"


def test_summarize_writes_summary_tables_and_plot(tmp_path):
    out, res = _write_fixture(tmp_path)
    (out / "branin__gross" / "ROBUST-UCB_r3_t0.json").write_text(
        json.dumps({**_fixture()[2], "rounds": 3}))  # other --rounds: ignored
    rs.main(["summarize", "--rounds", "2", "--at", "1", "--out", str(out),
             "--results", str(res)])
    s = json.loads((res / "summary.json").read_text())
    assert {"commit", "date", "load", "command"} <= set(s["provenance"])
    assert s["settings"]["units"] == 24
    assert s["cells"]["branin/gross"]["ROBUST-UCB"]["final"]["n"] == 4
    md = (res / "tables.md").read_text()
    assert "| ROBUST-UCB | 4 | 1.500 ± " in md and "3–1–0" in md and "1–1–2 (RRP-LogEI)" in md
    assert (res / "ratio_heatmap.png").stat().st_size > 0


def test_summarize_trials_keeps_the_first_seeds_of_every_method(tmp_path):
    out, res = _write_fixture(tmp_path)
    rs.main(["summarize", "--rounds", "2", "--at", "1", "--out", str(out),
             "--results", str(res), "--trials", "2", "--no-plots"])
    s = json.loads((res / "summary.json").read_text())
    assert s["settings"]["trials"] == 2 and s["settings"]["units"] == 12
    assert s["cells"]["branin/gross"]["ROBUST-UCB"]["final"]["n"] == 2


FAKE_RUN = ["run", "--trials", "1", "--rounds", "2", "--cells", "branin/clean", "--methods",
            "STGP-LogEI", "--num-restarts", "4", "--raw-samples", "256"]


@pytest.mark.parametrize(("option", "value"), [
    ("--rounds", "0"), ("--trials", "0"), ("--workers", "-1"), ("--cells", "bogus/*"),
    ("--methods", "bogus"), ("--raw-samples", "0"),
])
def test_bad_run_arguments_are_one_line_usage_errors(tmp_path, capsys, option, value):
    assert_usage_error(rs.main, [*FAKE_RUN, option, value], option, tmp_path / "out", capsys)


def test_run_refuses_an_out_of_other_restarts_or_raw_samples(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rs, "run_unit", lambda u: {"unit": u, "record": _fake_record(u)})
    out = str(tmp_path / "out")
    with pytest.raises(SystemExit) as exit_:
        rs.main([*FAKE_RUN, "--out", out])
    assert exit_.value.code == 0
    (unit,) = (tmp_path / "out").glob("*/*.json")
    before = unit.read_bytes()
    with pytest.raises(SystemExit) as exit_:
        rs.main([*FAKE_RUN, "--num-restarts", "3", "--raw-samples", "64", "--out", out])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "num_restarts: 4 there, 3 here" in err and "raw_samples: 256 there, 64 here" in err
    assert unit.read_bytes() == before
    # a folder of units written before suite_settings.json existed: their records decide
    (tmp_path / "out" / "suite_settings.json").unlink()
    with pytest.raises(SystemExit) as exit_:
        rs.main([*FAKE_RUN, "--raw-samples", "64", "--out", out])
    assert exit_.value.code == 2 and "raw_samples 256, 64 here" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # the same settings: continued
        rs.main([*FAKE_RUN, "--trials", "2", "--out", out])
    assert exit_.value.code == 0 and "1 of 2 units to run (1 finished, kept)" in \
        capsys.readouterr().out


def test_summarize_without_units_writes_nothing(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        rs.main(["summarize", "--out", str(tmp_path / "missing"), "--results",
                 str(tmp_path / "res")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: No units with 30 rounds under")
    assert not (tmp_path / "res").exists()
