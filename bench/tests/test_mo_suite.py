"""The multi-objective suite's runner and pooling (``mtucb_bench.suites.mo_suite``)."""

from __future__ import annotations

import json
import subprocess
from argparse import Namespace
from pathlib import Path

import pytest

from mtucb_bench.suites import mo_suite


def _folder(root: Path, name: str, noise: str | None) -> None:
    options = {"continuous": False} | ({"noise": noise} if noise else {})
    manifest = {"experiment": "mo-zdt1", "horizon": 20, "seed": 0, "bound": "directional",
                "initial_design": "sobol:8", "options": options, "algorithms": []}
    (root / name).mkdir()
    (root / name / "manifest.json").write_text(json.dumps(manifest))


def test_pooling_refuses_folders_of_different_noise(tmp_path):
    _folder(tmp_path, "zdt1", None)
    _folder(tmp_path, "zdt1+noisy", "gaussian:0.07")
    with pytest.raises(ValueError, match="'noise'"):
        mo_suite.pooled_runs(tmp_path)


def test_pooling_accepts_folders_of_the_same_noise(tmp_path):
    _folder(tmp_path, "zdt1", "gaussian:0.07")
    _folder(tmp_path, "zdt1+more", "gaussian:0.07")
    manifests, runs = mo_suite.pooled_runs(tmp_path)["zdt1"]
    assert len(manifests) == 2 and runs == {}


@pytest.mark.parametrize(
    ("noise", "noise_range", "expected"),
    [(0.0, 0.0, None), (0.07, 0.0, "gaussian:0.07"), (0.0, 0.05, "gaussian-range:0.05")],
)
def test_run_passes_the_noise_to_the_cli(monkeypatch, tmp_path, noise, noise_range, expected):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: calls.append(cmd))
    ns = Namespace(problems=["zdt1"], trials=2, first_trial=0, horizon=3, workers=1,
                   algorithms=None, tag="", noise=noise, noise_range=noise_range, out=tmp_path)
    mo_suite.run(ns)
    (cmd,) = calls
    if expected is None:
        assert "--noise" not in cmd
    else:
        assert cmd[cmd.index("--noise") + 1] == expected


@pytest.mark.parametrize("folder", ["missing", "empty", "manifest only"])
def test_summarize_without_trials_keeps_the_results(tmp_path, capsys, folder):
    out, res = tmp_path / "out", tmp_path / "res"
    if folder != "missing":
        out.mkdir()
    if folder == "manifest only":
        _folder(out, "zdt1", None)
    res.mkdir()
    (res / "tables.md").write_text("committed")
    with pytest.raises(SystemExit) as exit_:
        mo_suite.main(["summarize", "--out", str(out), "--results", str(res)])
    assert exit_.value.code == 2 and capsys.readouterr().err.startswith("error: ")
    assert [p.name for p in res.iterdir()] == ["tables.md"]
    assert (res / "tables.md").read_text() == "committed"


@pytest.mark.parametrize(("option", "value"), [
    ("--problems", "bogus"), ("--trials", "0"), ("--horizon", "0"), ("--workers", "-1"),
])
def test_bad_run_arguments_are_usage_errors(monkeypatch, tmp_path, capsys, option, value):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: calls.append(cmd))
    with pytest.raises(SystemExit) as exit_:
        mo_suite.main(["run", "--problems", "zdt1", option, value, "--out", str(tmp_path)])
    assert exit_.value.code == 2 and f"argument {option}:" in capsys.readouterr().err
    assert calls == []


def test_a_failed_cli_call_ends_the_run_with_its_status(monkeypatch, tmp_path):
    def fail(cmd, check):
        raise subprocess.CalledProcessError(2, cmd)

    monkeypatch.setattr(subprocess, "run", fail)
    with pytest.raises(SystemExit) as exit_:
        mo_suite.main(["run", "--problems", "zdt1", "--algorithms", "bogus", "--out",
                       str(tmp_path)])
    assert exit_.value.code == 2
