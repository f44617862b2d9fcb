"""The independent-task practical fit: n blocks against the dense likelihood and SingleTaskGP.

``practical_multitask_gp(X, Y, bounds, independent=True)`` (one Matérn-5/2 per task, B = I) has
a block-diagonal covariance; its closed-form objective factorises the n blocks of ``N x N``
(``blocks``) instead of the dense ``Nn x Nn`` matrix (``dense``, forced for the comparison,
skipped above ``--dense-max`` rows times tasks). The anchor is BoTorch's multi-output
``SingleTaskGP`` with ``Normalize`` and ``Standardize``, fitted by ``fit_gpytorch_mll``: the
same model family (a batch of independent GPs, one per output), in the same process. Data:
``d = 2`` uniform inputs, ``Y = sin(3 X W) + 0.05 ε``. Each cell reports process CPU time (one
thread, torch and BLAS), the median of ``--reps`` interleaved repetitions.

Run: ``python -m mtucb_bench.perf.independent_fit [--sizes 100x5 300x5 500x5 500x10]
[--reps 3] [--out FILE]``
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from collections.abc import Callable
from functools import partial

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from gpytorch.mlls import ExactMarginalLogLikelihood
from threadpoolctl import threadpool_limits

from botorch_mtucb.multitask import fit_closure_lmc
from botorch_mtucb.multitask.practical import practical_multitask_gp
from mtucb_bench.perf.provenance import rows_summary
from mtucb_bench.perf.small_n_floor import cpu_time

DT = torch.float64


def make_data(N: int, n: int, d: int = 2, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """``(X, Y, bounds)``: ``N`` uniform points in the unit square, ``n`` smooth outputs."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, d, generator=g, dtype=DT)
    W = torch.randn(d, n, generator=g, dtype=DT)
    Y = torch.sin(3 * X @ W) + 0.05 * torch.randn(N, n, generator=g, dtype=DT)
    return X, Y, torch.stack([torch.zeros(d, dtype=DT), torch.ones(d, dtype=DT)])


def _singletaskgp(X: torch.Tensor, Y: torch.Tensor, bounds: torch.Tensor) -> None:
    m = SingleTaskGP(X, Y, input_transform=Normalize(X.shape[-1], bounds=bounds),
                     outcome_transform=Standardize(m=Y.shape[-1]))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(m.likelihood, m))


def _independent(dense: bool) -> Callable[..., None]:
    def fit(X: torch.Tensor, Y: torch.Tensor, bounds: torch.Tensor) -> None:
        if not dense:
            practical_multitask_gp(X, Y, bounds, independent=True)
            return
        original = fit_closure_lmc.LMCFitObjective.__init__

        def dense_init(self, *args, **kwargs):  # the route before the block-diagonal one
            original(self, *args, **kwargs)
            self._block_diagonal = False

        fit_closure_lmc.LMCFitObjective.__init__ = dense_init
        try:
            practical_multitask_gp(X, Y, bounds, independent=True)
        finally:
            fit_closure_lmc.LMCFitObjective.__init__ = original

    return fit


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["100x5", "300x5", "500x5", "500x10"])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dense-max", type=int, default=2500)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows = []
    warnings.filterwarnings("ignore")
    with threadpool_limits(limits=1):
        torch.set_num_threads(1)
        for size in args.sizes:
            N, n = (int(v) for v in size.split("x"))
            X, Y, bounds = make_data(N, n)
            methods = {"singletaskgp": _singletaskgp, "blocks": _independent(False)}
            if N * n <= args.dense_max:
                methods["dense"] = _independent(True)
            times: dict[str, list[float]] = {k: [] for k in methods}
            for _ in range(args.reps):
                for name, fit in methods.items():
                    times[name].append(cpu_time(partial(fit, X, Y, bounds)))
            row = {"N": N, "n": n, **{f"{k}_s": statistics.median(v) for k, v in times.items()}}
            row["blocks_over_singletaskgp"] = row["blocks_s"] / row["singletaskgp_s"]
            if "dense_s" in row:
                row["blocks_over_dense"] = row["blocks_s"] / row["dense_s"]
            rows.append(row)
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()},
                  flush=True)
    return rows_summary("mtucb_bench.perf.independent_fit", argv, rows, args.out)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
