"""Many-objective suite (issue 26): n = 5 … 10 objectives, hypervolume exact or Monte Carlo.

Problems (:data:`~mtucb_bench.many_objective_problems.MANY_SUITE`, CLI experiments
``many-<problem>``): BoTorch's DTLZ1, DTLZ2 and DTLZ7 at n ∈ {5, 6, 8, 10} and the correlated
``corr-mix-n6`` / ``corr-mix-n8``; methods MT-UCB, MT-UCB-HV, qLogNParEGO and Sobol everywhere,
qLogNEHVI where one round fits in 60 s.

* ``probe`` times one qLogNEHVI round per problem (fit on the Sobol initial design, build the
  acquisition, one ``BoxOptimizer`` maximisation with the runner's 4 restarts and 256 raw
  samples) in a subprocess killed after ``--limit`` seconds (default 60), and writes
  ``<out>/nehvi_probe.json``; the registry's own rule (qLogNEHVI for n ≤ 10) is recorded
  beside it. ``--extra T`` adds T Sobol points to the design: about the cost of round T,
  whose front is larger than the first round's (the file keeps the last probe per problem).
* ``run`` calls ``python -m mtucb_bench run many-<problem>`` once per problem into
  ``benchmark-runs/many_suite/<problem>/`` (git-ignored; the CLI's run folders; rerunning
  continues a run), with qLogNEHVI added where the probe found that a round fits and the
  registry runs it. ``--horizon 40`` serves T = 20 and T = 40 at once: a trial's first 20
  rounds are the T = 20 trial's (same seeds, no horizon-dependent setting in these methods).
* ``summarize`` recomputes, from each trial's evaluated points (Sobol design + rounds) and
  the noise-free f, the hypervolume after the design and after k rounds (``--rounds``,
  default 20 40) as % of the problem's maximum, with
  :func:`~mtucb_bench.hypervolume_mc.hypervolume` (exact where the size rule allows, else
  the seeded Monte-Carlo estimate with its standard error, ``--samples``), the HV % curve
  (Monte-Carlo box estimator, one sample per trial) and the wall time per round; it writes
  ``docs/results/many_suite/summary.json`` (with provenance) and ``tables.md``: HV % per
  problem × method at each k (mean ± std over trials, the mean Monte-Carlo error and the
  methods used), s / round and its ratio to qLogNParEGO, and paired comparisons of
  ``--focus`` (default MT-UCB) with every other method (same trials; HV higher/lower, sign
  test).

Run from the repository root::

    python -m mtucb_bench.suites.many_suite probe [--extra 40]
    python -m mtucb_bench.suites.many_suite run --trials 10 --horizon 40 --workers 2
    python -m mtucb_bench.suites.many_suite summarize --rounds 20 40 \\
        [--cache benchmark-runs/many_suite/hv_cache.json]

(``--problems`` and ``--algorithms`` restrict ``probe`` / ``run``; ``--tag`` writes extra
methods to ``<problem>+<tag>/``, which ``summarize`` pools.)
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

from botorch_mtucb.loop import BoxOptimizer
from mtucb_bench.algorithms import RunConfig, get_algorithm
from mtucb_bench.hypervolume_mc import (
    DEFAULT_MC_SAMPLES,
    EXACT_MAX_POINTS,
    hypervolume,
    mc_hypervolume_curve,
)
from mtucb_bench.many_objective_problems import MANY_SUITE, make_many_problem
from mtucb_bench.mo_suite_base import sobol_points
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.problems import InitialDesign
from mtucb_bench.suites.common import check_at_least, usage_error
from mtucb_bench.suites.mo_suite import _paired, _stats

OUT = RUNS / "many_suite"  # the CLI's run folders and the probe (raw, git-ignored)
SUMMARY = RESULTS / "many_suite"  # summary.json, tables.md (committed)
METHODS = ("MT-UCB", "MT-UCB-HV", "qLogNParEGO", "Sobol")
PROBE_FILE = "nehvi_probe.json"
DT = torch.float64


# ----------------------------------------------------------------------------------- probe
def probe_round(name: str, seed: int = 0, extra: int = 0) -> dict:
    """Time one qLogNEHVI round on ``name`` (fit, acquisition, one maximisation), in this
    process, on the Sobol initial design of trial ``seed`` plus ``extra`` further Sobol points
    (0: the first round; T: about the cost of round T, whose front is larger); the registry's
    n ≤ 10 rule is bypassed (this is what the probe measures)."""
    problem = make_many_problem(name)
    design = InitialDesign.parse("sobol").resolve(problem)
    X = design.draw(problem, seed)
    if extra:
        X = torch.cat([X, sobol_points(extra, problem.bounds, seed + 1000)])
    with torch.no_grad():
        Y = problem.f(X)
    setup = get_algorithm("qLogNEHVI").build(problem, RunConfig(horizon=1, seed=seed))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = setup.model_factory(X, Y)
        t1 = time.perf_counter()
        acqf = setup.acquisition_factory(model, None)
        x = BoxOptimizer(problem.bounds, num_restarts=4, raw_samples=256, seed=seed)(acqf)
    t2 = time.perf_counter()
    return {"fit_s": t1 - t0, "round_s": t2 - t0, "points": X.shape[0], "extra": extra,
            "x_shape": list(x.shape)}


def probe(ns: argparse.Namespace) -> dict:
    """Run :func:`probe_round` per problem in a subprocess with a ``ns.limit`` s timeout."""
    path = ns.out / PROBE_FILE
    results = json.loads(path.read_text()) if path.is_file() else {}
    for name in ns.problems:
        problem = make_many_problem(name)
        reason = get_algorithm("qLogNEHVI").available(problem)
        cmd = [sys.executable, "-m", "mtucb_bench.suites.many_suite", "probe-one", name,
               "--extra", str(ns.extra)]
        print(f"probe qLogNEHVI on {name} (n = {problem.num_objectives}, d = {problem.dim}, "
              f"limit {ns.limit:g} s) ...", flush=True)
        t0 = time.perf_counter()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=ns.limit + 30,
                                 check=True)
            rec = json.loads(out.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            rec = {"round_s": None}
        except (subprocess.CalledProcessError, ValueError, IndexError) as err:
            rec = {"round_s": None, "error": str(getattr(err, "stderr", "") or err)[-500:]}
        rec["wall_s"] = time.perf_counter() - t0
        rec["limit_s"] = ns.limit
        rec["fits"] = rec["round_s"] is not None and rec["round_s"] <= ns.limit
        rec["registry_refuses"] = reason
        results[name] = rec
        shown = "timed out" if rec["round_s"] is None else f"{rec['round_s']:.1f} s"
        print(f"  {name}: one round {shown}; fits: {rec['fits']}"
              + (f"; registry refuses: {reason}" if reason else ""), flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1))
    return results


# ------------------------------------------------------------------------------------- run
def run(ns: argparse.Namespace) -> None:
    check_at_least(ns, 1, "trials", "horizon")
    check_at_least(ns, 0, "first_trial", "workers")
    probe_path = ns.out / PROBE_FILE
    probed = json.loads(probe_path.read_text()) if probe_path.is_file() else {}
    for i, prob in enumerate(ns.problems):
        algs = list(ns.algorithms or METHODS)
        rec = probed.get(prob)
        if ns.algorithms is None and rec is not None and rec["fits"]:
            if rec.get("registry_refuses"):
                print(f"note: qLogNEHVI fits on {prob} ({rec['round_s']:.1f} s / round) but "
                      f"the registry refuses it: {rec['registry_refuses']}", flush=True)
            else:
                algs.append("qLogNEHVI")
        elif ns.algorithms is None and rec is None:
            print(f"note: no qLogNEHVI probe for {prob} (run `probe` first): left out",
                  flush=True)
        cmd = [sys.executable, "-m", "mtucb_bench", "run", f"many-{prob}",
               "--trials", str(ns.trials), "--first-trial", str(ns.first_trial),
               "--horizon", str(ns.horizon), "--bound", "directional",
               "--workers", str(ns.workers), "--algorithms", *algs,
               "--out", str(ns.out / (prob + (f"+{ns.tag}" if ns.tag else "")))]
        if not ns.progress:
            cmd.append("--no-progress")
        print(f"[{i + 1}/{len(ns.problems)}] {prob}: " + " ".join(cmd), flush=True)
        t0 = time.perf_counter()
        try:
            subprocess.run(cmd, check=True, stdout=None if ns.verbose else subprocess.DEVNULL)
        except subprocess.CalledProcessError as err:  # the CLI said why (on stderr)
            raise SystemExit(err.returncode) from None
        print(f"[{i + 1}/{len(ns.problems)}] {prob} done in {time.perf_counter() - t0:.0f} s",
              flush=True)


# ------------------------------------------------------------------------------- summarize
def trial_metrics(rec: dict, rounds: list[int], samples: int) -> dict:
    """HV % after the design and after each k of ``rounds`` (exact or Monte Carlo), the HV %
    curve (Monte-Carlo box estimator) and the wall time per round of one trial file."""
    name = rec["settings"]["experiment"].removeprefix("many-")
    problem = make_many_problem(name)
    X = torch.tensor(rec["initial_X"] + rec["x"], dtype=DT).reshape(-1, problem.dim)
    n0 = len(rec["initial_X"])
    with torch.no_grad():
        F = problem.f(X)
    scale = 100.0 / problem.max_hv
    at = {}
    for k in [0, *rounds]:
        if n0 + k > F.shape[0]:
            continue
        est = hypervolume(F[: n0 + k], problem.ref_point, samples, seed=0)
        at[str(k)] = {"hv_pct": scale * est.value, "se": scale * est.se, "method": est.method,
                      "points": est.num_points}
    curve, _ = mc_hypervolume_curve(F, problem.ref_point, None, samples, seed=0)
    wall = rec.get("wall_time") or [math.nan]
    return {"n0": n0, "at": at, "hv_pct_curve": [scale * float(v) for v in curve],
            "wall_time_per_round": float(torch.tensor(wall, dtype=DT).mean())}


def load_runs(out: Path, rounds: list[int], samples: int, cache: dict | None = None
              ) -> dict[str, dict[str, dict[int, dict]]]:
    """problem → algorithm → trial → :func:`trial_metrics`, pooling ``<problem>`` and
    ``<problem>+<tag>`` folders of ``out`` (a trial found twice is refused)."""
    runs: dict[str, dict[str, dict[int, dict]]] = {}
    folders = sorted(p for p in out.iterdir() if p.is_dir()) if out.is_dir() else []
    for folder in folders:
        prob = folder.name.split("+")[0]
        for f in sorted(folder.glob("trial*_*.json")):
            st = f.stat()
            key = f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}|{rounds}|{samples}"
            if cache is not None and key in cache:
                alg, trial, row = cache[key]
            else:
                rec = json.loads(f.read_text())
                alg, trial = rec["algorithm"], rec["trial"]
                row = trial_metrics(rec, rounds, samples)
                if cache is not None:
                    cache[key] = (alg, trial, row)
            trials = runs.setdefault(prob, {}).setdefault(alg, {})
            if trial in trials:
                raise ValueError(f"{prob}: {alg} trial {trial} appears twice (in {folder})")
            trials[trial] = row
    return runs


def _flat(trials: dict[int, dict], k: str, key: str = "hv_pct") -> dict[int, dict]:
    return {t: {key: r["at"][k][key]} for t, r in trials.items() if k in r["at"]}


def _problem_info(name: str) -> dict:
    p = make_many_problem(name)
    raw = p.raw_ref_point
    return {"n": p.num_objectives, "d": p.dim, "raw_ref_point": [float(v) for v in raw],
            "max_hv": p.max_hv, "max_hv_se": p.max_hv_se, "max_hv_source": p.max_hv_source,
            "notes": p.notes}


def summarize_runs(runs: dict, rounds: list[int], focus: str) -> tuple[dict, list[str]]:
    """The summary object and the Markdown lines of :func:`summarize`."""
    summary: dict[str, dict] = {}
    lines = [f"HV % of the maximum after the Sobol design (k = 0) and k rounds, mean ± std over "
             f"trials [Monte-Carlo s.e., mean; method]; s / round with refits; exact HV where "
             f"{EXACT_MAX_POINTS} (n: max non-dominated points) allows, else Monte Carlo.", ""]
    paired = [f"| problem | k | {focus} vs | trials | HV higher/lower | ΔHV % | sign p |",
              "|---|---|---|---|---|---|---|"]
    for prob, algs in runs.items():
        info = _problem_info(prob)
        rows: dict[str, dict] = {}
        base = algs.get("qLogNParEGO")
        t_ref = _stats([r["wall_time_per_round"] for r in base.values()])[0] if base else None
        for alg, trials in algs.items():
            row = {"trials": len(trials)}
            for k in ["0", *map(str, rounds)]:
                vals = [r["at"][k] for r in trials.values() if k in r["at"]]
                if vals:
                    row[f"k{k}"] = {
                        "hv_pct": _stats([v["hv_pct"] for v in vals]),
                        "mc_se_mean": _stats([v["se"] for v in vals])[0],
                        "methods": sorted({v["method"] for v in vals}), "trials": len(vals)}
            row["wall_time_per_round"] = _stats([r["wall_time_per_round"]
                                                 for r in trials.values()])
            row["time_ratio_to_qLogNParEGO"] = (
                row["wall_time_per_round"][0] / t_ref if t_ref else None)
            L = min(len(r["hv_pct_curve"]) for r in trials.values())
            row["hv_pct_curve_mean"] = torch.tensor(
                [r["hv_pct_curve"][:L] for r in trials.values()], dtype=DT).mean(0).tolist()
            rows[alg] = row
        pairs = {}
        if focus in algs:
            for alg in algs:
                if alg == focus:
                    continue
                pairs[alg] = {}
                for k in map(str, rounds):
                    c = _paired(_flat(algs[focus], k), _flat(algs[alg], k), "hv_pct", True)
                    pairs[alg][k] = c
                    if c["trials"]:
                        paired.append(
                            f"| {prob} | {k} | {alg} | {c['trials']} | {c['wins']}/"
                            f"{c['losses']} | {c['mean_diff']:+.2f} ± {c['std_diff']:.2f} | "
                            f"{c['sign_p']:.3f} |")
        summary[prob] = {"problem": info, "algorithms": rows, f"paired_{focus}": pairs}
        lines += _table(prob, info, rows, rounds)
    return summary, lines + ["Paired (same trials):", ""] + paired


def _table(prob: str, info: dict, rows: dict, rounds: list[int]) -> list[str]:
    ks = ["0", *map(str, rounds)]
    out = [f"**many-{prob}** (n = {info['n']}, d = {info['d']}; max HV ± "
           f"{100 * info['max_hv_se'] / info['max_hv']:.2f} %)", "",
           "| method | trials | " + " | ".join(f"HV % k = {k}" for k in ks)
           + " | s / round | × qLogNParEGO |", "|---" * (len(ks) + 4) + "|"]
    for alg, row in rows.items():
        cells = []
        for k in ks:
            c = row.get(f"k{k}")
            cells.append("—" if c is None else
                         f"{c['hv_pct'][0]:.2f} ± {c['hv_pct'][1]:.2f} "
                         f"[{c['mc_se_mean']:.2f}; {'/'.join(c['methods'])}]")
        ratio = row["time_ratio_to_qLogNParEGO"]
        out.append(f"| {alg} | {row['trials']} | " + " | ".join(cells)
                   + f" | {row['wall_time_per_round'][0]:.2f} | "
                   + ("—" if ratio is None else f"{ratio:.2f}") + " |")
    return out + [""]


def summarize(ns: argparse.Namespace) -> dict:
    cache = None
    if ns.cache is not None:
        cache = json.loads(ns.cache.read_text()) if ns.cache.is_file() else {}
    t0 = time.perf_counter()
    try:
        runs = load_runs(ns.out, ns.rounds, ns.samples, cache)
    except ValueError as err:  # a trial found twice: the folders mix two runs of it
        usage_error(f"{err}: keep one of them (or summarize the folders apart).")
    if not runs:
        usage_error(f"No trial files under {ns.out}: nothing written.")
    print(f"read {sum(len(t) for a in runs.values() for t in a.values())} trials of "
          f"{len(runs)} problems in {time.perf_counter() - t0:.1f} s", flush=True)
    summary, lines = summarize_runs(runs, ns.rounds, ns.focus)
    if cache is not None:
        ns.cache.parent.mkdir(parents=True, exist_ok=True)
        ns.cache.write_text(json.dumps(cache))
    write_summary(ns.results / "summary.json",
                  {"rounds": ns.rounds, "mc_samples": ns.samples, "problems": summary})
    text = "\n".join(lines) + "\n"
    (ns.results / "tables.md").write_text(text)
    print(text)
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("probe", help="time one qLogNEHVI round per problem")
    pr.add_argument("--limit", type=float, default=60.0, help="seconds a round may take")
    one = sub.add_parser("probe-one", help="(internal) one probe round, JSON on stdout")
    one.add_argument("problem", choices=sorted(MANY_SUITE))
    for p in (pr, one):
        p.add_argument("--extra", type=int, default=0,
                       help="Sobol points added to the design (0: the first round)")
    r = sub.add_parser("run")
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--first-trial", type=int, default=0)
    r.add_argument("--horizon", type=int, default=40)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--algorithms", nargs="+", default=None,
                   help=f"default {' '.join(METHODS)} (+ qLogNEHVI where the probe allows)")
    r.add_argument("--tag", default="", help="run folder <problem>+<tag> (extra methods)")
    r.add_argument("--progress", action="store_true", help="the CLI's progress bar")
    r.add_argument("--verbose", action="store_true", help="show the CLI's output")
    for p in (pr, r):
        p.add_argument("--problems", nargs="+", default=list(MANY_SUITE),
                       choices=sorted(MANY_SUITE))
    s = sub.add_parser("summarize")
    s.add_argument("--rounds", nargs="+", type=int, default=[20, 40])
    s.add_argument("--samples", type=int, default=DEFAULT_MC_SAMPLES,
                   help="Monte-Carlo samples per hypervolume")
    s.add_argument("--focus", default="MT-UCB", help="method compared pairwise to the rest")
    s.add_argument("--cache", type=Path, default=None,
                   help="JSON file of per-trial metrics reused across calls")
    s.add_argument("--results", type=Path, default=SUMMARY,
                   help="folder of summary.json and tables.md")
    for p in (pr, r, s):
        p.add_argument("--out", type=Path, default=OUT, help="run folders and the probe (raw)")
    ns = ap.parse_args(argv)
    if ns.cmd == "probe-one":
        print(json.dumps(probe_round(ns.problem, extra=ns.extra)), flush=True)
    else:
        {"probe": probe, "run": run, "summarize": summarize}[ns.cmd](ns)


if __name__ == "__main__":
    main()
