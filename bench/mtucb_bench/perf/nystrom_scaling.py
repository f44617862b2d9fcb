"""MT-BKB scaling: per-round wall time and dictionary size of NystromMultiTaskGP vs t.

Problem: d = 2, n = 2 tasks, ICM kernel Γ = k·B with an SE (RBF) kernel k (lengthscale 0.2)
and the task-similarity matrix B_ω (ω = 0.5), η = 0.1, ε = 0.5, δ = 0.1, horizon T = 20,000.
A synthetic stream of points replaces the candidate optimiser:

* ``uniform`` — x_t uniform on [0, 1]² (space filling: the worst case for m_t);
* ``bo`` — BO-like: x_t uniform with probability min(1, 10/√t), else Gaussian (sd 0.03) around
  one of two optima (the way a UCB loop concentrates its queries).

At each checkpoint t a model is built cold on the first t − 1 points, then one *round* is
timed: ``condition_on_observations(x_t, y_t)`` (carry the variances, draw D_t, build the
embedding) plus ``task_posterior`` on 1,024 candidates (one acquisition sweep). The exact
anchor is ``ExactMultiTaskGP`` rebuilt on the t points (ICM eigen path) plus the same sweep.
Two choices of q: Theorem 3's 6ρ log(4T/δ)/ε² (≈ 979) and the practical log(T)/ε² (≈ 39.6,
the rule of the authors' public code for paper 001). Single-threaded (``torch.set_num_threads``)
so that timings are not distorted by other jobs on the machine; all timings in one process.

Run: ``python -m mtucb_bench.perf.nystrom_scaling [--out docs/results/perf/nystrom_scaling.json]``
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
from gpytorch.kernels import RBFKernel
from tqdm import tqdm

from botorch_mtucb.kernels import TaskSimilarityKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP
from botorch_mtucb.theory import theorem3_q
from mtucb_bench.perf.provenance import RESULTS, write_summary

DT = torch.float64
ETA, EPS, DELTA, T = 0.1, 0.5, 0.1, 20_000


def kernel() -> TaskSimilarityKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = 0.2
    return TaskSimilarityKernel(k, num_tasks=2, omega=0.5).to(DT)


def stream(kind: str, t: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    U = torch.rand(t, 2, generator=g, dtype=DT)
    if kind == "bo":
        steps = torch.arange(1, t + 1, dtype=DT)
        explore = torch.rand(t, generator=g, dtype=DT) < (10 / steps.sqrt()).clamp(max=1)
        centres = torch.tensor([[0.3, 0.7], [0.75, 0.25]], dtype=DT)
        which = torch.randint(0, 2, (t,), generator=g)
        local = (centres[which] + 0.03 * torch.randn(t, 2, generator=g, dtype=DT)).clamp(0, 1)
        U = torch.where(explore[:, None], U, local)
    F = torch.stack([torch.sin(6 * U[:, 0]) * U[:, 1], torch.cos(5 * U[:, 1])], dim=-1)
    return U, F + 0.1 * torch.randn(t, 2, generator=g, dtype=DT)


def timed(fn, repeats: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(RESULTS / "perf" / "nystrom_scaling.json"))
    parser.add_argument("--checkpoints", default="1000,2000,5000,10000,20000")
    parser.add_argument("--exact-max", type=int, default=5000)
    parser.add_argument("--streams", default="bo,uniform")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    qs = {"theorem3": theorem3_q(EPS, DELTA, T), "practical": math.log(T) / EPS**2}
    cand = torch.rand(1024, 1, 2, generator=torch.Generator().manual_seed(9), dtype=DT)
    results: dict = {"config": {"eta": ETA, "epsilon": EPS, "delta": DELTA, "horizon": T,
                                "q": qs, "threads": args.threads, "candidates": 1024}, "runs": []}
    jobs = [(s, qn, t) for s in args.streams.split(",") for qn in qs for t in checkpoints]
    jobs += [(s, "exact", t) for s in args.streams.split(",") for t in checkpoints
             if t <= args.exact_max]
    for kind, qname, t in tqdm(jobs, desc="nystrom_scaling"):
        X, Y = stream(kind, t)
        kern = kernel()
        with torch.no_grad():
            if qname == "exact":
                def round_exact(X=X, Y=Y, kern=kern):
                    m = ExactMultiTaskGP(X, Y, covar_module=kern, noise=ETA)
                    m.task_posterior(cand)
                    return m
                sec, _ = timed(round_exact, 1)
                rec = {"stream": kind, "model": "exact", "t": t, "round_s": sec}
            else:
                t0 = time.perf_counter()
                base = NystromMultiTaskGP(X[:-1], Y[:-1], covar_module=kern, noise=ETA,
                                          q=qs[qname], epsilon=EPS, delta=DELTA, horizon=T,
                                          generator=1)
                base.solver()
                cold = time.perf_counter() - t0

                def round_nys(base=base, X=X, Y=Y):
                    m = base.condition_on_observations(X[-1:], Y[-1:])
                    m.task_posterior(cand)
                    return m

                sec, m = timed(round_nys, 3)
                rec = {"stream": kind, "model": f"nystrom_{qname}", "t": t, "round_s": sec,
                       "cold_build_s": cold, "m_t": m.dictionary_size,
                       "rank": m.solver().rank, "method": m.solver().method}
        tqdm.write(json.dumps(rec))
        results["runs"].append(rec)

    summary = {}
    for kind in args.streams.split(","):
        def get(model, t, key="round_s", kind=kind):
            for r in results["runs"]:
                if r["stream"] == kind and r["model"] == model and r["t"] == t:
                    return r[key]
            return None
        for qname in qs:
            name = f"nystrom_{qname}"
            a, b = get(name, 2000), get(name, 20000)
            ma, mb = get(name, 2000, "m_t"), get(name, 20000, "m_t")
            e5, n5 = get("exact", 5000), get(name, 5000)
            summary[f"{kind}/{qname}"] = {
                "time_20000_over_2000": None if None in (a, b) else b / a,
                "m_20000_over_m_2000": None if None in (ma, mb) else mb / ma,
                "speedup_vs_exact_at_5000": None if None in (e5, n5) else e5 / n5,
            }
    results["summary"] = summary
    print(json.dumps(summary, indent=2))
    write_summary(Path(args.out), results, indent=2)


if __name__ == "__main__":
    main()
