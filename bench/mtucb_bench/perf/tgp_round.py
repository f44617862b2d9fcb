"""TGP-UCB (and ATA-GP-UCB) per round on ``se-student``: the package vs a plain port.

Paper 001, Algorithm 1 on the synthetic SE / Student-t(3) problem of §6
(``mtucb_bench.heavy_tailed_problems.synthetic_heavy_tailed_problem("se",
"student", seed)``: 100 arms on [0, 1], α = 1, v = B² + 3), authors' constants (λ = 1,
``β_{t+1} = B√λ + b_{t+1} √(ln(t+1))``, ``b_t = v^{1/(1+α)} t^{1/(2(1+α))}``).

Three implementations of the same round, each run over the same ``T`` rounds with the same
reward stream (a generator seeded identically; a round draws one reward at the chosen arm):

* ``plain``: the authors' update written with a few tensors and no model objects (arm-space
  mean and covariance, a Kalman rank-one update per observation, O(A²));
* ``package``: ``TruncatedGP(arms=...)`` + ``HeavyTailedUCB`` + argmax over the arms +
  ``condition_on_observations`` (what ``mtucb_bench.perf.heavy_tailed_timing`` and users' loops do);
* ``package-loop``: the same with ``loop.FiniteArmOptimizer`` (``optimize_acqf_discrete``) and
  ``loop.condition_model``, as ``run_bo_loop`` / the benchmark runner use it;
* ``model-only``: the model's share alone — ``model.beta()``, ``model.mean_and_variance`` over
  the arms, ``μ + β σ``, argmax and ``condition_on_observations``, without an acquisition
  object (the difference to ``package`` is ``HeavyTailedUCB``'s construction and forward).

The script checks that all variants choose the same arms (and that the package's final
posterior equals the plain one), then prints ms per round (best of the repeats) and the ratio
to plain: the **median over repeats of the ratio within one repeat** (the variants of a repeat
run back to back, so they see the same machine load; target ≤ 2), with the range of those
ratios and the 1-minute load average before and after.

ATA-GP-UCB with QFF (32 nodes, ``m = 64``; authors' ``b_t``, ``β_t`` with ``ln(mT)``, horizon
``T``) is measured the same way (``--algorithms ata-qff``; round 1 takes arm 0 in both, where
every arm ties at the prior up to round-off); its plain port is the authors'
update as written: ``V = ΦᵀΦ + λI`` over the ``t`` pulled points, ``V^{-1/2}`` by ``eigh``, the
``m x t`` per-direction truncation and ``θ = V^{-1/2} r̂`` every round (``O(t m²)``), while the
package works in arm space (``O(A m² + m³)``, sorted per-arm rewards).

Usage::

    python -m mtucb_bench.perf.tgp_round            # T in {1000, 20000}, 5 repeats
    python -m mtucb_bench.perf.tgp_round --quick    # T = 1000
    python -m mtucb_bench.perf.tgp_round --algorithms tgp ata-qff --horizons 1000 5000
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.features import QuadratureFourierFeatures
from botorch_mtucb.loop import FiniteArmOptimizer, condition_model
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.heavy_tailed_problems import synthetic_heavy_tailed_problem
from mtucb_bench.perf.provenance import RESULTS, write_summary

__all__ = ["main", "run_package", "run_plain", "run_plain_ata"]

LAM = 1.0
QFF_NODES = 32


def run_plain(problem, T: int, seed: int) -> tuple[list[int], float, tuple]:
    """The authors' TGP-UCB on finite arms with plain tensors.

    Returns:
        ``(arms chosen, seconds, (mean, variance))``.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        arms = problem.arms
        K = problem.kernel()(arms, arms).to_dense()
    alpha, v, B = problem.alpha, problem.v, problem.B
    A = arms.shape[0]
    mean = torch.zeros(A, dtype=K.dtype)
    cov = K.clone()
    chosen = []
    scale = v ** (1.0 / (1.0 + alpha))
    expo = 1.0 / (2.0 * (1.0 + alpha))
    t0 = time.perf_counter()
    for t in range(T):
        b_next = scale * (t + 1) ** expo
        beta = B * math.sqrt(LAM) + b_next * math.sqrt(math.log(t + 1))
        ucb = mean + beta * cov.diagonal().clamp_min(1e-12).sqrt()
        i = int(ucb.argmax())
        y = problem.sample_rewards(torch.tensor([i]), g)[0]
        y_hat = y if abs(float(y)) <= b_next else y.new_zeros(())
        col = cov[:, i].clone()
        c = LAM + col[i]
        mean = mean + col * ((y_hat - mean[i]) / c)
        cov = cov - torch.outer(col, col) / c
        chosen.append(i)
    return chosen, time.perf_counter() - t0, (mean, cov.diagonal())


