"""Finished runs: reload run folders, merge them, and format the results tables.

A long protocol is often run in pieces — some algorithms now, the expensive baselines later, or
one experiment per core. Because trial ``k`` of base seed ``s`` always draws the same problem
instance, initial point, λ sequence and noise (common random numbers, see :mod:`.runner`),
runs with the same experiment, seed, horizon and options can be pooled: :func:`merge_runs`
checks that they agree and writes one folder (trial JSONs, ``summary.json``, ``rounds.csv``,
figure) as if everything had been one ``run``. :func:`format_results_table` prints the
Markdown table of final time-average regrets (mean ± std over trials) of the benchmark
documentation (``docs/benchmarks.md``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from mtucb_bench.fileio import create_json, read_json, write_bytes
from mtucb_bench.manifest import MANIFEST_FILE, expected_units, trial_file_name
from mtucb_bench.outputs import write_outputs
from mtucb_bench.results import ExperimentResult, TrialResult

__all__ = [
    "DerivedFileWarning",
    "format_results_table",
    "load_run",
    "merge_runs",
    "paired_comparison",
]

#: Settings that must agree for runs to be pooled (plus ``options.continuous``,
#: ``options.noise`` and, when both runs record them, the package ``versions``). An absent
#: ``initial_design`` / ``options.noise`` means the papers' design / noise.
MERGE_KEYS = (
    "experiment", "horizon", "seed", "fast", "bound", "scalarization", "constants",
    "initial_design", "problem_notes",
)
#: Settings every trial file of a run folder must share with the run.
TRIAL_KEYS = (
    "experiment", "horizon", "seed", "fast", "bound", "scalarization", "constants",
    "initial_design",
)


SUMMARY_FILE = "summary.json"


class DerivedFileWarning(UserWarning):
    """A derived file of a run folder (``summary.json``) is unreadable and was not used."""


def load_run(path: str | Path, *, repair: bool = False) -> ExperimentResult:
    """Reload a run folder written by ``run`` (its trial JSONs, summary and manifest).

    The trial files and ``manifest.json`` are the record; ``summary.json``, ``rounds.csv`` and
    the figure are derived from them. A ``summary.json`` that cannot be read (not JSON, not a
    run summary) is ignored with a :class:`DerivedFileWarning`, and with ``repair`` the derived
    files are written again from the trial files.

    Args:
        path: The run folder.
        repair: Rewrite ``summary.json``, ``rounds.csv`` and the figure when ``summary.json``
            is unreadable (a folder that cannot be written into is warned about and left
            as it is).

    Returns:
        An :class:`~mtucb_bench.results.ExperimentResult` without histories;
        ``missing`` lists the (trial, algorithm) pairs of the manifest that have no trial file
        yet (an interrupted run; a run without a manifest is checked against the settings of
        its ``summary.json``).

    Raises:
        FileNotFoundError: If the folder has neither trial files nor a manifest.
        ValueError: Naming the file, if a trial file or the manifest is not valid JSON, or a
            trial file belongs to another configuration (another experiment, seed, horizon,
            ...) than the run.
    """
    path = Path(path)
    files = sorted(path.glob("trial*_*.json"))
    manifest = read_json(path / MANIFEST_FILE) if (path / MANIFEST_FILE).is_file() else None
    if not files and manifest is None:
        raise FileNotFoundError(
            f"No trial*_<algorithm>.json files (and no {MANIFEST_FILE}) in {str(path)!r}."
        )
    summary = _read_summary(path / SUMMARY_FILE)
    unreadable = summary is None
    summary = summary or {}
    source = SUMMARY_FILE if summary.get("settings") else MANIFEST_FILE
    settings = dict(summary.get("settings") or manifest or {})
    blobs = [(f, read_json(f)) for f in files]
    if blobs and isinstance(blobs[0][1], dict):
        theirs = blobs[0][1].get("settings", {})
        if not settings:
            source, settings = blobs[0][0].name, dict(theirs)
        settings.setdefault("problem_notes", theirs.get("problem_notes"))  # run still going
    if "experiment" not in settings:
        raise ValueError(f"{str(path)!r} has no settings (summary.json or trial JSON).")
    trials = [_trial(f, blob, settings, source) for f, blob in blobs]
    order = list(settings.get("algorithms", []))
    trials.sort(key=lambda tr: (tr.trial, _index(order, tr.algorithm)))
    skipped = dict(summary.get("skipped", {}))
    missing: list[tuple[int, str]] = []
    plan = manifest if manifest is not None else (
        None if "merged_from" in settings else settings
    )
    if plan is not None:
        expected = expected_units(plan)
        have = {(tr.trial, tr.algorithm) for tr in trials}
        stray = sorted(trial_file_name(*u) for u in have - set(expected))
        if stray:  # e.g. a trial of another --first-trial run written into this folder
            raise ValueError(
                f"{str(path / stray[0])!r} is not part of the run's configuration "
                f"({MANIFEST_FILE if manifest is not None else source}); move it away."
            )
        missing = [u for u in expected if u not in have and u[1] not in skipped]
    result = ExperimentResult(
        experiment=settings["experiment"], settings=settings, trials=trials,
        skipped=skipped, out_dir=path, missing=missing,
    )
    if repair and unreadable:
        _rewrite_derived(result, path)
    return result


def _read_summary(f: Path) -> dict[str, Any] | None:
    """``summary.json`` as a dict (empty when absent); ``None``, with a warning, when it
    cannot be read or is not a run summary."""
    if not f.is_file():
        return {}
    try:
        blob = read_json(f)
    except (OSError, ValueError) as err:
        problem = str(err)
    else:
        if isinstance(blob, dict) and all(
            blob.get(key) is None or isinstance(blob[key], dict) for key in ("settings", "skipped")
        ):
            return blob
        problem = f"{str(f)!r} is not a run summary (a JSON object with settings and skipped)"
    warnings.warn(
        f"{problem}. It is derived from the trial files and is not needed: the run is read "
        f"from its trial files and {MANIFEST_FILE} (`summarize` rewrites it; algorithms it "
        f"recorded as skipped show as missing until `run --resume` records them again).",
        DerivedFileWarning, stacklevel=3,
    )
    return None


def _rewrite_derived(result: ExperimentResult, path: Path) -> None:
    """Write the derived files of ``result`` into its folder again; warn if that fails."""
    try:
        write_outputs(result, path)
    except OSError as err:
        warnings.warn(
            f"Could not rewrite the derived files of {str(path)!r} ({err}); its results above "
            f"come from the trial files.", DerivedFileWarning, stacklevel=3,
        )


def _trial(f: Path, blob: Any, settings: dict[str, Any], source: str) -> TrialResult:
    if not isinstance(blob, dict):
        raise ValueError(f"Cannot read {str(f)!r}: not a trial record (a JSON object).")
    theirs = blob.get("settings", {})
    for key in TRIAL_KEYS:
        if key in theirs and theirs[key] != settings.get(key):
            raise ValueError(
                f"{str(f)!r} belongs to another run: its {key} is {theirs[key]!r}, the run's "
                f"({source}) is {settings.get(key)!r}. Move it to its own folder."
            )
    try:
        tr = TrialResult.from_json_dict(blob)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"Cannot read {str(f)!r}: {err}") from None
    if f.name != trial_file_name(tr.trial, tr.algorithm):
        raise ValueError(
            f"{str(f)!r} holds trial {tr.trial} of {tr.algorithm}, whose file is "
            f"{trial_file_name(tr.trial, tr.algorithm)!r}: renamed or copied by hand?"
        )
    T = settings.get("horizon")
    if T is not None and tr.regret.numel() != T:
        raise ValueError(
            f"{str(f)!r} has {tr.regret.numel()} rounds, but the run's horizon is {T}."
        )
    return tr


def _merge_config(settings: dict[str, Any]) -> dict[str, Any]:
    cfg = {key: settings.get(key) for key in MERGE_KEYS}
    cfg["initial_design"] = cfg["initial_design"] or "paper"
    options = settings.get("options") or {}
    cfg["options.continuous"] = bool(options.get("continuous", False))
    cfg["options.noise"] = options.get("noise")
    return cfg


def merge_runs(
    paths: Sequence[str | Path], out_dir: str | Path | None = None, plot: bool = True
) -> ExperimentResult:
    """Pool the trials of several runs of one experiment (same seed, horizon and options).

    Args:
        paths: Run folders (each once).
        out_dir: A new or empty folder for the merged run (manifest, trial JSONs copied,
            summary, CSV, figure; all written atomically); nothing is written when ``None``.
            It may not be, contain or lie inside an input folder.
        plot: Write the PNG.

    Returns:
        The merged :class:`~mtucb_bench.results.ExperimentResult` (``missing``:
        the pairs the inputs' manifests plan but none of them holds).

    Raises:
        ValueError: If ``out_dir`` is an input folder or not empty (also when another run
            claims it while the merge is prepared), a folder is listed twice,
            the runs differ in a setting of :data:`MERGE_KEYS` (or ``options.continuous``,
            ``options.noise``, or the package versions), or they hold the same (trial,
            algorithm) pair twice with different regrets (identical re-runs are counted once).
    """
    if not paths:
        raise ValueError("`paths` must name at least one run folder.")
    out = _merge_target(paths, out_dir)
    runs = [load_run(p) for p in paths]
    _check_same_configuration(runs, paths)
    first = runs[0].settings
    seen, skipped, planned = _pool_trials(runs, paths)
    algorithms: list[str] = []
    for run in runs:
        algorithms += [a for a in run.settings.get("algorithms", []) if a not in algorithms]
    trials = sorted((tr for _, tr in seen.values()),
                    key=lambda tr: (tr.trial, _index(algorithms, tr.algorithm)))
    expected: dict[str, list[int]] = {}
    for k, a in sorted(planned):
        expected.setdefault(a, []).append(k)
    manifest = {
        key: first[key] for key in ("format", "experiment", "paper", "horizon", "seed", "fast",
                                    "bound", "scalarization", "constants", "options",
                                    "versions") if key in first
    }
    manifest.update(algorithms=algorithms, expected=expected,
                    merged_from=[str(p) for p in paths])
    settings = {
        **first, **manifest,
        "trials": len({tr.trial for tr in trials}),
        "total_wall_time_s": sum(r.settings.get("total_wall_time_s", 0.0) for r in runs),
    }
    missing = [u for u in expected_units(manifest) if u not in seen and u[1] not in skipped]
    result = ExperimentResult(first["experiment"], settings, trials, skipped, missing=missing)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        result.out_dir = out
        if not create_json(out / MANIFEST_FILE, manifest, indent=2):  # claimed atomically
            raise ValueError(
                f"--merge {str(out)!r} was claimed by another run while this merge was "
                f"prepared: choose a new folder."
            )
        for (k, a), (src, _) in sorted(seen.items()):
            name = trial_file_name(k, a)
            write_bytes(out / name, (Path(src) / name).read_bytes())
        write_outputs(result, out, plot=plot)
    return result


def _merge_target(paths: Sequence[str | Path], out_dir: str | Path | None) -> Path | None:
    """``out_dir`` as a path, after checking the inputs are distinct and that it is a new or
    empty folder outside every input."""
    resolved = [Path(p).resolve() for p in paths]
    for i, r in enumerate(resolved):
        if r in resolved[:i]:
            raise ValueError(f"Run folder {str(paths[i])!r} is listed twice.")
    if out_dir is None:
        return None
    out = Path(out_dir)
    o = out.resolve()
    for p, r in zip(paths, resolved, strict=True):
        if o == r or r in o.parents or o in r.parents:
            raise ValueError(
                f"--merge {str(out)!r} would write into the input run {str(p)!r}: "
                f"choose a new folder."
            )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--merge {str(out)!r} exists and is not empty: choose a new folder.")
    return out


def _check_same_configuration(
    runs: Sequence[ExperimentResult], paths: Sequence[str | Path]
) -> None:
    """Refuse runs that differ from the first in a setting of :data:`MERGE_KEYS` (or the
    options or package versions that must agree)."""
    first = runs[0].settings
    for run, p in zip(runs[1:], paths[1:], strict=True):
        mine, theirs = _merge_config(run.settings), _merge_config(first)
        if "versions" in run.settings and "versions" in first:
            mine["versions"], theirs["versions"] = run.settings["versions"], first["versions"]
        for key in mine:
            if key == "problem_notes" and None in (mine[key], theirs[key]):
                continue  # a run without trial files yet (only its manifest)
            if mine[key] != theirs[key]:
                raise ValueError(
                    f"Cannot merge {str(p)!r}: setting {key!r} is {mine[key]!r}, "
                    f"but {theirs[key]!r} in {str(paths[0])!r}."
                )


def _pool_trials(
    runs: Sequence[ExperimentResult], paths: Sequence[str | Path]
) -> tuple[dict[tuple[int, str], tuple[str, TrialResult]], dict[str, str], set[tuple[int, str]]]:
    """The runs' trials, each (trial, algorithm) pair once with the folder it comes from; the
    skipped algorithms; the pairs the runs planned (finished or missing)."""
    seen: dict[tuple[int, str], tuple[str, TrialResult]] = {}
    skipped: dict[str, str] = {}
    planned: set[tuple[int, str]] = set()
    for run, p in zip(runs, paths, strict=True):
        skipped.update(run.skipped)
        planned |= set(run.missing)
        for tr in run.trials:
            key = (tr.trial, tr.algorithm)
            planned.add(key)
            if key in seen:  # a re-run of the same trial must be identical (same seeds)
                other_path, other = seen[key]
                if not torch.equal(other.regret, tr.regret):
                    raise ValueError(
                        f"Trial {tr.trial} of {tr.algorithm} differs between {other_path!r} "
                        f"and {str(p)!r}."
                    )
                continue
            seen[key] = (str(p), tr)
    return seen, skipped, planned


def _index(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def format_results_table(
    results: Sequence[ExperimentResult], algorithms: Sequence[str] | None = None
) -> str:
    """Markdown table: experiment, T, trials, final R_C(T)/T mean ± std per algorithm.

    Args:
        results: One run (or merged run) per row.
        algorithms: Column order (default: every algorithm, in order of appearance).

    Returns:
        The table; ``n/a`` marks an algorithm the run skipped (with its reason in the run's
        ``summary.json``), ``–`` one it did not run; an incomplete run (``missing`` pairs) is
        marked ``(incomplete: k/m)`` after its name, with k of m trial files present.
    """
    if algorithms is None:
        algorithms = []
        for res in results:
            algorithms += [a for a in res.algorithms() if a not in algorithms]
    head = "| " + " | ".join(["experiment", "T", "trials", *algorithms]) + " |"
    lines = [head, "|" + "---|" * (3 + len(algorithms))]
    for res in results:
        summ = res.summary()
        cells = []
        for alg in algorithms:
            if alg in summ:
                e = summ[alg]
                m, s = e["final_time_average_regret_mean"], e["final_time_average_regret_std"]
                cells.append(f"{m:.3g} ± {s:.2g}" if e["trials"] > 1 else f"{m:.3g}")
            else:
                cells.append("n/a" if alg in res.skipped else "–")
        n = len({tr.trial for tr in res.trials})
        name = res.experiment
        if res.missing:
            have = len(res.trials)
            name += f" (incomplete: {have}/{have + len(res.missing)})"
        row = [name, str(res.settings.get("horizon")), str(n), *cells]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def paired_comparison(result: ExperimentResult, first: str, second: str) -> dict[str, float]:
    """Trial-by-trial comparison of two algorithms' final R_C(T)/T (same instance per trial).

    Common random numbers make the per-trial difference the informative statistic: the spread
    over problem instances (the papers' error bars) cancels.

    Args:
        result: A run holding both algorithms.
        first: Algorithm A.
        second: Algorithm B.

    Returns:
        ``trials`` (paired trials), ``first_better`` (trials where A's final time-average
        regret is lower), ``mean_difference`` and ``std_difference`` of A − B.
    """
    finals: dict[str, dict[int, float]] = {first: {}, second: {}}
    for tr in result.trials:
        if tr.algorithm in finals and tr.time_average.numel():
            finals[tr.algorithm][tr.trial] = float(tr.time_average[-1])
    for name, vals in finals.items():
        if not vals:
            raise ValueError(f"Algorithm {name!r} is not in the run of {result.experiment!r}.")
    common = sorted(set(finals[first]) & set(finals[second]))
    diff = torch.tensor([finals[first][k] - finals[second][k] for k in common], dtype=torch.float64)
    return {
        "trials": len(common),
        "first_better": int((diff < 0).sum()),
        "mean_difference": float(diff.mean()) if len(common) else float("nan"),
        "std_difference": float(diff.std()) if len(common) > 1 else 0.0,
    }
