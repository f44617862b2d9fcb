"""Reloading, merging and tabulating finished benchmark runs."""

from __future__ import annotations

import errno
import json
import os
import shutil
import warnings

import pytest
import torch

from mtucb_bench import summarize
from mtucb_bench.cli import main
from mtucb_bench.runner import resume_experiment, run_experiment
from mtucb_bench.summarize import (
    DerivedFileWarning,
    format_results_table,
    load_run,
    merge_runs,
    paired_comparison,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::linear_operator.utils.warnings.NumericalWarning",
)
KW = dict(trials=2, horizon=3, seed=0, progress=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    run_experiment("rkhs-n2", algorithms=["MT-KB"], out_dir=root / "a", **KW)
    run_experiment("rkhs-n2", algorithms=["IT-KB"], out_dir=root / "b", **KW)
    both = run_experiment("rkhs-n2", algorithms=["MT-KB", "IT-KB"], out_dir=root / "ab", **KW)
    return root, both


def test_load_run_round_trips_the_summary(runs):
    root, both = runs
    loaded = load_run(root / "ab")
    assert loaded.summary() == json.loads((root / "ab" / "summary.json").read_text())["results"]
    assert [(tr.trial, tr.algorithm) for tr in loaded.trials] == [
        (0, "MT-KB"), (0, "IT-KB"), (1, "MT-KB"), (1, "IT-KB")
    ]
    for a, b in zip(loaded.trials, both.trials, strict=True):
        torch.testing.assert_close(a.regret, b.regret)
        torch.testing.assert_close(a.bayes, b.bayes)


def test_merge_equals_one_run_of_everything(runs):
    root, both = runs
    merged = merge_runs([root / "a", root / "b"], out_dir=root / "merged")
    assert merged.summary().keys() == both.summary().keys()
    for alg, entry in both.summary().items():
        for key in ("final_time_average_regret_mean", "final_time_average_regret_std",
                    "final_bayes_regret_mean", "trials"):
            assert merged.summary()[alg][key] == pytest.approx(entry[key], rel=1e-12), key
    assert merged.settings["algorithms"] == ["MT-KB", "IT-KB"]
    assert merged.settings["trials"] == 2
    files = sorted(p.name for p in (root / "merged").glob("trial*.json"))
    assert files == sorted(p.name for p in (root / "ab").glob("trial*.json"))
    assert (root / "merged" / "time_average_regret.png").stat().st_size > 1000
    # an identical re-run of the same trials is counted once
    again = merge_runs([root / "a", root / "ab"])
    assert len(again.trials) == 4


def test_merge_refuses_mismatched_runs(runs, tmp_path):
    root, _ = runs
    run_experiment("rkhs-n2", algorithms=["MOBO"], out_dir=tmp_path / "h4",
                   **{**KW, "horizon": 4})
    with pytest.raises(ValueError, match="'horizon'"):
        merge_runs([root / "a", tmp_path / "h4"])
    bad = tmp_path / "bad"
    bad.mkdir()
    blob = json.loads((root / "a" / "trial00_MT-KB.json").read_text())
    blob["regret"][0] += 1.0
    (bad / "trial00_MT-KB.json").write_text(json.dumps(blob))
    with pytest.raises(ValueError, match="differs"):
        merge_runs([root / "a", bad])
    with pytest.raises(FileNotFoundError, match="trial"):
        load_run(tmp_path / "nothing-here")


def test_table_and_cli(runs, capsys):
    root, both = runs
    table = format_results_table([both], algorithms=["MT-KB", "IT-KB", "MOBO"])
    lines = table.splitlines()
    assert lines[0] == "| experiment | T | trials | MT-KB | IT-KB | MOBO |"
    s = both.summary()["MT-KB"]
    cell = f"{s['final_time_average_regret_mean']:.3g} ± {s['final_time_average_regret_std']:.2g}"
    assert lines[2].startswith(f"| rkhs-n2 | 3 | 2 | {cell} | ") and lines[2].endswith(" – |")
    assert main(["summarize", str(root / "a"), str(root / "b")]) == 0
    out = capsys.readouterr().out
    assert out.count("| rkhs-n2 | 3 | 2 |") == 2
    assert main(["summarize", str(root / "a"), "--merge", str(root / "m2")]) == 0
    assert (root / "m2" / "summary.json").is_file()
    assert main(["summarize", str(root / "missing")]) == 2


def test_paired_comparison_by_hand(runs, capsys):
    root, both = runs
    fin = {(tr.algorithm, tr.trial): float(tr.time_average[-1]) for tr in both.trials}
    diff = torch.tensor([fin["MT-KB", k] - fin["IT-KB", k] for k in (0, 1)], dtype=torch.float64)
    c = paired_comparison(both, "MT-KB", "IT-KB")
    assert c["trials"] == 2 and c["first_better"] == int((diff < 0).sum())
    assert c["mean_difference"] == pytest.approx(float(diff.mean()), abs=1e-15)
    assert c["std_difference"] == pytest.approx(float(diff.std()), abs=1e-15)
    with pytest.raises(ValueError, match="MOBO"):
        paired_comparison(both, "MOBO", "IT-KB")
    assert main(["summarize", str(root / "ab"), "--paired", "MT-KB", "IT-KB"]) == 0
    assert f"MT-KB lower than IT-KB in {c['first_better']}/2 trials" in capsys.readouterr().out


def test_unknown_algorithm_names_are_refused(runs, capsys):
    root, _ = runs
    assert main(["summarize", str(root / "ab"), "--algorithms", "MT-KB", "MT-KBB"]) == 2
    err = capsys.readouterr().err
    assert "error: argument --algorithms: MT-KBB not in the run(s)" in err and "IT-KB" in err
    assert main(["summarize", str(root / "a"), str(root / "b"), "--paired", "MT-KB",
                 "bogus"]) == 2
    assert "error: argument --paired: bogus not in" in capsys.readouterr().err
    # a column of another of the runs is not unknown
    assert main(["summarize", str(root / "a"), str(root / "b"), "--algorithms", "IT-KB"]) == 0


def test_unknown_names_leave_no_merged_folder(runs, tmp_path, capsys):
    root, _ = runs
    target = tmp_path / "merged"
    assert main(["summarize", str(root / "a"), str(root / "b"), "--merge", str(target),
                 "--algorithms", "MT-KB", "bogus"]) == 2
    assert "error: argument --algorithms: bogus not in" in capsys.readouterr().err
    assert not target.exists()


def test_paired_name_missing_from_some_runs_exits_2(runs, capsys):
    root, _ = runs  # IT-KB is in run b only: its comparison in run a cannot be made
    assert main(["summarize", str(root / "a"), str(root / "ab"), "--paired", "MT-KB",
                 "IT-KB"]) == 2
    captured = capsys.readouterr()
    assert "error: --paired: rkhs-n2: Algorithm 'IT-KB' is not in the run" in captured.err
    assert "MT-KB lower than IT-KB in" in captured.out  # the run that has both is compared


def test_table_of_a_run_without_finished_trials_is_well_formed(runs, tmp_path):
    root, _ = runs
    (tmp_path / "new").mkdir()
    shutil.copy(root / "a" / "manifest.json", tmp_path / "new")
    lines = format_results_table([load_run(tmp_path / "new")]).splitlines()
    assert lines[0] == "| experiment | T | trials |"
    assert [line.count("|") for line in lines] == [4, 4, 4]


def test_split_trials_merge_into_the_whole_run(runs, tmp_path):
    root, both = runs
    for k in (0, 1):
        run_experiment("rkhs-n2", algorithms=["MT-KB", "IT-KB"], out_dir=tmp_path / f"t{k}",
                       **{**KW, "trials": 1}, first_trial=k)
    merged = merge_runs([tmp_path / "t1", tmp_path / "t0"])
    assert [(tr.trial, tr.algorithm) for tr in merged.trials] == [
        (tr.trial, tr.algorithm) for tr in both.trials
    ]
    for a, b in zip(merged.trials, both.trials, strict=True):
        assert torch.equal(a.regret, b.regret) and a.seed == b.seed
    with pytest.raises(ValueError, match="first_trial"):
        run_experiment("rkhs-n2", algorithms=["MT-KB"], **{**KW, "trials": 2}, first_trial=999)
    assert main(["run", "rkhs-n2", "--algorithms", "MT-KB", "--trials", "1", "--horizon", "2",
                 "--first-trial", "3", "--out", str(tmp_path / "cli"), "--no-progress"]) == 0
    assert (tmp_path / "cli" / "trial03_MT-KB.json").is_file()


def _state(folder):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()}


