"""Multi-objective suite (issue 16): run the CLI per problem, then tables, paired tests and plots.

``run`` calls ``python -m mtucb_bench run mo-<problem>`` once per problem into
``benchmark-runs/mo_suite/<problem>/`` (git-ignored; the CLI's run folders: manifest, trial
JSON, summary, R_C(t)/t plot; rerunning continues a run). More algorithms for a problem later go to
``<problem>+<tag>/`` (``--tag``); ``summarize`` pools the folders of a problem after checking
that they share experiment, horizon, seed, initial design and bound (an algorithm's trials may
be split over folders with ``--first-trial``; a trial found twice is refused). ``summarize`` reads
those folders and, from each trial's evaluated points (initial design + rounds), recomputes

* HV %: hypervolume of all evaluated points above the problem's reference point, as % of its
  maximum (``hypervolume_percent_curve``; the trial file's own curve covers the rounds only);
* R_C(T)/T and the Bayes regret from the trial file (the runner's metrics);
* wall time per round, refits included (the trial file's ``wall_time``);

and writes ``docs/results/mo_suite/summary.json``, ``tables.md`` (overview tables
problems × algorithms of HV % and R_C(T)/T, one table per problem and a paired table) and
``hv_<problem>.png`` (HV % vs evaluations, mean ± s.e. over trials).
Paired comparisons (common random numbers: same instance, initial design and λ_t per trial)
of ``--focus`` (default MT-UCB) against every other algorithm: trials where it is better in
HV and in R_C(T)/T, mean ± std of the differences, and the two-sided sign-test p-value of
the HV wins.

Run from the repository root::

    python -m mtucb_bench.suites.mo_suite run --problems corr-rff dtlz2 --trials 10 \\
        --horizon 20 --workers 2 --algorithms MT-UCB IT-UCB qLogNParEGO Sobol
    python -m mtucb_bench.suites.mo_suite summarize [--cache /tmp/mo_cache.json]

Noisy versions go to their own folders; pooling refuses folders of different noise. With
``--noise-range F`` objective i's noise is Gaussian with σ_i = F × its range over the box (the
issue's "noise 5–10 % of the range"); ``--noise SIGMA`` gives every objective the same σ in
the normalised units, which is 0.4 % to 77 % of an objective's range on the ten problems::

    python -m mtucb_bench.suites.mo_suite run --problems branin-currin ... --noise-range 0.07 \
        --out benchmark-runs/mo_suite_noise_range
    python -m mtucb_bench.suites.mo_suite summarize --out benchmark-runs/mo_suite_noisy \
        --results docs/results/mo_suite_noisy
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import torch

from mtucb_bench.measure import sign_test_p
from mtucb_bench.mo_suite_problems import (
    MO_SUITE,
    hypervolume_percent_curve,
    make_suite_problem,
)
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.suites.common import check_at_least, usage_error

OUT = RUNS / "mo_suite"  # the CLI's run folders (raw, git-ignored)
SUMMARY = RESULTS / "mo_suite"  # summary.json, tables.md, hv_<problem>.png (committed)
DT = torch.float64


def run(ns: argparse.Namespace) -> None:
    check_at_least(ns, 1, "trials", "horizon")
    check_at_least(ns, 0, "first_trial", "workers")
    for prob in ns.problems:
        cmd = [sys.executable, "-m", "mtucb_bench", "run", f"mo-{prob}",
               "--trials", str(ns.trials), "--first-trial", str(ns.first_trial),
               "--horizon", str(ns.horizon), "--bound",
               "directional", "--workers", str(ns.workers), "--no-progress",
               "--out", str(ns.out / (prob + (f"+{ns.tag}" if ns.tag else "")))]
        if ns.algorithms:
            cmd += ["--algorithms", *ns.algorithms]
        if ns.noise:
            cmd += ["--noise", f"gaussian:{ns.noise:g}"]
        if ns.noise_range:
            cmd += ["--noise", f"gaussian-range:{ns.noise_range:g}"]
        print(" ".join(cmd), flush=True)
        try:
            subprocess.run(cmd, check=True)
        except subprocess.CalledProcessError as err:  # the CLI said why
            raise SystemExit(err.returncode) from None


def _stats(v: list[float]) -> tuple[float, float]:
    t = torch.tensor(v, dtype=DT)
    return (float(t.mean()), float(t.std()) if len(v) > 1 else 0.0) if v else (math.nan, 0.0)


def load_problem_runs(folder: Path, cache: dict | None = None) -> dict[str, dict[int, dict]]:
    """algorithm → trial → metrics of one problem's run folder (or folders merged into it).

    ``cache`` (file key → that file's metrics) skips the recomputation for trial files seen
    before with the same size and modification time.
    """
    out: dict[str, dict[int, dict]] = {}
    for f in sorted(folder.glob("trial*_*.json")):
        st = f.stat()
        key = f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}"
        if cache is not None and key in cache:
            alg, trial, row = cache[key]
            out.setdefault(alg, {})[trial] = row
            continue
        rec = json.loads(f.read_text())
        name = rec["settings"]["experiment"].removeprefix("mo-")
        problem = make_suite_problem(name, seed=rec["seed"])
        X = torch.tensor(rec["initial_X"] + rec["x"], dtype=DT).reshape(-1, problem.dim)
        with torch.no_grad():
            curve = hypervolume_percent_curve(problem, problem.f(X))
        if rec.get("hypervolume"):  # the runner's curve (design counted) must agree
            theirs = 100.0 * rec["hypervolume"][-1] / problem.max_hv
            if abs(theirs - float(curve[-1])) > 1e-6 * max(1.0, abs(theirs)):
                print(f"warning: {f.name}: HV % {float(curve[-1]):.4f} here, {theirs:.4f} in "
                      "the trial file (does its curve count the initial design?)")
        row = out.setdefault(rec["algorithm"], {})[rec["trial"]] = {
            "hv_pct_curve": [float(v) for v in curve],
            "hv_pct": float(curve[-1]),
            "n0": len(rec["initial_X"]),
            "time_average_regret": rec["time_average_regret"][-1],
            "bayes_regret": rec["bayes_regret"][-1] if rec.get("bayes_regret") else math.nan,
            "wall_time_per_round": float(torch.tensor(rec["wall_time"], dtype=DT).mean()),
        }
        if cache is not None:
            cache[key] = (rec["algorithm"], rec["trial"], row)
    return out


def pooled_runs(
    out: Path, cache: dict | None = None
) -> dict[str, tuple[list[dict], dict[str, dict[int, dict]]]]:
    """problem → (manifests of its folders, algorithm → trial → metrics), pooling the folders
    ``<problem>`` and ``<problem>+<tag>`` of ``out``.

    Raises:
        ValueError: If a problem's folders disagree on experiment, horizon, seed, initial
            design or bound, or one algorithm's trial appears in two of them (trials split
            over folders with ``--first-trial`` pool; a repeat does not).
    """
    groups: dict[str, list[Path]] = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        groups.setdefault(folder.name.split("+")[0], []).append(folder)
    pooled = {}
    for name, folders in groups.items():
        runs: dict[str, dict[int, dict]] = {}
        manifests = [json.loads((f / "manifest.json").read_text()) for f in folders
                     if (f / "manifest.json").is_file()]
        for key in ("experiment", "horizon", "seed", "initial_design", "bound", "noise"):
            if len({json.dumps(_manifest_key(m, key)) for m in manifests}) > 1:
                raise ValueError(f"{[str(f) for f in folders]} disagree on {key!r}: not pooled")
        for f in folders:
            for alg, trials in load_problem_runs(f, cache).items():
                twice = sorted(set(runs.get(alg, {})) & set(trials))
                if twice:
                    raise ValueError(f"{alg} trial(s) {twice} appear in more than one of "
                                     f"{[str(x) for x in folders]}")
                runs.setdefault(alg, {}).update(trials)
        pooled[name] = (manifests, runs)
    return pooled


def _manifest_key(manifest: dict, key: str):
    """A manifest's value of ``key``; ``noise`` is the canonical ``--noise`` spec or ``None``."""
    if key == "noise":
        return manifest.get("options", {}).get("noise")
    return manifest.get(key)


