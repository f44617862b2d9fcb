"""What the practical defaults of the loop and the Ax helpers cost and give (issue 16).

Three measurements, each against its anchor in the same run:

* ``refit-cost``: one :func:`~botorch_mtucb.models.practical_multitask_gp` refit against one
  ``condition_on_observations`` and one acquisition maximisation (``BoxOptimizer(4, 128)``)
  on BraninCurrin (n = 2) at N training points.
* ``refit-schedule``: the default loop (``run_bo_loop(problem, num_rounds=T, bounds=...)``)
  with ``RefitSchedule()`` against refitting every round and never refitting: hypervolume of
  the observed points as % of the maximum, wall time per round, number of fits.
* ``ax``: ``mtucb_generation_strategy()`` defaults against the settings before issue 16 (paper
  model, Ax's inferred thresholds, 5 Sobol trials), BraninCurrin in an ``ax.Client`` loop.
* ``ax-qlognehvi``: ``multitask_gp_generation_strategy()`` (Ax's own qLogNEHVI on our model) with
  the practical model against ``model="paper"``, BraninCurrin and VehicleSafety.

Usage::

    python -m mtucb_bench.studies.practical_defaults refit-cost [N ...]
    python -m mtucb_bench.studies.practical_defaults refit-schedule [--rounds 30] [--seeds 3]
    python -m mtucb_bench.studies.practical_defaults ax [--trials 30] [--seeds 3]
    python -m mtucb_bench.studies.practical_defaults ax-qlognehvi [--trials 30] [--seeds 0 1 2] \
        [--problems BraninCurrin VehicleSafety] [--models practical paper]

Each writes ``docs/results/studies/practical_defaults_<command>.json``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from statistics import mean

import torch
from botorch.test_functions.multi_objective import BraninCurrin, VehicleSafety
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated

import botorch_mtucb.loop as loop_module
import botorch_mtucb.loop.run as loop_run
from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.acquisition.pending import condition_model
from botorch_mtucb.models import practical_multitask_gp
from botorch_mtucb.utils import sobol_initial_design
from mtucb_bench.measure import best_time
from mtucb_bench.perf.provenance import RESULTS, write_summary

SUMMARY = RESULTS / "studies"


def _hv_percent(problem, Y: torch.Tensor) -> float:
    """Hypervolume of the non-dominated rows of ``Y`` (maximised) as % of ``max_hv``."""
    front = Y[is_non_dominated(Y)]
    front = front[(front > problem.ref_point).all(-1)]
    hv = Hypervolume(problem.ref_point).compute(front) if len(front) else 0.0
    return 100.0 * hv / problem.max_hv


def _costs_at(problem, N: int) -> dict[str, float]:
    X = sobol_initial_design(problem.bounds, N + 1, seed=0)
    Y = problem(X)
    model = practical_multitask_gp(X[:N], Y[:N], problem.bounds)
    opt = BoxOptimizer(problem.bounds, num_restarts=4, raw_samples=128, seed=0)
    s = ChebyshevScalarization.from_data(torch.tensor([0.3, 0.7]).to(Y), Y[:N])
    return dict(
        refit=best_time(lambda: practical_multitask_gp(X[:N], Y[:N], problem.bounds)),
        condition=best_time(lambda: condition_model(model, X[N:], Y[N:]).posterior(X[:1])),
        acq_opt=best_time(lambda: opt(ScalarizedMultiTaskUCB(model, s))),
    )


def refit_cost(sizes: list[int]) -> dict:
    problem = BraninCurrin(negate=True).to(torch.float64)
    out = {}
    for N in sizes:
        out[N] = _costs_at(problem, N)
        print(N, {k: round(v, 4) for k, v in out[N].items()}, flush=True)
    return out


def refit_schedule(rounds: int, seeds: int) -> dict:
    out = {}
    for problem in (BraninCurrin(negate=True), VehicleSafety(negate=True)):
        problem = problem.to(torch.float64)
        rules = (("every round", 1), ("RefitSchedule()", loop_module.RefitSchedule()),
                 ("never", 0))
        for label, rule in rules:
            res = []
            for seed in range(seeds):
                fits: list[int] = []
                original = loop_run.practical_model_factory

                def counting(bounds, _orig=original, _fits=fits):
                    factory = _orig(bounds)

                    def fit(train_X, train_Y):
                        _fits.append(train_X.shape[0])
                        return factory(train_X, train_Y)

                    return fit

                loop_run.practical_model_factory = counting
                try:
                    h = loop_module.run_bo_loop(
                        problem, num_rounds=rounds, bounds=problem.bounds, refit_every=rule,
                        generator=torch.Generator().manual_seed(seed))
                finally:
                    loop_run.practical_model_factory = original
                Y = torch.cat([h.initial_Y, h.Y])
                res.append(dict(
                    hv_pct=_hv_percent(problem, Y),
                    wall_per_round=sum(r.wall_time for r in h.rounds) / rounds,
                    fits=len(fits)))
                print(type(problem).__name__, label, seed,
                      {k: round(v, 3) for k, v in res[-1].items()}, flush=True)
            out[f"{type(problem).__name__} / {label}"] = res
    for key, res in out.items():
        print(f"{key}: HV {mean(r['hv_pct'] for r in res):.1f} %, "
              f"{mean(r['wall_per_round'] for r in res):.3f} s/round, "
              f"{mean(r['fits'] for r in res):.1f} fits")
    return out


def ax_defaults(trials: int, seeds: int) -> dict:
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    from botorch_mtucb.integrations.ax import mtucb_generation_strategy

    logging.disable(logging.INFO)
    problem = BraninCurrin(negate=True).to(torch.float64)
    configs = {
        "defaults": lambda s: mtucb_generation_strategy(seed=s),
        "before (paper model, Ax thresholds)": lambda s: mtucb_generation_strategy(
            num_initial_trials=5, model="paper", reference="thresholds", beta=1.0, seed=s),
    }
    out = {}
    for name, make in configs.items():
        res = []
        for seed in range(seeds):
            client = Client(random_seed=seed)
            client.configure_experiment(parameters=[
                RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
                for i in range(2)])
            client.configure_optimization(objective="-a, -b")
            client.set_generation_strategy(make(seed))
            Ys, t0 = [], time.perf_counter()
            for _ in range(trials):
                for idx, p in client.get_next_trials(max_trials=1).items():
                    y = problem(torch.tensor([[p["x0"], p["x1"]]], dtype=torch.float64))[0]
                    Ys.append(y)
                    client.complete_trial(idx, raw_data={"a": -float(y[0]), "b": -float(y[1])})
            res.append(dict(hv_pct=_hv_percent(problem, torch.stack(Ys)),
                            seconds=time.perf_counter() - t0))
            print(name, seed, res[-1], flush=True)
        out[name] = res
        print(name, "mean HV %", mean(r["hv_pct"] for r in res), flush=True)
    return out


def _client(problem, seed: int):
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    lo, hi = problem.bounds
    client = Client(random_seed=seed)
    client.configure_experiment(parameters=[
        RangeParameterConfig(name=f"x{i}", parameter_type="float",
                             bounds=(float(lo[i]), float(hi[i])))
        for i in range(problem.dim)])
    client.configure_optimization(
        objective=", ".join(f"y{j}" for j in range(problem.num_objectives)))
    return client


def ax_qlognehvi(trials: int, seeds: list[int], problems: list[str], models: list[str]) -> list:
    from botorch_mtucb.integrations.ax import multitask_gp_generation_strategy

    logging.disable(logging.WARNING)
    classes = {"BraninCurrin": BraninCurrin, "VehicleSafety": VehicleSafety}
    out = []
    for name in problems:
        problem = classes[name](negate=True).to(torch.float64)
        for model in models:
            for seed in seeds:
                client = _client(problem, seed)
                client.set_generation_strategy(
                    multitask_gp_generation_strategy(seed=seed, model=model))
                Ys, times = [], []
                for _ in range(trials):
                    t0 = time.perf_counter()
                    for idx, p in client.get_next_trials(max_trials=1).items():
                        x = torch.tensor([[p[f"x{i}"] for i in range(problem.dim)]]).to(
                            problem.bounds)
                        y = problem(x)[0]
                        Ys.append(y)
                        client.complete_trial(
                            idx, raw_data={f"y{j}": float(y[j]) for j in range(len(y))})
                    times.append(time.perf_counter() - t0)
                out.append(dict(problem=name, model=model, seed=seed,
                                hv_pct=_hv_percent(problem, torch.stack(Ys)),
                                s_per_trial=mean(times)))
                print(out[-1], flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("refit-cost")
    p.add_argument("sizes", nargs="*", type=int, default=[10, 25, 50, 100, 200])
    p = sub.add_parser("refit-schedule")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seeds", type=int, default=3)
    p = sub.add_parser("ax")
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--seeds", type=int, default=3)
    p = sub.add_parser("ax-qlognehvi")
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--problems", nargs="+", default=["BraninCurrin", "VehicleSafety"])
    p.add_argument("--models", nargs="+", default=["practical", "paper"])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    if args.command == "refit-cost":
        out = refit_cost(args.sizes)
    elif args.command == "refit-schedule":
        out = refit_schedule(args.rounds, args.seeds)
    elif args.command == "ax":
        out = ax_defaults(args.trials, args.seeds)
    else:
        out = ax_qlognehvi(args.trials, args.seeds, args.problems, args.models)
    write_summary(SUMMARY / f"practical_defaults_{args.command}.json", out)


if __name__ == "__main__":
    main()
