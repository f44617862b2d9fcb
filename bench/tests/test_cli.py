"""CLI smoke tests (--fast) and the runner's common random numbers and metric bookkeeping."""

from __future__ import annotations

import csv
import json
import sys

import pytest
import torch

from mtucb_bench.cli import main
from mtucb_bench.experiments import EXPERIMENTS
from mtucb_bench.metrics import instantaneous_regret, time_average_regret
from mtucb_bench.multi_task_problems import rkhs_problem

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::linear_operator.utils.warnings.NumericalWarning",
)


def _load_trials(out):
    return {p.name: json.loads(p.read_text()) for p in sorted(out.glob("trial*.json"))}


def test_cli_fast_multi_task(tmp_path, capsys):
    out = tmp_path / "rkhs"
    assert main(["run", "rkhs-n2", "--fast", "--out", str(out), "--no-progress"]) == 0
    exp = EXPERIMENTS["rkhs-n2"]
    T = exp.fast_horizon
    assert (out / "time_average_regret.png").stat().st_size > 1000
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["results"]) == set(exp.fast_algorithms)
    trials = _load_trials(out)
    assert len(trials) == len(exp.fast_algorithms)
    problem = rkhs_problem(2, 0)  # trial 0 of seed 0
    F_ref = problem.f(problem.regret_X)
    for blob in trials.values():
        r = torch.tensor(blob["regret"], dtype=DT)
        assert r.shape == (T,) and (r >= 0).all()
        assert len(blob["time_average_regret"]) == len(blob["bayes_regret"]) == T
        torch.testing.assert_close(torch.tensor(blob["time_average_regret"], dtype=DT),
                                   time_average_regret(r))
        bayes = torch.tensor(blob["bayes_regret"], dtype=DT)
        assert (bayes >= 0).all() and (bayes[1:] <= bayes[:-1] + 1e-12).all()
        hv = torch.tensor(blob["hypervolume"], dtype=DT)
        assert (hv[1:] >= hv[:-1] - 1e-12).all()
        # the loop's regret equals the metric recomputed from the recorded x_t and λ_t
        X = torch.tensor(blob["x"], dtype=DT)
        W = torch.tensor(blob["weights"], dtype=DT)
        recomputed = instantaneous_regret(F_ref, problem.f(X), W, "chebyshev", problem.ref_point)
        torch.testing.assert_close(recomputed, r)
    # common random numbers: same λ sequence and initial point for every algorithm
    blobs = list(trials.values())
    for b in blobs[1:]:
        assert b["weights"] == blobs[0]["weights"] and b["initial_X"] == blobs[0]["initial_X"]
    with open(out / "rounds.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == T * len(exp.fast_algorithms)
    assert "results in" in capsys.readouterr().out
    # the Nyström dictionary size is recorded for the BKB algorithms only
    for name, blob in trials.items():
        sizes = blob["dictionary_size"]
        if "BKB" in name:
            assert len(sizes) == T and all(1 <= m <= t + 2 for t, m in enumerate(sizes))
            entry = summary["results"][blob["algorithm"]]
            assert entry["final_dictionary_size_mean"] == sizes[-1]  # one trial
            alg = blob["algorithm"]
            assert [int(r["dictionary_size"]) for r in rows if r["algorithm"] == alg] == sizes
        else:
            assert sizes is None


def test_cli_fast_heavy_tailed(tmp_path):
    out = tmp_path / "ht"
    assert main(["run", "se-student", "--fast", "--out", str(out), "--no-progress"]) == 0
    exp = EXPERIMENTS["se-student"]
    trials = _load_trials(out)
    assert len(trials) == len(exp.fast_algorithms)
    for blob in trials.values():
        r = torch.tensor(blob["regret"], dtype=DT)
        assert r.shape == (exp.fast_horizon,) and (r >= 0).all()
        assert blob["bayes_regret"] is None and all(w is None for w in blob["weights"])
        assert len(blob["x"]) == exp.fast_horizon
    summary = json.loads((out / "summary.json").read_text())["results"]
    for entry in summary.values():
        assert entry["horizon"] == exp.fast_horizon and entry["wall_time_per_round_s"] > 0
    assert (out / "time_average_regret.png").is_file()


def test_cli_list_and_errors(tmp_path, capsys):
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in EXPERIMENTS) and "qLogNParEGO" in text
    # a heavy-tailed algorithm on a multi-task experiment is a clear error
    code = main(["run", "rkhs-n2", "--algorithms", "TGP-UCB", "--out", str(tmp_path), "--fast",
                 "--no-progress"])
    assert code == 2 and "does not apply" in capsys.readouterr().err
    code = main(["run", "intel-lab", "--fast", "--out", str(tmp_path), "--no-progress"])
    assert code == 2 and "--intel-data" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "no-such-experiment"])


