"""Run folders owned by one configuration: the manifest and the checks made before writing.

A run folder holds one experiment configuration. ``manifest.json`` (written first, before any
trial) records everything that changes the results — experiment, algorithms, trials (count
and first index), horizon, seed, ``fast``, bound, scalarization, constants, problem options
(``options.noise``: the canonical noise spec of ``--noise``), the initial design
(``initial_design``, its size resolved, e.g. ``"sobol:8"``) and the package versions — and
nothing else (no dates, paths of the folder, worker counts), so
two runs with the same configuration have byte-identical manifests. ``run`` into a folder with
a different manifest is refused; with the same manifest it continues, skipping the finished
trials (common random numbers make every (trial, algorithm) pair independent, see
:mod:`.runner`). The claim is atomic (the manifest is created exclusively, so of two runs
starting into one new folder at the same instant exactly one owns it), and a folder that
cannot be written into is refused before any trial is computed.

The papers' protocol leaves the manifest as it was before these keys existed: ``noise`` is
written only when given and ``initial_design`` only when it is not ``"paper"`` (an absent key
means the paper's noise / the papers' design), so run folders of the papers' experiments
stay valid and their files unchanged. ``summarize --merge`` refuses runs of different
designs or noises through ``problem_notes``, which names both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import botorch
import gpytorch
import linear_operator
import torch

import botorch_mtucb
from mtucb_bench.experiments import ExperimentOptions
from mtucb_bench.fileio import check_writable, create_json, read_json
from mtucb_bench.noise_models import parse_noise
from mtucb_bench.results import TrialResult

__all__ = [
    "MANIFEST_FILE",
    "RunFolderError",
    "canonical_noise",
    "check_run_settings",
    "claim_run_folder",
    "expected_units",
    "load_finished_trials",
    "make_manifest",
    "manifest_difference",
    "package_versions",
    "run_files",
    "trial_file_name",
]

MANIFEST_FILE = "manifest.json"
FORMAT = 1


class RunFolderError(ValueError):
    """A run folder that belongs to another configuration (or cannot be written into)."""


def package_versions() -> dict[str, str]:
    """Versions of this package and of the numerical stack it runs on."""
    return {
        "botorch_mtucb": botorch_mtucb.__version__, "torch": torch.__version__,
        "botorch": botorch.__version__, "gpytorch": gpytorch.__version__,
        "linear_operator": linear_operator.__version__,
    }


def _options_dict(options: ExperimentOptions) -> dict[str, Any]:
    def path(p: str | Path | None) -> str | None:
        return None if p is None else str(Path(p).expanduser().resolve())

    out = {
        "continuous": bool(options.continuous), "data_dir": path(options.data_dir),
        "intel_data": path(options.intel_data), "intel_locs": path(options.intel_locs),
    }
    if options.noise is not None:
        out["noise"] = canonical_noise(options.noise)
    return out


def canonical_noise(spec: str) -> str:
    """The canonical form of a noise spec (``"Student-T:1.50"`` → ``"student-t:1.5"``)."""
    return parse_noise(spec).spec


def make_manifest(
    *,
    experiment: str,
    paper: str,
    algorithms: Sequence[str],
    trials: int,
    first_trial: int,
    horizon: int,
    seed: int,
    fast: bool,
    bound: str,
    scalarization: str | None,
    constants: str | None,
    options: ExperimentOptions,
    initial_design: str = "paper",
) -> dict[str, Any]:
    """The manifest of a run (a JSON-able dict; see the module docstring).

    ``initial_design`` is the resolved spec (:meth:`~.problems.InitialDesign.resolve`).
    """
    out = {
        "format": FORMAT, "experiment": experiment, "paper": paper,
        "algorithms": list(algorithms), "trials": int(trials), "first_trial": int(first_trial),
        "horizon": int(horizon), "seed": int(seed), "fast": bool(fast), "bound": bound,
        "scalarization": scalarization, "constants": constants,
        "options": _options_dict(options), "versions": package_versions(),
    }
    if initial_design != "paper":
        out["initial_design"] = initial_design
    return out


def check_run_settings(
    bound: str, scalarization: str, constants: str, threads: int | None, workers: int,
    scheduler: Any,
) -> None:
    """Refuse bad run settings before anything is written (a ``ValueError`` naming each)."""
    if bound not in ("spectral", "directional"):
        raise ValueError(f"`bound` must be 'spectral' or 'directional', got {bound!r}.")
    if scalarization not in ("chebyshev", "linear"):
        raise ValueError(f"`scalarization` must be 'chebyshev' or 'linear', got {scalarization!r}.")
    if constants not in ("authors", "theory"):
        raise ValueError(f"`constants` must be 'authors' or 'theory', got {constants!r}.")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"`threads` must be an integer >= 1 or None, got {threads!r}.")
    if not isinstance(workers, int) or workers < 0:
        raise ValueError(f"`workers` must be an integer >= 0, got {workers!r}.")
    if workers and scheduler is not None:
        raise ValueError("Give `workers` (local processes) or `scheduler` (Dask), not both.")


def trial_file_name(trial: int, algorithm: str) -> str:
    """``trial<k>_<algorithm>.json`` (k zero-padded to two digits)."""
    return f"trial{trial:02d}_{algorithm}.json"


def expected_units(manifest: dict[str, Any]) -> list[tuple[int, str]]:
    """The (trial, algorithm) pairs a run (or a merged run) is made of, in file order.

    A run lists ``trials`` trials from ``first_trial`` for each algorithm; a merged run lists
    them explicitly under ``expected`` (``{algorithm: [trial, ...]}``).
    """
    algs = list(manifest.get("algorithms", []))
    if "expected" in manifest:
        pairs = {(int(k), a) for a, ks in manifest["expected"].items() for k in ks}
    else:
        first = int(manifest.get("first_trial", 0))
        ks = range(first, first + int(manifest.get("trials", 0)))
        pairs = {(k, a) for k in ks for a in algs}
    order = {a: i for i, a in enumerate(algs)}
    return sorted(pairs, key=lambda p: (p[0], order.get(p[1], len(order)), p[1]))


def run_files(folder: str | Path) -> list[Path]:
    """Files of a run in ``folder``: manifest, summary, CSV and trial JSONs."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    names = (MANIFEST_FILE, "summary.json", "rounds.csv")
    return [folder / n for n in names if (folder / n).exists()] + sorted(
        folder.glob("trial*_*.json")
    )