def test_merge_never_writes_into_an_input_or_another_run(runs, tmp_path, capsys):
    root, _ = runs
    other = tmp_path / "other"  # a finished run of another experiment
    run_experiment("rkhs-n20", algorithms=["MT-KB"], out_dir=other, **KW)
    before_a, before_c = _state(root / "a"), _state(other)
    for target, match in [(root / "a", "would write into the input"),
                          (root / "a" / "sub", "would write into the input"),
                          (other, "not empty")]:
        with pytest.raises(ValueError, match=match):
            merge_runs([root / "a", root / "b"], out_dir=target)
        code = main(["summarize", str(root / "a"), str(root / "b"), "--merge", str(target)])
        assert code == 2 and match in capsys.readouterr().err
    assert _state(root / "a") == before_a and _state(other) == before_c
    assert not (root / "a" / "sub").exists()
    with pytest.raises(ValueError, match="listed twice"):
        merge_runs([root / "a", root / "b", root / "a"])
    with pytest.raises(ValueError, match="'experiment'"):
        merge_runs([root / "a", other])


def test_merge_refuses_other_versions_and_options(runs, tmp_path):
    root, _ = runs
    for key, value, match in [("versions", {"torch": "0.0"}, "'versions'"),
                              ("options", {"continuous": True}, "'options.continuous'"),
                              ("options", {"noise": "gaussian:0.2"}, "'options.noise'"),
                              ("initial_design", "sobol:8", "'initial_design'")]:
        fake = tmp_path / f"{key}-{match.strip(chr(39))}"
        fake.mkdir()
        for p in (root / "b").iterdir():
            (fake / p.name).write_bytes(p.read_bytes())
        summary = json.loads((fake / "summary.json").read_text())
        summary["settings"][key] = value
        (fake / "summary.json").write_text(json.dumps(summary))
        with pytest.raises(ValueError, match=match):
            merge_runs([root / "a", fake])


