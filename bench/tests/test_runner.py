"""The runner's run folders: manifest first, resume after a kill, refusals."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat

import pytest
import torch

from mtucb_bench import runner
from mtucb_bench.cli import main
from mtucb_bench.manifest import RunFolderError
from mtucb_bench.runner import resume_experiment, run_experiment
from mtucb_bench.summarize import format_results_table, load_run

pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::linear_operator.utils.warnings.NumericalWarning",
)
KW = dict(algorithms=["MT-KB", "IT-KB"], trials=2, horizon=3, seed=0, progress=False,
          threads=1)
NAMES = ["trial00_MT-KB.json", "trial00_IT-KB.json", "trial01_MT-KB.json", "trial01_IT-KB.json"]


def _state(folder):
    """name -> (mtime_ns, bytes) of every trial file."""
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.glob("trial*.json")}


def _records(folder):
    out = {}
    for p in sorted(folder.glob("trial*.json")):
        blob = json.loads(p.read_text())
        blob.pop("wall_time")
        out[p.name] = blob
    return out


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "run"
    run_experiment("rkhs-n2", out_dir=out, **KW)
    return out


def test_manifest_is_written_first(tmp_path, monkeypatch):
    out = tmp_path / "run"
    seen = []

    def spy(unit):
        seen.append(sorted(p.name for p in out.iterdir()))
        return real(unit)

    real = runner.run_unit
    monkeypatch.setattr(runner, "run_unit", spy)
    run_experiment("rkhs-n2", out_dir=out, **{**KW, "trials": 1, "algorithms": ["MT-KB"]})
    assert seen == [["manifest.json"]]


def test_kill_and_rerun_resumes_without_rewriting(whole, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real, calls = runner.run_unit, []

    def dies_after_two(unit):  # the process is killed while running the third unit
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(unit)
        return real(unit)

    monkeypatch.setattr(runner, "run_unit", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_experiment("rkhs-n2", out_dir=out, **KW)
    assert sorted(p.name for p in out.iterdir()) == sorted(["manifest.json", *NAMES[:2]])
    before = _state(out)
    # summarize marks the interrupted run
    partial = load_run(out)
    assert partial.missing == [(1, "MT-KB"), (1, "IT-KB")] and not partial.complete
    assert "| rkhs-n2 (incomplete: 2/4) | 3 | 1 |" in format_results_table([partial])
    assert main(["summarize", str(out)]) == 0
    assert "incomplete: 2 (trial, algorithm) pair(s) missing" in capsys.readouterr().err
    # the same command again: only the two missing units run, the finished files stay as is
    calls.clear()
    res = run_experiment("rkhs-n2", out_dir=out, **KW)
    assert [(u.trial, u.algorithm) for u in calls] == [(1, "MT-KB"), (1, "IT-KB")]
    after = _state(out)
    assert {n: after[n] for n in before} == before
    assert _records(out) == _records(whole)
    assert res.settings["resumed_trials"] == 2 and load_run(out).complete
    assert [(tr.trial, tr.algorithm) for tr in res.trials] == [
        (0, "MT-KB"), (0, "IT-KB"), (1, "MT-KB"), (1, "IT-KB")
    ]
    # a deleted trial file is recomputed, identically, through the CLI's --resume
    (out / "trial00_IT-KB.json").unlink()
    before = _state(out)
    calls.clear()
    assert main(["run", "--resume", "--out", str(out), "--no-progress"]) == 0
    assert [(u.trial, u.algorithm) for u in calls] == [(0, "IT-KB")]
    assert "3 finished trial(s) were kept" in capsys.readouterr().err
    after = _state(out)
    assert {n: after[n] for n in before} == before and _records(out) == _records(whole)
    calls.clear()  # a finished run reruns nothing
    resume_experiment(out, progress=False)
    assert calls == [] and _state(out) == after


def test_folder_of_another_configuration_is_refused(whole, tmp_path, capsys):
    before = _state(whole)
    with pytest.raises(RunFolderError, match="seed: 0 there, 1 here"):
        run_experiment("rkhs-n2", out_dir=whole, **{**KW, "seed": 1})
    with pytest.raises(RunFolderError, match="experiment: 'rkhs-n2' there, 'rkhs-n20' here"):
        run_experiment("rkhs-n20", out_dir=whole, **KW)
    code = main(["run", "rkhs-n2", "--algorithms", "MT-KB", "IT-KB", "--trials", "2",
                 "--horizon", "4", "--out", str(whole), "--no-progress"])
    assert code == 2 and "horizon: 3 there, 4 here" in capsys.readouterr().err
    assert _state(whole) == before
    # trial files without a manifest (an older version, or by hand) are not pooled into
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "trial00_MT-KB.json").write_bytes((whole / "trial00_MT-KB.json").read_bytes())
    with pytest.raises(RunFolderError, match="no manifest.json"):
        run_experiment("rkhs-n2", out_dir=legacy, **KW)


def test_foreign_and_broken_trial_files_are_named(whole, tmp_path):
    out = tmp_path / "run"
    run_experiment("rkhs-n2", out_dir=out, **{**KW, "trials": 1})
    (out / "trial05_MT-KB.json").write_bytes((whole / "trial01_MT-KB.json").read_bytes())
    with pytest.raises(RunFolderError, match="trial05_MT-KB.json"):
        run_experiment("rkhs-n2", out_dir=out, **{**KW, "trials": 1})
    with pytest.raises(ValueError, match="trial05_MT-KB.json.*holds trial 1 of MT-KB"):
        load_run(out)
    (out / "trial05_MT-KB.json").unlink()
    blob = json.loads((whole / "trial01_MT-KB.json").read_text())
    (out / "trial01_MT-KB.json").write_text(json.dumps(blob))  # same configuration, trial 1
    with pytest.raises(ValueError, match="trial01_MT-KB.json.*not part of"):
        load_run(out)
    (out / "trial01_MT-KB.json").unlink()
    blob = json.loads((out / "trial00_MT-KB.json").read_text())
    blob["settings"]["seed"] = 7
    (out / "trial00_MT-KB.json").write_text(json.dumps(blob))
    with pytest.raises(RunFolderError, match="trial00_MT-KB.json.*differs in seed"):
        run_experiment("rkhs-n2", out_dir=out, **{**KW, "trials": 1})
    with pytest.raises(ValueError, match="trial00_MT-KB.json.*seed is 7"):
        load_run(out)
    (out / "trial00_MT-KB.json").write_text('{"regret": [0.1')  # truncated by hand
    with pytest.raises(ValueError, match="trial00_MT-KB.json.*not valid JSON"):
        run_experiment("rkhs-n2", out_dir=out, **{**KW, "trials": 1})


def test_argument_refusals(tmp_path, capsys):
    with pytest.raises(ValueError, match="MT-KB more than once"):
        run_experiment("rkhs-n2", out_dir=tmp_path / "d", **{**KW, "algorithms": ["MT-KB",
                                                                                  "mt-kb"]})
    assert not (tmp_path / "d").exists()
    code = main(["run", "rkhs-n2", "--algorithms", "MT-KB", "MT-KB", "--fast",
                 "--out", str(tmp_path / "d"), "--no-progress"])
    assert code == 2 and "more than once" in capsys.readouterr().err
    for bad, match in [({"workers": -1}, "`workers`"), ({"threads": 0}, "`threads`"),
                       ({"constants": "x"}, "`constants`")]:
        with pytest.raises(ValueError, match=match):
            run_experiment("rkhs-n2", **{**KW, **bad})
    with pytest.raises(ValueError, match="configuration from the manifest"):
        resume_experiment(tmp_path, horizon=3)
    with pytest.raises(FileNotFoundError, match="Nothing to resume"):
        resume_experiment(tmp_path / "none")


def _spy_units(monkeypatch):
    calls, real = [], runner.run_unit

    def spy(unit):
        calls.append((unit.trial, unit.algorithm))
        return real(unit)

    monkeypatch.setattr(runner, "run_unit", spy)
    return calls


def _unfinished_copy(whole, folder):
    """A copy of the finished run ``whole`` with one trial file missing."""
    shutil.copytree(whole, folder)
    (folder / "trial01_IT-KB.json").unlink()
    return folder


def test_resume_into_a_read_only_folder_computes_nothing(whole, tmp_path, monkeypatch, capsys):
    out = _unfinished_copy(whole, tmp_path / "run")
    before = _state(out)
    real = os.open

    def read_only(path, flags, *args, **kwargs):  # the folder refuses new files, even to root
        if os.path.dirname(os.fspath(path)) == str(out) and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    calls = _spy_units(monkeypatch)
    with pytest.raises(RunFolderError, match=rf"'{out}' is not writable \(Permission denied\)"):
        resume_experiment(out, progress=False)
    assert main(["run", "--resume", "--out", str(out), "--no-progress"]) == 2
    assert f"'{out}' is not writable" in capsys.readouterr().err
    with pytest.raises(RunFolderError, match="not writable"):
        run_experiment("rkhs-n2", out_dir=out, **KW)
    assert calls == [] and _state(out) == before
    monkeypatch.setattr(os, "open", real)
    resume_experiment(out, progress=False)  # writable again: the missing trial only
    assert calls == [(1, "IT-KB")] and _records(out) == _records(whole)


def test_resume_into_a_chmod_read_only_folder_computes_nothing(whole, tmp_path, monkeypatch):
    out = _unfinished_copy(whole, tmp_path / "run")
    mode = out.stat().st_mode
    out.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        try:
            (out / "probe").write_text("")
        except PermissionError:
            pass
        else:
            (out / "probe").unlink()
            pytest.skip("chmod does not stop writes here (running as root)")
        calls = _spy_units(monkeypatch)
        with pytest.raises(RunFolderError, match=rf"'{out}' is not writable"):
            resume_experiment(out, progress=False)
        assert calls == []
    finally:
        out.chmod(mode)


# ------------------------------------------------- initial designs (issue 16): the mo-* suite
SUITE_KW = dict(algorithms=["Sobol", "MT-UCB-paper"], trials=1, horizon=2, seed=0,
                progress=False, threads=1)


def test_paper_manifest_has_no_design_key(whole):
    m = json.loads((whole / "manifest.json").read_text())
    assert "initial_design" not in m and "noise" not in m["options"]


def test_suite_run_shares_a_sobol_design_and_refuses_mixing(tmp_path):
    import torch

    from mtucb_bench.experiments import ExperimentOptions
    from mtucb_bench.metrics import dominated_hypervolume
    from mtucb_bench.mo_suite_problems import make_suite_problem
    from mtucb_bench.summarize import merge_runs

    out = tmp_path / "sobol"
    run_experiment("mo-zdt1", out_dir=out, **SUITE_KW)
    m = json.loads((out / "manifest.json").read_text())
    assert m["initial_design"] == "sobol:8"
    p = make_suite_problem("zdt1")
    lo, hi = p.bounds
    U = torch.quasirandom.SobolEngine(4, scramble=True, seed=1).draw(8, dtype=torch.float64)
    for name in ("trial00_Sobol.json", "trial00_MT-UCB-paper.json"):
        blob = json.loads((out / name).read_text())
        X0 = torch.tensor(blob["initial_X"], dtype=torch.float64)
        torch.testing.assert_close(X0, lo + (hi - lo) * U, rtol=0, atol=1e-12)
        assert "initial design sobol:8" in blob["settings"]["problem_notes"]
        # the hypervolume counts the initial design: HV of f(X0 ∪ {x_1, ..., x_t})
        X = torch.cat([X0, torch.tensor(blob["x"], dtype=torch.float64)])
        F = p.f(X)
        ref = [dominated_hypervolume(F[: 8 + t], p.ref_point) for t in (1, 2)]
        torch.testing.assert_close(torch.tensor(blob["hypervolume"], dtype=torch.float64),
                                   torch.tensor(ref, dtype=torch.float64))
        assert ref[0] >= dominated_hypervolume(F[:8], p.ref_point) > 0
    before = _state(out)
    with pytest.raises(RunFolderError, match="initial_design: 'sobol:8' there, 'sobol:7' here"):
        run_experiment("mo-zdt1", out_dir=out,
                       options=ExperimentOptions(initial_design="sobol:7"), **SUITE_KW)
    resume_experiment(out, progress=False)  # continues with the recorded design
    assert _state(out) == before
    # the papers' one-point design on the same experiment: its own folder, not mergeable
    paper = tmp_path / "paper"
    run_experiment("mo-zdt1", out_dir=paper,
                   options=ExperimentOptions(initial_design="paper"), **SUITE_KW)
    assert "initial_design" not in json.loads((paper / "manifest.json").read_text())
    blob = json.loads((paper / "trial00_Sobol.json").read_text())
    assert len(blob["initial_X"]) == 1
    with pytest.raises(ValueError, match="initial_design"):
        merge_runs([out, paper])
    with pytest.raises(RunFolderError, match="initial_design: None there, 'sobol:8' here"):
        run_experiment("mo-zdt1", out_dir=paper, **SUITE_KW)
    before = _state(paper)
    resume_experiment(paper, progress=False)  # a folder without the key: the papers' design
    assert _state(paper) == before


def test_bayes_regret_polishes_only_where_the_problem_allows(monkeypatch):
    """``SuiteProblem.polish_regret=False`` (a simulator such as Penicillin): the Bayes regret's
    optima x*_λ and the rounds' regrets come from the dense set alone, never from the SLSQP
    polish on ``f``."""
    import dataclasses

    from mtucb_bench.mo_suite_problems import make_suite_problem

    seen = []
    real = runner.scalarized_optima

    def spy(*args):
        seen.append(args[-1])
        return real(*args)

    monkeypatch.setattr(runner, "scalarized_optima", spy)
    monkeypatch.setattr(runner, "_OPTIMA", type(runner._OPTIMA)())  # nothing remembered
    loop_bounds = []
    real_loop = runner.run_bo_loop

    def loop_spy(*args, **kwargs):
        loop_bounds.append(kwargs.get("regret_bounds"))
        return real_loop(*args, **kwargs)

    monkeypatch.setattr(runner, "run_bo_loop", loop_spy)
    problem = make_suite_problem("zdt1", seed=0)
    for polish in (True, False):
        p = dataclasses.replace(problem, polish_regret=polish)
        res = runner.run_trial(p, "Sobol", horizon=2, seed=0, initial_design="sobol:5")
        assert res.bayes is not None and res.bayes.isfinite().all()
    assert seen[0] is not None and seen[1] is None
    # and the per-round regret r_t is polished (regret_bounds) only where allowed too
    assert loop_bounds[0] is not None and loop_bounds[1] is None


def test_bayes_regret_optima_computed_once_per_trial_instance(monkeypatch):
    """The polished optima max_x s_λ(f(x)) depend on the problem instance and the trial's λ's,
    not on the algorithm: a second algorithm of the same trial reuses them (same Bayes
    regret as a fresh computation), another trial seed or another instance computes anew."""
    import dataclasses

    from mtucb_bench.mo_suite_problems import make_suite_problem

    calls = []
    real = runner.scalarized_optima

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(runner, "scalarized_optima", spy)
    monkeypatch.setattr(runner, "_OPTIMA", type(runner._OPTIMA)())
    problem = make_suite_problem("zdt1", seed=0)
    kw = dict(horizon=2, initial_design="sobol:5")
    first = runner.run_trial(problem, "Sobol", seed=0, **kw)
    second = runner.run_trial(problem, "MT-UCB", seed=0, **kw)
    assert len(calls) == 1
    monkeypatch.setattr(runner, "_OPTIMA", type(runner._OPTIMA)())
    fresh = runner.run_trial(problem, "MT-UCB", seed=0, **kw)
    assert len(calls) == 2 and torch.equal(second.bayes, fresh.bayes)
    assert first.bayes.isfinite().all()
    runner.run_trial(problem, "Sobol", seed=1, **kw)  # other λ's
    assert len(calls) == 3
    shifted = dataclasses.replace(problem, ref_point=problem.ref_point - 1.0)
    runner.run_trial(shifted, "Sobol", seed=0, **kw)  # another reference point
    assert len(calls) == 4