def test_cli_resume_and_execution_errors(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    base = ["run", "rkhs-n2", "--algorithms", "MT-KB", "--trials", "1", "--horizon", "2",
            "--seed", "4", "--out", str(out), "--no-progress"]
    assert main(base) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 4 and manifest["algorithms"] == ["MT-KB"]
    capsys.readouterr()
    assert main(base) == 0  # the same command again keeps the finished trial
    assert "1 finished trial(s) were kept" in capsys.readouterr().err
    # --resume takes the configuration from the manifest; options given must agree with it
    assert main(["run", "--resume", "--out", str(out), "--horizon", "2", "--seed", "4",
                 "--algorithms", "mt-kb", "--no-progress"]) == 0
    code = main(["run", "--resume", "--out", str(out), "--horizon", "3", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "horizon 3 (the run has 2)" in err
    code = main(["run", "rkhs-n20", "--resume", "--out", str(out), "--no-progress"])
    assert code == 2 and "experiment 'rkhs-n20'" in capsys.readouterr().err
    assert main(["run", "--resume", "--no-progress"]) == 2
    assert "--resume needs --out" in capsys.readouterr().err
    assert main(["run", "--resume", "--out", str(tmp_path / "none"), "--no-progress"]) == 2
    assert "Nothing to resume" in capsys.readouterr().err
    assert main(["run", "--out", str(out), "--no-progress"]) == 2
    assert "name an experiment" in capsys.readouterr().err
    # --scheduler without Dask installed, and an unreachable scheduler, are clear errors
    monkeypatch.setitem(sys.modules, "distributed", None)
    code = main([*base[:-3], "--out", str(tmp_path / "d"), "--scheduler", "tcp://x:1",
                 "--no-progress"])
    assert code == 2 and "mtucb-bench[dask]" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()  # refused before anything was written
    monkeypatch.delitem(sys.modules, "distributed")
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main([*base[:-3], "--out", str(tmp_path / "d"), "--scheduler",
                     "tcp://127.0.0.1:9", "--no-progress"])
    assert code == 2 and "error:" in capsys.readouterr().err


def test_cli_table_reruns_and_refuses_another_configuration(tmp_path, capsys):
    args = ["table", "--problems", "rkhs-n2", "--scalarizations", "chebyshev", "--seeds", "1",
            "--horizon", "2", "--out", str(tmp_path), "--no-progress"]
    assert main(args) == 0
    first = capsys.readouterr().out
    cell = tmp_path / "rkhs-n2_chebyshev_spectral" / "trial00_MT-KB.json"
    stamp = cell.stat().st_mtime_ns
    assert main(args) == 0 and capsys.readouterr().out == first  # finished cells are kept
    assert cell.stat().st_mtime_ns == stamp
    assert main([*args[:6], "2", *args[7:]]) == 2  # --seeds 2 into the same folders
    assert "trials: 1 there, 2 here" in capsys.readouterr().err


def test_cli_table_refuses_an_out_that_is_a_file(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert main(["table", "--problems", "rkhs-n2", "--seeds", "1", "--horizon", "2",
                 "--out", str(tmp_path / "afile"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and "is not a folder" in err
    assert (tmp_path / "afile").read_text() == "x"


def test_cli_initial_design_recorded_and_resume_refuses_another(tmp_path, capsys):
    out = tmp_path / "zdt1"
    base = ["run", "mo-zdt1", "--algorithms", "Sobol", "--trials", "1", "--horizon", "2",
            "--out", str(out), "--no-progress"]
    assert main([*base, "--initial-design", "sobol:6"]) == 0
    assert json.loads((out / "manifest.json").read_text())["initial_design"] == "sobol:6"
    assert len(_load_trials(out)["trial00_Sobol.json"]["initial_X"]) == 6
    capsys.readouterr()
    for ok in (["--initial-design", "sobol"], ["--initial-design", "sobol:6"], []):
        assert main(["run", "--resume", "--out", str(out), "--no-progress", *ok]) == 0
    capsys.readouterr()
    for bad in ("sobol:5", "paper", "random:6"):
        code = main(["run", "--resume", "--out", str(out), "--no-progress",
                     "--initial-design", bad])
        assert code == 2 and f"initial_design '{bad}' (the run has 'sobol:6')" in (
            capsys.readouterr().err
        )
    code = main(base)  # the default design (sobol: 8 points at d = 4) into that folder
    assert code == 2 and "initial_design: 'sobol:6' there, 'sobol:8' here" in (
        capsys.readouterr().err
    )
    code = main([*base[:-3], "--out", str(tmp_path / "x"), "--initial-design", "lhs"])
    assert code == 2 and "`initial_design` must be" in capsys.readouterr().err
    code = main(["run", "rkhs-n2", "--fast", "--out", str(tmp_path / "y"), "--no-progress",
                 "--initial-design", "sobol"])
    assert code == 2 and "continuous domain" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_cli_noise_reaches_the_problem_and_is_recorded(tmp_path, capsys):
    from mtucb_bench.heavy_tailed_problems import synthetic_heavy_tailed_problem
    from mtucb_bench.noise_models import StudentTNoise

    out = tmp_path / "t15"
    base = ["run", "se-student", "--algorithms", "GP-UCB", "--trials", "1", "--horizon", "6",
            "--out", str(out), "--no-progress"]
    assert main([*base, "--noise", "Student-T:1.50"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["options"]["noise"] == "student-t:1.5"
    blob = _load_trials(out)["trial00_GP-UCB.json"]
    assert "student-t:1.5" in blob["settings"]["problem_notes"]
    # y_t = f(x_t) + ε_t, ε from the trial's noise stream (seed s_k + 2), one draw per round
    p = synthetic_heavy_tailed_problem("se", "student-t:1.5", 0)
    X = torch.tensor(blob["x"], dtype=DT)
    idx = torch.cdist(X, p.arms).argmin(dim=-1)
    g = torch.Generator().manual_seed(2)
    eps = torch.cat([StudentTNoise(df=1.5).sample((1,), g) for _ in range(6)])
    torch.testing.assert_close(torch.tensor(blob["y"], dtype=DT).reshape(-1),
                               p.mean_rewards[idx] + eps, rtol=0, atol=1e-12)
    capsys.readouterr()
    assert main(["run", "--resume", "--out", str(out), "--noise", "student-t:1.5",
                 "--no-progress"]) == 0
    code = main(["run", "--resume", "--out", str(out), "--noise", "pareto:1.6", "--no-progress"])
    assert code == 2 and "noise 'pareto:1.6' (the run has 'student-t:1.5')" in (
        capsys.readouterr().err
    )
    code = main(base)  # the paper's noise into the folder of a Student-t(1.5) run
    assert code == 2 and "options.noise: 'student-t:1.5' there, None here" in (
        capsys.readouterr().err
    )
    paper = tmp_path / "paper"
    assert main([*base[:-3], "--out", str(paper), "--no-progress"]) == 0
    assert "noise" not in json.loads((paper / "manifest.json").read_text())["options"]
    capsys.readouterr()
    assert main(["summarize", str(out), str(paper), "--merge", str(tmp_path / "m")]) == 2
    assert "problem_notes" in capsys.readouterr().err  # runs of two noises are not pooled
    code = main(["run", "--resume", "--out", str(paper), "--noise", "gaussian:0.1",
                 "--no-progress"])
    assert code == 2 and "noise 'gaussian:0.1' (the run has None)" in capsys.readouterr().err
    for exp, spec, match in [("stock", "student-t:2", "real data"),
                             ("mo-zdt1", "student-t:2", "must be 'gaussian:SIGMA'"),
                             ("se-pareto", "student-t", "Malformed noise spec"),
                             ("se-pareto", "cauchy:1", "Unknown noise kind")]:
        code = main(["run", exp, "--fast", "--noise", spec, "--out", str(tmp_path / "x"),
                     "--no-progress"])
        assert code == 2 and match in capsys.readouterr().err, exp
    assert not (tmp_path / "x").exists()


def test_cli_gaussian_noise_on_a_multi_task_experiment(tmp_path):
    from mtucb_bench.multi_task_problems import rkhs_problem

    out = tmp_path / "g"
    assert main(["run", "rkhs-n2", "--algorithms", "MT-KB", "--trials", "1", "--horizon", "3",
                 "--noise", "gaussian:0.5", "--out", str(out), "--no-progress"]) == 0
    blob = _load_trials(out)["trial00_MT-KB.json"]
    assert "noise gaussian:0.5" in blob["settings"]["problem_notes"]
    p = rkhs_problem(2, 0)
    g = torch.Generator().manual_seed(2)
    torch.randn((1, 2), generator=g, dtype=DT)  # the initial point's observation
    eps = torch.cat([torch.randn((1, 2), generator=g, dtype=DT) for _ in range(3)])
    X = torch.tensor(blob["x"], dtype=DT)
    torch.testing.assert_close(torch.tensor(blob["y"], dtype=DT), p.f(X) + 0.5 * eps,
                               rtol=0, atol=1e-12)


def test_cli_paper_flag(tmp_path, capsys):
    out = tmp_path / "paper"
    base = ["run", "mo-zdt1", "--trials", "1", "--horizon", "2", "--no-progress"]
    assert main([*base, "--paper", "--algorithms", "Sobol", "MT-UCB-paper",
                 "--out", str(out)]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert "initial_design" not in m and m["bound"] == "spectral"
    assert m["scalarization"] == "chebyshev" and "noise" not in m["options"]
    assert len(_load_trials(out)["trial00_Sobol.json"]["initial_X"]) == 1
    capsys.readouterr()
    assert main(["run", "--resume", "--paper", "--out", str(out), "--no-progress"]) == 0
    for extra, match in [(["--algorithms", "MT-UCB"], "algorithm MT-UCB (practical defaults)"),
                         (["--bound", "directional"], "--bound directional"),
                         (["--scalarization", "linear"], "--scalarization linear"),
                         (["--initial-design", "sobol"], "--initial-design sobol"),
                         (["--noise", "gaussian:0.1"], "--noise gaussian:0.1")]:
        code = main([*base, "--paper", *extra, "--out", str(tmp_path / "x")])
        assert code == 2 and match in capsys.readouterr().err, extra
    assert not (tmp_path / "x").exists()
    sobol = tmp_path / "sobol"
    assert main([*base, "--algorithms", "Sobol", "--out", str(sobol)]) == 0
    capsys.readouterr()
    code = main(["run", "--resume", "--paper", "--out", str(sobol), "--no-progress"])
    assert code == 2 and "--initial-design sobol:8" in capsys.readouterr().err
    code = main(["run", "se-student", "--paper", "--constants", "theory", "--fast",
                 "--out", str(tmp_path / "x"), "--no-progress"])
    assert code == 2 and "--constants theory" in capsys.readouterr().err


def test_cli_beta_names_the_width_and_resume_checks_it(tmp_path, capsys):
    out = tmp_path / "beta"
    base = ["run", "mo-zdt1", "--trials", "1", "--horizon", "1", "--out", str(out),
            "--no-progress"]
    assert main([*base, "--algorithms", "Sobol", "MT-UCB", "--beta", "2"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["algorithms"] == ["Sobol", "MT-UCB@beta=2"]
    assert _load_trials(out)["trial00_MT-UCB@beta=2.json"]["beta"] == [2.0]
    capsys.readouterr()
    assert main(["run", "--resume", "--out", str(out), "--beta", "2", "--no-progress"]) == 0
    code = main(["run", "--resume", "--out", str(out), "--beta", "1", "--no-progress"])
    assert code == 2 and "beta 1 (the run has Sobol, MT-UCB@beta=2)" in capsys.readouterr().err
    for extra, match in [(["--algorithms", "Sobol", "--beta", "2"], "none of ['Sobol']"),
                         (["--paper", "--beta", "2"], "drop --beta"),
                         (["--algorithms", "MT-KB@beta=2"], "MT-KB has no tunable width"),
                         (["--algorithms", "MT-UCB@beta=-1"], "finite number >= 0")]:
        code = main([*base[:-3], "--out", str(tmp_path / "x"), "--no-progress", *extra])
        assert code == 2 and match in capsys.readouterr().err, extra
    assert not (tmp_path / "x").exists()
