"""The joint posterior at many points as one q-batch: the lazy covariance against the dense one.

``ExactMultiTaskGP.posterior(X)`` with ``X: q x d`` returns the joint covariance of the ``q``
points; on the exact ICM posterior above ``LAZY_JOINT_SIZE = q·n`` it is kept lazy
(``K_qq ⊗ B − R Rᵀ``, ``R`` of ``q·n x n·t``). Timed: ``posterior(X)`` followed by its
``mean`` and ``variance`` (what a user plotting a grid asks for), on the lazy route
(``lazy``), on the dense route forced by raising the threshold (``dense``, skipped above
``--dense-max`` q·n), and BoTorch's ``KroneckerMultiTaskGP`` with the same hyperparameters
(``kronecker``, the anchor: BoTorch's lazy multi-task posterior; skipped above
``--kronecker-max`` q·n). The dense route's covariance alone takes 8·(q·n)² bytes
(``dense_bytes``). Problem: ``mtucb_bench.perf.exact_posterior``'s (ICM, RBF, fixed B,
η = 0.1). Process CPU time, one thread, best of ``--reps``.

Run: ``python -m mtucb_bench.perf.joint_posterior [--sizes 500x2 2000x2 8000x2 2000x5]
[--t 50] [--reps 3] [--out FILE]``
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import torch
from threadpoolctl import threadpool_limits

import botorch_mtucb.multitask.solver_cache as solver_cache
from mtucb_bench.perf.exact_posterior import kronecker, make_problem, ours
from mtucb_bench.perf.provenance import rows_summary
from mtucb_bench.perf.small_n_floor import cpu_time


def _moments(model, X: torch.Tensor, threshold: int) -> Callable[[], object]:
    def call() -> tuple[torch.Tensor, torch.Tensor]:
        previous = solver_cache.LAZY_JOINT_SIZE
        solver_cache.LAZY_JOINT_SIZE = threshold
        try:
            with torch.no_grad():
                post = model.posterior(X)
                return post.mean, post.variance
        finally:
            solver_cache.LAZY_JOINT_SIZE = previous

    return call


def _row(q: int, n: int, t: int, reps: int, dense_max: int, kronecker_max: int) -> dict:
    X, Y, Xc, B = make_problem(n, t, q, 2, seed=0)
    Xq = Xc.squeeze(-2)  # q x d: one joint posterior
    model = ours(X, Y, Xc[:1], B)[0]
    calls = {"lazy": _moments(model, Xq, 0)}
    if q * n <= dense_max:
        calls["dense"] = _moments(model, Xq, 10**12)
    if q * n <= kronecker_max:
        calls["kronecker"] = lambda: kronecker(X, Y, Xq, B)
    row = {"q": q, "n": n, "t": t, "dense_bytes": 8 * (q * n) ** 2}
    for name, call in calls.items():
        call()  # warm: solver cache, first-call costs
        row[f"{name}_s"] = min(cpu_time(call) for _ in range(reps))
    lazy_mean, lazy_var = calls["lazy"]()
    for name in ("dense", "kronecker"):
        if name in calls:
            mean, var = calls[name]()
            row[f"{name}_over_lazy"] = row[f"{name}_s"] / row["lazy_s"]
            row[f"max_abs_diff_variance_vs_{name}"] = float(
                (lazy_var - var.reshape(lazy_var.shape)).abs().max())
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["500x2", "2000x2", "8000x2", "2000x5"],
                        help="q x n pairs")
    parser.add_argument("--t", type=int, default=50, help="training points")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dense-max", type=int, default=10_000, help="largest dense q·n")
    parser.add_argument("--kronecker-max", type=int, default=10_000,
                        help="largest q·n of the KroneckerMultiTaskGP anchor")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = []
    with threadpool_limits(limits=1):
        torch.set_num_threads(1)
        for size in args.sizes:
            q, n = (int(v) for v in size.split("x"))
            row = _row(q, n, args.t, args.reps, args.dense_max, args.kronecker_max)
            rows.append(row)
            print({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)
    return rows_summary("mtucb_bench.perf.joint_posterior", argv, rows, args.out)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
