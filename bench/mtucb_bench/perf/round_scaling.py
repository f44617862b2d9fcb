"""The fitted round and its memory from N = 20 to 10,000 observations, against BoTorch.

One round, from N noisy observations to the next point, for each method, on DTLZ2
(``botorch.test_functions.multi_objective.DTLZ2``, d = 6, n objectives, negated for
maximisation) at N scrambled-Sobol points with Gaussian noise of 1 % of each objective's range
over those points:

* ``MT-UCB``: what :func:`~botorch_mtucb.loop.run_bo_loop` does in its first round with its
  defaults: the loop's model factory (:func:`~botorch_mtucb.loop.defaults.practical_model_factory`,
  a cold fit on its first call; whatever model class the factory picks at that N is recorded),
  the default sampler (scale-free augmented Chebyshev, reference point and ranges from the data
  and the model's payoff table, ``predicted_anchors`` included), the default acquisition
  (:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`, directional bound) and
  ``optimize_acqf`` (q = 1); the seeds follow ``run_bo_loop(..., generator=Generator().
  manual_seed(seed))`` exactly (the smoke test checks that the point is the loop's).
* ``qLogNParEGO``: BoTorch's recipe: a ``ModelListGP`` of n ``SingleTaskGP`` (``Normalize`` on
  the box, ``Standardize``), ``fit_gpytorch_mll(SumMarginalLogLikelihood)``, ``qLogNParEGO``
  with weights ``sample_simplex(n)``, X_baseline = the data, ``prune_baseline=True`` and a
  Sobol QMC sampler of ``--mc-samples``; the anchor of the ratios. GPyTorch's settings are
  left at their defaults (Cholesky up to 800 training points, CG / Lanczos above), as a
  BoTorch user gets them.
* ``qLogNEHVI``: the same model with ``qLogNoisyExpectedHypervolumeImprovement`` at DTLZ2's
  reference point, under its own cap ``--nehvi-cap`` (60 s).

All three maximise with ``optimize_acqf(q=1, num_restarts=4, raw_samples=256)`` (seeded).

**Time.** Per (N, n) cell, the methods run in one process, interleaved rep by rep (the order
rotates: ABC, BCA, CAB, ...), each rep a new seed shared by the methods; reported: the medians
of process CPU time (``time.process_time``: what the round costs when the machine is shared)
and wall time, their ratio to qLogNParEGO's in the same cell, and the median of the per-rep
CPU ratios. The number of reps is ``--reps`` (1 from ``--single-rep-n`` = 3000 on), cut to what
fits in ``--cell-budget`` seconds after the first rep. A rep that passes its method's cap
(``--cap-seconds``; ``--nehvi-cap`` for qLogNEHVI) is stopped (``SIGALRM``) and recorded as
``"timeout > cap"``; the method then skips every cell with N and n at least as large. One
untimed warm-up round per method comes first (lazy imports, first-call caches).

**Memory.** Per (method, N, n), one spawned child process: imports, a warm-up round at N = 12,
the cell's data, then the peak RSS reset (``/proc/self/clear_refs``, Linux) and the baseline
peak RSS (``VmHWM``; ``getrusage(RUSAGE_SELF).ru_maxrss`` where there is no ``/proc``: after
``exec`` it keeps the parent's size as a floor); the round; the peak minus the baseline in MB,
and that peak in N x N float64 buffers (peak / 8N² bytes). Skipped for a method whose timing
timed out in the cell, and with ``--skip-memory``.

Run from the repository root (the full grid takes hours; progress is printed per cell and the
JSON rewritten after each)::

    python -m mtucb_bench.perf.round_scaling                       # the full grid
    python -m mtucb_bench.perf.round_scaling --sizes 20 100 300 --tasks 2 --reps 3

Output: ``docs/results/round_scaling.json`` (provenance: commit, date, load, threads, settings)
and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import multiprocessing as mp
import os
import resource
import signal
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.fit import fit_gpytorch_mll
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from botorch.test_functions.multi_objective import DTLZ2
from botorch.utils.sampling import sample_simplex
from gpytorch.mlls import SumMarginalLogLikelihood
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.loop.defaults import (
    default_sampler,
    draw_seed,
    practical_model_factory,
    scalarized_ucb_factory,
)
from botorch_mtucb.loop.rounds import LoopState, Proposer
from botorch_mtucb.loop.seeding import seeded_phases
from mtucb_bench.perf.provenance import RESULTS, write_summary

DT = torch.float64
D = 6
MTUCB, PAREGO, NEHVI = "MT-UCB", "qLogNParEGO", "qLogNEHVI"
METHODS = (MTUCB, PAREGO, NEHVI)
ANCHOR = PAREGO
SIZES = (20, 100, 300, 1000, 3000, 10000)
TASKS = (2, 4)
OUT = RESULTS / "round_scaling.json"
WARMUP_N = 12


@dataclass(frozen=True)
class Settings:
    """The acquisition maximisation shared by every method, and the baselines' MC samples."""

    num_restarts: int = 4
    raw_samples: int = 256
    mc_samples: int = 128


