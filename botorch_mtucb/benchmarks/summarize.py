"""Finished runs: reload run folders, merge them, and format the README tables.

A long protocol is often run in pieces — some algorithms now, the expensive baselines later, or
one experiment per core. Because trial ``k`` of base seed ``s`` always draws the same problem
instance, initial point, λ sequence and noise (common random numbers, see :mod:`.runner`),
runs with the same experiment, seed, horizon and options can be pooled: :func:`merge_runs`
checks that they agree and writes one folder (trial JSONs, ``summary.json``, ``rounds.csv``,
figure) as if everything had been one ``run``. :func:`format_results_table` prints the
Markdown table of final time-average regrets (mean ± std over trials) used in
``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch

from botorch_mtucb.benchmarks.runner import ExperimentResult, TrialResult, write_outputs

__all__ = ["format_results_table", "load_run", "merge_runs", "paired_comparison"]

#: Settings that must agree for runs to be pooled.
MERGE_KEYS = (
    "experiment", "horizon", "seed", "fast", "bound", "scalarization", "constants",
    "problem_notes",
)


def load_run(path: str | Path) -> ExperimentResult:
    """Reload a run folder written by ``run`` (its ``trial*.json`` and ``summary.json``).

    Args:
        path: The run folder.

    Returns:
        An :class:`~botorch_mtucb.benchmarks.runner.ExperimentResult` without histories.
    """
    path = Path(path)
    files = sorted(path.glob("trial*_*.json"))
    if not files:
        raise FileNotFoundError(f"No trial*_<algorithm>.json files in {str(path)!r}.")
    summary_file = path / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    trials, settings = [], dict(summary.get("settings", {}))
    for f in files:
        blob = json.loads(f.read_text())
        settings = settings or dict(blob.get("settings", {}))
        trials.append(_trial_from_json(blob))
    if "experiment" not in settings:
        raise ValueError(f"{str(path)!r} has no settings (summary.json or trial JSON).")
    order = list(settings.get("algorithms", []))
    trials.sort(key=lambda tr: (tr.trial, _index(order, tr.algorithm)))
    result = ExperimentResult(
        experiment=settings["experiment"], settings=settings, trials=trials,
        skipped=dict(summary.get("skipped", {})), out_dir=path,
    )
    return result


def _trial_from_json(blob: dict) -> TrialResult:
    def vec(key: str) -> torch.Tensor | None:
        v = blob.get(key)
        if v is None or any(x is None for x in v):  # absent, or not recorded every round
            return None
        return torch.tensor(v, dtype=torch.float64)

    regret = vec("regret")
    if regret is None:
        raise ValueError(f"Trial JSON of {blob.get('algorithm')!r} has no 'regret' array.")
    return TrialResult(
        algorithm=blob["algorithm"], trial=int(blob["trial"]), seed=int(blob["seed"]),
        regret=regret, time_average=vec("time_average_regret"), wall_time=vec("wall_time"),
        bayes=vec("bayes_regret"), hypervolume=vec("hypervolume"),
        dictionary_size=vec("dictionary_size"),
    )


def merge_runs(
    paths: Sequence[str | Path], out_dir: str | Path | None = None, plot: bool = True
) -> ExperimentResult:
    """Pool the trials of several runs of one experiment (same seed, horizon and options).

    Args:
        paths: Run folders.
        out_dir: Folder for the merged run (trial JSONs copied, summary, CSV, figure);
            nothing is written when ``None``.
        plot: Write the PNG.

    Returns:
        The merged :class:`~botorch_mtucb.benchmarks.runner.ExperimentResult`.

    Raises:
        ValueError: If the runs differ in a setting of :data:`MERGE_KEYS` or hold the same
            (trial, algorithm) pair twice with different regrets (identical re-runs are
            counted once).
    """
    if not paths:
        raise ValueError("`paths` must name at least one run folder.")
    runs = [load_run(p) for p in paths]
    first = runs[0].settings
    for run, p in zip(runs[1:], paths[1:], strict=True):
        for key in MERGE_KEYS:
            if run.settings.get(key) != first.get(key):
                raise ValueError(
                    f"Cannot merge {str(p)!r}: setting {key!r} is {run.settings.get(key)!r}, "
                    f"but {first.get(key)!r} in {str(paths[0])!r}."
                )
    seen: dict[tuple[int, str], tuple[str, TrialResult]] = {}
    trials: list[TrialResult] = []
    skipped: dict[str, str] = {}
    for run, p in zip(runs, paths, strict=True):
        skipped.update(run.skipped)
        for tr in run.trials:
            key = (tr.trial, tr.algorithm)
            if key in seen:  # a re-run of the same trial must be identical (same seeds)
                other_path, other = seen[key]
                if not torch.equal(other.regret, tr.regret):
                    raise ValueError(
                        f"Trial {tr.trial} of {tr.algorithm} differs between {other_path!r} "
                        f"and {str(p)!r}."
                    )
                continue
            seen[key] = (str(p), tr)
            trials.append(tr)
    algorithms: list[str] = []
    for run in runs:
        algorithms += [a for a in run.settings.get("algorithms", []) if a not in algorithms]
    trials.sort(key=lambda tr: (tr.trial, _index(algorithms, tr.algorithm)))
    settings = {
        **first,
        "algorithms": algorithms,
        "trials": len({tr.trial for tr in trials}),
        "total_wall_time_s": sum(r.settings.get("total_wall_time_s", 0.0) for r in runs),
        "merged_from": [str(p) for p in paths],
    }
    result = ExperimentResult(first["experiment"], settings, trials, skipped)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        result.out_dir = out
        copied: set[str] = set()
        for run in runs:  # the first run holding a (trial, algorithm) file provides it
            for f in sorted(Path(run.out_dir).glob("trial*_*.json")):
                if f.name not in copied and f.resolve() != (out / f.name).resolve():
                    shutil.copyfile(f, out / f.name)
                copied.add(f.name)
        write_outputs(result, out, plot=plot)
    return result


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
        ``summary.json``), ``–`` one it did not run.
    """
    if algorithms is None:
        algorithms = []
        for res in results:
            algorithms += [a for a in res.algorithms() if a not in algorithms]
    head = "| experiment | T | trials | " + " | ".join(algorithms) + " |"
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
        row = f"| {res.experiment} | {res.settings.get('horizon')} | {n} | "
        lines.append(row + " | ".join(cells) + " |")
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
