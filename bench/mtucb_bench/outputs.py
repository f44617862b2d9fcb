"""The run-level files of a run folder: ``summary.json``, ``rounds.csv`` and the figure.

All three are written atomically (:mod:`.fileio`): a reader sees the previous version or the
new one, never a partial file.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from torch import Tensor

from mtucb_bench.fileio import atomic_open, write_json
from mtucb_bench.plotting import plot_time_average_regret
from mtucb_bench.results import ExperimentResult

__all__ = ["write_outputs"]

CSV_HEADER = [
    "experiment", "algorithm", "trial", "t", "regret", "cumulative_regret",
    "time_average_regret", "bayes_regret", "hypervolume", "wall_time_s", "dictionary_size",
]


def write_outputs(
    result: ExperimentResult, out: Path, csv_stride: int | None = None, plot: bool = True
) -> None:
    """Write ``summary.json``, ``rounds.csv`` and (``plot``) the PNG of a run into ``out``.

    Args:
        result: The run.
        out: Its folder.
        csv_stride: Write every k-th round to ``rounds.csv`` (default: 1 up to T = 2000,
            else T // 1000).
        plot: Write ``time_average_regret.png`` (mean ± std of R_C(t)/t, one line each).
    """
    out = Path(out)
    summary = {"settings": result.settings, "skipped": result.skipped, "results": result.summary()}
    if result.missing:
        summary["missing"] = [list(p) for p in result.missing]
    write_json(out / "summary.json", summary, indent=2)
    T = result.settings["horizon"]
    stride = csv_stride or (1 if T <= 2000 else max(T // 1000, 1))
    with atomic_open(out / "rounds.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_HEADER)
        for tr in result.trials:
            cum = tr.regret.cumsum(0)
            for i in range(0, tr.regret.numel(), stride):
                w.writerow([
                    result.experiment, tr.algorithm, tr.trial, i + 1,
                    _fmt(tr.regret[i]), _fmt(cum[i]), _fmt(tr.time_average[i]),
                    "" if tr.bayes is None else _fmt(tr.bayes[i]),
                    "" if tr.hypervolume is None else _fmt(tr.hypervolume[i]),
                    _fmt(tr.wall_time[i]),
                    "" if tr.dictionary_size is None else int(tr.dictionary_size[i]),
                ])
    if plot and result.trials:
        st = result.settings
        n = len({tr.trial for tr in result.trials})
        plot_time_average_regret(
            result.curves(), out / "time_average_regret.png",
            title=f"{result.experiment} ({st.get('paper', '')}), {n} trial(s), T = {T}",
        )


def _fmt(x: Tensor | float) -> str:
    v = float(x)
    return repr(v) if math.isfinite(v) else ""