@dataclass(frozen=True)
class Data:
    """One cell's data: ``N x 6`` inputs, ``N x n`` noisy DTLZ2 values, the box, the
    reference point of the hypervolume."""

    X: Tensor
    Y: Tensor
    bounds: Tensor
    ref_point: Tensor


def make_data(N: int, n: int, seed: int = 0) -> Data:
    """DTLZ2 (d = 6, n objectives, negated) at ``N`` scrambled-Sobol points, with Gaussian
    noise of standard deviation 1 % of each objective's range over the points."""
    problem = DTLZ2(dim=D, num_objectives=n, negate=True)
    bounds = problem.bounds.to(DT)
    X = bounds[0] + (bounds[1] - bounds[0]) * SobolEngine(D, scramble=True, seed=seed).draw(
        N, dtype=DT)
    F = problem.evaluate_true(X) * -1.0  # negated: maximise
    g = torch.Generator().manual_seed(seed + 1)
    noise_sd = 0.01 * (F.max(0).values - F.min(0).values)
    Y = F + noise_sd * torch.randn(F.shape, generator=g, dtype=DT)
    return Data(X, Y, bounds, problem.ref_point.to(DT))


# ----------------------------------------------------------------------------- rounds
def mtucb_round(data: Data, seed: int, settings: Settings) -> dict[str, Any]:
    """The first round of ``run_bo_loop(observe, initial_X=X, num_rounds=1, bounds=bounds,
    generator=torch.Generator().manual_seed(seed), acquisition_factory=scalarized_ucb_factory(),
    scalarization_sampler=default_sampler(n))``: the default model factory's cold fit, the
    round's scalarization (payoff table included) and the maximisation of the scalarized UCB
    (``settings``'s restarts and raw samples; the loop's default acquisition for n ≤ 4 is the
    hypervolume UCB, which this round does not time). Returns the point and the model's class."""
    X, Y, bounds = data.X, data.Y, data.bounds
    generator = torch.Generator().manual_seed(seed)
    base = draw_seed(generator)  # run_bo_loop's seed (and the base of its global-RNG seeds)
    factory = practical_model_factory(bounds)
    optimizer = BoxOptimizer(bounds, num_restarts=settings.num_restarts,
                             raw_samples=settings.raw_samples, seed=base + 1)
    proposer = Proposer(scalarized_ucb_factory(), optimizer, default_sampler(Y.shape[-1]),
                        generator, bounds, base)
    with seeded_phases(base) as seed_phase:
        seed_phase(0)
        model = factory(X, Y)
        seed_phase(1)
        (proposal,) = proposer.propose(LoopState(X=X, Y=Y, model=model, N_fit=X.shape[0]),
                                       t=1, q=1)
    return {"x": proposal.x, "model": type(model).__name__}


def model_list(data: Data) -> ModelListGP:
    """BoTorch's recipe: n ``SingleTaskGP`` (``Normalize``, ``Standardize``) fitted with
    ``SumMarginalLogLikelihood``."""
    X, Y, bounds = data.X, data.Y, data.bounds
    model = ModelListGP(*[
        SingleTaskGP(X, Y[:, i : i + 1], input_transform=Normalize(X.shape[-1], bounds=bounds),
                     outcome_transform=Standardize(m=1))
        for i in range(Y.shape[-1])
    ])
    fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
    return model


