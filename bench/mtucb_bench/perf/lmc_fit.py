"""The fit of the practical per-task and independent models: closed form against autograd.

For each problem (BoTorch's BraninCurrin, d = 2, n = 2; DTLZ2, d = 6, n = 3; CarSideImpact,
d = 7, n = 4; maximised, 1 % Gaussian noise, inputs uniform in the box) and each N in
``--sizes``, the practical model ``practical_multitask_gp(X, Y, bounds, fit=False, per_task=...
/ independent=...)`` is fitted by ``fit_practical_model`` in two ways, interleaved A/B in one
process:

* ``new``: the default, the closed-form objective ``LMCFitObjective`` under L-BFGS-B (the
  constant mean profiled out);
* ``old``: ``fit_gpytorch_mll`` with the lean autograd closure ``practical_mll_closure``
  (passed as ``fit_kwargs={"closure": ...}``, which bypasses the closed-form path).

The default ICM model's fit (``practical_multitask_gp`` as the loop uses it) is timed beside
them as the reference of the per-task option's cost. Each row reports the median process CPU
time (one thread, torch and BLAS) over ``--reps``, the objective evaluations of each fit and
the fitted normalised marginal log likelihood (ExactMarginalLogLikelihood) of new and old.

Run: ``python -m mtucb_bench.perf.lmc_fit [--sizes 20 40 80] [--reps 3] [--out FILE]``
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from botorch.test_functions.multi_objective import DTLZ2, BraninCurrin, CarSideImpact
from threadpoolctl import threadpool_limits

from botorch_mtucb.multitask import fit_closure_lmc
from botorch_mtucb.multitask.practical import practical_multitask_gp
from mtucb_bench.perf.provenance import write_summary
from mtucb_bench.perf.small_n_floor import (
    ObjectiveCounter,
    cpu_time,
    fit_new,
    fit_old,
    mll_value,
)

DT = torch.float64

PROBLEMS = {
    "branin-currin": lambda: BraninCurrin(negate=True),
    "dtlz2": lambda: DTLZ2(dim=6, num_objectives=3, negate=True),
    "car-side-impact": lambda: CarSideImpact(negate=True),
}
KINDS = {"per_task": {"per_task": True}, "independent": {"independent": True}}


def make_data(problem: str, N: int, seed: int = 0):
    """The problem (maximised) at ``N`` uniform points with 1 % Gaussian noise."""
    g = torch.Generator().manual_seed(seed)
    f = PROBLEMS[problem]()
    bounds = f.bounds.to(DT)
    X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(N, f.dim, generator=g, dtype=DT)
    Y = f(X)
    Y = Y + 0.01 * Y.std(0) * torch.randn(Y.shape, generator=g, dtype=DT)
    return X, Y, bounds


def bench_row(problem: str, N: int, kind: str, reps: int, counter: ObjectiveCounter) -> dict:
    X, Y, bounds = make_data(problem, N)
    kw = KINDS[kind]
    new_t, old_t, icm_t, new_e, old_e = [], [], [], [], []
    for _ in range(reps):  # interleaved A/B, the ICM beside them
        t, e, m_new = fit_new(X, Y, bounds, counter, **kw)
        new_t.append(t)
        new_e.append(e)
        t, e, m_old = fit_old(X, Y, bounds, **kw)
        old_t.append(t)
        old_e.append(e)
        icm_t.append(cpu_time(lambda: practical_multitask_gp(X, Y, bounds)))
    row = {
        "problem": problem, "N": N, "n": Y.shape[-1], "kind": kind,
        "new_ms": 1e3 * statistics.median(new_t), "old_ms": 1e3 * statistics.median(old_t),
        "icm_ms": 1e3 * statistics.median(icm_t),
        "new_evals": statistics.median(new_e), "old_evals": statistics.median(old_e),
        "new_mll": mll_value(m_new), "old_mll": mll_value(m_old),
    }
    row["new_over_old"] = row["new_ms"] / row["old_ms"]
    row["new_over_icm"] = row["new_ms"] / row["icm_ms"]
    print(
        f"{problem:16s} N={N:4d} {kind:11s}: new {row['new_ms']:8.1f} ms "
        f"({row['new_evals']:.0f} evals)  old {row['old_ms']:8.1f} ms ({row['old_evals']:.0f})"
        f"  new/old {row['new_over_old']:.2f}  ICM {row['icm_ms']:7.1f} ms  new/ICM "
        f"{row['new_over_icm']:.1f}  mll new {row['new_mll']:.5f} old {row['old_mll']:.5f}",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 80])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    counter = ObjectiveCounter(fit_closure_lmc.LMCFitObjective)
    try:
        with threadpool_limits(1):
            torch.set_num_threads(1)
            for problem in args.problems:
                for N in args.sizes:
                    for kind in args.kinds:
                        rows.append(bench_row(problem, N, kind, args.reps, counter))
    finally:
        counter.restore()
    result = {
        "command": "python -m mtucb_bench.perf.lmc_fit " + " ".join(argv or []),
        "settings": {"sizes": args.sizes, "reps": args.reps, "threads": 1},
        "rows": rows,
    }
    if args.out is not None:
        write_summary(args.out, result)
    return result


if __name__ == "__main__":
    main()
