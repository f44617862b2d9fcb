"""HV % of the MO suite after k rounds, for several k, from one longer run (issue 16: T = 30, 40).

Reads a ``mo_suite.py`` output folder (``results/mo_suite_T40`` by default: the suite's
protocol with ``--horizon 40``; folders ``<problem>+<tag>`` are pooled as ``summarize``
pools them) and reports, for each problem and each k in ``--rounds``, the hypervolume of the
evaluated points (initial design + the first k rounds) as % of the maximum, mean ± std over
trials, and paired comparisons (same trials; HV higher/lower, two-sided sign test) for the
``--pairs`` ``A:B``. A T = 40 trial's first 20 rounds are the T = 20 trial's (same seeds), so
k = 20 reproduces the suite's T = 20 table.

    PYTHONPATH=. python benchmarks/mo_suite.py run --problems dtlz2 --trials 10 --horizon 40 \\
        --workers 1 --algorithms MT-UCB MT-UCB-TR Sobol --out benchmarks/results/mo_suite_T40
    PYTHONPATH=. python benchmarks/mo_horizon.py --rounds 20 30 40 \\
        --pairs MT-UCB:Sobol MT-UCB-TR:Sobol MT-UCB-TR:MT-UCB

Writes ``<folder>/horizon.json`` and ``horizon.md`` (atomically).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mo_suite import load_problem_runs  # noqa: E402

from botorch_mtucb.benchmarks.measure import sign_test_p  # noqa: E402

DEFAULT = Path(__file__).resolve().parent / "results" / "mo_suite_T40"


def hv_after(trial: dict, k: int) -> float | None:
    """HV % after the initial design and k rounds (``None`` if the trial is shorter)."""
    i = trial["n0"] + k - 1
    curve = trial["hv_pct_curve"]
    return float(curve[i]) if i < len(curve) else None


def pooled_runs(folder: Path, cache: dict | None = None) -> dict[str, dict[str, dict]]:
    """problem → algorithm → trial → metrics, pooling ``<problem>+<tag>`` folders (a trial
    found twice is refused, as in ``mo_suite.py summarize``)."""
    out: dict[str, dict[str, dict]] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        prob = sub.name.split("+")[0]
        for alg, trials in load_problem_runs(sub, cache).items():
            have = out.setdefault(prob, {}).setdefault(alg, {})
            twice = set(have) & set(trials)
            if twice:
                raise ValueError(f"{prob}: {alg} trials {sorted(twice)} found in two folders")
            have.update(trials)
    return out


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
            row: dict = {"hv_pct": {}, "paired": {}}
            cells = []
            for a in algs:
                v = [x for t in by_alg.get(a, {}).values() if (x := hv_after(t, k)) is not None]
                if not v:
                    cells.append("—")
                    continue
                t = torch.tensor(v, dtype=torch.float64)
                sd = float(t.std()) if len(v) > 1 else 0.0
                row["hv_pct"][a] = {"mean": float(t.mean()), "std": sd, "trials": len(v)}
                cells.append(f"{float(t.mean()):.1f} ± {sd:.1f}"
                             + (f" [{len(v)}]" if len(v) < 10 else ""))
            for a, b in pairs:
                A, B = by_alg.get(a, {}), by_alg.get(b, {})
                common = [i for i in sorted(set(A) & set(B))
                          if hv_after(A[i], k) is not None and hv_after(B[i], k) is not None]
                if not common:
                    cells.append("—")
                    continue
                d = [hv_after(A[i], k) - hv_after(B[i], k) for i in common]
                w, lo = sum(x > 1e-9 for x in d), sum(x < -1e-9 for x in d)
                p = sign_test_p(w, lo)
                row["paired"][f"{a}:{b}"] = {"trials": len(common), "higher": w, "lower": lo,
                                             "mean_diff": sum(d) / len(d), "sign_p": p}
                cells.append(f"{w}/{lo} ({sum(d) / len(d):+.1f}"
                             + (f", p = {p:.3f})" if p < 0.2 else ")"))
            summary.setdefault(prob, {})[str(k)] = row
            lines.append(f"| {prob} | {k} | " + " | ".join(cells) + " |")
    return summary, lines


def _write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", type=Path, default=DEFAULT)
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
    summary, lines = table(pooled_runs(ns.folder, cache), ns.rounds, pairs)
    text = ("HV % after the initial design and k rounds, mean ± std over trials; paired: "
            "trials A higher/lower than B (mean difference; p: two-sided sign test, shown "
            "when < 0.2).\n\n" + "\n".join(lines) + "\n")
    _write(ns.folder / "horizon.json", json.dumps(summary, indent=1))
    _write(ns.folder / "horizon.md", text)
    print(text)


if __name__ == "__main__":
    main()