def botorch_round(data: Data, seed: int, settings: Settings, method: str) -> dict[str, Any]:
    """One qLogNParEGO or qLogNEHVI round (``method``): fit the model list, build the
    acquisition, maximise it."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = model_list(data)
        sampler = SobolQMCNormalSampler(torch.Size([settings.mc_samples]), seed=seed)
        if method == PAREGO:
            weights = sample_simplex(data.Y.shape[-1], seed=seed, dtype=DT).squeeze(0)
            acqf = qLogNParEGO(model, X_baseline=data.X, scalarization_weights=weights,
                               sampler=sampler, prune_baseline=True)
        else:
            acqf = qLogNoisyExpectedHypervolumeImprovement(
                model, ref_point=data.ref_point.tolist(), X_baseline=data.X, sampler=sampler,
                prune_baseline=True)
        x, _ = optimize_acqf(acqf, bounds=data.bounds, q=1, num_restarts=settings.num_restarts,
                             raw_samples=settings.raw_samples, options={"seed": seed})
    return {"x": x.detach(), "model": type(model).__name__}


def run_round(method: str, data: Data, seed: int, settings: Settings) -> dict[str, Any]:
    """One round of ``method`` (one of :data:`METHODS`)."""
    if method == MTUCB:
        return mtucb_round(data, seed, settings)
    if method in (PAREGO, NEHVI):
        return botorch_round(data, seed, settings, method)
    raise ValueError(f"Unknown method {method!r}; choose from {METHODS}.")


# ----------------------------------------------------------------------------- timing
class CapExceeded(BaseException):
    """Raised by the alarm when a rep passes its cap (a ``BaseException``, so that no
    ``except Exception`` of the fit or the optimizer swallows it)."""


@contextlib.contextmanager
def time_cap(seconds: float) -> Iterator[None]:
    """Raise :class:`CapExceeded` in the block after ``seconds`` of wall time (``SIGALRM``;
    in the main thread of a POSIX process only, elsewhere the block runs to its end)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or not math.isfinite(seconds):
        yield
        return

    def _raise(signum, frame):
        raise CapExceeded

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed_round(method: str, data: Data, seed: int, settings: Settings,
                cap: float) -> dict[str, Any]:
    """One timed round: ``{"cpu_s", "wall_s", "model", "timeout"}`` (``timeout``: the rep
    passed ``cap`` seconds, of wall or CPU time; stopped there when the alarm could fire)."""
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    info: dict[str, Any] = {}
    try:
        with time_cap(cap):
            info = run_round(method, data, seed, settings)
    except CapExceeded:
        pass
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {"cpu_s": cpu, "wall_s": wall, "model": info.get("model"),
            "timeout": not info or max(cpu, wall) > cap}


