"""The practical sparse mode against the exact practical model: cost per round and BO quality.

Problem: DTLZ2 (d = 6, n = 2, negated: maximised), observations with Gaussian noise of sd
0.01; inputs uniform on the unit cube (seeded). Two models, both built by
``WarmStartPracticalFactory`` (one cold fit each):

* ``exact`` — ``sparse_above=None``: ``practical_multitask_gp`` on all N points;
* ``sparse`` — ``sparse_above=0``: the practical sparse model (hyperparameters fitted on a
  uniform subset of ``fit_subset_size`` points, Nyström posterior with a dictionary capped at
  ``max_dictionary_size``), at every N, so that the crossover can be read off.

``timing``: at each N, one round = fit (the factory call: subset or full fit, and for the
sparse model its dictionary's cold start), the first posterior (``task_posterior`` at 256
points: the solver build) and one acquisition optimisation (``ScalarizedMultiTaskUCB``,
Chebyshev λ = (½, ½) with the reference point at the data's minimum, ``optimize_acqf`` q = 1,
4 restarts, 256 raw samples). Process CPU time and wall time per phase; a round past
``--cap`` seconds is stopped and reported as capped. The exact model is skipped above
``--exact-max``.

``loop``: ``run_bo_loop`` with each factory for ``--rounds`` rounds from ``--n0`` uniform
points (default acquisition and scalarization sampler, ``RefitSchedule()``), per seed; the
hypervolume (reference point (−1.1, −1.1)) of the noise-free values of all evaluated points,
its gain over the initial design, the mean recorded scalarized regret (against 4,096 Sobol
points) and the wall time per round.

``accuracy``: the dictionary cap's effect with the hyperparameters held fixed (one subset
fit given to the exact model on all N points and to the sparse model at each cap): the
sparse mean's RMSE relative to the exact one and the ratio of the variances.

Each invocation is meant to stay under three minutes on a loaded two-core machine: split
the sizes and seeds over invocations, e.g.

    python -m mtucb_bench.perf.sparse_practical timing --sizes 300 1000
    python -m mtucb_bench.perf.sparse_practical timing --sizes 3000
    python -m mtucb_bench.perf.sparse_practical timing --sizes 10000 --exact-max 0
    python -m mtucb_bench.perf.sparse_practical loop --seeds 0
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import time
from typing import Any

import torch
from botorch.optim import optimize_acqf
from botorch.test_functions.multi_objective import DTLZ2
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.loop import RefitSchedule, run_bo_loop
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory, practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import copy_hyperparameters, fit_practical_model
from mtucb_bench.perf.provenance import write_summary
from mtucb_bench.perf.round_scaling import CapExceeded, time_cap

DT = torch.float64
D, N_OBJ, NOISE_SD = 6, 2, 0.01
REF_POINT = (-1.1, -1.1)
MODES = ("exact", "sparse")


def problem() -> DTLZ2:
    return DTLZ2(dim=D, num_objectives=N_OBJ, negate=True).to(DT)


def make_data(N: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``N`` uniform inputs on the unit cube and noisy negated DTLZ2 values."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, D, generator=g, dtype=DT)
    return X, problem()(X) + NOISE_SD * torch.randn(N, N_OBJ, generator=g, dtype=DT)


def make_factory(mode: str, fit_subset_size: int, max_dictionary_size: int,
                 seed: int) -> WarmStartPracticalFactory:
    """The exact (``sparse_above=None``) or sparse (``sparse_above=0``) practical factory."""
    if mode not in MODES:
        raise ValueError(f"`mode` must be one of {MODES}, got {mode!r}.")
    return WarmStartPracticalFactory(
        problem().bounds, sparse_above=None if mode == "exact" else 0,
        fit_subset_size=fit_subset_size, max_dictionary_size=max_dictionary_size,
        generator=torch.Generator().manual_seed(seed),
    )


class _Clock:
    """CPU and wall seconds per phase."""

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}
        self._c, self._w = time.process_time(), time.perf_counter()

    def lap(self, name: str) -> None:
        c, w = time.process_time(), time.perf_counter()
        self.phases[name] = {"cpu_s": c - self._c, "wall_s": w - self._w}
        self._c, self._w = c, w


def timed_round(mode: str, N: int, seed: int = 0, fit_subset_size: int = 500,
                max_dictionary_size: int = 1000, cap: float = 60.0) -> dict[str, Any]:
    """One round (fit, first posterior, one acquisition optimisation) of ``mode`` at ``N``.

    Returns:
        ``{"mode", "N", "status" ("ok" / "capped"), "model", "dictionary_size",
        "fit", "posterior", "acquisition", "total"}`` (phases: ``{"cpu_s", "wall_s"}``).
    """
    X, Y = make_data(N, seed)
    factory = make_factory(mode, fit_subset_size, max_dictionary_size, seed)
    bounds = problem().bounds
    out: dict[str, Any] = {"mode": mode, "N": N, "status": "ok"}
    gc.collect()
    clock = _Clock()
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        with time_cap(cap):
            model = factory(X, Y)
            clock.lap("fit")
            Xs = torch.rand(256, D, generator=torch.Generator().manual_seed(seed + 1), dtype=DT)
            model.task_posterior(Xs)
            clock.lap("posterior")
            s = ChebyshevScalarization([0.5, 0.5], ref_point=Y.min(0).values)
            acqf = ScalarizedMultiTaskUCB(model, s)
            torch.manual_seed(seed)
            optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=256)
            clock.lap("acquisition")
    except CapExceeded:
        out["status"] = "capped"
        model = None
    out.update(clock.phases)
    out["total"] = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
    out["model"] = None if model is None else type(model).__name__
    out["dictionary_size"] = getattr(model, "dictionary_size", None)
    return out


def hypervolume(Y: torch.Tensor) -> float:
    """Hypervolume of the non-dominated rows of ``Y`` (maximised) above :data:`REF_POINT`."""
    ref = torch.tensor(REF_POINT, dtype=Y.dtype)
    Y = Y[(Y > ref).all(-1)]
    if len(Y) == 0:
        return 0.0
    return float(Hypervolume(ref).compute(Y[is_non_dominated(Y)]))


def run_loop(mode: str, seed: int, n0: int = 300, rounds: int = 15, fit_subset_size: int = 500,
             max_dictionary_size: int = 1000, num_regret: int = 4096) -> dict[str, Any]:
    """A seeded BO run of ``rounds`` rounds from ``n0`` uniform points with ``mode``'s factory.

    Returns:
        ``{"mode", "seed", "n0", "rounds", "hv_initial", "hv_final", "hv_gain",
        "mean_regret", "wall_s_per_round", "model", "dictionary_size"}`` (hypervolumes of the
        noise-free values).
    """
    prob = problem()
    g = torch.Generator().manual_seed(1000 + seed)
    X0 = torch.rand(n0, D, generator=g, dtype=DT)

    def observe(X: torch.Tensor) -> torch.Tensor:
        return prob(X) + NOISE_SD * torch.randn(X.shape[0], N_OBJ, generator=g, dtype=DT)

    regret_X = SobolEngine(D, scramble=True, seed=seed).draw(num_regret).to(DT)
    factory = make_factory(mode, fit_subset_size, max_dictionary_size, seed)
    w0 = time.perf_counter()
    history = run_bo_loop(
        observe, initial_X=X0, num_rounds=rounds, model_factory=factory, bounds=prob.bounds,
        refit_every=RefitSchedule(), true_f=prob, regret_X=regret_X,
        generator=torch.Generator().manual_seed(seed),
    )
    wall = time.perf_counter() - w0
    F0 = prob(X0)  # noise-free (the problem has no noise_std), negated: maximised
    F = torch.cat([F0, prob(history.X)])
    hv0, hv1 = hypervolume(F0), hypervolume(F)
    regrets = [float(r.regret) for r in history.rounds if getattr(r, "regret", None) is not None]
    return {
        "mode": mode, "seed": seed, "n0": n0, "rounds": rounds,
        "hv_initial": hv0, "hv_final": hv1, "hv_gain": hv1 - hv0,
        "mean_regret": statistics.fmean(regrets) if regrets else None,
        "wall_s_per_round": wall / max(rounds, 1),
        "model": type(history.model).__name__,
        "dictionary_size": getattr(history.model, "dictionary_size", None),
    }


def cap_accuracy(N: int = 2000, caps: tuple[int, ...] = (2000, 1000, 500, 250, 100),
                 seed: int = 0, fit_subset_size: int = 500,
                 num_test: int = 1000) -> list[dict[str, Any]]:
    """The dictionary cap's effect on the posterior, the hyperparameters held fixed.

    The hyperparameters of one subset fit are given to the exact practical model on all ``N``
    points and to the sparse model with each cap (a cap ≥ N does not bind). At ``num_test``
    uniform points: the RMSE of the sparse mean relative to the exact one, in units of the
    outcomes' standard deviation, and the median / max over points and tasks of the ratio of
    sparse to exact posterior variances (DTC variances; a ratio near 1 is accurate).
    """
    X, Y = make_data(N, seed)
    factory = make_factory("sparse", fit_subset_size, max(caps), seed)
    bounds = problem().bounds
    idx = factory.fit_subset(N)
    fitted = practical_multitask_gp(X[idx], Y[idx], bounds, fit=False)
    fitted = fit_practical_model(fitted)
    exact = practical_multitask_gp(X, Y, bounds, fit=False)
    copy_hyperparameters(fitted, exact)
    exact.eval()
    Xs = torch.rand(num_test, D, generator=torch.Generator().manual_seed(seed + 7), dtype=DT)
    with torch.no_grad():
        m_ex, b_ex = exact.task_posterior(Xs)
    v_ex = b_ex.diagonal(dim1=-2, dim2=-1)
    out = []
    for cap in caps:
        sparse = make_factory("sparse", fit_subset_size, cap, seed)._sparse_model(X, Y, fitted)
        with torch.no_grad():
            m_sp, b_sp = sparse.task_posterior(Xs)
        ratio = b_sp.diagonal(dim1=-2, dim2=-1) / v_ex
        out.append({
            "N": N, "cap": cap, "dictionary_size": sparse.dictionary_size,
            "q": sparse.q, "effective_q": sparse.effective_q,
            "mean_rmse_rel": float(((m_sp - m_ex) / Y.std(0)).pow(2).mean().sqrt()),
            "var_ratio_median": float(ratio.median()), "var_ratio_max": float(ratio.max()),
            "var_ratio_min": float(ratio.min()),
        })
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("timing", help="cost of one round, exact vs sparse")
    t.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 3000, 10000])
    t.add_argument("--exact-max", type=int, default=3000, help="largest N for the exact model")
    t.add_argument("--cap", type=float, default=60.0, help="seconds per round before stopping")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--repeats", type=int, default=1, help="seeds seed, seed+1, ... per size")
    lp = sub.add_parser("loop", help="BO quality, exact vs sparse")
    lp.add_argument("--seeds", type=int, nargs="+", default=[0])
    lp.add_argument("--n0", type=int, default=300)
    lp.add_argument("--rounds", type=int, default=15)
    lp.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ac = sub.add_parser("accuracy", help="the dictionary cap's effect on the posterior")
    ac.add_argument("--n", type=int, default=2000)
    ac.add_argument("--caps", type=int, nargs="+", default=[2000, 1000, 500, 250, 100])
    ac.add_argument("--seed", type=int, default=0)
    for p in (t, lp, ac):
        p.add_argument("--fit-subset-size", type=int, default=500)
        p.add_argument("--max-dictionary-size", type=int, default=1000)
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--out", default=None, help="summary JSON path (none: print only)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    kw = {"fit_subset_size": args.fit_subset_size,
          "max_dictionary_size": args.max_dictionary_size}
    records: list[dict[str, Any]] = []
    if args.command == "timing":
        for N, seed, mode in itertools.product(
            args.sizes, range(args.seed, args.seed + args.repeats), MODES
        ):
            if mode == "exact" and N > args.exact_max:
                continue
            rec = timed_round(mode, N, seed=seed, cap=args.cap, **kw)  # interleaved A/B
            records.append(rec)
            phases = " ".join(f"{k} {rec[k]['cpu_s']:.2f}s" for k in
                              ("fit", "posterior", "acquisition") if k in rec)
            print(f"N={N:6d} seed={seed} {mode:6s} {rec['status']:6s} total cpu "
                  f"{rec['total']['cpu_s']:.2f}s wall {rec['total']['wall_s']:.2f}s "
                  f"[{phases}] m={rec['dictionary_size']}", flush=True)
    elif args.command == "accuracy":
        records = cap_accuracy(args.n, tuple(args.caps), args.seed, args.fit_subset_size)
        for rec in records:
            print(json.dumps(rec), flush=True)
    else:
        for seed in args.seeds:
            for mode in args.modes:
                rec = run_loop(mode, seed, n0=args.n0, rounds=args.rounds, **kw)
                records.append(rec)
                print(json.dumps(rec), flush=True)
    result = {"command": args.command, "settings": vars(args), "records": records}
    if args.out:
        write_summary(args.out, result)
    return result


if __name__ == "__main__":
    main()
