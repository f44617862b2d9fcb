"""HV % of the MO suite after k rounds, for several k, from one longer run (issue 16: T = 30, 40).

Reads a ``mo_suite`` run folder (``benchmark-runs/mo_suite_T40`` by default: the suite's
protocol with ``--horizon 40``; folders ``<problem>+<tag>`` are pooled as ``summarize``
pools them) and reports, for each problem and each k in ``--rounds``, the hypervolume of the
evaluated points (initial design + the first k rounds) as % of the maximum, mean ± std over
trials, and paired comparisons (same trials; HV higher/lower, two-sided sign test) for the
``--pairs`` ``A:B`` (``mo_suite``'s pooling and paired statistics). A T = 40 trial's
first 20 rounds are the T = 20 trial's (same seeds), so k = 20 reproduces the suite's T = 20
table.

    python -m mtucb_bench.suites.mo_suite run --problems dtlz2 --trials 10 --horizon 40 \\
        --workers 1 --algorithms MT-UCB MT-UCB-TR Sobol --out benchmark-runs/mo_suite_T40
    python -m mtucb_bench.studies.mo_horizon --rounds 20 30 40 \\
        --pairs MT-UCB:Sobol MT-UCB-TR:Sobol MT-UCB-TR:MT-UCB

Writes ``docs/results/mo_suite/T40/horizon.json`` and ``horizon.md`` (atomically; ``--results``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mtucb_bench.fileio import write_text
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.suites.mo_suite import _paired, _stats, pooled_runs

DEFAULT = RUNS / "mo_suite_T40"  # the suite's run folders at T = 40 (raw, git-ignored)
SUMMARY = RESULTS / "mo_suite" / "T40"


def hv_after(trial: dict, k: int) -> float | None:
    """HV % after the initial design and k rounds (``None`` if the trial is shorter)."""
    i = trial["n0"] + k - 1
    curve = trial["hv_pct_curve"]
    return float(curve[i]) if i < len(curve) else None


def table(runs: dict[str, dict[str, dict]], rounds: list[int],
          pairs: list[tuple[str, str]]) -> tuple[dict, list[str]]:
    """(JSON summary, markdown lines)."""
    summary: dict[str, dict] = {}
    algs = sorted({a for v in runs.values() for a in v})
    lines = ["| problem | k | " + " | ".join(algs) + " | "
             + " | ".join(f"{a} vs {b}" for a, b in pairs) + " |",
             "|---" * (2 + len(algs) + len(pairs)) + "|"]
    for prob, by_alg in sorted(runs.items()):
        for k in rounds:
            at_k = {a: {i: {"hv": x} for i, t in trials.items()
                        if (x := hv_after(t, k)) is not None}
                    for a, trials in by_alg.items()}
            row: dict = {"hv_pct": {}, "paired": {}}
            cells = []
            for a in algs:
                v = [t["hv"] for t in at_k.get(a, {}).values()]
                if not v:
                    cells.append("—")
                    continue
                m, sd = _stats(v)
                row["hv_pct"][a] = {"mean": m, "std": sd, "trials": len(v)}
                cells.append(f"{m:.1f} ± {sd:.1f}" + (f" [{len(v)}]" if len(v) < 10 else ""))
            for a, b in pairs:
                pr = _paired(at_k.get(a, {}), at_k.get(b, {}), "hv", True)
                if not pr["trials"]:
                    cells.append("—")
                    continue
                row["paired"][f"{a}:{b}"] = {"trials": pr["trials"], "higher": pr["wins"],
                                             "lower": pr["losses"],
                                             "mean_diff": pr["mean_diff"], "sign_p": pr["sign_p"]}
                p = pr["sign_p"]
                cells.append(f"{pr['wins']}/{pr['losses']} ({pr['mean_diff']:+.1f}"
                             + (f", p = {p:.3f})" if p < 0.2 else ")"))
            summary.setdefault(prob, {})[str(k)] = row
            lines.append(f"| {prob} | {k} | " + " | ".join(cells) + " |")
    return summary, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", type=Path, default=DEFAULT)
    ap.add_argument("--results", type=Path, default=SUMMARY)
    ap.add_argument("--rounds", type=int, nargs="+", default=[20, 30, 40])
    ap.add_argument("--pairs", nargs="+", default=["MT-UCB:Sobol", "MT-UCB-TR:Sobol",
                                                   "MT-UCB-TR:MT-UCB"])
    ap.add_argument("--cache", type=Path, default=None,
                    help="summarize's per-trial metrics cache (same format)")
    ns = ap.parse_args()
    pairs = []
    for p in ns.pairs:
        a, sep, b = p.partition(":")
        if not sep or not a or not b:
            raise SystemExit(f"--pairs: expected A:B, got {p!r}")
        pairs.append((a, b))
    cache = json.loads(ns.cache.read_text()) if ns.cache and ns.cache.is_file() else None
    runs = {name: pooled for name, (_, pooled) in pooled_runs(ns.folder, cache).items()}
    summary, lines = table(runs, ns.rounds, pairs)
    text = ("HV % after the initial design and k rounds, mean ± std over trials; paired: "
            "trials A higher/lower than B (mean difference; p: two-sided sign test, shown "
            "when < 0.2).\n\n" + "\n".join(lines) + "\n")
    write_summary(ns.results / "horizon.json", summary)
    write_text(ns.results / "horizon.md", text)
    print(text)


if __name__ == "__main__":
    main()
