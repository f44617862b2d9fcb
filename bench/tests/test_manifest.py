"""Run-folder ownership: manifests, the claim check, expected (trial, algorithm) pairs."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os

import pytest

from mtucb_bench import manifest as manifest_module
from mtucb_bench.experiments import ExperimentOptions
from mtucb_bench.manifest import (
    MANIFEST_FILE,
    RunFolderError,
    claim_run_folder,
    expected_units,
    make_manifest,
    manifest_difference,
    package_versions,
)


def _manifest(**kw):
    base = dict(
        experiment="rkhs-n2", paper="000", algorithms=["MT-KB", "IT-KB"], trials=2,
        first_trial=3, horizon=5, seed=1, fast=False, bound="spectral",
        scalarization="chebyshev", constants=None, options=ExperimentOptions(),
    )
    return make_manifest(**{**base, **kw})


def test_manifest_is_deterministic_and_complete(tmp_path):
    m = _manifest()
    assert m == _manifest()  # no dates or other run-to-run noise
    for key in ("experiment", "algorithms", "trials", "first_trial", "horizon", "seed", "fast",
                "bound", "scalarization", "constants", "options", "versions"):
        assert key in m
    assert m["versions"] == package_versions() and "torch" in m["versions"]
    rel = _manifest(options=ExperimentOptions(data_dir="data"))
    assert rel["options"]["data_dir"].endswith("/data") and rel["options"]["data_dir"][0] == "/"
    json.dumps(m)


def test_expected_units_of_runs_and_merged_runs():
    assert expected_units(_manifest()) == [
        (3, "MT-KB"), (3, "IT-KB"), (4, "MT-KB"), (4, "IT-KB")
    ]
    merged = {"algorithms": ["MT-KB", "MOBO"], "expected": {"MOBO": [0], "MT-KB": [1, 0]}}
    assert expected_units(merged) == [(0, "MT-KB"), (0, "MOBO"), (1, "MT-KB")]


def test_claim_new_same_and_other_configuration(tmp_path):
    out = tmp_path / "run"
    m = _manifest()
    assert claim_run_folder(out, m) is False
    assert json.loads((out / MANIFEST_FILE).read_text()) == m
    assert claim_run_folder(out, m) is True  # the same configuration continues
    with pytest.raises(RunFolderError, match=r"seed: 1 there, 2 here"):
        claim_run_folder(out, _manifest(seed=2))
    with pytest.raises(RunFolderError, match=r"experiment: 'rkhs-n2' there, 'rkhs-n20' here"):
        claim_run_folder(out, _manifest(experiment="rkhs-n20"))
    with pytest.raises(RunFolderError, match=r"options\.continuous"):
        claim_run_folder(out, _manifest(options=ExperimentOptions(continuous=True)))
    assert json.loads((out / MANIFEST_FILE).read_text()) == m  # untouched


def test_claim_refuses_run_files_without_manifest_and_files(tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "trial00_MT-KB.json").write_text("{}")
    with pytest.raises(RunFolderError, match="trial00_MT-KB.json.*no manifest.json"):
        claim_run_folder(legacy, _manifest())
    assert not (legacy / MANIFEST_FILE).exists()
    other = tmp_path / "notes.txt"  # unrelated files are fine, a file as --out is not
    other.write_text("x")
    with pytest.raises(RunFolderError, match="not a folder"):
        claim_run_folder(other, _manifest())
    assert claim_run_folder(tmp_path, _manifest()) is False


def test_manifest_difference_is_readable():
    a, b = _manifest(), _manifest(horizon=7, algorithms=["MT-KB"])
    diff = manifest_difference(a, b)
    assert "horizon: 5 there, 7 here" in diff
    assert "algorithms: ['MT-KB', 'IT-KB'] there, ['MT-KB'] here" in diff
    assert manifest_difference(a, a) == []


def test_design_and_noise_keys_only_off_the_papers_protocol():
    from mtucb_bench.manifest import canonical_noise, check_run_settings

    paper = _manifest()
    assert "initial_design" not in paper and "noise" not in paper["options"]
    assert _manifest(initial_design="paper") == paper  # the old manifests stay valid
    sobol = _manifest(initial_design="sobol:8", options=ExperimentOptions(noise="Gaussian:0.50"))
    assert sobol["initial_design"] == "sobol:8" and sobol["options"]["noise"] == "gaussian:0.5"
    assert manifest_difference(paper, sobol) == [
        "initial_design: None there, 'sobol:8' here", "options.noise: None there, "
        "'gaussian:0.5' here",
    ]
    assert canonical_noise("CONTAMINATED:0.020x1000") == "contaminated:0.02x1000"
    with pytest.raises(ValueError, match="Malformed noise spec"):
        canonical_noise("contaminated:0.02")
    with pytest.raises(ValueError, match="`bound`"):
        check_run_settings("dir", "chebyshev", "authors", None, 0, None)
    with pytest.raises(ValueError, match="`scalarization`"):
        check_run_settings("spectral", "tchebycheff", "authors", None, 0, None)
    with pytest.raises(ValueError, match="not both"):
        check_run_settings("spectral", "chebyshev", "authors", None, 2, "tcp://x:1")


def _claim_each(folders, manifest, barrier, results):
    """Claim each folder in turn, in step with the other process (a child's target)."""
    for folder in folders:
        barrier.wait(timeout=60)
        try:
            results.put((folder, "continued" if claim_run_folder(folder, manifest) else "owner"))
        except RunFolderError as err:
            results.put((folder, f"refused: {err}"))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs the fork start method (cheap child processes)")
def test_two_configurations_racing_for_a_new_folder_have_one_owner(tmp_path):
    """Two processes claim 20 new folders at the same instant: one owns each, one is refused."""
    ctx = multiprocessing.get_context("fork")
    folders = [str(tmp_path / f"run{i:02d}") for i in range(20)]
    mine, theirs = _manifest(), _manifest(seed=2)
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_claim_each, args=(folders, m, barrier, results))
             for m in (mine, theirs)]
    for proc in procs:
        proc.start()
    try:
        outcomes: dict[str, list[str]] = {f: [] for f in folders}
        for _ in range(2 * len(folders)):
            folder, outcome = results.get(timeout=60)
            outcomes[folder].append(outcome)
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    for folder, got in outcomes.items():
        assert sorted(o.split(":")[0] for o in got) == ["owner", "refused"], (folder, got)
        refusal = next(o for o in got if o.startswith("refused"))
        assert "another run configuration" in refusal and "seed: " in refusal
        owner = json.loads((tmp_path / folder / MANIFEST_FILE).read_text())
        assert owner in (mine, theirs)