def test_merged_folder_is_a_run_with_a_manifest(runs, tmp_path):
    root, both = runs
    piece = tmp_path / "piece"  # an interrupted piece: trial 0 only of a 2-trial run
    run_experiment("rkhs-n2", algorithms=["MOBO"], out_dir=piece, **{**KW, "trials": 1})
    (piece / "summary.json").unlink()
    merged = merge_runs([root / "ab", piece], out_dir=tmp_path / "m")
    again = load_run(tmp_path / "m")
    assert again.complete and merged.complete
    assert json.loads((tmp_path / "m" / "manifest.json").read_text())["expected"] == {
        "IT-KB": [0, 1], "MOBO": [0], "MT-KB": [0, 1]
    }
    assert [(tr.trial, tr.algorithm) for tr in again.trials] == [
        (0, "MT-KB"), (0, "IT-KB"), (0, "MOBO"), (1, "MT-KB"), (1, "IT-KB")
    ]
    for name in ("trial00_MOBO.json", "trial01_IT-KB.json"):
        src = piece if "MOBO" in name else root / "ab"
        assert (tmp_path / "m" / name).read_bytes() == (src / name).read_bytes()
    with pytest.raises(ValueError, match="merged run"):
        resume_experiment(tmp_path / "m")
    (piece / "trial00_MOBO.json").unlink()  # a piece that planned MOBO trial 0 but lost it
    gap = merge_runs([root / "ab", piece])
    assert gap.missing == [(0, "MOBO")]
    assert "| rkhs-n2 (incomplete: 4/5) |" in format_results_table([gap])