def run_plain_ata(problem, T: int, seed: int) -> tuple[list[int], float, tuple]:
    """The authors' ATA-GP-UCB (QFF) update with plain tensors, literally (``O(t m²)``)."""
    g = torch.Generator().manual_seed(seed)
    arms = problem.arms
    qff = QuadratureFourierFeatures(problem.qff.lengthscale, QFF_NODES, arms.shape[-1])
    F = qff(arms)  # A x m
    m = F.shape[-1]
    alpha, v, B = problem.alpha, problem.v, problem.B
    L = math.log(m * T)  # authors: ln(mT)
    expo = (1.0 - alpha) / (2.0 * (1.0 + alpha))
    eye = torch.eye(m, dtype=F.dtype)
    pulled, ys = [], []
    mean, var = torch.zeros(A := arms.shape[0], dtype=F.dtype), torch.ones(A, dtype=F.dtype)
    chosen = []
    t0 = time.perf_counter()
    for t in range(T):
        beta = B * math.sqrt(LAM) + math.sqrt(m) * v ** (1 / (1 + alpha)) * L ** (
            alpha / (1 + alpha)) * (t + 1) ** expo
        i = int((mean + beta * var.clamp_min(1e-12).sqrt()).argmax()) if t else 0
        pulled.append(i)
        ys.append(problem.sample_rewards(torch.tensor([i]), g)[0])
        Phi, y = F[pulled], torch.stack(ys)
        e, Q = torch.linalg.eigh(Phi.T @ Phi + LAM * eye)
        Vmh = (Q * e.rsqrt()) @ Q.T
        U = (Vmh @ Phi.T) * y  # m x t
        b = (v / L) ** (1 / (1 + alpha)) * (t + 1) ** expo
        theta = Vmh @ torch.where(U.abs() <= b, U, torch.zeros_like(U)).sum(-1)
        mean = F @ theta
        var = LAM * (F @ (Q * e.rsqrt())).square().sum(-1)
        chosen.append(i)
    return chosen, time.perf_counter() - t0, (mean, var)


def _model(problem, algo: str = "tgp", T: int = 1):
    arms = problem.arms
    X0, Y0 = arms[:0], torch.zeros(0, 1, dtype=arms.dtype)
    kw = dict(lam=LAM, B=problem.B, constants="authors", arms=arms)
    if algo == "ata-qff":
        qff = QuadratureFourierFeatures(problem.qff.lengthscale, QFF_NODES, arms.shape[-1])
        return AdaptiveTruncationGP(X0, Y0, problem.alpha, problem.v, qff, horizon=T, **kw)
    return TruncatedGP(X0, Y0, problem.alpha, problem.v, problem.kernel(), **kw)


def run_package(
    problem, T: int, seed: int, via_loop: bool | str, algo: str = "tgp"
) -> tuple[list[int], float, tuple]:
    """The package's round (see the module docstring); ``via_loop``: ``False`` (package),
    ``True`` (package-loop) or ``"model-only"``."""
    g = torch.Generator().manual_seed(seed)
    arms = problem.arms
    cand = arms.unsqueeze(-2)  # A x 1 x d
    model = _model(problem, algo, T)
    opt = FiniteArmOptimizer(arms) if via_loop is True else None
    chosen = []
    t0 = time.perf_counter()
    for _ in range(T):
        if via_loop == "model-only":
            with torch.no_grad():
                mean, var = model.mean_and_variance(cand)
                i = int((mean + model.beta() * var.clamp_min(1e-12).sqrt()).argmax())
        else:
            acqf = HeavyTailedUCB(model)
        if via_loop == "model-only":
            pass
        elif via_loop:
            x = opt(acqf)
            i = int((arms - x).abs().sum(-1).argmin())
        else:
            with torch.no_grad():
                i = int(acqf(cand).argmax())
        if algo != "tgp" and model.num_observations == 0:
            i = 0  # every arm ties at the prior (σ = ‖φ‖ = 1 up to round-off): take the first
        x = arms[i : i + 1]
        y = problem.sample_rewards(torch.tensor([i]), g).reshape(1, 1)
        if via_loop is True:
            model = condition_model(model, x, y)
        else:
            model = model.condition_on_observations(x, y)
        chosen.append(i)
    elapsed = time.perf_counter() - t0
    with torch.no_grad():
        mean, var = model.mean_and_variance(cand)
    return chosen, elapsed, (mean[:, 0], var[:, 0])


