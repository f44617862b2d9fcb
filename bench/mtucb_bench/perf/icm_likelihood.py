"""Exact MLL of ICM kernels: ExactMultiTaskGP (eigen identity) vs KroneckerMultiTaskGP vs dense.

For each (n, t): one forward + backward of
``ExactMarginalLogLikelihood(model.likelihood, model)(model(X), Y)`` (what every iteration of
``fit_gpytorch_mll`` costs), on the same data (X uniform in [0, 1]^2, Y standard normal):

* ``ours``: ``ExactMultiTaskGP`` (ICM, RBF kernel with BoTorch's priors, learnable full-rank
  B, learnable η): the closed-form ICM likelihood (``botorch_mtucb.linalg.icm_likelihood``).
* ``old``: the same model under ``use_icm_likelihood(False)``, i.e. GPyTorch's generic path
  (the behaviour before the ICM likelihood; with BoTorch's settings a dense Cholesky).
* ``kronecker``: BoTorch's ``KroneckerMultiTaskGP`` and its own MLL (same data).
* ``dense``: the dense formula by hand: Cholesky of K ⊗ B + ηI (same hyperparameters as
  ours), skipped above ``--dense-max-nt``.
* ``eigh``: one bare ``torch.linalg.eigh`` of the t x t kernel matrix (the floor).

Then a whole ``fit_gpytorch_mll`` of ``ExactMultiTaskGP`` at ``--fit-size`` with the old and
the new path from the same initial hyperparameters. Ratios are against ``ours`` in the same
process. Single-threaded by default.

``--routes-only`` times only the two routes of ``icm_inv_quad_logdet`` (``method="eigh"`` against
``method="cholesky"``, forward + backward with gradients for K, B, η) over ``--route-t`` x
``--route-n``, prints the crossover (smallest t from which Cholesky wins, per n) next to the rule
of ``icm_likelihood_method``, and for ``--bare-t`` (n = 2) compares the Cholesky route with n bare
``torch.linalg.cholesky`` calls of the same size (interleaved, best process CPU time of
``--bare-repeats``) and counts the peak resident memory of one call beyond its inputs, in t x t
float64 buffers (Linux); ``--no-bare-eigh`` skips the eigen route there (minutes at t = 10⁴). The
thread count applies to torch and, through threadpoolctl, to any other BLAS loaded.

Run: ``python -m mtucb_bench.perf.icm_likelihood [--out docs/results/perf/icm_likelihood.json]``
``python -m mtucb_bench.perf.icm_likelihood --routes-only [--bare-t 3000 5000]``
"""

from __future__ import annotations

import argparse
import json
import math
import time
from functools import partial
from pathlib import Path

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import KroneckerMultiTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from threadpoolctl import threadpool_limits

from botorch_mtucb.linalg import icm_inv_quad_logdet, icm_likelihood_method, use_icm_likelihood
from botorch_mtucb.models import ExactMultiTaskGP
from mtucb_bench.measure import best_time
from mtucb_bench.perf.provenance import RESULTS, write_summary

DT = torch.float64
LOG_2PI = math.log(2 * math.pi)