def test_summarize_names_files_it_cannot_use(runs, tmp_path, capsys):
    root, _ = runs
    mixed = tmp_path / "mixed"  # a folder written before manifests: two horizons pooled
    mixed.mkdir()
    for p in (root / "a").iterdir():
        if p.name != "manifest.json":
            (mixed / p.name).write_bytes(p.read_bytes())
    run_experiment("rkhs-n2", algorithms=["IT-KB"], out_dir=tmp_path / "h5",
                   **{**KW, "horizon": 5, "trials": 1})
    (mixed / "trial00_IT-KB.json").write_bytes((tmp_path / "h5" / "trial00_IT-KB.json")
                                               .read_bytes())
    assert main(["summarize", str(mixed)]) == 2
    err = capsys.readouterr().err
    assert "trial00_IT-KB.json" in err and "horizon is 5" in err
    (mixed / "trial00_IT-KB.json").write_text('{"algorithm": "IT-KB", "regret": [0.')
    assert main(["summarize", str(mixed)]) == 2
    assert "trial00_IT-KB.json" in capsys.readouterr().err
    (mixed / "trial00_IT-KB.json").unlink()
    assert main(["summarize", str(mixed)]) == 0  # legacy folders still load
    # a trial of another --first-trial run of the same configuration, pooled by hand
    run_experiment("rkhs-n2", algorithms=["MT-KB"], out_dir=tmp_path / "k5",
                   **{**KW, "trials": 1}, first_trial=5)
    (mixed / "trial05_MT-KB.json").write_bytes((tmp_path / "k5" / "trial05_MT-KB.json")
                                               .read_bytes())
    assert main(["summarize", str(mixed)]) == 2
    assert "trial05_MT-KB.json' is not part of" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ['{"settings": {"experim', "[1, 2]", '{"skipped": 3}'])
def test_a_corrupt_summary_is_rebuilt_from_the_trial_files(runs, tmp_path, capsys, damage):
    root, _ = runs
    run = tmp_path / "ab"
    shutil.copytree(root / "ab", run)
    original = json.loads((run / "summary.json").read_text())
    csv = (run / "rounds.csv").read_bytes()
    (run / "summary.json").write_text(damage)
    (run / "rounds.csv").write_text("experiment,algor")  # derived files are rebuilt too
    (run / "time_average_regret.png").unlink()
    with pytest.warns(DerivedFileWarning, match=r"summary.json.*not needed"):
        loaded = load_run(run)  # read from the trial files; nothing written without repair
    assert loaded.summary() == original["results"] and loaded.complete
    assert (run / "summary.json").read_text() == damage
    with pytest.warns(DerivedFileWarning):
        assert merge_runs([run, root / "a"]).summary() == original["results"]
    assert main(["summarize", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "warning: " in err and "summary.json" in err and "| rkhs-n2 | 3 | 2 |" in out
    rebuilt = json.loads((run / "summary.json").read_text())
    assert rebuilt["results"] == original["results"] and rebuilt["skipped"] == {}
    for key in ("experiment", "horizon", "seed", "algorithms", "trials", "versions"):
        assert rebuilt["settings"][key] == original["settings"][key], key
    assert (run / "rounds.csv").read_bytes() == csv
    assert (run / "time_average_regret.png").stat().st_size > 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error", DerivedFileWarning)  # repaired: no warning any more
        assert load_run(run).summary() == original["results"]


def test_a_corrupt_summary_in_a_read_only_folder_is_only_warned_about(runs, tmp_path, capsys,
                                                                      monkeypatch):
    root, _ = runs
    run = tmp_path / "ab"
    shutil.copytree(root / "ab", run)
    (run / "summary.json").write_text("{")
    real = os.open

    def read_only(path, flags, *args, **kwargs):
        if os.path.dirname(os.fspath(path)) == str(run) and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    assert main(["summarize", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "| rkhs-n2 | 3 | 2 |" in out and "Could not rewrite the derived files" in err
    assert (run / "summary.json").read_text() == "{"


def test_a_merge_raced_into_its_folder_is_refused(runs, tmp_path, monkeypatch):
    """Another run claims the merge's new folder after the merge checked it was empty."""
    root, _ = runs
    target, real = tmp_path / "merged", summarize._merge_target

    def raced(paths, out_dir):
        out = real(paths, out_dir)
        run_experiment("rkhs-n20", algorithms=["MT-KB"], out_dir=out, **KW)
        return out

    monkeypatch.setattr(summarize, "_merge_target", raced)
    with pytest.raises(ValueError, match="merged' was claimed by another run"):
        merge_runs([root / "a", root / "b"], out_dir=target, plot=False)
    assert json.loads((target / "manifest.json").read_text())["experiment"] == "rkhs-n20"
    assert load_run(target).experiment == "rkhs-n20"  # the other run's files are untouched
