"""Suite methods on paper 001's synthetic finite-arm problems (issue 16, short horizon).

The paper's ``se-student`` (t₃ noise) and ``se-pareto`` (Pareto rewards) problems of
:func:`synthetic_heavy_tailed_problem` (100 arms on [0, 1], one random f per trial), run
with the methods of :mod:`mtucb_bench.robust_baselines` on the arm grid: the
acquisition is maximised over the 100 arms, the recommendation is the evaluated arm with the
largest posterior mean, regret on ``f / max|f|``. ``TGP-UCB-paper`` is the paper's algorithm
(SE l = 0.2 as the problem's kernel, λ = 1, authors' β, the problem's α, v, B). Common
random numbers: trial k draws f from seed k, the initial arms and the reward stream from a
generator seeded with ``k + 1`` (the same for every method).

    python bench/mtucb_bench/studies/ht_paper001_practical.py --trials 5 --iterations 50 --workers 2

Writes ``results/ht_paper001/<problem>/<method>_t<k>.json`` (skipping existing files) and,
with ``--summarize``, ``results/ht_paper001/summary.json`` and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from multiprocessing import get_context
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "ht_paper001"
METHODS = ("STGP-UCB", "STGP-LogEI", "TGP-UCB-practical", "GP-UCB-practical", "TGP-UCB-paper")


class _Declared:
    """The attributes the suite builders read (``alpha``, ``B``, ``v_declared``)."""

    def __init__(self, problem) -> None:
        self.alpha, self.B, self._v = problem.alpha, problem.B, problem.v

    def v_declared(self, honest: bool = True) -> float:
        return self._v if honest else self._v / 100.0


def run_arm_trial(name: str, method: str, seed: int, n_init: int, iterations: int) -> dict:
    import torch

    from mtucb_bench.heavy_tailed_problems import synthetic_heavy_tailed_problem
    from mtucb_bench.robust_baselines import METHODS as BUILDERS
    from mtucb_bench.robust_baselines import recommend_index

    problem = synthetic_heavy_tailed_problem("se", name.split("-")[1], seed)
    arms, f = problem.arms, problem.regret_f
    best = float(f.max())
    gen = torch.Generator().manual_seed(seed + 1)
    idx = torch.randint(0, problem.num_arms, (n_init,), generator=gen)
    X, Y = arms[idx], problem.sample_rewards(idx, gen).unsqueeze(-1)
    build = BUILDERS[method][0]
    declared = _Declared(problem)
    simple, seconds = [], []
    for r in range(iterations + 1):
        start = time.perf_counter()
        model, acqf = build(declared, X, Y, 1.0, True)
        simple.append(best - float(f[idx[recommend_index(model, X)]]))
        if r == iterations:
            break
        with torch.no_grad():
            a = int(acqf(arms.unsqueeze(-2)).argmax())
        seconds.append(time.perf_counter() - start)
        new = torch.tensor([a])
        idx = torch.cat([idx, new])
        X = torch.cat([X, arms[new]])
        Y = torch.cat([Y, problem.sample_rewards(new, gen).unsqueeze(-1)])
    regret = best - f[idx]
    return {"problem": name, "method": method, "seed": seed, "regret": regret.tolist(),
            "cumulative_regret": regret.cumsum(0).tolist(), "simple_regret": simple,
            "seconds": seconds}


def _unit(args: tuple) -> str:
    name, method, seed, n_init, iterations, out = args
    import torch

    torch.set_num_threads(1)
    path = Path(out) / name / f"{method}_t{seed}.json"
    if path.exists():
        return f"skip {path}"
    rec = run_arm_trial(name, method, seed, n_init, iterations)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    os.replace(tmp, path)
    return f"done {name}/{path.name} {sum(rec['seconds']):.1f}s"


def _se(values: list[float]) -> float:
    n = len(values)
    return statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")


def summarize(out: Path, reference: str = "TGP-UCB-practical") -> None:
    lines, summary = [], {}
    for cell in sorted(p for p in out.iterdir() if p.is_dir()):
        recs: dict[str, dict[int, dict]] = {}
        for path in cell.glob("*.json"):
            r = json.loads(path.read_text())
            recs.setdefault(r["method"], {})[r["seed"]] = r
        ref = recs.get(reference, {})
        lines += [f"**{cell.name}**", "", "| method | trials | simple regret | cumulative "
                  f"regret | {reference} lower simple regret (wins–losses) |",
                  "|---|---|---|---|---|"]
        summary[cell.name] = {}
        for m, by_seed in sorted(recs.items()):
            s = [r["simple_regret"][-1] for r in by_seed.values()]
            c = [r["cumulative_regret"][-1] for r in by_seed.values()]
            n = len(s)
            pairs = [(r["simple_regret"][-1], ref[k]["simple_regret"][-1])
                     for k, r in by_seed.items() if k in ref and m != reference]
            wl = (f"{sum(b < a for a, b in pairs)}–{sum(b > a for a, b in pairs)}"
                  if pairs else "—")
            summary[cell.name][m] = {"n": n, "simple_mean": statistics.fmean(s),
                                     "cumulative_mean": statistics.fmean(c)}
            lines.append(f"| {m} | {n} | {statistics.fmean(s):.3f} ± {_se(s):.3f} | "
                         f"{statistics.fmean(c):.1f} ± {_se(c):.1f} | {wl} |")
        lines.append("")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", nargs="+", default=["se-student", "se-pareto"])
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--n-init", type=int, default=10)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summarize", action="store_true")
    ns = p.parse_args()
    if ns.summarize:
        summarize(ns.out)
        return
    units = [(pr, m, k, ns.n_init, ns.iterations, str(ns.out))
             for k in range(ns.trials) for pr in ns.problems for m in ns.methods]
    with get_context("spawn").Pool(ns.workers) as pool:
        for msg in pool.imap_unordered(_unit, units):
            print(msg, flush=True)


if __name__ == "__main__":
    main()