# ----------------------------------------------------------------------------- memory
def peak_rss_bytes() -> int:
    """This process's peak resident memory in bytes: ``VmHWM`` of ``/proc/self/status``
    (Linux; :func:`reset_peak_rss` resets it), else ``getrusage(RUSAGE_SELF).ru_maxrss``.

    ``ru_maxrss`` alone does not do for a spawned child: after ``exec`` it is at least the
    parent's resident size at the fork, so a child smaller than its parent reads a flat peak.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS (Linux ≥ 4.0); whether
    it worked."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def memory_child(method: str, N: int, n: int, seed: int, settings: dict, threads: int,
                 conn) -> None:
    """Child process of :func:`measure_memory`: sends the round's peak memory above the
    baseline (after imports, a warm-up round and the data) through ``conn``."""
    torch.set_num_threads(threads)
    warnings.simplefilter("ignore")
    s = Settings(**settings)
    run_round(method, make_data(min(WARMUP_N, N), n, seed), seed, s)
    data = make_data(N, n, seed)
    gc.collect()
    reset = reset_peak_rss()
    base = peak_rss_bytes()
    t0 = time.perf_counter()
    info = run_round(method, data, seed, s)
    peak = peak_rss_bytes() - base
    conn.send({"peak_mb": peak / 2**20, "nxn_buffers": peak / (8.0 * N * N),
               "baseline_mb": base / 2**20, "peak_reset": reset,
               "round_wall_s": time.perf_counter() - t0, "model": info["model"],
               "status": "ok"})
    conn.close()


def measure_memory(method: str, N: int, n: int, seed: int, settings: Settings, threads: int,
                   timeout: float) -> dict[str, Any]:
    """Peak memory of one round of ``method`` on a cell, in a spawned child (killed after
    ``timeout`` seconds)."""
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=memory_child,
                        args=(method, N, n, seed, asdict(settings), threads, send))
    child.start()
    send.close()
    result: dict[str, Any]
    if receive.poll(timeout):
        try:
            result = receive.recv()
        except EOFError:
            child.join(5)
            result = {"status": f"child failed (exit code {child.exitcode})"}
    else:
        result = {"status": f"timeout > {timeout:.0f} s"}
    if child.is_alive():
        child.terminate()
    child.join()
    return result


# ----------------------------------------------------------------------------- cells
def _rotated(methods: list[str], r: int) -> list[str]:
    k = r % len(methods)
    return methods[k:] + methods[:k]


def _blocked(timeouts: list[tuple[int, int]], N: int, n: int) -> tuple[int, int] | None:
    """The timed-out cell that rules out (N, n) (one with N' ≤ N and n' ≤ n), if any."""
    return next(((Nt, nt) for Nt, nt in timeouts if Nt <= N and nt <= n), None)


def _summarize_method(reps: list[dict], cap: float) -> dict[str, Any]:
    cpu = [r["cpu_s"] for r in reps if not r["timeout"]]
    wall = [r["wall_s"] for r in reps if not r["timeout"]]
    out: dict[str, Any] = {"cpu_s": [r["cpu_s"] for r in reps],
                           "wall_s": [r["wall_s"] for r in reps],
                           "model": next((r["model"] for r in reps if r["model"]), None)}
    if any(r["timeout"] for r in reps):
        out["status"] = f"timeout > {cap:g} s"
    else:
        out.update(status="ok", median_cpu_s=statistics.median(cpu),
                   median_wall_s=statistics.median(wall))
    return out


def _ratios(methods: dict[str, dict], reps: dict[str, list[dict]]) -> dict[str, Any]:
    """Each method's median CPU and wall time over the anchor's, and the median of the
    per-rep CPU ratios (the reps where both ran)."""
    anchor = methods.get(ANCHOR, {})
    if anchor.get("status") != "ok":
        return {}
    out = {}
    for m, s in methods.items():
        if m == ANCHOR or s.get("status") != "ok":
            continue
        paired = [a["cpu_s"] / b["cpu_s"] for a, b in zip(reps[m], reps[ANCHOR], strict=False)]
        out[m] = {"cpu": s["median_cpu_s"] / anchor["median_cpu_s"],
                  "wall": s["median_wall_s"] / anchor["median_wall_s"],
                  "paired_cpu_median": statistics.median(paired)}
    return out


def run_cell(N: int, n: int, methods: list[str], caps: dict[str, float], args,
             settings: Settings) -> tuple[dict, list[str]]:
    """Time the ``methods`` on cell (N, n), interleaved; returns the cell's record and the
    methods that timed out."""
    data = make_data(N, n, seed=0)
    target = 1 if N >= args.single_rep_n else args.reps
    reps: dict[str, list[dict]] = {m: [] for m in methods}
    alive = list(methods)
    t_cell = time.perf_counter()
    r = 0
    while r < target and alive:
        t_rep = time.perf_counter()
        for m in _rotated(alive, r):
            rec = timed_round(m, data, seed=1000 + r, settings=settings, cap=caps[m])
            reps[m].append(rec)
            if rec["timeout"]:
                alive.remove(m)
        if r == 0:
            per_rep = max(time.perf_counter() - t_rep, 1e-9)
            target = max(1, min(target, int(args.cell_budget // per_rep)))
        r += 1
    summary = {m: _summarize_method(reps[m], caps[m]) for m in methods}
    cell: dict[str, Any] = {"N": N, "n": n, "reps": r, "load": list(os.getloadavg()),
                            "seconds": time.perf_counter() - t_cell, "methods": summary,
                            "ratios_to_anchor": _ratios(summary, reps)}
    return cell, [m for m in methods if summary[m]["status"] != "ok"]


def _fmt(s: dict | None, key: str = "median_cpu_s") -> str:
    if s is None:
        return "–"
    if s.get("status") != "ok":
        return s.get("status", "–")
    return f"{s[key]:.3g}"


def markdown(cells: list[dict]) -> str:
    """The results as a Markdown table (median CPU seconds, CPU ratios to the anchor, peak
    memory above the baseline)."""
    lines = ["| (N, n) | MT-UCB model | MT-UCB s | qLogNParEGO s | MT-UCB ratio | qLogNEHVI s "
             "| qLogNEHVI ratio | MT-UCB MB | N×N buffers | qLogNParEGO MB | qLogNEHVI MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        s, ratio, mem = c["methods"], c.get("ratios_to_anchor", {}), c.get("memory", {})
        r = {m: f"{ratio[m]['cpu']:.3g}" if m in ratio else "–" for m in (MTUCB, NEHVI)}
        mt = mem.get(MTUCB)
        row = [f"({c['N']}, {c['n']})", (s.get(MTUCB) or {}).get("model") or "–",
               _fmt(s.get(MTUCB)), _fmt(s.get(PAREGO)), r[MTUCB], _fmt(s.get(NEHVI)), r[NEHVI],
               _fmt(mt, "peak_mb"),
               f"{mt['nxn_buffers']:.2f}" if mt and mt.get("status") == "ok" else "–",
               _fmt(mem.get(PAREGO), "peak_mb"), _fmt(mem.get(NEHVI), "peak_mb")]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _progress(cell: dict) -> str:
    parts = [f"N={cell['N']} n={cell['n']} reps={cell['reps']}"]
    for m, s in cell["methods"].items():
        tag = f"{s['median_cpu_s']:.3f} s cpu" if s["status"] == "ok" else s["status"]
        parts.append(f"{m}: {tag}")
    parts += [f"{m}/{ANCHOR} {r['cpu']:.3f}" for m, r in cell["ratios_to_anchor"].items()]
    for m, s in cell.get("memory", {}).items():
        parts.append(f"{m} mem " + (f"{s['peak_mb']:.1f} MB" if s["status"] == "ok"
                                    else s["status"]))
    return " | ".join(parts)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    ap.add_argument("--tasks", nargs="+", type=int, default=list(TASKS))
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--reps", type=int, default=5, help="reps per cell (at most)")
    ap.add_argument("--single-rep-n", type=int, default=3000, help="1 rep from this N on")
    ap.add_argument("--cell-budget", type=float, default=180.0,
                    help="seconds per cell: fewer reps when the first does not leave room")
    ap.add_argument("--cap-seconds", type=float, default=600.0, help="per-method cap per rep")
    ap.add_argument("--nehvi-cap", type=float, default=60.0, help="qLogNEHVI's cap per rep")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--num-restarts", type=int, default=4)
    ap.add_argument("--raw-samples", type=int, default=256)
    ap.add_argument("--mc-samples", type=int, default=128, help="the baselines' QMC samples")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if ANCHOR not in args.methods:
        ap.error(f"--methods must include the anchor {ANCHOR}.")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    settings = Settings(args.num_restarts, args.raw_samples, args.mc_samples)
    methods = [m for m in METHODS if m in args.methods]
    caps = {m: args.cap_seconds for m in methods}
    if NEHVI in caps:
        caps[NEHVI] = min(args.cap_seconds, args.nehvi_cap)
    timeouts: dict[str, list[tuple[int, int]]] = {m: [] for m in methods}
    warm = make_data(min(WARMUP_N, *args.sizes), min(args.tasks), seed=0)
    for m in methods:  # lazy imports and first-call caches, untimed
        run_round(m, warm, 0, settings)
    result: dict[str, Any] = {"settings": {**asdict(settings), "caps_s": caps,
                                           "threads": args.threads, "d": D,
                                           "cell_budget_s": args.cell_budget},
                              "cells": []}
    for N in sorted(args.sizes):
        for n in sorted(args.tasks):
            run = [m for m in methods if _blocked(timeouts[m], N, n) is None]
            skipped = {m: {"status": "skipped (timeout at (N, n) = "
                           f"{_blocked(timeouts[m], N, n)})"} for m in methods if m not in run}
            cell, failed = run_cell(N, n, run, caps, args, settings) if run else (
                {"N": N, "n": n, "reps": 0, "load": list(os.getloadavg()), "methods": {},
                 "ratios_to_anchor": {}}, [])
            cell["methods"].update(skipped)
            for m in failed:
                timeouts[m].append((N, n))
            if not args.skip_memory:
                cell["memory"] = {
                    m: measure_memory(m, N, n, 1000, settings, args.threads,
                                      timeout=caps[m] + 300.0)
                    for m in run if m not in failed}
            result["cells"].append(cell)
            print(_progress(cell), flush=True)
            write_summary(args.out, result)
    table = markdown(result["cells"])
    print(table, flush=True)
    return result


if __name__ == "__main__":
    main()
