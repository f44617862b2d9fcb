"""How far two runs of one method differ in the robust suite, and what that makes of its targets.

A replicate ``"<method>@1"`` of the robust suite (:mod:`mtucb_bench.robust_methods`) reruns a
method on the same designs and readings with another stream of ``optimize_acqf``'s random
restarts. Its mean final regret against the original's tells how much of a cell's ratio is
the method and how much the run: a replicate of ``STGP-LogEI`` *is* ``STGP-LogEI``, so the cells
where it misses the suite's targets (≤ 1.2 × the better of ``STGP-LogEI`` and ``RRP-LogEI``;
clean cells ≤ 1.1 × ``STGP-LogEI``) are the misses to expect from a method exactly as good as
``STGP-LogEI``. The replicate of ``ROBUST-UCB`` doubles the candidate's runs; its mean over both
(20 runs per cell) against the baselines' is the target read with half the variance on the
candidate's side.

Reads the replicates' records (``benchmark-runs/robust_suite``, git-ignored) and the original
runs' final regrets from the committed ``docs/results/robust_suite/summary.json``; writes
``docs/results/studies/robust_replicates.{json,md}``::

    OMP_NUM_THREADS=1 python -m mtucb_bench.suites.robust_suite run --trials 10 \\
        --methods STGP-LogEI@1 ROBUST-UCB@1 --workers 2
    python -m mtucb_bench.studies.robust_replicates
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from mtucb_bench.fileio import write_text
from mtucb_bench.measure import sign_test_p
from mtucb_bench.perf.provenance import RESULTS, write_summary
from mtucb_bench.suites.robust_suite import CLEAN_FACTOR, OUT, REGRET_FACTOR, load_records

SUMMARY = RESULTS / "robust_suite" / "summary.json"
STUDY = RESULTS / "studies" / "robust_replicates"
BASE, ROBUST = "STGP-LogEI", "ROBUST-UCB"


def _finals(summary: dict, out: Path, rounds: int, trials: int) -> dict[str, dict[str, dict]]:
    """``cell -> method -> {seed: final regret}``: the originals from the summary, the
    replicates (``@``) from their records; seeds ``0..trials−1``."""
    cells: dict[str, dict[str, dict]] = {}
    for cell, methods in summary["cells"].items():
        cells[cell] = {m: {int(s): v for s, v in e["final_by_seed"].items() if int(s) < trials}
                       for m, e in methods.items() if "final_by_seed" in e}
    for r in load_records(out, rounds):
        if "@" in r["method"] and r["seed"] < trials and r["cell"] in cells:
            cells[r["cell"]].setdefault(r["method"], {})[r["seed"]] = r["simple_regret"][-1]
    return cells


def _paired(a: dict, b: dict) -> dict:
    seeds = sorted(set(a) & set(b))
    wins, losses = sum(a[s] < b[s] for s in seeds), sum(a[s] > b[s] for s in seeds)
    return {"n": len(seeds), "wins": wins, "losses": losses,
            "sign_test_p": sign_test_p(wins, losses)}


def _mean(*runs: dict) -> float:
    return statistics.fmean(v for r in runs for v in r.values())


def _cell(ms: dict[str, dict], clean: bool) -> dict | None:
    """The replicate checks of one cell (module docstring); ``None`` if a run is missing."""
    need = (BASE, "RRP-LogEI", f"{BASE}@1", ROBUST, f"{ROBUST}@1")
    if any(not ms.get(m) for m in need):
        return None
    s, rrp, s1, u, u1 = (ms[m] for m in need)
    best = min(_mean(s), _mean(rrp))
    best_pooled = min(_mean(s, s1), _mean(rrp))
    out = {
        "trials": {m: len(ms[m]) for m in need},
        "mean": {m: _mean(ms[m]) for m in need},
        "stgp_replicate_over_stgp": _mean(s1) / _mean(s),
        "stgp_replicate_over_best": _mean(s1) / best,
        "robust_replicate_over_robust": _mean(u1) / _mean(u),
        "robust_over_best": _mean(u) / best,
        "robust_replicate_over_best": _mean(u1) / best,
        "robust_both_over_best_pooled": _mean(u, u1) / best_pooled,
        "paired": {"STGP@1 vs STGP": _paired(s1, s), "ROBUST@1 vs ROBUST": _paired(u1, u),
                   "ROBUST@1 vs STGP@1": _paired(u1, s1)},
    }
    if clean:
        out["robust_both_over_stgp_pooled"] = _mean(u, u1) / _mean(s, s1)
    return out


def _counts(cells: dict[str, dict]) -> dict:
    """How many cells pass each target, for each reading of it (module docstring)."""
    def n_pass(key: str, factor: float, only_clean: bool = False) -> dict:
        sel = {c: v for c, v in cells.items() if not only_clean or c.endswith("/clean")}
        fails = sorted(c for c, v in sel.items() if v[key] > factor)
        return {"passed": len(sel) - len(fails), "of": len(sel), "failing": fails}

    twin = [math.log(v["stgp_replicate_over_stgp"]) for v in cells.values()]
    return {
        "regret_target": {
            "STGP-LogEI@1 (a copy of a baseline)": n_pass("stgp_replicate_over_best",
                                                          REGRET_FACTOR),
            "ROBUST-UCB (original runs)": n_pass("robust_over_best", REGRET_FACTOR),
            "ROBUST-UCB@1 (replicate runs)": n_pass("robust_replicate_over_best", REGRET_FACTOR),
            "ROBUST-UCB, both runs, against STGP pooled": n_pass(
                "robust_both_over_best_pooled", REGRET_FACTOR),
        },
        "clean_target": {
            "STGP-LogEI@1 over STGP-LogEI": n_pass("stgp_replicate_over_stgp", CLEAN_FACTOR,
                                                   only_clean=True),
            "ROBUST-UCB, both runs, over STGP pooled": n_pass(
                "robust_both_over_stgp_pooled", CLEAN_FACTOR, only_clean=True),
        },
        "stgp_twin_log_ratio": {
            "sd": statistics.stdev(twin) if len(twin) > 1 else float("nan"),
            "outside_1.2": sum(abs(x) > math.log(REGRET_FACTOR) for x in twin),
            "outside_1.1": sum(abs(x) > math.log(CLEAN_FACTOR) for x in twin),
            "cells": len(twin),
        },
    }


def _table(cells: dict[str, dict]) -> list[str]:
    rows = ["| cell | STGP | STGP@1 | RRP | ROBUST | ROBUST@1 | STGP@1 / STGP | STGP@1 / best "
            "| ROBUST / best | ROBUST@1 / best | both / best (STGP pooled) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c, v in cells.items():
        m = v["mean"]
        rows.append(
            f"| {c} | {m[BASE]:.3g} | {m[f'{BASE}@1']:.3g} | {m['RRP-LogEI']:.3g} | "
            f"{m[ROBUST]:.3g} | {m[f'{ROBUST}@1']:.3g} | {v['stgp_replicate_over_stgp']:.2f} | "
            f"{v['stgp_replicate_over_best']:.2f} | {v['robust_over_best']:.2f} | "
            f"{v['robust_replicate_over_best']:.2f} | {v['robust_both_over_best_pooled']:.2f} |")
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="the suite's raw records")
    p.add_argument("--summary", type=Path, default=SUMMARY, help="the suite's summary.json")
    p.add_argument("--results", type=Path, default=STUDY, help="output stem (.json, .md)")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--trials", type=int, default=10)
    ns = p.parse_args(argv)
    finals = _finals(json.loads(Path(ns.summary).read_text()), ns.out, ns.rounds, ns.trials)
    cells = {c: v for c, ms in finals.items()
             if (v := _cell(ms, c.endswith("/clean"))) is not None}
    counts = _counts(cells) if cells else {}
    write_summary(ns.results.with_suffix(".json"), {
        "command": "python -m mtucb_bench.studies.robust_replicates",
        "settings": {"rounds": ns.rounds, "trials": ns.trials, "regret_factor": REGRET_FACTOR,
                     "clean_factor": CLEAN_FACTOR},
        "counts": counts, "cells": cells})
    lines = ["# Robust suite: two runs of one method", "",
             f"{len(cells)} cells with every run; mean final regret over {ns.trials} trials.", "",
             *_table(cells), "", "```", json.dumps(counts, indent=1), "```"]
    write_text(ns.results.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
