"""Why RRP-LogEI's *median* beats the heavy-tailed default on Branin gross outliers (issue 16).

Cell ``branin__contaminated_0.02x1000__honest`` (10 trials, common random numbers). The records
hold the regret of every evaluation and of the recommendation after each round, not the inputs.

* Records (every width-1 method with 10 trials): rewards rebuilt from the noise stream
  (:func:`replay_observations`), the recommended evaluation found by its regret; evaluations
  with regret below 0.01 / 0.02 / 0.05 / 0.1, the *loss* (regret of the recommendation − that
  of the best evaluated point), the median over trials after each of the last rounds.
* ``replay``: chosen methods' trials re-run exactly (``run_suite_trial`` is deterministic; the
  replayed regrets must equal the record's to 1e-9), cheapest recorded run first, within a
  CPU budget; cached in the JSON.
* ``analyse`` on the replayed designs: evaluations near Branin's three maximisers, near the
  recommended and near the best evaluated point; the regret other rules name on the same points
  (clip model, its winsorised targets under a reference kernel, ``SingleTaskGP`` on all points
  and on the inliers only); an outlier-free *reference GP* (hyperparameters fitted once on 256
  Sobol points with the inlier noise N(0, 0.1²); posterior mean ``m + K (K + σ²I)⁻¹ (y − m)``,
  checked against BoTorch's ``SingleTaskGP``) for the observed rewards and over fresh
  inlier-noise draws (what the design allows a model that knows the kernel and the outliers);
  Spearman correlations of the recommendation's regret and loss with the counts.

Reads the suite's records from ``benchmark-runs/ht_suite``; caches the replays in
``benchmark-runs/ht_median_gap/median_gap.json`` (raw) and writes
``docs/results/studies/ht_median_gap.{json,md}`` (atomically; text below the ``READING`` marker
of the .md is kept).

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.ht_median_gap replay --cpu-budget 780
    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.ht_median_gap analyse
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from mtucb_bench.fileio import write_text
from mtucb_bench.ht_suite_problems import ht_suite_problem
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.robust_baselines import (
    replay_observations,
    run_suite_trial,
)
from mtucb_bench.studies.ht_median_gap_rules import (
    INLIER_SD,
    branin_maximisers,
    check_ideal_mean,
    reference_gp,
    resolvability,
    rrp_fit,
    rules_on_design,
    spearman,
)

SUITE = RUNS / "ht_suite"  # the suite's unit records (``mtucb_bench.suites.ht_suite run``)
OUT = RUNS / "ht_median_gap"  # replays and RRP refits (raw cache, git-ignored)
SUMMARY = RESULTS / "studies"
CELL = "branin__contaminated_0.02x1000__honest"
FUNCTION, NOISE = "branin", "contaminated:0.02x1000"
TRIALS = 10
N_INIT = 10
#: Methods replayed by default: ours with LogEI / UCB, SingleTaskGP-LogEI (the same acquisition
#: on a plain GP), RRP-LogEI (the winner of the median).
REPLAY = ("TGP-LogEI-clip", "TGP-UCB-practical-clip", "STGP-LogEI", "RRP-LogEI")
#: Methods whose own model is the clip model (a self-check of the replayed rules).
CLIP_METHODS = ("TGP-LogEI-clip", "TGP-UCB-practical-clip")
THRESHOLDS = (0.01, 0.02, 0.05, 0.1)
RADII = (0.02, 0.05)
DRAWS = 2000
#: The last LATE rounds: a recommendation averaged over them is less of a single snapshot.
LATE = 10


def load_record(method: str, seed: int) -> dict | None:
    p = SUITE / CELL / f"{method}_w1_t{seed}.json"
    return json.loads(p.read_text()) if p.exists() else None


def record_methods() -> list[str]:
    """Width-1 methods of the cell with all ``TRIALS`` records."""
    names = {p.name.split("_w1_t")[0] for p in (SUITE / CELL).glob("*_w1_t*.json")}
    return sorted(m for m in names if all(load_record(m, k) for k in range(TRIALS)))


def _load_cache(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def replay_trial(problem, method: str, seed: int, record: dict) -> dict:
    """Exact replay of one suite trial (inputs + rewards), checked against its record."""
    start = time.process_time()
    rec = run_suite_trial(problem, method, seed=seed, n_init=record["n_init"],
                          iterations=record["iterations"], num_restarts=2, raw_samples=128)
    diff = max(abs(a - b) for a, b in zip(rec["regret"], record["regret"], strict=True))
    diff = max(diff, abs(rec["simple_regret"][-1] - record["simple_regret"][-1]))
    return {"inputs": rec["inputs"], "observations": rec["observations"],
            "cpu_s": time.process_time() - start, "max_abs_diff": diff, "exact": diff <= 1e-9}


def cmd_replay(ns) -> None:
    problem = ht_suite_problem(FUNCTION, NOISE)
    ns.out.mkdir(parents=True, exist_ok=True)
    path = ns.out / "median_gap.json"
    cache = _load_cache(path)
    replays = cache.setdefault("replays", {})
    spent = sum(r["cpu_s"] for m in replays.values() for r in m.values())
    for method in ns.methods:
        done = replays.setdefault(method, {})
        recs = {k: load_record(method, k) for k in range(TRIALS)}
        # cheapest recorded run first (outcome-blind), so a budget cut keeps the most trials
        order = sorted((k for k in recs if str(k) not in done), key=lambda k: sum(
            recs[k]["seconds"]))
        ratio = [r["cpu_s"] / sum(recs[int(k)]["seconds"]) for k, r in done.items()] or [1.0]
        for k in order:
            est = sum(recs[k]["seconds"]) * statistics.median(ratio)
            if spent + est > ns.cpu_budget:
                print(f"{method} t{k}: skipped (estimated {est:.0f} s, spent {spent:.0f} s)")
                continue
            r = replay_trial(problem, method, k, recs[k])
            spent += r["cpu_s"]
            ratio.append(r["cpu_s"] / sum(recs[k]["seconds"]))
            done[str(k)] = r
            write_text(path, json.dumps(cache))
            print(f"{method} t{k}: {r['cpu_s']:.1f} CPU-s (total {spent:.0f}), exact "
                  f"{r['exact']} ({r['max_abs_diff']:.1e})", flush=True)


def trial_stats(problem, method: str, seed: int, X=None, ref=None, draws: int = DRAWS) -> dict:
    """Per-trial counts (module docstring); the spatial ones only when ``X`` (replayed) is given."""
    record = load_record(method, seed)
    regret = torch.tensor(record["regret"], dtype=torch.float64)
    f = problem.optimum - regret
    y = replay_observations(problem, record)
    gross = (y - f).abs() > 10 * INLIER_SD
    rec = record["simple_regret"][-1]
    hits = ((regret - rec).abs() < 1e-12).nonzero().view(-1)
    if hits.numel() == 0 or (X is not None and float(torch.cdist(X[hits], X[hits]).max()) > 1e-9):
        raise RuntimeError(f"{method} t{seed}: the recommendation is not one evaluated point.")
    i_rec, i_best = int(hits[-1]), int(regret.argmin())  # repeats of one point: the last
    out = {"method": method, "seed": seed, "rec": rec, "best": float(regret.min()),
           "loss": rec - float(regret.min()), "i_rec": i_rec, "gross": int(gross.sum()),
           "eps_rec": float(y[i_rec] - f[i_rec])}
    sr = record["simple_regret"]  # after rounds 0..T; the late rounds: the last LATE
    late = sr[-LATE:]
    prev = sr[-LATE - 1:-1]
    out.update({"sr_late_mean": statistics.fmean(late), "sr_late_median": statistics.median(late),
                "rec_changes_late": sum(abs(a - b) > 1e-12
                                        for a, b in zip(late, prev, strict=True)),
                "rec_is_newest": sum(abs(sr[r] - record["regret"][N_INIT + r - 1]) < 1e-12
                                     for r in range(1, len(sr)))})
    for t in THRESHOLDS:
        out[f"n_lt_{t:g}"] = int((regret < t).sum())
    if X is None:
        return out
    D = torch.cdist(X, branin_maximisers(problem))  # n x 3
    near, dmin = D.argmin(-1), D.min(-1).values
    DX = torch.cdist(X, X)
    for r in RADII:
        per = [int(((near == j) & (dmin <= r)).sum()) for j in range(3)]
        out[f"per_opt_{r:g}"] = per
        out[f"n_opt_{r:g}"] = sum(per)
        out[f"n_main_{r:g}"] = max(per)
        out[f"n_near_rec_{r:g}"] = int((DX[i_rec] <= r).sum()) - 1
        out[f"n_near_best_{r:g}"] = int((DX[i_best] <= r).sum()) - 1
    out["optima_visited"] = sum(c > 0 for c in out["per_opt_0.05"])
    out["opt_rec"], out["d_rec"] = int(near[i_rec]), float(dmin[i_rec])
    out["opt_best"], out["d_best"] = int(near[i_best]), float(dmin[i_best])
    inl = ~gross
    out.update(resolvability(ref, X[inl], f[inl], y[inl], regret[inl], draws, seed))
    out["rules"] = rules_on_design(ref, X, y, regret, gross)
    if method in CLIP_METHODS and abs(out["rules"]["clip"] - rec) > 1e-9:
        raise RuntimeError(f"{method} t{seed}: the clip rule differs from the run's own pick.")
    return out


READING = "<!-- reading: text below this line is kept when the tables are regenerated -->"
#: Correlates of the recommendation's regret (Spearman over (method, trial) pairs).
CORRELATES = ("n_lt_0.01", "n_lt_0.05", "n_near_rec_0.05", "n_near_best_0.05", "n_main_0.05",
              "ideal_mean", "ideal_actual")


def _mm(v, fmt: str = ".3f") -> str:
    v = list(v)
    return f"{statistics.fmean(v):{fmt}} / {statistics.median(v):{fmt}}"


def correlations(rows: dict) -> dict:
    """Spearman of ``rec`` and ``loss`` with the counts: over every method's records (counts of
    near-optimal evaluations) and over the replayed designs (all correlates)."""
    out = {}
    pooled = [t for ts in rows.values() for t in ts]
    spatial = [t for t in pooled if "n_main_0.05" in t]
    for key in CORRELATES:
        for target in ("rec", "loss"):
            for name, ts in (("records", pooled), ("replayed", spatial)):
                ts = [t for t in ts if key in t]
                if len(ts) > 2:
                    out[f"{target}~{key}|{name}"] = {
                        "rho": spearman([t[target] for t in ts], [t[key] for t in ts]),
                        "n": len(ts)}
    return out


def report(rows: dict, corr: dict, ref: dict, draws: int) -> list[str]:
    """The Markdown report: records, late rounds, replayed designs, rules, correlations."""
    return (_report_records(rows) + _report_designs(rows, ref, draws) + _report_trials(rows)
            + _report_rules(rows) + _report_correlations(corr))


def _report_records(rows: dict) -> list[str]:
    L = ["<!-- generated by python -m mtucb_bench.studies.ht_median_gap -->", "",
         f"# Median gap on `{CELL}`", "",
         "Regrets are f* − f in units of std f (inlier noise sd 0.1); mean / median over the 10 "
         "trials. *loss* = regret of the recommendation − regret of the best evaluated point. "
         "n<t: evaluations (of 30; the 10 initial ones are common to all methods) with regret "
         "below t.", "",
         "| method | rec | best evaluated | loss | n<0.01 | n<0.02 | n<0.05 | n<0.1 |",
         "|---|---|---|---|---|---|---|---|"]
    for m, ts in sorted(rows.items(), key=lambda kv: statistics.median(t["rec"] for t in kv[1])):
        L.append(f"| {m} | {_mm(t['rec'] for t in ts)} | {_mm(t['best'] for t in ts)} | "
                 f"{_mm(t['loss'] for t in ts)} | "
                 + " | ".join(_mm((t[f"n_lt_{q:g}"] for t in ts), ".1f") for q in THRESHOLDS)
                 + " |")
    L += ["", f"Simple regret of the recommendation after each of the last rounds: median "
          f"over the trials (and for RRP-LogEI the paired wins–losses against TGP-LogEI-clip); "
          f"then per trial the mean / median over the last {LATE} rounds, the number of changes of "
          f"the recommended point in them, and in how many of the 20 rounds the newest "
          f"evaluation became the recommendation (medians over trials):", ""]
    rm = [m for m in (*REPLAY, "RRP-UCB", "STGP-UCB") if m in rows]
    srs = {m: [load_record(m, k)["simple_regret"] for k in range(TRIALS)] for m in rm}
    T = len(srs[rm[0]][0]) - 1
    L += ["| round | " + " | ".join(rm) + " | RRP-LogEI vs TGP-LogEI-clip |",
          "|---" * (2 + len(rm)) + "|"]
    for r in range(T - LATE, T + 1):
        w = [(a[r] < b[r]) - (a[r] > b[r]) for a, b in zip(srs["RRP-LogEI"],
                                                           srs["TGP-LogEI-clip"], strict=True)]
        L.append(f"| {r} | " + " | ".join(f"{statistics.median(s[r] for s in srs[m]):.3f}"
                                          for m in rm)
                 + f" | {w.count(1)}–{w.count(-1)} |")
    for key, fmt in (("sr_late_mean", ".3f"), ("sr_late_median", ".3f"),
                     ("rec_changes_late", ".1f"), ("rec_is_newest", ".1f")):
        L.append(f"| {key} | " + " | ".join(
            f"{statistics.median(t[key] for t in rows[m]):{fmt}}" for m in rm) + " | |")
    return L


def _report_designs(rows: dict, ref: dict, draws: int) -> list[str]:
    ls = ", ".join(f"{v:.3f}" for v in ref["lengthscale"])
    L = ["", "Replayed designs (exact replays, regrets equal to the records'). Maximisers A = "
          "(0.124, 0.818), B = (0.543, 0.152), C = (0.962, 0.165) (unit cube); at distance 0.05 "
          "from one the regret is 0.03–0.06 on average, at 0.02 0.006–0.010. *at max.*: "
          "evaluations within r of a maximiser; *main*: at the maximiser with most of them; "
          "*d(rec, max.)*: distance of the recommended point to the nearest maximiser; *near "
          "rec* / *near best*: other evaluations within 0.05 of the recommended / the best "
          "evaluated point (trials with none); *ideal GP*: the "
          f"outlier-free GP with fixed hyperparameters (lengthscales {ls}, noise 0.1²) on the "
          f"design's inliers: regret of its pick for the observed rewards, and mean / median / "
          f"P(< 0.01) over {draws} fresh inlier-noise draws.", "",
          "| method | trials | at max. r=0.02 | at max. r=0.05 | main r=0.05 | maximisers "
          "visited | rec at A/B/C | d(rec, max.) | near rec | near best (isolated) | "
          "ideal GP, observed | ideal GP, fresh draws | P(<0.01) |", "|---" * 13 + "|"]
    for m, ts in rows.items():
        ts = [t for t in ts if "n_main_0.05" in t]
        if not ts:
            continue
        at = [sum(t["opt_rec"] == j for t in ts) for j in range(3)]
        L.append(f"| {m} | {len(ts)} | {_mm((t['n_opt_0.02'] for t in ts), '.1f')} | "
                 f"{_mm((t['n_opt_0.05'] for t in ts), '.1f')} | "
                 f"{_mm((t['n_main_0.05'] for t in ts), '.1f')} | "
                 f"{_mm((t['optima_visited'] for t in ts), '.1f')} | {at[0]}/{at[1]}/{at[2]} | "
                 f"{_mm(t['d_rec'] for t in ts)} | "
                 f"{_mm((t['n_near_rec_0.05'] for t in ts), '.1f')} | "
                 f"{_mm((t['n_near_best_0.05'] for t in ts), '.1f')} "
                 f"({sum(t['n_near_best_0.05'] == 0 for t in ts)}) | "
                 f"{_mm(t['ideal_actual'] for t in ts)} | {_mm(t['ideal_mean'] for t in ts)} | "
                 f"{statistics.fmean(t['ideal_p01'] for t in ts):.2f} |")
    rep_ts = [t for ts in rows.values() for t in ts if "n_near_best_0.05" in t]
    L.append("")
    for name, sel in (("isolated (no other evaluation within 0.05)", 0), ("not isolated", 1)):
        g = [t for t in rep_ts if (t["n_near_best_0.05"] > 0) == bool(sel)]
        L.append(f"Replayed designs whose best evaluated point is {name}: {len(g)} trials, "
                 f"loss {_mm(t['loss'] for t in g)}, recommendation below 0.01 in "
                 f"{sum(t['rec'] < 0.01 for t in g)}, best evaluated below 0.01 in "
                 f"{sum(t['best'] < 0.01 for t in g)}.")
    return L


def _report_trials(rows: dict) -> list[str]:
    L = ["", "Per trial (replayed methods): rec / best, evaluations within 0.05 of A/B/C, "
          "evaluations near the recommendation, ideal-GP mean regret over fresh draws:", ""]
    rep = [m for m in REPLAY if m in rows]
    L += ["| seed | " + " | ".join(rep) + " |", "|---" * (1 + len(rep)) + "|"]
    for k in range(TRIALS):
        cells = []
        for m in rep:
            t = rows[m][k]
            if "n_main_0.05" not in t:
                cells.append(f"{t['rec']:.3f} / {t['best']:.3f} (not replayed)")
                continue
            cells.append(f"{t['rec']:.3f} / {t['best']:.3f}; {t['per_opt_0.05']}; "
                         f"{t['n_near_rec_0.05']}; {t['ideal_mean']:.3f}")
        L.append(f"| {k} (gross {rows[rep[0]][k]['gross']}) | " + " | ".join(cells) + " |")
    return L


def _report_rules(rows: dict) -> list[str]:
    rules = ("own", "clip", "clip_ref_kernel", "stgp", "stgp_inliers", "rrp", "ideal_actual",
             "best")
    L = ["", "Who recommends what from whose design (replayed designs): regret of the point each "
          "rule names among the same evaluated points, mean / median [trials below 0.01]. "
          "*clip_ref_kernel*: the clip model's winsorised targets under the reference kernel; "
          "*stgp_inliers*: SingleTaskGP fitted on the inliers only; *rrp*: RRP refitted "
          "(for RRP-LogEI its own pick); *ideal_actual*: the reference GP on the "
          "inliers; median fitted lengthscales; RRP's outlier support size, mean / median (gross "
          "outliers per trial: the per-trial table):", "",
          "| design | " + " | ".join(rules) + " | lengthscales clip | lengthscales stgp inl. | "
          "lengthscales rrp | rrp outliers flagged |", "|---" * (5 + len(rules)) + "|"]
    for m, ts in rows.items():
        ts = [t for t in ts if "rules" in t]
        if not ts:
            continue
        cols = []
        for r in rules:
            if r == "rrp" and not all("rrp_refit" in t["rules"] for t in ts):
                cols.append("–")
                continue
            if r == "rrp":
                v = [t["rules"]["rrp_refit"] for t in ts]
            else:
                v = [t["rec"] if r == "own" else t[r] if r in t else t["rules"][r] for t in ts]
            cols.append(f"{_mm(v)} [{sum(x < 0.01 for x in v)}]")
        ls = [", ".join(f"{statistics.median(t['rules'][key][i] for t in ts):.2f}"
                        for i in range(2)) if all(key in t["rules"] for t in ts) else "–"
              for key in ("ls_clip", "ls_stgp_inliers", "ls_rrp")]
        sup = (f"{_mm((t['rrp_support'] for t in ts), '.1f')}" if all(
            "rrp_support" in t for t in ts) else "–")
        L.append(f"| {m}'s | " + " | ".join(cols) + f" | {' | '.join(ls)} | {sup} |")
    return L


def _report_correlations(corr: dict) -> list[str]:
    L = ["", "Spearman rank correlation of the recommendation's regret (and of the loss) with "
          "each count, pooled over (method, trial) pairs (records: every method above; "
          "replayed: the replayed designs; the spatial counts exist for those only):", "",
          "| correlate | rec, records | rec, replayed | loss, records | loss, replayed |",
          "|---|---|---|---|---|"]
    for key in CORRELATES:
        c = [corr.get(f"{tg}~{key}|{nm}") for tg in ("rec", "loss")
             for nm in ("records", "replayed")]
        L.append(f"| {key} | " + " | ".join(f"{x['rho']:+.2f} (n={x['n']})" if x else "–"
                                            for x in c) + " |")
    return L


def cmd_analyse(ns) -> None:
    start = time.process_time()
    problem = ht_suite_problem(FUNCTION, NOISE)
    ns.out.mkdir(parents=True, exist_ok=True)
    path = ns.out / "median_gap.json"
    old = _load_cache(path)
    cache = {"replays": old.get("replays", {}), "rrp_fits": old.get("rrp_fits", {})}
    replays, fits = cache["replays"], cache["rrp_fits"]
    ref = reference_gp(problem)
    rows = {}
    for m in record_methods():
        rows[m] = []
        for k in range(TRIALS):
            rp = replays.get(m, {}).get(str(k))
            X = torch.tensor(rp["inputs"], dtype=torch.float64) if rp and rp["exact"] else None
            rows[m].append(trial_stats(problem, m, k, X, ref, ns.draws))
            if X is not None and ns.rrp_fits and str(k) not in fits.get(m, {}):
                Y = torch.tensor(rp["observations"], dtype=torch.float64).unsqueeze(-1)
                fits.setdefault(m, {})[str(k)] = rrp_fit(X, Y, problem.regret(X))
                write_text(path, json.dumps({**old, **cache}))
            if str(k) in fits.get(m, {}):
                rows[m][-1]["rules"]["rrp_refit"] = fits[m][str(k)]["rec"]
                rows[m][-1]["rules"]["ls_rrp"] = fits[m][str(k)]["ls"]
                rows[m][-1]["rrp_support"] = fits[m][str(k)]["support"]
            if m == "RRP-LogEI" and str(k) in fits.get(m, {}) and abs(
                    fits[m][str(k)]["rec"] - rows[m][-1]["rec"]) > 1e-9:
                raise RuntimeError(f"RRP refitted on RRP-LogEI t{k} names another point.")
    corr = correlations(rows)
    X0 = torch.tensor(replays["TGP-LogEI-clip"]["0"]["inputs"], dtype=torch.float64)
    y0 = torch.tensor(replays["TGP-LogEI-clip"]["0"]["observations"], dtype=torch.float64)
    err = check_ideal_mean(ref, X0, y0)
    if err > 1e-8:
        raise RuntimeError(f"ideal-GP closed form differs from SingleTaskGP by {err:.1e}.")
    cache.update({"cell": CELL, "reference_gp": ref, "draws": ns.draws, "trials": rows,
                  "spearman": corr, "ideal_check_err": err,
                  "analyse_cpu_s": time.process_time() - start})
    write_text(path, json.dumps(cache))
    write_summary(ns.results / "ht_median_gap.json",
                  {k: cache[k] for k in ("cell", "reference_gp", "draws", "spearman",
                                         "ideal_check_err", "analyse_cpu_s")})
    md = ns.results / "ht_median_gap.md"
    keep = ""
    if md.exists() and READING in md.read_text():
        keep = md.read_text().split(READING, 1)[1]
    write_text(md, "\n".join(report(rows, corr, ref, ns.draws)) + "\n\n" + READING
                  + keep)
    print(md.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay")
    r.add_argument("--methods", nargs="+", default=list(REPLAY))
    r.add_argument("--cpu-budget", type=float, default=780.0,
                   help="CPU seconds for all replays together, cached ones included")
    a = sub.add_parser("analyse")
    a.add_argument("--draws", type=int, default=DRAWS)
    a.add_argument("--rrp-fits", action="store_true",
                   help="refit RobustRelevancePursuit on every replayed design (cached)")
    for q in (r, a):
        q.add_argument("--out", type=Path, default=OUT, help="folder of the replay cache (raw)")
    a.add_argument("--results", type=Path, default=SUMMARY,
                   help="folder of ht_median_gap.md and its summary JSON")
    ns = p.parse_args()
    torch.set_num_threads(1)
    {"replay": cmd_replay, "analyse": cmd_analyse}[ns.cmd](ns)


if __name__ == "__main__":
    main()
