"""What the test-input checks cost in one BO step (A/B in one process, interleaved).

Every public posterior and acquisition call refuses NaN, infinite, non-tensor and non-float
test inputs (``botorch_mtucb.utils.validation.check_test_tensor``). This script times one BO
step of MT-KB, ``optimize_acqf(ScalarizedMultiTaskUCB(...), q=1, num_restarts=10,
raw_samples=512)`` on an ``ExactMultiTaskGP`` (ICM, RBF, fixed B, η = 0.1, ``Standardize``;
d = 4), and one of TGP-UCB (``HeavyTailedUCB(TruncatedGP(...))`` with ``optimize_acqf``,
d = 2), with the checks on (as shipped) and off (the checks replaced by the identity in
every module that calls them), alternating A and B so both see the same machine load.
Reported: the median step time of each, their ratio and the median of the per-pair ratios
(checks on / off; target ≤ 1.03), and the overhead predicted by the number of checks per
step times the cost of one check (free of the A/B timing noise).
Single-threaded, CPU time of the process.

Run: ``python -m mtucb_bench.perf.input_checks [--repeats 11]
[--out docs/results/perf/input_checks.json]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path

import torch
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import (
    HeavyTailedUCB,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
)
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP, TruncatedGP
from botorch_mtucb.utils import validation
from mtucb_bench.perf.provenance import RESULTS, write_summary

#: Every module that imports ``check_test_tensor`` (patched there for the "off" arm).
CHECKED_MODULES = (
    "botorch_mtucb.acquisition.heavy_tailed",
    "botorch_mtucb.acquisition.multi_task_ucb",
    "botorch_mtucb.heavy_tailed.base",
    "botorch_mtucb.heavy_tailed.batch",
    "botorch_mtucb.multitask.base",
    "botorch_mtucb.multitask.nystrom_batch",
)
DT = torch.float64


def _identity(X, name: str = "X"):
    return X


@contextmanager
def checks_off():
    """Replace ``check_test_tensor`` by the identity in every module that calls it."""
    modules = [import_module(m) for m in CHECKED_MODULES]
    saved = [m.check_test_tensor for m in modules]
    try:
        for m in modules:
            m.check_test_tensor = _identity
        yield
    finally:
        for m, f in zip(modules, saved, strict=True):
            m.check_test_tensor = f


def mtkb_step(t: int = 100, n: int = 4, d: int = 4) -> Callable[[int], None]:
    """One MT-KB step at (t, n): build the acquisition, maximise it (seeded restarts)."""
    g = torch.Generator().manual_seed(0)
    X = torch.rand(t, d, dtype=DT, generator=g)
    Y = torch.randn(t, n, dtype=DT, generator=g)
    A = torch.randn(n, n, dtype=DT, generator=g)
    kernel = ICMKernel(RBFKernel(), n, task_covar=A @ A.T + torch.eye(n, dtype=DT)).to(DT)
    model = ExactMultiTaskGP(X, Y, kernel, noise=0.1, outcome_transform=Standardize(n))
    model.eval()
    s = LinearScalarization(torch.full((n,), 1.0 / n, dtype=DT))
    bounds = torch.stack([torch.zeros(d, dtype=DT), torch.ones(d, dtype=DT)])

    def step(seed: int) -> None:
        torch.manual_seed(seed)
        optimize_acqf(ScalarizedMultiTaskUCB(model, s), bounds, q=1, num_restarts=10,
                      raw_samples=512)

    return step


def tgp_step(t: int = 200, d: int = 2) -> Callable[[int], None]:
    """One TGP-UCB step at t observations (data-driven truncation)."""
    g = torch.Generator().manual_seed(1)
    X = torch.rand(t, d, dtype=DT, generator=g)
    Y = torch.sin(6 * X[:, :1]) + 0.3 * torch.randn(t, 1, dtype=DT, generator=g)
    model = TruncatedGP(X, Y)
    bounds = torch.stack([torch.zeros(d, dtype=DT), torch.ones(d, dtype=DT)])

    def step(seed: int) -> None:
        torch.manual_seed(seed)
        optimize_acqf(HeavyTailedUCB(model), bounds, q=1, num_restarts=10, raw_samples=512)

    return step


def ab(step: Callable[[int], None], repeats: int) -> dict[str, float]:
    """CPU time of ``step`` with the checks on and off, interleaved A/B.

    Reports the medians of each arm, their ratio, the median of the per-pair ratios (each pair
    run back to back, so it sees one machine load), the number of checks per step and the
    overhead they predict from their cost per call (:func:`check_cost`).
    """
    step(0)  # warm-up: caches, factorisations
    on, off = [], []
    for r in range(repeats):
        for arm, times in ((False, on), (True, off)) if r % 2 == 0 else (
            (True, off), (False, on)
        ):
            with checks_off() if arm else _nothing():
                start = time.process_time()
                step(r + 1)
                times.append(time.process_time() - start)
    m_on, m_off = statistics.median(on), statistics.median(off)
    calls = count_checks(step, repeats + 1)
    per_call = check_cost()
    return {
        "checks_on_s": m_on,
        "checks_off_s": m_off,
        "ratio": m_on / m_off,
        "paired_ratio": statistics.median(a / b for a, b in zip(on, off, strict=True)),
        "checks_per_step": calls,
        "check_cost_us": 1e6 * per_call,
        "predicted_ratio": 1.0 + calls * per_call / m_off,
    }


def count_checks(step: Callable[[int], None], seed: int) -> int:
    """Number of ``check_test_tensor`` calls in one step."""
    calls = [0]

    def counting(X, name: str = "X"):
        calls[0] += 1
        return validation.check_test_tensor(X, name)

    modules = [import_module(m) for m in CHECKED_MODULES]
    saved = [m.check_test_tensor for m in modules]
    try:
        for m in modules:
            m.check_test_tensor = counting
        step(seed)
    finally:
        for m, f in zip(modules, saved, strict=True):
            m.check_test_tensor = f
    return calls[0]


def check_cost(number: int = 20000) -> float:
    """CPU seconds of one ``check_test_tensor`` call on a fresh ``10 x 1 x 4`` tensor (the
    clone that makes it fresh is timed alone and subtracted)."""
    X = torch.rand(10, 1, 4, dtype=DT, requires_grad=True)
    best = []
    for checked in (True, False):
        start = time.process_time()
        for _ in range(number):
            Y = X.detach().clone()
            if checked:
                validation.check_test_tensor(Y)
        best.append(time.process_time() - start)
    return max(best[0] - best[1], 0.0) / number


@contextmanager
def _nothing():
    yield


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--out", default=str(RESULTS / "perf" / "input_checks.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = {"MT-KB (t=100, n=4)": ab(mtkb_step(), args.repeats),
            "TGP-UCB (t=200)": ab(tgp_step(), args.repeats)}
    for name, r in rows.items():
        print(f"{name:>20}: checks on {r['checks_on_s']:.4f} s, off {r['checks_off_s']:.4f} s, "
              f"on / off = {r['ratio']:.3f} (paired {r['paired_ratio']:.3f}); "
              f"{r['checks_per_step']} checks x {r['check_cost_us']:.1f} us predict "
              f"{r['predicted_ratio']:.4f}")
    path = write_summary(Path(args.out), {"repeats": args.repeats, "steps": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
