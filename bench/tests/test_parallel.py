"""Parallel execution: local processes and Dask give the trial files of a serial run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mtucb_bench.cli import main
from mtucb_bench.experiments import ExperimentOptions
from mtucb_bench.parallel import execute
from mtucb_bench.runner import TrialUnit, run_experiment, run_unit

pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::linear_operator.utils.warnings.NumericalWarning",
    "ignore::DeprecationWarning",
)
# two trials × three algorithms (one with a Nyström dictionary) of a few rounds
ARGS = ["--algorithms", "MT-KB", "MT-BKB", "IT-KB", "--trials", "2", "--horizon", "4",
        "--seed", "3", "--no-progress"]


def _trial_files(folder):
    """Trial files without the per-round wall times (the only field that may differ)."""
    out = {}
    for p in sorted(folder.glob("trial*.json")):
        blob = json.loads(p.read_text())
        assert len(blob.pop("wall_time")) == 4
        out[p.name] = blob
    return out


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "run"
    assert main(["run", "rkhs-n2", *ARGS, "--out", str(out)]) == 0
    files = _trial_files(out)
    assert len(files) == 6
    return out, files


def test_workers_give_the_serial_trial_files(serial, tmp_path):
    out, files = serial
    par = tmp_path / "par"
    assert main(["run", "rkhs-n2", *ARGS, "--out", str(par), "--workers", "2"]) == 0
    assert _trial_files(par) == files
    assert (par / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()
    summary = json.loads((par / "summary.json").read_text())
    assert summary["settings"]["workers"] == 2 and summary["settings"]["threads"] == 1
    serial_summary = json.loads((out / "summary.json").read_text())["results"]
    for alg, entry in summary["results"].items():
        assert entry["final_time_average_regret_mean"] == (
            serial_summary[alg]["final_time_average_regret_mean"]
        )


def test_dask_gives_the_serial_trial_files(serial, tmp_path):
    distributed = pytest.importorskip("distributed")
    _, files = serial
    # two workers with two threads each, in this process: units meet in one process and
    # are serialised there (run_trial seeds torch's global generator)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        out = tmp_path / "dask"
        code = main(["run", "rkhs-n2", *ARGS, "--out", str(out),
                     "--scheduler", cluster.scheduler_address])
        assert code == 0
        assert _trial_files(out) == files
        with distributed.Client(cluster) as client:  # the Python API takes a Client too
            res = run_experiment("rkhs-n2", algorithms=["MT-KB"], trials=1, horizon=4,
                                 seed=3, threads=1, progress=False, scheduler=client)
            assert client.status == "running"  # a caller's client is left open
    blob = files["trial00_MT-KB.json"]
    assert res.trials[0].regret.tolist() == blob["regret"]


def test_execute_arguments_and_errors(tmp_path, capsys):
    unit = TrialUnit("rkhs-n2", 0, 0, "MT-KB", 2, "spectral", "chebyshev", "authors",
                     ExperimentOptions(), threads=1)
    with pytest.raises(ValueError, match="`workers` must be"):
        execute(run_unit, [unit], print, workers=-1)
    with pytest.raises(ValueError, match="not both"):
        execute(run_unit, [unit], print, workers=2, scheduler="tcp://localhost:1")
    with pytest.raises(ValueError, match="`scheduler` must be"):
        execute(run_unit, [unit], print, scheduler=42)
    execute(run_unit, [], print, workers=2)  # nothing to do starts nothing
    got = []
    execute(run_unit, [unit], got.append)
    assert got[0].record["regret"] == run_unit(unit).record["regret"]
    assert got[0].trial == 0 and got[0].algorithm == "MT-KB" and got[0].skipped is None
    # an algorithm that cannot run on the problem comes back as skipped, with the reason
    ehvi = TrialUnit("rkhs-n20", 0, 0, "qLogNEHVI", 2, "spectral", "chebyshev", "authors",
                     ExperimentOptions())
    out = run_unit(ehvi)
    assert out.record is None and "n" in out.skipped
    code = main(["run", "rkhs-n2", "--fast", "--workers", "2", "--scheduler", "tcp://x:1",
                 "--out", str(tmp_path / "x"), "--no-progress"])
    assert code == 2 and "not both" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before anything was written


def test_worker_exits_when_its_parent_is_gone():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    code = ("from mtucb_bench.parallel import _watch_parent\n"
            f"_watch_parent({dead.pid}, 0.05)\nimport time\ntime.sleep(30)\n")
    child = subprocess.run([sys.executable, "-c", code], timeout=25)
    assert child.returncode == 1
    alive = ("import os\nfrom mtucb_bench.parallel import _watch_parent\n"
             f"_watch_parent({os.getpid()}, 0.05)\nimport time\ntime.sleep(0.5)\n")
    assert subprocess.run([sys.executable, "-c", alive], timeout=25).returncode == 0


@pytest.mark.skipif(not hasattr(os, "waitid"), reason="needs os.waitid (POSIX)")
def test_worker_exits_when_its_parent_is_an_unreaped_zombie():
    # a parent killed while its own caller has not reaped it yet: os.kill(pid, 0) succeeds
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        code = ("from mtucb_bench.parallel import _watch_parent\n"
                f"_watch_parent({zombie.pid}, 0.05)\nimport time\ntime.sleep(5)\n")
        child = subprocess.run([sys.executable, "-c", code], timeout=25)
        assert child.returncode == 1
    finally:
        zombie.wait()


def test_a_worker_with_other_package_versions_is_refused(tmp_path, monkeypatch):
    from dataclasses import replace

    from mtucb_bench import runner

    real = runner.run_unit

    def other_environment(unit):
        out = real(unit)
        return replace(out, versions={**out.versions, "torch": "0.0"})

    monkeypatch.setattr(runner, "run_unit", other_environment)
    with pytest.raises(ValueError, match="other package versions"):
        run_experiment("rkhs-n2", algorithms=["MT-KB"], trials=1, horizon=2, progress=False,
                       out_dir=tmp_path / "run")
    assert not list((tmp_path / "run").glob("trial*.json"))  # nothing of it was written
