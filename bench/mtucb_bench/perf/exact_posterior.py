"""Exact multi-task posterior: ExactMultiTaskGP vs BoTorch's KroneckerMultiTaskGP vs naive.

For each (n, t) the three compute the posterior mean and the n x n task covariance at N
candidates of shape ``N x 1 x d`` (what ``optimize_acqf`` evaluates), with identical
hyperparameters (ICM kernel, RBF data kernel, fixed B, noise η = 0.1, zero prior mean).
All timings are taken in the same process; ratios are reported against ExactMultiTaskGP.

* ``ours_cold``: a freshly built model (includes the t x t eigendecomposition), then
  ``posterior(X)`` (BoTorch path, joint MTMVN).
* ``ours_warm``: ``posterior(X)`` again on the same model (factorisation cached), which is
  what every acquisition evaluation inside ``optimize_acqf`` costs.
* ``kronecker``: ``KroneckerMultiTaskGP.posterior(X)`` on a fresh model (its own caches
  built inside). It is too slow to run at N = 1000 for every size, so it is timed at two
  small N (N1 and 2·N1, per size below), a line a + b·N is fitted through the two points
  and evaluated at N (stated in the output). Its ``posterior()`` keeps only the diagonal
  of the task covariance.
* ``naive``: the nt x nt formula of DESIGN.md (Cholesky of G_t + ηI, then the solves).
* ``eigh``: a bare ``torch.linalg.eigh`` of the t x t kernel matrix K_t.

Run: ``python -m mtucb_bench.perf.exact_posterior [--out docs/results/perf/exact_posterior.json]``
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import torch
from botorch.models import KroneckerMultiTaskGP
from gpytorch.kernels import RBFKernel
from tqdm import tqdm

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP
from mtucb_bench.measure import best_time
from mtucb_bench.perf.provenance import RESULTS, write_summary

DT = torch.float64
ETA = 0.1
# N1 at which KroneckerMultiTaskGP is timed (and 2·N1), per (n, t)
KRON_N1 = {(2, 100): 500, (20, 100): 500, (20, 1000): 2}


def make_problem(n: int, t: int, N: int, d: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, d, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    Xc = torch.rand(N, 1, d, generator=g, dtype=DT)
    A = torch.randn(n, n, generator=g, dtype=DT)
    B = A.T @ A / n + 0.05 * torch.eye(n, dtype=DT)
    return X, Y, Xc, B


def data_kernel(d: int) -> RBFKernel:
    k = RBFKernel(ard_num_dims=d).to(DT)
    k.lengthscale = 0.2
    return k


def ours(X, Y, Xc, B):
    model = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(data_kernel(X.shape[-1]), B.shape[0],
                                                          task_covar=B), noise=ETA)
    with torch.no_grad():
        post = model.posterior(Xc)
        return model, post.mean, post.mvn.covariance_matrix


def kronecker(X, Y, Xc, B):
    n = B.shape[0]
    model = KroneckerMultiTaskGP(X, Y)
    with torch.no_grad():
        for mean in model.mean_module.base_means:
            mean.constant.zero_()
        model.likelihood.task_noises = torch.full((n,), 1e-4, dtype=DT)
        model.likelihood.noise = torch.tensor([ETA - 1e-4], dtype=DT)
        tk = model.covar_module.task_covar_module
        tk.covar_factor.copy_(torch.linalg.cholesky(B - 1e-6 * torch.eye(n, dtype=DT)))
        tk.var = torch.full((n,), 1e-6, dtype=DT)
        model.covar_module.data_covar_module.lengthscale = 0.2
    model.eval()
    with torch.no_grad():
        post = model.posterior(Xc)
        return post.mean, post.variance


def naive(X, Y, Xc, B):
    kern = ICMKernel(data_kernel(X.shape[-1]), B.shape[0], task_covar=B)
    with torch.no_grad():
        G = kern(X).to_dense()
        G = G + ETA * torch.eye(G.shape[0], dtype=DT)
        L = torch.linalg.cholesky(G)
        alpha = torch.cholesky_solve(Y.reshape(-1, 1), L)
        Gx = kern(Xc, X).to_dense()  # N x n x nt
        mean = (Gx @ alpha).reshape(Xc.shape[0], 1, -1)
        N, n = Gx.shape[0], Gx.shape[1]
        V = torch.linalg.solve_triangular(L, Gx.reshape(N * n, -1).T, upper=False)
        V = V.T.reshape(N, n, -1)  # batch of n x nt blocks
        cov = kern(Xc).to_dense() - V @ V.transpose(-1, -2)
        return mean, cov


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--N", type=int, default=1000, help="number of candidates")
    parser.add_argument("--d", type=int, default=2)
    parser.add_argument("--naive-max-nt", type=int, default=2000,
                        help="skip the naive formula above this n·t")
    parser.add_argument("--out", type=Path, default=RESULTS / "perf" / "exact_posterior.json")
    parser.add_argument("--sizes", nargs="+", default=["2,100", "20,100", "20,1000"],
                        help="(n,t) pairs as n,t")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (1: stable timings on a shared machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = [tuple(int(v) for v in sz.split(",")) for sz in args.sizes]
    rows = []
    for n, t in tqdm(sizes, desc="sizes"):
        X, Y, Xc, B = make_problem(n, t, args.N, args.d, seed=0)
        row = {"n": n, "t": t, "N": args.N}
        model, m_ours, c_ours = ours(X, Y, Xc, B)
        row["ours_cold_s"] = best_time(partial(ours, X, Y, Xc, B))
        with torch.no_grad():
            row["ours_warm_s"] = best_time(partial(model.posterior, Xc))
            K = data_kernel(args.d)(X).to_dense()
        row["eigh_s"] = best_time(partial(torch.linalg.eigh, K))
        # accuracy check against the naive formula where it runs
        if n * t <= args.naive_max_nt:
            row["naive_s"] = best_time(partial(naive, X, Y, Xc, B), repeats=1)
            m_nv, c_nv = naive(X, Y, Xc, B)
            row["max_abs_diff_mean_vs_naive"] = (m_ours - m_nv).abs().max().item()
            row["max_abs_diff_cov_vs_naive"] = (c_ours - c_nv).abs().max().item()
        n1 = KRON_N1[(n, t)]
        t0 = time.perf_counter()
        m_kr, _ = kronecker(X, Y, Xc[:n1], B)
        t1 = time.perf_counter() - t0
        t2 = best_time(partial(kronecker, X, Y, Xc[: 2 * n1], B), repeats=1)
        slope = max(t2 - t1, 0.0) / n1
        row["kronecker_N1"] = n1
        row["kronecker_s_at_N1_2N1"] = [t1, t2]
        row["kronecker_s_extrapolated_to_N"] = t1 + slope * (args.N - n1)
        row["max_abs_diff_mean_vs_kronecker"] = (m_ours[:n1] - m_kr).abs().max().item()
        row["speedup_vs_kronecker_cold"] = (
            row["kronecker_s_extrapolated_to_N"] / row["ours_cold_s"]
        )
        if "naive_s" in row:
            row["speedup_vs_naive_cold"] = row["naive_s"] / row["ours_cold_s"]
        row["ours_cold_over_eigh"] = row["ours_cold_s"] / row["eigh_s"]
        rows.append(row)
        tqdm.write(json.dumps(row))
    print(f"\nN = {args.N} candidates (N x 1 x {args.d}); Kronecker timed at N1 and 2·N1 "
          f"({KRON_N1}) and extrapolated linearly to N.")
    print(f"{'n':>3} {'t':>5} | {'ours cold':>10} {'ours warm':>10} {'eigh K_t':>9} | "
          f"{'Kron/ours':>10} {'naive/ours':>10} {'ours/eigh':>9}")
    for r in rows:
        nv = f"{r['speedup_vs_naive_cold']:10.1f}" if "naive_s" in r else f"{'skipped':>10}"
        print(f"{r['n']:>3} {r['t']:>5} | {r['ours_cold_s']:10.4f} {r['ours_warm_s']:10.4f} "
              f"{r['eigh_s']:9.4f} | {r['speedup_vs_kronecker_cold']:10.0f} {nv} "
              f"{r['ours_cold_over_eigh']:9.2f}")
    write_summary(args.out, {"args": {k: str(v) for k, v in vars(args).items()},
                             "rows": rows}, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