def _load() -> float:
    """The 1-minute load average (``nan`` where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan


def _horizons(args, algo: str) -> tuple[int, ...]:
    if args.horizons:
        return tuple(args.horizons)
    if args.quick:
        return (1000,)
    return (1000, 20_000) if algo == "tgp" else (1000, 5000)  # the ATA port is O(t m²)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="T = 1000 only")
    parser.add_argument("--algorithms", nargs="+", default=["tgp", "ata-qff"],
                        choices=["tgp", "ata-qff"])
    parser.add_argument("--horizons", nargs="+", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5,
                        help="interleaved repeats (median ratio, best-of ms)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path,
                        default=RESULTS / "perf" / "tgp_round.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    problem = synthetic_heavy_tailed_problem("se", "student", args.seed)
    rows = []
    for algo, T in [(a, T) for a in args.algorithms for T in _horizons(args, a)]:
        runs = {"plain": [], "package": [], "package-loop": [], "model-only": []}
        reference = None
        load_before = _load()
        for _ in range(args.repeats):
            for name in runs:  # interleaved, so machine load hits all three alike
                if name == "plain":
                    plain = run_plain if algo == "tgp" else run_plain_ata
                    chosen, sec, moments = plain(problem, T, args.seed)
                else:
                    mode = {"package": False, "package-loop": True}.get(name, name)
                    chosen, sec, moments = run_package(problem, T, args.seed, mode, algo)
                if reference is None:
                    reference = (chosen, moments)
                elif chosen != reference[0]:
                    first = next(j for j, (a, b) in enumerate(
                        zip(chosen, reference[0], strict=True)) if a != b)
                    raise RuntimeError(f"{algo} {name} chose a different arm at round {first + 1}")
                else:
                    err = max(float((a - b).abs().max())
                              for a, b in zip(moments, reference[1], strict=True))
                    if err > 1e-8:
                        raise RuntimeError(f"{algo} {name}: final posterior off by {err:.2e}")
                runs[name].append(sec)
        best = {k: min(v) for k, v in runs.items()}
        ratios = {k: [a / b for a, b in zip(runs[k], runs["plain"], strict=True)]
                  for k in ("package", "package-loop", "model-only")}
        row = {
            "algorithm": algo,
            "T": T,
            "ms_per_round": {k: 1e3 * s / T for k, s in best.items()},
            "ratio_package_over_plain": statistics.median(ratios["package"]),
            "ratio_package_loop_over_plain": statistics.median(ratios["package-loop"]),
            "ratio_model_only_over_plain": statistics.median(ratios["model-only"]),
            "ratio_ranges": {k: [min(v), max(v)] for k, v in ratios.items()},
            "ratio_statistic": "median over repeats of the within-repeat ratio",
            "load_average_1min": [load_before, _load()],
            "same_arms": True,
        }
        rows.append(row)
        ms, rng = row["ms_per_round"], row["ratio_ranges"]
        print(f"{algo:>8} T={T:>6}: plain {ms['plain']:.4f} ms/round | package {ms['package']:.4f} "
              f"({row['ratio_package_over_plain']:.2f}x, {rng['package'][0]:.2f}-"
              f"{rng['package'][1]:.2f}) | package via loop {ms['package-loop']:.4f} "
              f"({row['ratio_package_loop_over_plain']:.2f}x) | model only "
              f"{ms['model-only']:.4f} ({row['ratio_model_only_over_plain']:.2f}x, "
              f"{rng['model-only'][0]:.2f}-{rng['model-only'][1]:.2f}) | load "
              f"{load_before:.1f}->{row['load_average_1min'][1]:.1f} | same arms: yes")
    meta = {
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "threads": 1,
        "repeats": args.repeats,
        "problem": f"se-student seed {args.seed} (A = {problem.arms.shape[0]} arms)",
        "load_average_1min": _load(),
    }
    write_summary(args.out, {"meta": meta, "rows": rows}, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
