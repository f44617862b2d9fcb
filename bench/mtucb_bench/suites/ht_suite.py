"""Heavy-tailed and corrupted-rewards suite (issue 16): run units, summarise, plot.

Each unit is one (function, noise, honest, method, trial) BO run of
:func:`mtucb_bench.robust_baselines.run_suite_trial` (common random numbers:
trial k uses seed k for every method) written to
``benchmark-runs/ht_suite/<cell>/<method>_w<width>_t<k>.json`` (git-ignored);
existing files are skipped, so a killed run continues. ``--out`` holds units of one
``--n-init``, ``--iterations``, ``--num-restarts`` and ``--raw-samples`` (recorded in its
``suite_settings.json``): a run with others is refused. ``summarize`` writes
``docs/results/ht_suite/summary.json``, Markdown tables (``tables.md``) with paired
comparisons against a reference method and one PNG per cell (mean simple regret vs round).

    python -m mtucb_bench.suites.ht_suite run --functions branin --noises contaminated:0.02x1000 \\
        --methods STGP-UCB TGP-UCB-practical --trials 10 --iterations 20 --workers 2
    python -m mtucb_bench.suites.ht_suite summarize --reference TGP-UCB-practical
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from pathlib import Path

from mtucb_bench.measure import sign_test_p as _sign_test_p
from mtucb_bench.parallel import execute
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.suites.common import check_at_least, claim_suite_folder, usage_error

OUT = RUNS / "ht_suite"  # one JSON per unit (raw, git-ignored)
SUMMARY = RESULTS / "ht_suite"  # summary.json, tables, plots (committed)


def cell_name(function: str, noise: str, honest: bool) -> str:
    safe = noise.replace(":", "_").replace("@", "s")
    return f"{function}__{safe}__{'honest' if honest else 'dishonest'}"


def unit_path(out: Path, u: dict) -> Path:
    return out / cell_name(u["function"], u["noise"], u["honest"]) / (
        f"{u['method']}_w{u['width']:g}_t{u['seed']}.json"
    )


def _run_unit(args: tuple[dict, str]) -> str:
    u, out = args
    import torch

    torch.set_num_threads(1)
    from mtucb_bench.ht_suite_problems import ht_suite_problem
    from mtucb_bench.robust_baselines import run_suite_trial

    path = unit_path(Path(out), u)
    if path.exists():
        return f"skip {path.name}"
    problem = ht_suite_problem(u["function"], u["noise"])
    rec = run_suite_trial(
        problem, u["method"], seed=u["seed"], n_init=u["n_init"], iterations=u["iterations"],
        width=u["width"], honest=u["honest"], num_restarts=u["num_restarts"],
        raw_samples=u["raw_samples"],
    )
    rec.update({"function": u["function"], "noise": u["noise"]})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    os.replace(tmp, path)
    return f"done {path.parent.name}/{path.name} {sum(rec['seconds']):.1f}s"


def _check_run(ns: argparse.Namespace) -> None:
    """Refuse bad ``run`` options (:func:`~.common.usage_error`) and an ``--out`` of other
    settings, before any unit runs."""
    check_at_least(ns, 1, "trials", "iterations", "num_restarts", "raw_samples")
    check_at_least(ns, 2, "n_init")
    check_at_least(ns, 0, "first_trial", "width", "workers")
    from mtucb_bench.ht_suite_problems import SUITE_FUNCTIONS, ht_suite_problem
    from mtucb_bench.robust_baselines import METHODS

    for arg, given, known in (("methods", ns.methods, METHODS),
                              ("functions", ns.functions, SUITE_FUNCTIONS)):
        unknown = [x for x in given if x not in known]
        if unknown:
            usage_error(f"argument --{arg}: unknown {', '.join(unknown)}; known: "
                        f"{', '.join(known)}.")
    for n in ns.noises:
        try:
            ht_suite_problem(ns.functions[0], n)
        except ValueError as err:
            usage_error(f"argument --noises: {err}")
    try:  # the unit file names carry cell, method, width and seed, not these
        claim_suite_folder(ns.out, {"suite": "ht_suite", "n_init": ns.n_init,
                                    "iterations": ns.iterations,
                                    "num_restarts": ns.num_restarts,
                                    "raw_samples": ns.raw_samples})
    except ValueError as err:
        usage_error(str(err))


def run(ns: argparse.Namespace) -> None:
    _check_run(ns)
    units = [
        {"function": f, "noise": n, "honest": not ns.dishonest, "method": m, "seed": k,
         "width": ns.width, "n_init": ns.n_init, "iterations": ns.iterations,
         "num_restarts": ns.num_restarts, "raw_samples": ns.raw_samples}
        for k in range(ns.first_trial, ns.first_trial + ns.trials)
        for f in ns.functions for n in ns.noises for m in ns.methods
    ]
    todo = [(u, str(ns.out)) for u in units if not unit_path(ns.out, u).exists()]
    print(f"{len(todo)} of {len(units)} units to run", flush=True)
    # the harness's pool: its workers leave when this process dies (parallel.execute)
    execute(_run_unit, todo, _print, workers=ns.workers if ns.workers > 1 else 0)


def _print(message: str) -> None:
    print(message, flush=True)


def _load(out: Path) -> dict[str, dict[str, list[dict]]]:
    """cell → method → unit records under ``out``; none (a typo, an empty or missing folder)
    is a usage error, so the committed results are not overwritten with empty tables."""
    cells: dict[str, dict[str, list[dict]]] = {}
    for path in sorted(out.glob("*/*.json")):
        rec = json.loads(path.read_text())
        key = f"{rec['method']}" if rec["width"] == 1.0 else f"{rec['method']}(w={rec['width']:g})"
        cells.setdefault(path.parent.name, {}).setdefault(key, []).append(rec)
    if not cells:
        usage_error(f"No units under {out}: nothing written.")
    return cells


def _stats(values: list[float]) -> dict:
    n = len(values)
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")
    return {"n": n, "mean": mean, "se": se, "median": statistics.median(values)}


def summarize(ns: argparse.Namespace) -> None:
    cells = _load(ns.out)
    summary: dict = {}
    lines = ["<!-- generated by python -m mtucb_bench.suites.ht_suite summarize -->", ""]
    for cell, methods in cells.items():
        ref = methods.get(ns.reference)
        ref_by_seed = {r["seed"]: r for r in ref} if ref else {}
        rows, cell_sum = [], {}
        for m, recs in sorted(methods.items()):
            simple = [r["simple_regret"][-1] for r in recs]
            cum = [r["cumulative_regret"][-1] for r in recs]
            secs = [statistics.fmean(r["seconds"]) for r in recs if r["seconds"]]
            entry = {"simple": _stats(simple), "cumulative": _stats(cum),
                     "seconds_per_round": statistics.fmean(secs) if secs else None}
            paired = [(r["simple_regret"][-1], ref_by_seed[r["seed"]]["simple_regret"][-1])
                      for r in recs if r["seed"] in ref_by_seed]
            if paired and m != ns.reference:
                wins = sum(b < a for a, b in paired)  # reference better
                losses = sum(b > a for a, b in paired)
                mean_m = statistics.fmean(a for a, _ in paired)
                mean_ref = statistics.fmean(b for _, b in paired)
                entry["paired_vs_reference"] = {
                    "n": len(paired), "reference_wins": wins, "reference_losses": losses,
                    "sign_test_p": _sign_test_p(wins, losses),
                    "ratio_reference_over_method": mean_ref / mean_m if mean_m > 0 else None,
                }
            cell_sum[m] = entry
            pr = entry.get("paired_vs_reference")
            pair_txt = (
                f"{pr['reference_wins']}–{pr['reference_losses']} (p={pr['sign_test_p']:.2f}), "
                f"{pr['ratio_reference_over_method']:.2f}×"
                if pr and pr["ratio_reference_over_method"] is not None else "—"
            )
            sec = entry["seconds_per_round"]
            rows.append(
                f"| {m} | {entry['simple']['n']} | {entry['simple']['mean']:.3f} ± "
                f"{entry['simple']['se']:.3f} | {entry['cumulative']['mean']:.1f} ± "
                f"{entry['cumulative']['se']:.1f} | {pair_txt} | "
                f"{'—' if sec is None else f'{sec:.2f}'} |"
            )
        summary[cell] = cell_sum
        lines += [
            f"**{cell}**", "",
            "| method | trials | simple regret (mean ± se) | cumulative regret | "
            f"{ns.reference} wins–losses (sign test), mean ratio ref/method | s / round |",
            "|---|---|---|---|---|---|", *rows, "",
        ]
        if not ns.no_plots:
            _plot(cell, methods, ns.results)
    write_summary(ns.results / "summary.json", summary)
    (ns.results / "tables.md").write_text("\n".join(lines))
    (ns.results / "compact.md").write_text(_compact(summary, ns.reference))
    (ns.results / "readme.md").write_text(_compact(summary, ns.reference, README_METHODS))
    print("\n".join(lines))


#: Columns of ``readme.md`` (the results page's table; ``compact.md`` has every method).
README_METHODS = (
    "TGP-UCB-practical", "TGP-UCB-practical-clip", "TGP-LogEI-clip", "TGP-UCB-resid",
    "ATA-GP-UCB-practical", "GP-UCB-practical",
    "STGP-UCB", "STGP-LogEI", "RRP-UCB", "RRP-LogEI", "StudentT-GP-UCB", "TGP-UCB-practical-v",
    "TGP-UCB-paper",
)


def _compact(summary: dict, reference: str, only: tuple[str, ...] | None = None) -> str:
    """One row per cell: simple regret mean / median (paired W–L of the reference) per method,
    and cumulative regret means (``only``: these methods, in this order)."""
    present = {m for cell in summary.values() for m in cell}
    methods = sorted(present) if only is None else [m for m in only if m in present]
    head = "| cell | " + " | ".join(methods) + " |"
    out = ["Simple regret of the recommendation, mean / median (trials; "
           f"{reference} wins–losses):", "", head, "|---" * (len(methods) + 1) + "|"]
    cum = ["", "Cumulative regret, mean:", "", head, "|---" * (len(methods) + 1) + "|"]
    for cell, entries in sorted(summary.items()):
        row, crow = [], []
        for m in methods:
            e = entries.get(m)
            if e is None:
                row.append("")
                crow.append("")
                continue
            pr = e.get("paired_vs_reference")
            wl = f"; {pr['reference_wins']}–{pr['reference_losses']}" if pr else ""
            row.append(f"{e['simple']['mean']:.3f} / {e['simple']['median']:.3f} "
                       f"({e['simple']['n']}{wl})")
            crow.append(f"{e['cumulative']['mean']:.1f}")
        out.append(f"| {cell} | " + " | ".join(row) + " |")
        cum.append(f"| {cell} | " + " | ".join(crow) + " |")
    return "\n".join(out + cum + ["", *_winners(summary)]) + "\n"


def _winners(summary: dict, min_trials: int = 5) -> list[str]:
    """Per cell, the method with the lowest mean and median simple regret and the lowest
    mean cumulative regret, among methods with at least ``min_trials`` trials."""
    out = [f"Best method per cell (methods with ≥ {min_trials} trials):", "",
           "| cell | lowest mean simple regret | lowest median simple regret | "
           "lowest mean cumulative regret |", "|---|---|---|---|"]
    for cell, entries in sorted(summary.items()):
        ok = {m: e for m, e in entries.items() if e["simple"]["n"] >= min_trials}
        if not ok:
            continue
        cols = []
        for metric, stat in (("simple", "mean"), ("simple", "median"), ("cumulative", "mean")):
            m = min(ok, key=lambda k, a=metric, b=stat: ok[k][a][b])
            cols.append(f"{m} ({ok[m][metric][stat]:.3g}, {ok[m]['simple']['n']})")
        out.append(f"| {cell} | " + " | ".join(cols) + " |")
    return out


def _plot(cell: str, methods: dict[str, list[dict]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    colors = plt.cm.tab20.colors
    for i, (m, recs) in enumerate(sorted(methods.items())):
        T = min(len(r["simple_regret"]) for r in recs)
        mean = [statistics.fmean(r["simple_regret"][t] for r in recs) for t in range(T)]
        ax.plot(range(T), mean, label=f"{m} ({len(recs)})", color=colors[(2 * i) % 20 + i // 10],
                linestyle="-" if m.startswith("TGP") else "--")
    ax.set_yscale("log")
    ax.set_xlabel("BO round")
    ax.set_ylabel("mean simple regret of the recommendation")
    ax.set_title(cell, fontsize=9)
    ax.legend(fontsize=6)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / f"{cell}.png", dpi=90)
    plt.close(fig)


def diagnose(ns: argparse.Namespace) -> None:
    """Where the signal goes: per (cell, method), over trials, the best ``f`` evaluated, how
    many evaluations reach the function's top decile (2¹² Sobol points of the box), and what
    TGP-UCB-practical's level ``b_t = √v̂ t^{1/4}`` (data of that run, every round) does to
    those rewards, to the top-1 % ones and to the gross outliers (``|ε| > 10 ×`` median
    ``|ε|``): the fraction beyond the level (zeroed by TGP-UCB-practical, clipped by -clip),
    pooled over rounds. Writes ``OUT/diagnosis.{json,md}``."""
    import torch

    torch.set_num_threads(1)
    from botorch_mtucb.theory.heavy_tailed import tgp_truncation_levels
    from mtucb_bench.ht_suite_problems import ht_suite_problem, sobol_unit_design
    from mtucb_bench.robust_baselines import (
        replay_observations,
        robust_location_and_moment,
    )

    rows, out = [], {}
    for cell, methods in sorted(_load(ns.out).items()):
        if not any(c in cell for c in ns.cells):
            continue
        any_rec = next(iter(methods.values()))[0]
        problem = ht_suite_problem(any_rec["function"], any_rec["noise"])
        fs = problem.f(sobol_unit_design(2**12, problem.dim, seed=0))
        q90, q99 = float(fs.quantile(0.9)), float(fs.quantile(0.99))
        for m, recs in sorted(methods.items()):
            best, reach, top_beyond, top_n, gross_beyond, gross_n = [], [], 0, 0, 0, 0
            p_beyond, p_n = 0, 0
            for rec in recs:
                f = problem.optimum - torch.tensor(rec["regret"], dtype=torch.float64)
                y = replay_observations(problem, rec)
                eps = (y - f).abs()
                top, peak, gross = f >= q90, f >= q99, eps > 10 * eps.median()
                best.append(float(f.max()))
                reach.append(int(top.sum()))
                for t in range(rec["n_init"], len(y) + 1):
                    loc, v = robust_location_and_moment(y[:t], 1.0)
                    rounds = torch.tensor([float(t)], dtype=y.dtype)
                    b = tgp_truncation_levels(rounds, 1.0, float(v))
                    beyond = (y[:t] - loc).abs() > b
                    top_beyond += int((beyond & top[:t]).sum())
                    top_n += int(top[:t].sum())
                    p_beyond += int((beyond & peak[:t]).sum())
                    p_n += int(peak[:t].sum())
                    gross_beyond += int((beyond & gross[:t]).sum())
                    gross_n += int(gross[:t].sum())
            e = {"trials": len(recs), "best_f_mean": statistics.fmean(best),
                 "top_decile_evaluations_mean": statistics.fmean(reach),
                 "top_beyond_level": top_beyond / top_n if top_n else None,
                 "top1_beyond_level": p_beyond / p_n if p_n else None,
                 "gross_beyond_level": gross_beyond / gross_n if gross_n else None,
                 "f_star": problem.optimum, "f_q90": q90, "f_q99": q99}
            out.setdefault(cell, {})[m] = e

            def pct(x):
                return "—" if x is None else f"{100 * x:.0f} %"

            rows.append(f"| {cell} | {m} | {len(recs)} | {e['best_f_mean']:.2f} of "
                        f"{problem.optimum:.2f} | {e['top_decile_evaluations_mean']:.1f} | "
                        f"{pct(e['top_beyond_level'])} | {pct(e['top1_beyond_level'])} | "
                        f"{pct(e['gross_beyond_level'])} |")
    head = ["<!-- generated by python -m mtucb_bench.suites.ht_suite diagnose -->", "",
            "| cell | method | trials | best f evaluated (mean) | evaluations in f's top decile "
            "(mean) | top-decile rewards beyond b_t | top-1 % rewards beyond b_t | gross "
            "outliers beyond b_t |", "|---" * 8 + "|"]
    write_summary(ns.results / "diagnosis.json", out)
    (ns.results / "diagnosis.md").write_text("\n".join(head + rows) + "\n")
    print("\n".join(head + rows))


def target(ns: argparse.Namespace) -> None:
    """Issue 16's target, paired on common trials: each candidate's simple regret against
    each baseline (mean ratio candidate / baseline, medians, candidate wins–losses, sign
    test). Writes ``OUT/target.md``."""
    lines = ["<!-- generated by python -m mtucb_bench.suites.ht_suite target -->", "",
             "| cell | candidate | baseline | paired trials | mean cand / base | ratio of "
             "means | median cand / base | cand wins–losses (p) |", "|---" * 8 + "|"]
    for cell, methods in sorted(_load(ns.out).items()):
        if not any(c in cell for c in ns.cells):
            continue
        for cand in ns.candidates:
            for base in ns.baselines:
                if cand not in methods or base not in methods:
                    continue
                b = {r["seed"]: r["simple_regret"][-1] for r in methods[base]}
                pairs = [(r["simple_regret"][-1], b[r["seed"]]) for r in methods[cand]
                         if r["seed"] in b]
                if not pairs:
                    continue
                c_, b_ = [a for a, _ in pairs], [x for _, x in pairs]
                w, losses = sum(a < x for a, x in pairs), sum(a > x for a, x in pairs)
                mc, mb = statistics.fmean(c_), statistics.fmean(b_)
                lines.append(
                    f"| {cell} | {cand} | {base} | {len(pairs)} | {mc:.3f} / {mb:.3f} | "
                    f"{mc / mb:.2f} | {statistics.median(c_):.3f} / {statistics.median(b_):.3f}"
                    f" | {w}–{losses} ({_sign_test_p(w, losses):.2f}) |"
                )
    ns.results.mkdir(parents=True, exist_ok=True)
    (ns.results / "target.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--functions", nargs="+", default=["branin"])
    r.add_argument("--noises", nargs="+", default=["contaminated:0.02x1000"])
    r.add_argument("--methods", nargs="+", default=["STGP-UCB", "TGP-UCB-practical"])
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--first-trial", type=int, default=0)
    r.add_argument("--n-init", type=int, default=10)
    r.add_argument("--iterations", type=int, default=20)
    r.add_argument("--width", type=float, default=1.0)
    r.add_argument("--dishonest", action="store_true")
    r.add_argument("--num-restarts", type=int, default=2)
    r.add_argument("--raw-samples", type=int, default=128)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--out", type=Path, default=OUT)
    s = sub.add_parser("summarize")
    s.add_argument("--reference", default="TGP-UCB-practical")
    s.add_argument("--out", type=Path, default=OUT)
    s.add_argument("--results", type=Path, default=SUMMARY)
    s.add_argument("--no-plots", action="store_true")
    d = sub.add_parser("diagnose")
    d.add_argument("--cells", nargs="+", default=["contaminated_0.02x1000__honest"],
                   help="substrings of the cell names to diagnose")
    d.add_argument("--out", type=Path, default=OUT)
    d.add_argument("--results", type=Path, default=SUMMARY)
    g = sub.add_parser("target")
    g.add_argument("--cells", nargs="+", default=["contaminated_0.02x1000__honest"])
    g.add_argument("--candidates", nargs="+", default=[
        "TGP-UCB-practical", "TGP-UCB-practical-clip", "TGP-LogEI-clip", "TGP-UCB-resid",
        "ATA-GP-UCB-practical"])
    g.add_argument("--baselines", nargs="+", default=["STGP-UCB", "RRP-UCB", "RRP-LogEI"])
    g.add_argument("--out", type=Path, default=OUT)
    g.add_argument("--results", type=Path, default=SUMMARY)
    ns = p.parse_args(argv)
    {"run": run, "summarize": summarize, "diagnose": diagnose, "target": target}[ns.cmd](ns)


if __name__ == "__main__":
    main()