def test_a_claim_raced_by_another_configuration_is_refused(tmp_path, monkeypatch):
    """The other run's manifest lands between this run's checks and its own manifest."""
    real = manifest_module.run_files

    def race(other):
        def late(folder):
            found = real(folder)
            monkeypatch.setattr(manifest_module, "run_files", real)
            assert claim_run_folder(folder, other) is False  # the other run owns it now
            return found
        return late

    out, mine, theirs = tmp_path / "run", _manifest(), _manifest(seed=2)
    monkeypatch.setattr(manifest_module, "run_files", race(theirs))
    with pytest.raises(RunFolderError, match=r"claimed at the same instant by another run "
                                             r"configuration \(seed: 2 there, 1 here\)"):
        claim_run_folder(out, mine)
    assert json.loads((out / MANIFEST_FILE).read_text()) == theirs  # not overwritten
    # the same configuration racing in continues the run (its trials are the same)
    twin = tmp_path / "twin"
    monkeypatch.setattr(manifest_module, "run_files", race(mine))
    assert claim_run_folder(twin, mine) is True
    assert json.loads((twin / MANIFEST_FILE).read_text()) == mine
    assert sorted(p.name for p in twin.iterdir()) == [MANIFEST_FILE]  # no temporary files


def _deny_writes_into(monkeypatch, folder):
    """Make creating files in ``folder`` fail as on a read-only folder (even as root)."""
    real = os.open

    def guarded(path, flags, *args, **kwargs):
        if os.path.dirname(os.fspath(path)) == str(folder) and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


def test_claim_refuses_a_folder_it_cannot_write_into(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert claim_run_folder(out, _manifest()) is False
    _deny_writes_into(monkeypatch, out)
    with pytest.raises(RunFolderError, match=rf"Run folder '{out}' is not writable "
                                             r"\(Permission denied\): no trial was computed"):
        claim_run_folder(out, _manifest())  # the same configuration: continued, if it could
    new = tmp_path / "new"
    new.mkdir()
    _deny_writes_into(monkeypatch, new)
    with pytest.raises(RunFolderError, match="'.*new' is not writable"):
        claim_run_folder(new, _manifest())
    assert list(new.iterdir()) == []
    with pytest.raises(RunFolderError, match="seed: 1 there, 2 here"):  # the mismatch first
        claim_run_folder(out, _manifest(seed=2))