def make_data(n: int, t: int, d: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(t, d, generator=g, dtype=DT), torch.randn(t, n, generator=g, dtype=DT)


def our_model(X, Y) -> ExactMultiTaskGP:
    model = ExactMultiTaskGP(X, Y, learn_noise=True)
    with torch.no_grad():  # a non-trivial B
        F = model.covar_module.covar_factor
        F.copy_(torch.randn(F.shape, generator=torch.Generator().manual_seed(1), dtype=DT))
    return model


def mll_step(model, enabled: bool = True) -> float:
    """One MLL forward + backward; returns the MLL value."""
    model.train()
    model.zero_grad()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with use_icm_likelihood(enabled):
        value = mll(model(*model.train_inputs), model.train_targets)
        value.backward()
    return value.item()


def dense_step(model) -> float:
    """The dense formula with the model's hyperparameters: log N(vec Y; 0, K ⊗ B + ηI) + priors."""
    model.zero_grad()
    k, B = model.covar_module.icm_components()
    X = model.transform_inputs(model.train_inputs[0])
    Y = model.train_targets
    S = torch.kron(k(X).to_dense(), B)
    S = S + model.likelihood.noise * torch.eye(S.shape[-1], dtype=DT)
    L = torch.linalg.cholesky(S)
    y = Y.reshape(-1, 1)
    a = torch.linalg.solve_triangular(L, y, upper=False)
    logp = -0.5 * (a.square().sum() + 2 * L.diagonal().log().sum() + y.numel() * LOG_2PI)
    for _, module, prior, closure, _ in model.named_priors():  # as ExactMarginalLogLikelihood
        logp = logp + prior.log_prob(closure(module)).sum()
    value = logp / y.numel()
    value.backward()
    return value.item()


def route_inputs(n: int, t: int, seed: int = 0):
    """An RBF ``K`` (t x t), a full-rank ``B`` (n x n), η and a residual, all float64."""
    X, Y = make_data(n, t, seed=seed)
    K = torch.exp(-0.5 * torch.cdist(X, X).square() / 0.2**2)
    F = torch.randn(n, n, generator=torch.Generator().manual_seed(seed + 1), dtype=DT)
    B = F @ F.T / n + 0.1 * torch.eye(n, dtype=DT)
    return K, B, torch.tensor(0.05, dtype=DT), Y.reshape(-1)


def route_step(K, B, eta, r, method: str) -> None:
    """One forward + backward of the ICM likelihood by ``method`` (grads for K, B, η)."""
    K, B, eta = (x.detach().requires_grad_(True) for x in (K, B, eta))
    quad, logdet = icm_inv_quad_logdet(K, B, eta, r, check_eta=False, method=method)
    (quad + logdet).backward()


def route_time(inputs, method: str, repeats: int) -> float:
    """Best time of :func:`route_step` after one warm-up call."""
    route_step(*inputs, method)
    return best_time(partial(route_step, *inputs, method), repeats)


def cpu_time(fn) -> float:
    """Process CPU time of one call of ``fn`` (robust to other processes on a shared machine;
    equal to the wall time of a single-threaded call on an idle one)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_buffers(K, B, eta, r, method: str = "cholesky") -> float:
    """Peak extra resident memory of one forward + backward by ``method``, in t x t float64s.

    Linux only: resets the high-water mark (``/proc/self/clear_refs``) and reads ``VmHWM``
    against ``VmRSS`` before the call; large buffers are mmapped and returned to the system
    when freed, so this counts every live buffer of the call (LAPACK workspace included; the
    inputs, already resident, not).
    """
    K, B, eta = (x.detach().requires_grad_(True) for x in (K, B, eta))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = _status_kib("VmRSS")
    quad, logdet = icm_inv_quad_logdet(K, B, eta, r, check_eta=False, method=method)
    (quad + logdet).backward()
    del quad, logdet
    return (_status_kib("VmHWM") - base) * 1024 / (K.shape[-1] ** 2 * 8)


def routes(args) -> dict:
    """eigh vs Cholesky route times, the measured crossover and the bare-Cholesky ratio."""
    rows, crossover = [], {}
    print(f"ICM likelihood forward+backward (s), {args.threads} thread(s)")
    print(f"{'n':>3} {'t':>5} | {'eigh':>8} {'cholesky':>8} {'chol/eigh':>9} | rule")
    for n in args.route_n:
        for t in args.route_t:
            K, B, eta, r = route_inputs(n, t)
            reps = args.repeats if t <= 300 else 2 if t <= 1000 else 1
            row = {"n": n, "t": t}
            for method in ("eigh", "cholesky"):
                row[f"{method}_s"] = route_time((K, B, eta, r), method, reps)
            row["chol_over_eigh"] = row["cholesky_s"] / row["eigh_s"]
            row["rule"] = icm_likelihood_method(n, t)
            if n not in crossover and row["chol_over_eigh"] < 1.0:
                crossover[n] = t
            rows.append(row)
            print(f"{n:>3} {t:>5} | {row['eigh_s']:8.4f} {row['cholesky_s']:8.4f} "
                  f"{row['chol_over_eigh']:9.2f} | {row['rule']}", flush=True)
    print("measured crossover (smallest t where Cholesky wins): "
          + ", ".join(f"n={n}: {crossover.get(n, 'none')}" for n in args.route_n))
    bare = []
    for t in args.bare_t:
        n = 2
        K, B, eta, r = route_inputs(n, t)
        S = 0.7 * K + 0.05 * torch.eye(t, dtype=DT)
        row = {"n": n, "t": t}
        route_step(K, B, eta, r, "cholesky")  # warm-up
        for _ in range(args.bare_repeats):  # interleaved, best process CPU time of each
            times = {"route_s": cpu_time(partial(route_step, K, B, eta, r, "cholesky")),
                     "bare_s": n * cpu_time(partial(torch.linalg.cholesky, S))}
            for key, value in times.items():
                row[key] = min(row.get(key, math.inf), value)
        row["route_over_bare"] = row["route_s"] / row["bare_s"]
        row["peak_txt_buffers"] = peak_buffers(K, B, eta, r)
        eigh = ""
        if args.bare_eigh:
            row["eigh_route_s"] = cpu_time(partial(route_step, K, B, eta, r, "eigh"))
            row["peak_txt_buffers_eigh"] = peak_buffers(K, B, eta, r, "eigh")
            eigh = (f"; eigh route {row['eigh_route_s']:.2f} s, peak "
                    f"{row['peak_txt_buffers_eigh']:.2f} t x t")
        bare.append(row)
        print(f"n=2 t={t}: Cholesky route {row['route_s']:.3f} s, {n} bare Choleskys "
              f"{row['bare_s']:.3f} s, ratio {row['route_over_bare']:.2f}; peak extra memory "
              f"{row['peak_txt_buffers']:.2f} t x t buffers beyond K, which the caller holds"
              f"{eigh}", flush=True)
    return {"rows": rows, "crossover": crossover, "bare": bare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["2,100", "9,100", "20,100", "20,500"],
                        help="(n,t) pairs as n,t")
    parser.add_argument("--dense-max-nt", type=int, default=4000,
                        help="skip the dense formula and the old path above this n·t")
    parser.add_argument("--kron-max-nt", type=int, default=10000,
                        help="skip KroneckerMultiTaskGP above this n·t")
    parser.add_argument("--fit-size", default="9,100", help="n,t of the whole-fit comparison")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "perf" / "icm_likelihood.json")
    parser.add_argument("--routes-only", action="store_true",
                        help="only the eigh-vs-Cholesky route comparison")
    parser.add_argument("--route-t", type=int, nargs="+", default=[20, 50, 100, 300, 1000, 2000])
    parser.add_argument("--route-n", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--bare-t", type=int, nargs="*", default=[],
                        help="t of the n = 2 comparison with bare Choleskys (e.g. 3000 5000)")
    parser.add_argument("--bare-repeats", type=int, default=2,
                        help="interleaved repeats of the bare-Cholesky comparison")
    parser.add_argument("--bare-eigh", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the eigen route in the bare-Cholesky comparison")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with threadpool_limits(limits=args.threads):  # SciPy's BLAS (the LAPACK blocks) too
        run(args)


def run(args) -> None:
    route_summary = routes(args)
    if args.routes_only:
        write_summary(args.out, {"args": {k: str(v) for k, v in vars(args).items()},
                                 "routes": route_summary}, indent=2)
        print(f"\nwrote {args.out}")
        return
    rows = []
    for sz in args.sizes:
        n, t = (int(v) for v in sz.split(","))
        X, Y = make_data(n, t)
        nt = n * t
        row = {"n": n, "t": t, "nt": nt}
        model = our_model(X, Y)
        row["mll_ours"] = mll_step(model)
        row["ours_s"] = best_time(lambda m=model: mll_step(m), args.repeats)
        K = model.covar_module.data_covar_module(model.train_inputs[0]).to_dense().detach()
        row["eigh_s"] = best_time(lambda K=K: torch.linalg.eigh(K), args.repeats)
        if nt <= args.dense_max_nt:
            row["mll_old"] = mll_step(model, enabled=False)
            row["old_s"] = best_time(lambda m=model: mll_step(m, False), 2)
            row["mll_dense"] = dense_step(model)
            row["dense_s"] = best_time(lambda m=model: dense_step(m), 2)
            row["abs_diff_ours_vs_dense"] = abs(row["mll_ours"] - row["mll_dense"])
            row["old_over_ours"] = row["old_s"] / row["ours_s"]
            row["dense_over_ours"] = row["dense_s"] / row["ours_s"]
        if nt <= args.kron_max_nt:
            kr = KroneckerMultiTaskGP(X, Y)
            mll_step(kr)
            row["kronecker_s"] = best_time(lambda m=kr: mll_step(m), 1 if nt > 4000 else 2)
            row["kronecker_over_ours"] = row["kronecker_s"] / row["ours_s"]
        row["ours_over_eigh"] = row["ours_s"] / row["eigh_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)

    n, t = (int(v) for v in args.fit_size.split(","))
    X, Y = make_data(n, t, seed=2)
    fit = {"n": n, "t": t}
    for name, enabled in (("new", True), ("old", False)):
        model = our_model(X, Y)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with use_icm_likelihood(enabled):
            t0 = time.perf_counter()
            fit_gpytorch_mll(mll)
            fit[f"{name}_s"] = time.perf_counter() - t0
            fit[f"{name}_mll"] = mll_step(model, enabled)
        fit[f"{name}_noise"] = model.noise.item()
    fit["old_over_new"] = fit["old_s"] / fit["new_s"]
    print(json.dumps(fit), flush=True)

    print(f"\nMLL forward+backward (s), {args.threads} thread(s); ratios against ours")
    print(f"{'n':>3} {'t':>4} | {'ours':>8} {'eigh':>8} {'old':>8} {'dense':>8} {'Kron':>8} | "
          f"{'old/ours':>8} {'dense/ours':>10} {'Kron/ours':>9} {'ours/eigh':>9}")

    def fmt(r, key, spec):
        return format(r[key], spec) if key in r else f"{'skip':>{spec.split('.')[0]}}"

    for r in rows:
        print(f"{r['n']:>3} {r['t']:>4} | {r['ours_s']:8.4f} {r['eigh_s']:8.4f} "
              f"{fmt(r, 'old_s', '8.4f')} {fmt(r, 'dense_s', '8.4f')} "
              f"{fmt(r, 'kronecker_s', '8.3f')} | {fmt(r, 'old_over_ours', '8.0f')} "
              f"{fmt(r, 'dense_over_ours', '10.0f')} {fmt(r, 'kronecker_over_ours', '9.0f')} "
              f"{r['ours_over_eigh']:9.1f}")
    print(f"\nfit_gpytorch_mll at n = {fit['n']}, t = {fit['t']}: old {fit['old_s']:.2f} s, "
          f"new {fit['new_s']:.2f} s ({fit['old_over_new']:.0f}x); final MLL old "
          f"{fit['old_mll']:.6f}, new {fit['new_mll']:.6f}")
    write_summary(args.out, {"args": {k: str(v) for k, v in vars(args).items()},
                             "rows": rows, "fit": fit, "routes": route_summary}, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
