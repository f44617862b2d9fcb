"""Robust suite (issue 27): robust BO methods on continuous functions under corruption kinds.

Cells ``"<function>/<kind>"`` of :mod:`mtucb_bench.robust_suite_problems` (5 functions × 5
kinds), methods of :mod:`mtucb_bench.robust_methods`. Each unit is one (cell, method, seed)
BO run of :func:`~mtucb_bench.robust_methods.run_robust_trial` (common random numbers: trial
k uses seed k for every method), written once to
``benchmark-runs/robust_suite/<function>__<kind>/<method>_r<rounds>_t<seed>.json``
(git-ignored). A finished unit is never rerun nor overwritten (files are created exclusively),
so a killed run continues where it stopped. ``--out`` holds units of one ``--num-restarts`` and
``--raw-samples`` (recorded in its ``suite_settings.json``): a run with others is refused
(:func:`~mtucb_bench.suites.common.claim_suite_folder`).

``summarize`` reads the units of one ``--rounds`` (with ``--trials N``: of trials ``0..N−1``
only, the same seeds for every method) and writes ``docs/results/robust_suite/``:
``summary.json`` (provenance: commit, date, load, command), ``tables.md`` and
``ratio_heatmap.png``. Per cell and method: mean ± se simple regret of the recommendation at
the final round and at round ``--at`` (15), mean seconds per round, and paired
wins–ties–losses (lower regret wins) against ``STGP-LogEI``, ``RRP-LogEI``, the better of the
two in the cell (lower mean final regret) and their per-seed minimum. The targets (candidate
``--candidate``, default ``ROBUST-UCB``, the product default):

* every cell: mean final regret ≤ 1.2 × min(mean STGP-LogEI, mean RRP-LogEI); also checked
  on the seeds that the candidate and both baselines ran (means over those seeds), since
  RRP-LogEI may have fewer trials;
* ``clean`` cells: mean final regret ≤ 1.1 × mean STGP-LogEI;
* time: mean seconds per round ≤ 0.3 × RRP-LogEI's (per cell, and pooled over cells).

    python -m mtucb_bench.suites.robust_suite run --trials 10 --workers 2
    python -m mtucb_bench.suites.robust_suite run --trials 1 --rounds 3 --cells 'branin/*' \\
        --methods STGP-LogEI TGP-UCB
    python -m mtucb_bench.suites.robust_suite summarize
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import traceback
from pathlib import Path

from mtucb_bench.fileio import create_json, write_text
from mtucb_bench.measure import sign_test_p
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.suites.common import check_at_least, claim_suite_folder, usage_error

OUT = RUNS / "robust_suite"  # one JSON per unit (raw, git-ignored)
SUMMARY = RESULTS / "robust_suite"  # summary.json, tables.md, plot (committed)
BASELINES = ("STGP-LogEI", "RRP-LogEI")
#: Target thresholds: vs the better baseline, vs STGP-LogEI on clean cells, time vs RRP-LogEI.
REGRET_FACTOR, CLEAN_FACTOR, TIME_FACTOR = 1.2, 1.1, 0.3
DEFAULT_METHODS = ("STGP-LogEI", "RRP-LogEI", "TGP-UCB", "TGP-LogEI", "ATA-UCB", "ATA-LogEI",
                   "ROBUST-LogEI", "ROBUST-UCB")


def unit_path(out: Path, u: dict) -> Path:
    """``out/<function>__<kind>/<method>_r<rounds>_t<seed>.json``."""
    return out / u["cell"].replace("/", "__") / f"{u['method']}_r{u['rounds']}_t{u['seed']}.json"


def plan_units(cells: list[str], methods: list[str], seeds: range, rounds: int,
               num_restarts: int = 4, raw_samples: int = 256) -> list[dict]:
    """The units, seed-major (all cells and methods of trial 0 first)."""
    return [{"cell": c, "method": m, "seed": k, "rounds": rounds, "num_restarts": num_restarts,
             "raw_samples": raw_samples} for k in seeds for c in cells for m in methods]


def run_unit(u: dict) -> dict:
    """Run one unit (one thread); ``{"unit", "record"}`` or ``{"unit", "error"}``."""
    import torch

    torch.set_num_threads(1)
    from mtucb_bench.robust_methods import run_robust_trial
    from mtucb_bench.robust_suite_problems import robust_suite_problem

    try:
        problem = robust_suite_problem(u["cell"])
        rec = run_robust_trial(problem, u["method"], seed=u["seed"], rounds=u["rounds"],
                               num_restarts=u["num_restarts"], raw_samples=u["raw_samples"])
    except Exception:  # noqa: BLE001 - reported, the unit stays to do
        return {"unit": u, "error": traceback.format_exc(limit=3)}
    function, _, kind = u["cell"].partition("/")
    rec.update({"cell": u["cell"], "function": function, "kind": kind})
    return {"unit": u, "record": rec}


def run(ns: argparse.Namespace) -> int:
    """The ``run`` subcommand; returns the number of failed units."""
    from mtucb_bench.parallel import execute
    from mtucb_bench.robust_methods import PRODUCT_METHODS, available_methods, split_replicate
    from mtucb_bench.robust_suite_problems import select_cells

    check_at_least(ns, 1, "trials", "rounds", "num_restarts", "raw_samples")
    check_at_least(ns, 0, "first_trial", "workers")
    try:
        bases = [split_replicate(m)[0] for m in ns.methods]
    except ValueError as err:
        usage_error(f"argument --methods: {err}")
    try:
        cells = select_cells(ns.cells)
    except ValueError as err:
        usage_error(f"argument --cells: {err}")
    missing = [m for m, b in zip(ns.methods, bases, strict=True)
               if b in PRODUCT_METHODS and b not in available_methods()]
    if missing:
        usage_error(f"argument --methods: {missing} need botorch_mtucb's robust_gp / "
                    "robust_acquisition / recommend, which this checkout does not export.")
    seeds = range(ns.first_trial, ns.first_trial + ns.trials)
    units = plan_units(cells, list(ns.methods), seeds, ns.rounds, ns.num_restarts,
                       ns.raw_samples)
    try:  # the unit file names carry cell, method, rounds and seed, not these
        claim_suite_folder(ns.out, {"suite": "robust_suite", "num_restarts": ns.num_restarts,
                                    "raw_samples": ns.raw_samples})
    except ValueError as err:
        usage_error(str(err))
    todo = [u for u in units if not unit_path(ns.out, u).exists()]
    print(f"{len(todo)} of {len(units)} units to run ({len(units) - len(todo)} finished, kept)",
          flush=True)
    state = {"done": 0, "failed": 0, "start": time.perf_counter()}

    def on_result(res: dict) -> None:
        state["done"] += 1
        u = res["unit"]
        head = f"[{state['done']}/{len(todo)}] {u['cell']} {u['method']} t{u['seed']}"
        if "error" in res:
            state["failed"] += 1
            print(f"{head}: FAILED\n{res['error']}", flush=True)
            return
        rec, path = res["record"], unit_path(ns.out, u)
        path.parent.mkdir(parents=True, exist_ok=True)
        created = create_json(path, rec)
        secs = rec["seconds"]
        print(f"{head}: {'done' if created else 'exists, kept'} {sum(secs):.1f}s "
              f"({statistics.fmean(secs) if secs else 0.0:.2f} s/round), final regret "
              f"{rec['simple_regret'][-1]:.4g}  [{time.perf_counter() - state['start']:.0f}s]",
              flush=True)

    execute(run_unit, todo, on_result, workers=ns.workers if ns.workers > 1 else 0)
    print(f"finished: {state['done'] - state['failed']} written, {state['failed']} failed",
          flush=True)
    return state["failed"]


# ----------------------------------------------------------------------------- summarize


def load_records(out: Path, rounds: int) -> list[dict]:
    """Every unit record under ``out`` with ``rounds`` rounds."""
    recs = (json.loads(p.read_text()) for p in sorted(Path(out).glob("*/*.json")))
    return [r for r in recs if r.get("rounds") == rounds]


def _stats(values: list[float]) -> dict:
    n = len(values)
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")
    return {"n": n, "mean": statistics.fmean(values), "se": se,
            "median": statistics.median(values)}


def paired(a: dict[int, float], b: dict[int, float]) -> dict:
    """Paired comparison of ``a`` against ``b`` (seed -> regret) on their common seeds: ``wins``
    (``a`` lower), ``ties``, ``losses``, the two-sided sign test (ties dropped)."""
    seeds = sorted(set(a) & set(b))
    wins = sum(a[s] < b[s] for s in seeds)
    losses = sum(a[s] > b[s] for s in seeds)
    return {"n": len(seeds), "wins": wins, "ties": len(seeds) - wins - losses, "losses": losses,
            "sign_test_p": sign_test_p(wins, losses)}


def _method_entry(recs: list[dict], at: int) -> dict:
    secs = [statistics.fmean(r["seconds"]) for r in recs if r["seconds"]]
    fits = [statistics.fmean(r["fit_seconds"]) for r in recs if r.get("fit_seconds")]
    return {
        "final": _stats([r["simple_regret"][-1] for r in recs]),
        "final_by_seed": {str(r["seed"]): r["simple_regret"][-1] for r in recs},
        f"round_{at}": (_stats([r["simple_regret"][at] for r in recs])
                        if all(len(r["simple_regret"]) > at for r in recs) else None),
        "seconds_per_round": statistics.fmean(secs) if secs else None,
        "fit_seconds_per_round": statistics.fmean(fits) if fits else None,
    }


def summarize_cell(recs: list[dict], at: int = 15) -> dict:
    """One cell's records -> ``{method: entry}`` (module docstring), with the paired counts of
    each method's final regret against each baseline, ``best_baseline`` (the baseline with the
    lower mean final regret in the cell) and ``per_seed_min`` (min of both, seed by seed)."""
    by_method: dict[str, list[dict]] = {}
    for r in recs:
        by_method.setdefault(r["method"], []).append(r)
    final = {m: {r["seed"]: r["simple_regret"][-1] for r in rs} for m, rs in by_method.items()}
    bases = [b for b in BASELINES if b in final]
    best = min(bases, key=lambda b: statistics.fmean(final[b].values())) if bases else None
    seed_min = ({s: min(final[b][s] for b in BASELINES) for s in
                 set.intersection(*(set(final[b]) for b in BASELINES))}
                if len(bases) == len(BASELINES) else {})
    out = {}
    for m in sorted(by_method):
        entry = _method_entry(by_method[m], at)
        pairs = {b: paired(final[m], final[b]) for b in bases if b != m}
        if best is not None and best != m:
            pairs["best_baseline"] = {"baseline": best, **paired(final[m], final[best])}
        if seed_min and m not in BASELINES:
            pairs["per_seed_min"] = paired(final[m], seed_min)
        entry["paired"] = pairs
        out[m] = entry
    return out


def _check(value: float | None, ref: float | None, factor: float) -> dict | None:
    if value is None or ref is None:
        return None
    return {"value": value, "reference": ref, "ratio": value / ref if ref > 0 else None,
            "factor": factor, "pass": value <= factor * ref}


def _common_seed_check(ms: dict, candidate: str) -> dict | None:
    """The regret target on the seeds that the candidate and both baselines ran: mean over
    those seeds of each; ``None`` without a common seed (or entries without per-seed values)."""
    runs = [ms[m].get("final_by_seed") for m in (candidate, *BASELINES)]
    if any(r is None for r in runs):
        return None
    seeds = set.intersection(*(set(r) for r in runs))
    if not seeds:
        return None
    cand, *bases = (statistics.fmean(r[k] for k in seeds) for r in runs)
    return {**_check(cand, min(bases), REGRET_FACTOR), "seeds": len(seeds)}


def targets(cells: dict[str, dict], candidate: str = "ROBUST-UCB") -> dict:
    """The target checks of the module docstring for ``candidate``."""
    regret, common, clean, timing = {}, {}, {}, {}
    for cell, ms in cells.items():
        if candidate not in ms:
            continue
        c = ms[candidate]
        bases = [ms[b]["final"]["mean"] for b in BASELINES if b in ms]
        if len(bases) == len(BASELINES):
            regret[cell] = _check(c["final"]["mean"], min(bases), REGRET_FACTOR)
            check = _common_seed_check(ms, candidate)
            if check is not None:
                common[cell] = check
        if cell.endswith("/clean") and "STGP-LogEI" in ms:
            clean[cell] = _check(c["final"]["mean"], ms["STGP-LogEI"]["final"]["mean"],
                                 CLEAN_FACTOR)
        if "RRP-LogEI" in ms:
            t = _check(c["seconds_per_round"], ms["RRP-LogEI"]["seconds_per_round"], TIME_FACTOR)
            if t is not None:
                timing[cell] = t
    pooled = None
    if timing:
        pooled = _check(statistics.fmean(t["value"] for t in timing.values()),
                        statistics.fmean(t["reference"] for t in timing.values()), TIME_FACTOR)

    def count(d: dict) -> dict:
        return {"passed": sum(bool(v["pass"]) for v in d.values()), "of": len(d), "cells": d}

    return {"candidate": candidate,
            "regret_vs_best_baseline": {"factor": REGRET_FACTOR, **count(regret)},
            "regret_vs_best_baseline_common_seeds": {"factor": REGRET_FACTOR, **count(common)},
            "clean_vs_stgp": {"factor": CLEAN_FACTOR, **count(clean)},
            "time_vs_rrp": {"factor": TIME_FACTOR, "pooled": pooled, **count(timing)}}


def _fmt(s: dict | None, digits: int = 3) -> str:
    if s is None:
        return "—"
    se = "" if math.isnan(s["se"]) else f" ± {s['se']:.{digits}f}"
    return f"{s['mean']:.{digits}f}{se}"


def _wtl(p: dict | None) -> str:
    return "—" if p is None else f"{p['wins']}–{p['ties']}–{p['losses']}"


def _targets_md(t: dict) -> list[str]:
    cand = t["candidate"]
    r, c, tm = t["regret_vs_best_baseline"], t["clean_vs_stgp"], t["time_vs_rrp"]
    rc = t["regret_vs_best_baseline_common_seeds"]
    lines = [f"## Targets ({cand})", "",
             f"* mean final regret ≤ {r['factor']} × min(STGP-LogEI, RRP-LogEI): "
             f"{r['passed']} of {r['of']} cells",
             f"* the same on the seeds every one of the three ran: {rc['passed']} of "
             f"{rc['of']} cells",
             f"* clean cells, mean final regret ≤ {c['factor']} × STGP-LogEI: "
             f"{c['passed']} of {c['of']} cells",
             f"* seconds per round ≤ {tm['factor']} × RRP-LogEI: {tm['passed']} of {tm['of']} "
             "cells" + ("" if tm["pooled"] is None else
                        f"; pooled {tm['pooled']['value']:.3f} s vs "
                        f"{tm['pooled']['reference']:.3f} s = "
                        f"{tm['pooled']['value'] / tm['pooled']['reference']:.2f}× "
                        f"({'pass' if tm['pooled']['pass'] else 'FAIL'})"), "",
             f"| cell | {cand} / min(baselines) | the same, common seeds | "
             f"clean: {cand} / STGP-LogEI | time {cand} / RRP-LogEI |", "|---|---|---|---|---|"]

    def cell_txt(d: dict, cell: str) -> str:
        v = d["cells"].get(cell)
        if v is None:
            return "—"
        ratio = "n/a" if v["ratio"] is None else f"{v['ratio']:.2f}"
        seeds = f", {v['seeds']} seeds" if "seeds" in v else ""
        return f"{ratio} ({'pass' if v['pass'] else 'FAIL'}{seeds})"

    for cell in sorted(set(r["cells"]) | set(c["cells"]) | set(tm["cells"])):
        lines.append(f"| {cell} | {cell_txt(r, cell)} | {cell_txt(rc, cell)} | "
                     f"{cell_txt(c, cell)} | {cell_txt(tm, cell)} |")
    return lines + [""]


def markdown(cells: dict[str, dict], tgt: dict, rounds: int, at: int) -> str:
    """``tables.md``: the targets, then one table per cell."""
    lines = ["<!-- generated by python -m mtucb_bench.suites.robust_suite summarize -->", "",
             f"Simple regret of the recommendation (f* − f(x_rec), unit-std units) after "
             f"{rounds} rounds and after round {at}; paired wins–ties–losses of the row's "
             "method (lower final regret wins).", "", *_targets_md(tgt)]
    for cell, ms in sorted(cells.items()):
        lines += [f"### {cell}", "",
                  f"| method | trials | final regret | round {at} | s / round | vs STGP-LogEI | "
                  "vs RRP-LogEI | vs better baseline |", "|---" * 8 + "|"]
        for m, e in ms.items():
            p = e["paired"]
            bb = p.get("best_baseline")
            sec = e["seconds_per_round"]
            lines.append(
                f"| {m} | {e['final']['n']} | {_fmt(e['final'])} | {_fmt(e[f'round_{at}'])} | "
                f"{'—' if sec is None else f'{sec:.2f}'} | {_wtl(p.get('STGP-LogEI'))} | "
                f"{_wtl(p.get('RRP-LogEI'))} | "
                f"{'—' if bb is None else _wtl(bb) + ' (' + bb['baseline'] + ')'} |")
        lines.append("")
    return "\n".join(lines)


def plot(cells: dict[str, dict], path: Path) -> None:
    """Heat map of log₂(mean final regret / the better baseline's) per cell and method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = sorted(cells)
    methods = sorted({m for ms in cells.values() for m in ms})
    grid = np.full((len(names), len(methods)), np.nan)
    for i, cell in enumerate(names):
        bases = [cells[cell][b]["final"]["mean"] for b in BASELINES if b in cells[cell]]
        ref = min(bases) if bases else None
        for j, m in enumerate(methods):
            e = cells[cell].get(m)
            if e is not None and ref and ref > 0 and e["final"]["mean"] > 0:
                grid[i, j] = math.log2(e["final"]["mean"] / ref)
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(methods), 1.0 + 0.28 * len(names)))
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-2, vmax=2, aspect="auto")
    ax.set_xticks(range(len(methods)), methods, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    fig.colorbar(im, ax=ax, label="log2(mean regret / better baseline)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def summarize(ns: argparse.Namespace) -> dict:
    """The ``summarize`` subcommand; returns the summary written."""
    records = [r for r in load_records(ns.out, ns.rounds)
               if ns.trials is None or r["seed"] < ns.trials]
    if not records:
        usage_error(f"No units with {ns.rounds} rounds under {ns.out}: nothing written.")
    by_cell: dict[str, list[dict]] = {}
    for r in records:
        by_cell.setdefault(r["cell"], []).append(r)
    cells = {c: summarize_cell(rs, ns.at) for c, rs in sorted(by_cell.items())}
    tgt = targets(cells, ns.candidate)
    first = records[0]
    settings = {"rounds": ns.rounds, "at": ns.at, "num_restarts": first["num_restarts"],
                "raw_samples": first["raw_samples"], "n_init": "max(5, 2d)",
                "units": len(records), "trials": ns.trials}
    write_summary(ns.results / "summary.json",
                  {"settings": settings, "targets": tgt, "cells": cells})
    text = markdown(cells, tgt, ns.rounds, ns.at)
    write_text(ns.results / "tables.md", text)
    if not ns.no_plots:
        plot(cells, ns.results / "ratio_heatmap.png")
    print("\n".join(_targets_md(tgt)))
    return {"settings": settings, "targets": tgt, "cells": cells}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--first-trial", type=int, default=0)
    r.add_argument("--rounds", type=int, default=30)
    r.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS))
    r.add_argument("--cells", nargs="+", default=None,
                   help="shell patterns of cells, e.g. 'branin/*' '*/gross' (default: all)")
    r.add_argument("--num-restarts", type=int, default=4)
    r.add_argument("--raw-samples", type=int, default=256)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--out", type=Path, default=OUT)
    s = sub.add_parser("summarize")
    s.add_argument("--rounds", type=int, default=30)
    s.add_argument("--at", type=int, default=15)
    s.add_argument("--candidate", default="ROBUST-UCB")
    s.add_argument("--trials", type=int, default=None,
                   help="only trials 0..N-1 of every method (the same seeds everywhere)")
    s.add_argument("--out", type=Path, default=OUT)
    s.add_argument("--results", type=Path, default=SUMMARY)
    s.add_argument("--no-plots", action="store_true")
    ns = p.parse_args(argv)
    if ns.cmd == "run":
        raise SystemExit(1 if run(ns) else 0)
    summarize(ns)


if __name__ == "__main__":
    main()