def manifest_difference(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences ``key: old -> new`` (empty when the manifests agree)."""
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            a, b = old.get(key), new.get(key)
            if isinstance(a, dict) and isinstance(b, dict):
                out += [f"{key}.{d}" for d in manifest_difference(a, b)]
            else:
                out.append(f"{key}: {a!r} there, {b!r} here")
    return out


def claim_run_folder(out: str | Path, manifest: dict[str, Any]) -> bool:
    """Make ``out`` the folder of the run ``manifest``, writing the manifest first.

    The claim is atomic: ``manifest.json`` is created exclusively (:func:`~.fileio.create_json`),
    so of two runs claiming a new folder at the same instant exactly one owns it; the other
    continues it if its configuration is the same, and is refused otherwise. The folder must be
    writable (checked by a trial write), so nothing is computed for a run that could not keep
    its results.

    Args:
        out: The run folder (created if missing).
        manifest: From :func:`make_manifest`.

    Returns:
        ``True`` when ``out`` already held this very configuration (the run continues and
        finished trials are skipped), ``False`` for a new run.

    Raises:
        RunFolderError: If ``out`` holds a run of another configuration (also one that claimed
            it at the same instant), run files without a manifest (written by an older version,
            or by hand), or cannot be written into.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {str(out)!r} exists and is not a folder.")
    out.mkdir(parents=True, exist_ok=True)
    path = out / MANIFEST_FILE
    if path.exists():
        _check_same_configuration(out, read_json(path), manifest)
        _check_writable(out)
        return True
    stray = [p for p in run_files(out) if p.name != MANIFEST_FILE]
    if stray:
        names = ", ".join(p.name for p in stray[:4]) + (", ..." if len(stray) > 4 else "")
        raise RunFolderError(
            f"{str(out)!r} holds run files ({names}) but no {MANIFEST_FILE}, so their "
            f"configuration is unknown; choose another --out (or move those files away)."
        )
    _check_writable(out)
    if create_json(path, manifest, indent=2):
        return False
    # another run created the manifest between the check above and now
    _check_same_configuration(out, read_json(path), manifest, raced=True)
    return True


def _check_same_configuration(
    out: Path, old: dict[str, Any], new: dict[str, Any], raced: bool = False
) -> None:
    """Refuse ``out`` if its manifest ``old`` is not the run's ``new`` (differences named)."""
    diff = manifest_difference(old, new)
    if diff:
        how = "was claimed at the same instant by" if raced else "holds"
        raise RunFolderError(
            f"{str(out)!r} {how} another run configuration ({'; '.join(diff)}). Choose "
            f"another --out, or `run --resume --out {out}` to continue the run that is there."
        )


def _check_writable(out: Path) -> None:
    """Refuse a run folder that files cannot be created in, before any trial is computed."""
    try:
        check_writable(out)
    except OSError as err:
        reason = err.strerror or str(err)
        raise RunFolderError(
            f"Run folder {str(out)!r} is not writable ({reason}): no trial was computed. Make "
            f"it writable (or choose another --out); `summarize {out}` reads it as it is."
        ) from None


def load_finished_trials(
    out: Path, settings: dict[str, Any], units: list[tuple[int, str]]
) -> dict[tuple[int, str], TrialResult]:
    """Read back the finished trial files of a continued run, checking they belong to it.

    Args:
        out: The run folder.
        settings: The ``settings`` block every trial file of the run carries.
        units: The run's (trial, algorithm) pairs (:func:`expected_units`).

    Returns:
        ``(trial, algorithm) -> TrialResult`` for the pairs whose file exists.

    Raises:
        RunFolderError: For a trial file of another configuration, of a shorter horizon, or
            not among ``units``.
        ValueError: For a file that is not valid JSON (named).
    """
    names = {trial_file_name(k, a): (k, a) for k, a in units}
    stray = sorted(p.name for p in out.glob("trial*_*.json") if p.name not in names)
    if stray:
        raise RunFolderError(
            f"{str(out)!r} holds trial files that are not part of its configuration: "
            f"{', '.join(stray[:4])}{', ...' if len(stray) > 4 else ''}."
        )
    done = {}
    for name, (k, alg) in names.items():
        path = out / name
        if not path.exists():
            continue
        blob = read_json(path)
        theirs = blob.get("settings", {}) if isinstance(blob, dict) else {}
        bad = [key for key in settings if theirs.get(key) != settings[key]]
        regret = blob.get("regret") if isinstance(blob, dict) else None
        if bad or blob.get("trial") != k or blob.get("algorithm") != alg:
            raise RunFolderError(
                f"{str(path)!r} does not belong to the run in {str(out)!r} "
                f"(differs in {', '.join(bad) or 'trial/algorithm'}); move it away."
            )
        if not isinstance(regret, list) or len(regret) != settings["horizon"]:
            raise RunFolderError(
                f"{str(path)!r} is not a finished trial of horizon {settings['horizon']}."
            )
        done[(k, alg)] = TrialResult.from_json_dict(blob)
    return done
