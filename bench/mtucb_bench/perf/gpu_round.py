"""One fitted round on a GPU (CPU where there is none): MT-UCB against qLogNParEGO.

Per N (``--sizes``, default 100, 1000, 3000; n = ``--tasks`` objectives, default 2), on DTLZ2
(``botorch.test_functions.multi_objective.DTLZ2``, d = 6, negated for maximisation) at N
scrambled-Sobol points with Gaussian noise of 1 % of each objective's range, all on
``--device`` in float64:

* ``MT-UCB``: :func:`~botorch_mtucb.models.practical_multitask_gp` (its fit included), a
  Chebyshev scalarization (weights ``sample_simplex(n)``, reference point the observed
  minimum), :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` at its default width;
* ``qLogNParEGO``: a ``ModelListGP`` of n ``SingleTaskGP`` (``Normalize`` on the box,
  ``Standardize``) fitted with ``SumMarginalLogLikelihood``, ``qLogNParEGO`` with the same
  weights, X_baseline = the data, ``prune_baseline=True``, a Sobol QMC sampler of
  ``--mc-samples``;

both maximised with ``optimize_acqf(q=1, num_restarts=4, raw_samples=256)`` (seeded).

**Timing.** The two methods run in one process, interleaved rep by rep (AB, BA, ...), each rep
a new seed shared by both, after one untimed warm-up round each (CUDA context, kernels, lazy
imports). On CUDA each round is bracketed by ``torch.cuda.synchronize()`` and its peak device
memory recorded (``torch.cuda.max_memory_allocated`` after a reset). Reported per N: the medians
of wall time and of process CPU time, and the ratios MT-UCB / qLogNParEGO of those medians
(wall time is the figure on a GPU, CPU time on a shared CPU machine). ``--reps`` reps, cut
after the first to what fits in ``--cell-budget`` seconds.

Run from the repository root::

    python -m mtucb_bench.perf.gpu_round                       # cuda when present, else cpu
    python -m mtucb_bench.perf.gpu_round --sizes 100 --device cpu --reps 1
    python -m mtucb_bench.perf.gpu_round --out                 # docs/results/perf/gpu_round.json

A Markdown table goes to stdout; the JSON summary (with provenance) is written only with
``--out``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
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

from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.models import practical_multitask_gp
from mtucb_bench.perf.provenance import RESULTS, write_summary
from mtucb_bench.perf.round_scaling import Settings

DT = torch.float64
D = 6
MTUCB, PAREGO = "MT-UCB", "qLogNParEGO"
METHODS = (MTUCB, PAREGO)
SIZES = (100, 1000, 3000)
OUT = RESULTS / "perf" / "gpu_round.json"
WARMUP_N = 20


@dataclass(frozen=True)
class Data:
    """``N x 6`` inputs, ``N x n`` noisy negated DTLZ2 values and the ``2 x 6`` box, on one
    device."""

    X: Tensor
    Y: Tensor
    bounds: Tensor


def make_data(N: int, n: int, device: torch.device, seed: int = 0) -> Data:
    """DTLZ2 (d = 6, n objectives, negated) at ``N`` scrambled-Sobol points with Gaussian noise
    of standard deviation 1 % of each objective's range over the points, on ``device``."""
    problem = DTLZ2(dim=D, num_objectives=n, negate=True)
    bounds = problem.bounds.to(DT)
    X = bounds[0] + (bounds[1] - bounds[0]) * SobolEngine(D, scramble=True, seed=seed).draw(
        N, dtype=DT)
    F = problem(X)
    g = torch.Generator().manual_seed(seed + 1)
    Y = F + 0.01 * (F.max(0).values - F.min(0).values) * torch.randn(F.shape, generator=g,
                                                                       dtype=DT)
    return Data(X.to(device), Y.to(device), bounds.to(device))


def _weights(n: int, seed: int, device: torch.device) -> Tensor:
    return sample_simplex(n, seed=seed, dtype=DT).squeeze(0).to(device)


