"""Wall/CPU time of full heavy-tailed BO runs: TGP-UCB, ATA-GP-UCB-QFF, ATA-GP-UCB-Nyström.

Paper 001, §6 synthetic problem: 100 arms on [0.01, 1], f = Σ_{i≤100} a_i k(·, x_i) with an SE
kernel (l = 0.2), a_i ~ U[-1, 1], x_i ~ U[0, 1], normalised by max|f|; Student-t(3) rewards
(α = 1, v = B² + 3); λ = 1, ε = 0.1, QFF with 32 nodes; authors' public-code constants.

Each run is the whole loop: HeavyTailedUCB over all arms → argmax → reward →
``model.condition_on_observations``. Anchors measured in the same process:

* ``naive-tgp``: TGP-UCB rebuilding the t x t GP (Cholesky from scratch) every round;
* ``*-dense``: the package's own models without the finite-arm fast path (block-Cholesky
  update for TGP, the t x m feature-space formulas for ATA).

The paper's protocol (20 trials x 2·10⁴ rounds x 3 algorithms) is extrapolated from the
measured T = 2·10⁴ runs, one trial per core on 2 cores; ``--protocol-trials N`` runs N trials
of each algorithm at T = 2·10⁴ in 2 worker processes and measures it.

Usage::

    python -m mtucb_bench.perf.heavy_tailed_timing            # T in {1e3, 1e4, 2e4} + anchors
    python -m mtucb_bench.perf.heavy_tailed_timing --quick    # T in {200, 1000}
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import platform
import time
from pathlib import Path

import torch
from gpytorch.kernels import RBFKernel
from tqdm import tqdm

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.heavy_tailed_problems import (
    authors_code_synthetic,
    sample_student_t,
)
from mtucb_bench.perf.provenance import RESULTS, write_summary

__all__ = ["main", "run_trial", "synthetic_problem"]

DT = torch.float64
ALGORITHMS = ("tgp", "ata-qff", "ata-nystrom")


#: Arms (``A x 1``), f (``A``), generator; as in the authors' ``main_synthetic.m``.
synthetic_problem = authors_code_synthetic


def _rbf(lengthscale: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def _make_model(algo: str, arms: torch.Tensor, T: int, g: torch.Generator, fast: bool):
    X0, Y0 = arms[:0], torch.zeros(0, 1, dtype=DT)
    kw = dict(lam=1.0, B=1.0, constants="authors", arms=arms if fast else None)
    v = 1.0 + 3.0
    if algo == "tgp":
        return TruncatedGP(X0, Y0, 1.0, v, _rbf(), **kw)
    if algo == "ata-qff":
        return AdaptiveTruncationGP(X0, Y0, 1.0, v, QuadratureFourierFeatures(0.2, 32, 1),
                                    horizon=T, **kw)
    if algo == "ata-nystrom":
        feats = NystromFeatures(_rbf(), epsilon=0.1, generator=g)
        return AdaptiveTruncationGP(X0, Y0, 1.0, v, feats, horizon=T, **kw)
    raise ValueError(f"unknown algorithm {algo!r}")


def _naive_tgp_round(X: torch.Tensor, y_hat: torch.Tensor, arms: torch.Tensor, beta: float):
    """GP-UCB score from scratch on t observations: O(t³) per round."""
    k = _NAIVE_KERNEL
    with torch.no_grad():
        K = k(X, X).to_dense() + torch.eye(X.shape[0], dtype=DT)
        L = torch.linalg.cholesky(K)
        k_a = k(arms, X).to_dense()
        mean = k_a @ torch.cholesky_solve(y_hat.unsqueeze(-1), L).squeeze(-1)
        V = torch.linalg.solve_triangular(L, k_a.T, upper=False)
        var = 1.0 - V.square().sum(0)
    return mean + beta * var.clamp_min(1e-12).sqrt()


_NAIVE_KERNEL = _rbf()


def run_trial(algo: str, T: int, seed: int, fast: bool = True, progress: bool = False) -> dict:
    """One full run; returns wall and CPU seconds and the time-average regret."""
    torch.set_num_threads(1)
    arms, f, g = synthetic_problem(seed)
    noise = sample_student_t((T,), 3, g)
    f_max = float(f.max())
    cand = arms.unsqueeze(-2)
    regret = 0.0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if algo == "naive-tgp":
        X, y_hat = arms[:0], torch.zeros(0, dtype=DT)
        scores = torch.zeros(arms.shape[0], dtype=DT)
    else:
        model = _make_model(algo, arms, T, g, fast)
    rounds = tqdm(range(T), desc=f"{algo}{'' if fast else '-dense'} T={T}", leave=False,
                  disable=not progress, mininterval=1.0)
    for t in rounds:
        if algo == "naive-tgp":
            b_next = 2.0 * (t + 1) ** 0.25  # √v t^{1/4}, authors' β = B + b √(ln t)
            if t:
                scores = _naive_tgp_round(X, y_hat, arms, 1.0 + b_next * math.sqrt(math.log(t + 1)))
            i = int(scores.argmax())
            y = float(f[i] + noise[t])
            X = torch.cat([X, arms[i : i + 1]])
            y_hat = torch.cat([y_hat, torch.tensor([y if abs(y) <= b_next else 0.0], dtype=DT)])
        else:
            with torch.no_grad():
                i = int(HeavyTailedUCB(model)(cand).argmax())
            model = model.condition_on_observations(
                arms[i : i + 1], (f[i] + noise[t]).reshape(1, 1)
            )
        regret += f_max - float(f[i])
    return {
        "algorithm": algo if fast else f"{algo}-dense",
        "T": T,
        "seed": seed,
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "time_average_regret": regret / T,
    }


def _protocol_worker(args: tuple[str, int, int]) -> dict:
    algo, T, seed = args
    return run_trial(algo, T, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="T in {200, 1000} only")
    parser.add_argument("--anchor-T", type=int, default=1000, help="horizon of the anchors")
    parser.add_argument("--protocol-trials", type=int, default=0,
                        help="also run N trials per algorithm at T=2e4 on 2 processes")
    parser.add_argument("--out", type=Path,
                        default=RESULTS / "perf" / "heavy_tailed_timing.json")
    args = parser.parse_args()
    horizons = (200, 1000) if args.quick else (1000, 10_000, 20_000)
    anchor_T = min(args.anchor_T, max(horizons))

    jobs = [(a, T, True) for T in horizons for a in ALGORITHMS]
    if anchor_T not in horizons:
        jobs += [(a, anchor_T, True) for a in ALGORITHMS]
    jobs += [("naive-tgp", anchor_T, True)] + [(a, anchor_T, False) for a in ALGORITHMS]
    results = []
    for algo, T, fast in tqdm(jobs, desc="runs"):
        results.append(run_trial(algo, T, seed=0, fast=fast, progress=True))

    def per_round_ms(name: str, T: int) -> float:
        r = next(r for r in results if r["algorithm"] == name and r["T"] == T)
        return 1e3 * r["cpu_s"] / T

    print(f"\nCPU ms per round (single thread), seed 0; anchors at T = {anchor_T}")
    header = f"{'algorithm':<16}" + "".join(f"{'T=' + str(T):>12}" for T in horizons)
    print(header + f"{'regret@Tmax':>14}")
    for a in ALGORITHMS:
        row = f"{a:<16}" + "".join(f"{per_round_ms(a, T):>12.3f}" for T in horizons)
        reg = next(r for r in results if r["algorithm"] == a and r["T"] == max(horizons))
        print(row + f"{reg['time_average_regret']:>14.3f}")
    print()
    naive = per_round_ms("naive-tgp", anchor_T)
    summary = {"anchor_T": anchor_T, "speedup_vs_anchor": {}}
    for a in ALGORITHMS:
        dense = per_round_ms(f"{a}-dense", anchor_T)
        fast = per_round_ms(a, anchor_T)
        summary["speedup_vs_anchor"][a] = {
            "vs_naive_tgp": naive / fast,
            "vs_own_dense": dense / fast,
        }
        print(f"{a:<16} T={anchor_T}: fast {fast:.3f} ms/round | dense path {dense:.3f} "
              f"({dense / fast:.1f}x) | naive TGP rebuild {naive:.3f} ({naive / fast:.1f}x)")

    T_max = max(horizons)
    cpu_max = {a: next(r["cpu_s"] for r in results if r["algorithm"] == a and r["T"] == T_max)
               for a in ALGORITHMS}
    trials = 20
    extrap = trials * sum(cpu_max.values()) / 2 * (20_000 / T_max)
    summary["protocol_extrapolated_min"] = extrap / 60
    print(f"\nPaper protocol (20 trials x 2e4 rounds x 3 algorithms) on 2 cores, extrapolated "
          f"from seed-0 runs at T={T_max}: {extrap / 60:.1f} min (target < 30 min)")

    if args.protocol_trials:
        work = [(a, 20_000, s) for s in range(args.protocol_trials) for a in ALGORITHMS]
        wall0 = time.perf_counter()
        with mp.get_context("spawn").Pool(2) as pool:
            proto = list(tqdm(pool.imap_unordered(_protocol_worker, work), total=len(work),
                              desc="protocol"))
        wall = time.perf_counter() - wall0
        results += proto
        summary["protocol_measured"] = {
            "trials_per_algorithm": args.protocol_trials,
            "wall_s": wall,
            "scaled_to_20_trials_min": wall * 20 / args.protocol_trials / 60,
        }
        print(f"Measured: {args.protocol_trials} trials x 3 algorithms x 2e4 rounds on 2 "
              f"processes in {wall / 60:.1f} min -> 20 trials: "
              f"{wall * 20 / args.protocol_trials / 60:.1f} min")

    meta = {
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "threads_per_run": 1,
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    write_summary(args.out, {"meta": meta, "summary": summary, "runs": results}, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
