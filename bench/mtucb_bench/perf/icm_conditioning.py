"""Incremental ICM conditioning: ``condition_on_observations`` of one point vs a bare eigh(K_t).

``ExactMultiTaskGP`` with an ICM kernel (RBF l = 0.2, fixed B), η = 0.1, n tasks, t training
points in [0, 1]^2. One *round* = ``model.condition_on_observations(x, y)`` (which extends the
factorisation by a Schur block, O(n t²)) followed by one ``task_posterior`` call, so that any
lazy work is counted. Anchors measured in the same process: a bare ``torch.linalg.eigh`` of the
``(t+1) x (t+1)`` kernel matrix (what 0.1 recomputed on every conditioning) and a model built
from scratch on the ``t + 1`` points. The conditioned posterior is checked against the scratch
build (max abs difference printed; must be ≤ 1e-8).

Usage::

    python -m mtucb_bench.perf.icm_conditioning [--sizes 500 1500 3000] [--tasks 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform

import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP
from mtucb_bench.measure import best_time
from mtucb_bench.perf.provenance import RESULTS, write_summary

DT = torch.float64
OUT = RESULTS / "perf" / "icm_conditioning.json"


def measure(t: int, n: int, repeats: int) -> dict:
    g = torch.Generator().manual_seed(t)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.2
    A = torch.randn(n, n, generator=g, dtype=DT)
    kernel = ICMKernel(k, n, task_covar=A @ A.T / n + 0.1 * torch.eye(n, dtype=DT))
    X = torch.rand(t + 1, 2, generator=g, dtype=DT)
    Y = torch.randn(t + 1, n, generator=g, dtype=DT)
    Xs = torch.rand(256, 1, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X[:t], Y[:t], covar_module=kernel)
    with torch.no_grad():
        model.task_posterior(Xs[:1])  # the factorisation of the t points

        def condition() -> None:
            model.condition_on_observations(X[t:], Y[t:]).task_posterior(Xs[:1])

        def scratch() -> None:
            ExactMultiTaskGP(X, Y, covar_module=kernel).task_posterior(Xs[:1])

        K = k(X).to_dense()
        t_cond = best_time(condition, repeats)
        t_eigh = best_time(lambda: torch.linalg.eigh(K), repeats)
        t_scratch = best_time(scratch, repeats)
        cond = model.condition_on_observations(X[t:], Y[t:])
        ref = ExactMultiTaskGP(X, Y, covar_module=kernel)
        (m1, b1), (m2, b2) = cond.task_posterior(Xs), ref.task_posterior(Xs)
        err = max(float((m1 - m2).abs().max()), float((b1 - b2).abs().max()))
    return {
        "t": t, "n": n, "condition_s": t_cond, "eigh_s": t_eigh, "scratch_s": t_scratch,
        "condition_over_eigh": t_cond / t_eigh, "scratch_over_condition": t_scratch / t_cond,
        "max_abs_diff_vs_scratch": err,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1500, 3000])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    print("| t | n | condition (s) | eigh(K) (s) | scratch build (s) | condition / eigh | "
          "scratch / condition | max diff |")
    print("|---|---|---|---|---|---|---|---|")
    for t in args.sizes:
        r = measure(t, args.tasks, args.repeats)
        rows.append(r)
        print(f"| {t} | {r['n']} | {r['condition_s']:.4f} | {r['eigh_s']:.4f} | "
              f"{r['scratch_s']:.4f} | {r['condition_over_eigh']:.3f} | "
              f"{r['scratch_over_condition']:.1f}× | {r['max_abs_diff_vs_scratch']:.1e} |")
        assert r["max_abs_diff_vs_scratch"] <= 1e-8, r
    write_summary(OUT, {"machine": platform.processor() or platform.machine(),
                        "threads": 1, "rows": rows}, indent=2)


if __name__ == "__main__":
    main()