def mtucb_round(data: Data, seed: int, settings: Settings) -> Tensor:
    """Fit the practical model, build the scalarized UCB, maximise it: the ``1 x d`` point."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = practical_multitask_gp(data.X, data.Y, data.bounds)
        w = _weights(data.Y.shape[-1], seed, data.X.device)
        s = ChebyshevScalarization(w, ref_point=data.Y.min(0).values)
        acqf = ScalarizedMultiTaskUCB(model, s)
        x, _ = optimize_acqf(acqf, bounds=data.bounds, q=1, num_restarts=settings.num_restarts,
                             raw_samples=settings.raw_samples, options={"seed": seed})
    return x.detach()


def parego_round(data: Data, seed: int, settings: Settings) -> Tensor:
    """Fit the ``ModelListGP``, build ``qLogNParEGO``, maximise it: the ``1 x d`` point."""
    X, Y, bounds = data.X, data.Y, data.bounds
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModelListGP(*[
            SingleTaskGP(X, Y[:, i : i + 1],
                         input_transform=Normalize(X.shape[-1], bounds=bounds),
                         outcome_transform=Standardize(m=1))
            for i in range(Y.shape[-1])
        ])
        fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
        sampler = SobolQMCNormalSampler(torch.Size([settings.mc_samples]), seed=seed)
        acqf = qLogNParEGO(model, X_baseline=X, scalarization_weights=_weights(
            Y.shape[-1], seed, X.device), sampler=sampler, prune_baseline=True)
        x, _ = optimize_acqf(acqf, bounds=bounds, q=1, num_restarts=settings.num_restarts,
                             raw_samples=settings.raw_samples, options={"seed": seed})
    return x.detach()


ROUNDS = {MTUCB: mtucb_round, PAREGO: parego_round}


def timed_round(method: str, data: Data, seed: int, settings: Settings) -> dict[str, Any]:
    """One round of ``method``: ``{"wall_s", "cpu_s", "peak_mb", "x"}`` (``peak_mb``: peak
    device memory on CUDA, else ``None``)."""
    cuda = data.X.device.type == "cuda"
    gc.collect()
    if cuda:
        torch.cuda.synchronize(data.X.device)
        torch.cuda.reset_peak_memory_stats(data.X.device)
    c0, w0 = time.process_time(), time.perf_counter()
    x = ROUNDS[method](data, seed, settings)
    if cuda:
        torch.cuda.synchronize(data.X.device)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak = torch.cuda.max_memory_allocated(data.X.device) / 2**20 if cuda else None
    return {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak, "x": x.cpu().tolist()}


def run_cell(N: int, n: int, device: torch.device, settings: Settings, reps: int,
             budget: float) -> dict[str, Any]:
    """Time both methods on N points, interleaved; the cell's record."""
    data = make_data(N, n, device)
    records: dict[str, list[dict]] = {m: [] for m in METHODS}
    target, r, t_cell = reps, 0, time.perf_counter()
    while r < target:
        t_rep = time.perf_counter()
        order = METHODS if r % 2 == 0 else METHODS[::-1]
        for m in order:
            records[m].append(timed_round(m, data, seed=1000 + r, settings=settings))
        if r == 0:
            target = max(1, min(target, int(budget // max(time.perf_counter() - t_rep, 1e-9))))
        r += 1
    methods = {}
    for m, recs in records.items():
        methods[m] = {"wall_s": [x["wall_s"] for x in recs], "cpu_s": [x["cpu_s"] for x in recs],
                      "peak_mb": [x["peak_mb"] for x in recs], "x": [x["x"] for x in recs],
                      "median_wall_s": statistics.median(x["wall_s"] for x in recs),
                      "median_cpu_s": statistics.median(x["cpu_s"] for x in recs)}
    a, b = methods[MTUCB], methods[PAREGO]
    ratio = {"wall": a["median_wall_s"] / b["median_wall_s"],
             "cpu": a["median_cpu_s"] / b["median_cpu_s"]}
    return {"N": N, "n": n, "reps": r, "seconds": time.perf_counter() - t_cell,
            "methods": methods, "ratio_mtucb_to_parego": ratio}


def resolve_device(name: str) -> torch.device:
    """``name`` as a device; ``cuda`` falls back to the CPU (with a note) where there is none."""
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: running on the CPU", file=sys.stderr)
        return torch.device("cpu")
    return device


def table(cells: list[dict]) -> str:
    """Markdown table of the cells: medians and the ratios MT-UCB / qLogNParEGO."""
    rows = ["| (N, n) | reps | MT-UCB wall | qLogNParEGO wall | ratio (wall) | MT-UCB CPU | "
            "qLogNParEGO CPU | ratio (CPU) |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        a, b, r = c["methods"][MTUCB], c["methods"][PAREGO], c["ratio_mtucb_to_parego"]
        rows.append(f"| ({c['N']}, {c['n']}) | {c['reps']} | {a['median_wall_s']:.3f} s | "
                    f"{b['median_wall_s']:.3f} s | {r['wall']:.3f} | {a['median_cpu_s']:.3f} s | "
                    f"{b['median_cpu_s']:.3f} s | {r['cpu']:.3f} |")
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda (default; cpu without one) or cpu")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    p.add_argument("--tasks", type=int, default=2, help="number of objectives n")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cell-budget", type=float, default=300.0,
                   help="seconds per N: reps cut to what fits after the first")
    p.add_argument("--num-restarts", type=int, default=Settings.num_restarts)
    p.add_argument("--raw-samples", type=int, default=Settings.raw_samples)
    p.add_argument("--mc-samples", type=int, default=Settings.mc_samples)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--out", nargs="?", const=str(OUT), default=None,
                   help=f"write the JSON summary (default path {OUT})")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the cells, print the table, write the JSON with ``--out``; returns the summary
    (torch's thread count is restored on return)."""
    args = parse_args(argv)
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _run(args)
    finally:
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    device = resolve_device(args.device)
    settings = Settings(args.num_restarts, args.raw_samples, args.mc_samples)
    warm = make_data(WARMUP_N, args.tasks, device)
    for m in METHODS:  # untimed: CUDA context and kernels, lazy imports, first-call caches
        timed_round(m, warm, seed=0, settings=settings)
    cells = []
    for N in args.sizes:
        cell = run_cell(N, args.tasks, device, settings, args.reps, args.cell_budget)
        cells.append(cell)
        r = cell["ratio_mtucb_to_parego"]
        print(f"N={N} n={args.tasks} on {device}: MT-UCB / qLogNParEGO = {r['wall']:.3f} (wall), "
              f"{r['cpu']:.3f} (CPU)", flush=True)
    summary = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "settings": asdict(settings), "d": D, "cells": cells,
    }
    print(table(cells))
    if args.out:
        path = write_summary(Path(args.out), summary)
        print(f"wrote {path}")
    return summary


if __name__ == "__main__":
    main()