def _paired(a: dict[int, dict], b: dict[int, dict], key: str, higher_better: bool) -> dict:
    common = sorted(set(a) & set(b))
    diff = [a[k][key] - b[k][key] for k in common]
    sign = 1 if higher_better else -1
    wins = sum(sign * x > 1e-12 for x in diff)
    losses = sum(sign * x < -1e-12 for x in diff)
    m, s = _stats(diff)
    return {"trials": len(common), "wins": wins, "losses": losses, "mean_diff": m,
            "std_diff": s, "sign_p": sign_test_p(wins, losses)}


def _ratio(ratio: float, other: dict) -> str:
    """Time ratio cell; "—" against an algorithm without a model (no time to compare with)."""
    return "—" if other["wall_time_per_round"][0] < 1e-2 else f"{ratio:.2f}"


def summarize(ns: argparse.Namespace) -> None:
    summary: dict[str, dict] = {}
    lines: list[str] = []
    paired_lines = [
        f"| problem | {ns.focus} vs | trials | HV higher/lower | ΔHV % | sign p | "
        "R_C lower/higher | ΔR_C(T)/T | time ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cache = None
    if ns.cache is not None:
        cache = json.loads(ns.cache.read_text()) if ns.cache.is_file() else {}
    if not ns.out.is_dir():
        usage_error(f"--out {ns.out} is not a folder of runs: nothing written.")
    try:
        pooled = pooled_runs(ns.out, cache)
    except ValueError as err:
        usage_error(str(err))
    if not any(runs for _, runs in pooled.values()):
        usage_error(f"No finished trials under {ns.out}: nothing written.")
    for name, (manifests, runs) in pooled.items():
        if not runs:
            continue
        folder = ns.out / name
        manifest = manifests[0] if manifests else {}
        listed = [a for m in manifests for a in m.get("algorithms", []) if a in runs]
        order = list(dict.fromkeys(listed + list(runs)))  # once each (old manifests list
        # algorithms whose superseded trials were removed and rerun in another folder)
        rows = {}
        for alg in order:
            trials = runs[alg]
            rows[alg] = {"trials": len(trials), "n0": sorted({t["n0"] for t in trials.values()})}
            for key in ("hv_pct", "time_average_regret", "bayes_regret", "wall_time_per_round"):
                rows[alg][key] = _stats([t[key] for t in trials.values()])
        pairs = {}
        if ns.focus in runs:
            for alg in order:
                if alg == ns.focus:
                    continue
                pairs[alg] = {
                    "hv": _paired(runs[ns.focus], runs[alg], "hv_pct", True),
                    "regret": _paired(runs[ns.focus], runs[alg], "time_average_regret", False),
                    "time_ratio": rows[ns.focus]["wall_time_per_round"][0]
                    / max(rows[alg]["wall_time_per_round"][0], 1e-12),
                }
                h, r = pairs[alg]["hv"], pairs[alg]["regret"]
                paired_lines.append(
                    f"| {folder.name} | {alg} | {h['trials']} | {h['wins']}/{h['losses']} | "
                    f"{h['mean_diff']:+.1f} ± {h['std_diff']:.1f} | {h['sign_p']:.3f} | "
                    f"{r['wins']}/{r['losses']} | {r['mean_diff']:+.4f} ± {r['std_diff']:.4f} | "
                    f"{_ratio(pairs[alg]['time_ratio'], rows[alg])} |")
        T, noise = manifest.get("horizon"), _manifest_key(manifest, "noise")
        summary[folder.name] = {"horizon": T, "noise": noise, "algorithms": rows,
                                f"paired_{ns.focus}": pairs}
        n0 = sorted({v for r in rows.values() for v in r["n0"]})
        noted = f", noise {noise}" if noise else ""
        lines += [f"**mo-{folder.name}** (T = {T}, initial design {n0} points{noted})", "",
                  "| algorithm | trials | HV % | R_C(T)/T | Bayes regret R_B | s / round |",
                  "|---|---|---|---|---|---|"]
        for alg, row in rows.items():
            (hm, hs), (rm, rs) = row["hv_pct"], row["time_average_regret"]
            (bm, bs), (wm, _) = row["bayes_regret"], row["wall_time_per_round"]
            lines.append(f"| {alg} | {row['trials']} | {hm:.1f} ± {hs:.1f} | {rm:.4f} ± {rs:.4f}"
                         f" | {bm:.4f} ± {bs:.4f} | {wm:.3f} |")
        lines.append("")
        _plot(ns.results / f"hv_{folder.name}.png", folder.name, runs, order, T)
    text = "\n".join(_overview(summary) + lines + ["Paired (same trials):", ""]
                     + paired_lines) + "\n"
    if cache is not None:
        ns.cache.write_text(json.dumps(cache))
    write_summary(ns.results / "summary.json", summary)
    (ns.results / "tables.md").write_text(text)
    print(text)


def _overview(summary: dict[str, dict]) -> list[str]:
    """Problems × algorithms: HV %, R_C(T)/T (mean ± std) and s / round ([k]: k < 10 trials)."""
    known = ["MT-UCB", "IT-UCB", "MT-UCB-paper", "MOBO", "qLogNParEGO", "qLogNEHVI", "Sobol"]
    algs = [a for a in known if any(a in v["algorithms"] for v in summary.values())]
    algs += sorted({a for v in summary.values() for a in v["algorithms"]} - set(algs))
    out = []
    for key, title, fmt in (("hv_pct", "HV % (higher is better), mean ± std", "{:.1f} ± {:.1f}"),
                            ("time_average_regret", "R_C(T)/T (lower is better), mean ± std",
                             "{:.3f} ± {:.3f}"),
                            ("wall_time_per_round", "s / round (refits included), mean",
                             "{:.2f}")):
        out += [f"Overview, {title}, over trials ([k]: only k trials):", "",
                "| problem | " + " | ".join(algs) + " |", "|---" * (len(algs) + 1) + "|"]
        for prob, v in summary.items():
            cells = []
            for a in algs:
                row = v["algorithms"].get(a)
                if row is None:
                    cells.append("—")
                    continue
                c = fmt.format(*row[key][: fmt.count("{")])
                cells.append(c + (f" [{row['trials']}]" if row["trials"] < 10 else ""))
            out.append(f"| {prob} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _plot(path: Path, name: str, runs: dict[str, dict[int, dict]], order: list[str], T) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for i, alg in enumerate(order):
        curves = [t["hv_pct_curve"] for t in runs[alg].values()]
        L = min(len(c) for c in curves)
        C = torch.tensor([c[:L] for c in curves], dtype=DT)
        m = C.mean(0)
        se = C.std(0) / math.sqrt(C.shape[0]) if C.shape[0] > 1 else torch.zeros_like(m)
        x = torch.arange(1, L + 1)
        style = "-" if alg.startswith(("MT-", "IT-")) else "--"
        ax.plot(x, m, style, color=f"C{i}", label=f"{alg} ({C.shape[0]})")
        ax.fill_between(x, m - se, m + se, color=f"C{i}", alpha=0.15)
    ax.set_xlabel("evaluations (initial design + rounds)")
    ax.set_ylabel("HV % of maximum (mean ± s.e.)")
    ax.set_title(f"mo-{name}, T = {T}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--problems", nargs="+", default=["corr-rff", "corr-hartmann"],
                   choices=sorted(MO_SUITE))
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--first-trial", type=int, default=0,
                   help="index of the first trial (grow an algorithm's trials in a new folder)")
    r.add_argument("--horizon", type=int, default=20)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--algorithms", nargs="+", default=None)
    r.add_argument("--tag", default="", help="run folder <problem>+<tag> (extra algorithms)")
    noise = r.add_mutually_exclusive_group()
    noise.add_argument("--noise", type=float, default=0.0, metavar="SIGMA",
                       help="Gaussian observation noise σ in the normalised units, the same "
                            "for every objective; give the noisy runs their own --out and "
                            "--results")
    noise.add_argument("--noise-range", type=float, default=0.0, metavar="FRACTION",
                       help="Gaussian observation noise of σ_i = FRACTION × objective i's range "
                            "over the box (gaussian-range:FRACTION); own --out and --results")
    s = sub.add_parser("summarize")
    s.add_argument("--focus", default="MT-UCB", help="algorithm compared pairwise to the rest")
    s.add_argument("--cache", type=Path, default=None,
                   help="JSON file of per-trial metrics reused across calls (keyed by path, "
                        "size and mtime)")
    for p in (r, s):
        p.add_argument("--out", type=Path, default=OUT, help="run folders (raw)")
    s.add_argument("--results", type=Path, default=SUMMARY,
                   help="folder of summary.json, tables.md and the plots")
    ns = ap.parse_args(argv)
    run(ns) if ns.cmd == "run" else summarize(ns)


if __name__ == "__main__":
    main()
