"""MT-UCB's wall time per round, refits included, against qLogNParEGO.

Two parts, one process, one thread (``torch.set_num_threads(1)``):

* ``profile``: where one round's time goes, on the suite's ``corr-rff`` (d 3, n 4),
  ``branin-currin`` (2, 2) and ``corr-hartmann`` (6, 3) at N = 10, 20, 40 Sobol points: a cold
  fit of :func:`~botorch_mtucb.models.practical_multitask_gp` (L-BFGS-B closure evaluations,
  seconds) with BoTorch's closure, with the lean closure of
  :mod:`botorch_mtucb.multitask.practical_fit`, and lean with the longer L-BFGS memory
  (``lbfgs_memory``), a warm-started fit (lean, longer memory, from the fit on N − 2 points;
  its MLL against the cold fits'), the cost of one likelihood + gradient evaluation (BoTorch's
  closure, the lean one, and a ``SingleTaskGP``'s), qLogNParEGO's model-list fit
  (n BoTorch-default ``SingleTaskGP``\\ s), and one acquisition maximisation of each
  (``optimize_acqf``, 4 restarts, 256 raw samples).
* ``rounds``: the suite's protocol (``run_trial``: max(5, 2d) Sobol points + T = 20 rounds,
  directional bound, common random numbers per trial ``k``, seed ``k``) for ``MT-UCB-refit``
  (the entry before this change: a cold refit after every round), ``MT-UCB`` (warm-started
  refits on the loop's ``RefitSchedule``, conditioned in between) and the anchor
  ``qLogNParEGO`` (BoTorch's default: refit every round), interleaved trial by trial (the
  order rotates with ``k``); qLogNParEGO on the first ``--anchor-trials`` trials only
  (compute). Time ratios are over the trials where all three ran; HV % (hypervolume of all
  points as % of the problem's maximum) and R_C(T)/T paired new − old over all trials.
  ``--variants`` runs the two one-change ablations instead (registered in this process
  only): ``MT-UCB-warm-every-round`` (warm-started lean refits after every round, no schedule)
  and ``MT-UCB-cold-schedule`` (cold ``practical_multitask_gp`` refits on the schedule),
  each paired against ``MT-UCB-refit``.

Run from the repository root (resumable: finished units are kept in the JSON)::

    python -m mtucb_bench.perf.mo_round_time --part profile
    python -m mtucb_bench.perf.mo_round_time --part rounds --trials 5 --anchor-trials 2
    python -m mtucb_bench.perf.mo_round_time --part rounds --trials 10   # more pairs
    python -m mtucb_bench.perf.mo_round_time --part rounds --trials 10 --variants

Units (``rounds``, raw) in ``benchmark-runs/mo_round_time.json``; ``profile`` and ``summary`` in
``docs/results/perf/mo_round_time.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.optim.closures import get_loss_closure_with_grads
from botorch.optim.utils import get_parameters_and_bounds
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.acquisition.scalarization import ChebyshevScalarization
from botorch_mtucb.loop.defaults import RefitSchedule
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory, practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import (
    copy_hyperparameters,
    fit_practical_model,
    lbfgs_memory,
    practical_mll_closure,
)
from mtucb_bench.algorithm_types import AlgorithmSetup, AlgorithmSpec
from mtucb_bench.algorithms import ALGORITHMS, RunConfig, get_algorithm
from mtucb_bench.baselines import fitted_model_list
from mtucb_bench.measure import best_time, sign_test_p
from mtucb_bench.mo_suite_problems import make_suite_problem
from mtucb_bench.perf.provenance import RESULTS, RUNS, provenance, write_summary
from mtucb_bench.runner import run_trial

DT = torch.float64
PROBLEMS = ("corr-rff", "branin-currin", "corr-hartmann")
OLD, NEW, ANCHOR = "MT-UCB-refit", "MT-UCB", "qLogNParEGO"
OUT = RUNS / "mo_round_time.json"  # every unit (raw, git-ignored)
SUMMARY = RESULTS / "perf" / "mo_round_time.json"


# ----------------------------------------------------------------------------- profile
def _counted(closure):
    count = [0]

    def wrapped(**kwargs):
        count[0] += 1
        return closure(**kwargs)

    return wrapped, count


def _mll_and_closure(model, lean: bool):
    """The model's train-mode marginal likelihood and its loss closure: the lean ICM closure
    (``lean``) or BoTorch's own."""
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    if lean:
        return mll, practical_mll_closure(mll)
    params = {k: p for k, p in get_parameters_and_bounds(mll)[0].items() if p.requires_grad}
    return mll, get_loss_closure_with_grads(mll, parameters=params)


def _fit(model, lean: bool, warm=None, memory: bool = False) -> tuple[float, int]:
    """Fit ``model`` (cold, or warm from ``warm``; ``memory``: L-BFGS memory
    :func:`lbfgs_memory` instead of scipy's 10); (seconds, closure evaluations)."""
    if warm is not None:
        copy_hyperparameters(warm, model)
    mll, closure = _mll_and_closure(model, lean)
    closure, count = _counted(closure)
    kwargs = {}
    if memory:
        size = sum(p.numel() for p in model.parameters() if p.requires_grad)
        kwargs["optimizer_kwargs"] = {"options": {"maxcor": lbfgs_memory(size)}}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(mll, closure=closure, **kwargs)
    model.eval()
    return time.perf_counter() - t0, count[0]


def _mll(model) -> float:
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    with torch.no_grad():
        value = float(mll(model(*model.train_inputs), model.train_targets))
    model.eval()
    return value


def _eval_cost(model, lean: bool, reps: int = 20) -> float:
    """Seconds per likelihood + gradient evaluation (best of 3 batches of ``reps``)."""
    _, closure = _mll_and_closure(model, lean)

    def batch():
        for _ in range(reps):
            closure()

    t = best_time(batch, 3) / reps
    model.eval()
    return t


def profile_cell(name: str, N: int) -> dict:
    p = make_suite_problem(name, seed=0)
    lo, hi = p.bounds
    X = lo + (hi - lo) * SobolEngine(p.dim, scramble=True, seed=1).draw(N, dtype=DT)
    Y = p.f(X)
    bounds = p.bounds
    out: dict = {"problem": name, "N": N, "d": p.dim, "n": p.num_objectives}
    cold = practical_multitask_gp(X, Y, bounds, fit=False)
    out["cold_fit_s"], out["cold_fit_evals"] = _fit(cold, lean=False)
    lean = practical_multitask_gp(X, Y, bounds, fit=False)
    out["lean_cold_fit_s"], out["lean_cold_fit_evals"] = _fit(lean, lean=True)
    mem = practical_multitask_gp(X, Y, bounds, fit=False)
    out["lean_memory_cold_fit_s"], out["lean_memory_cold_fit_evals"] = _fit(
        mem, lean=True, memory=True)
    prev = practical_multitask_gp(X[:-2], Y[:-2], bounds, fit=False)
    fit_practical_model(prev)
    warm = practical_multitask_gp(X, Y, bounds, fit=False)
    out["warm_fit_s"], out["warm_fit_evals"] = _fit(warm, lean=True, warm=prev, memory=True)
    for key, m in (("cold", cold), ("lean_cold", lean), ("lean_memory_cold", mem),
                   ("warm", warm)):
        out[f"mll_{key}"] = _mll(m)
    out["eval_s_botorch_closure"] = _eval_cost(cold, lean=False)
    out["eval_s_lean_closure"] = _eval_cost(cold, lean=True)
    stgp = SingleTaskGP(X, Y[:, :1], outcome_transform=Standardize(m=1),
                        input_transform=Normalize(p.dim, bounds=bounds))
    out["stgp_fit_s"], out["stgp_fit_evals"] = _fit(stgp, lean=False)
    out["eval_s_stgp"] = _eval_cost(stgp, lean=False)
    t0 = time.perf_counter()
    model_list = fitted_model_list(X, Y, bounds)
    out["parego_fit_s"] = time.perf_counter() - t0
    cfg = RunConfig(horizon=20, bound="directional", seed=0)
    lam = torch.full((p.num_objectives,), 1.0 / p.num_objectives, dtype=DT)
    scal = ChebyshevScalarization(lam, ref_point=p.ref_point)
    mt_acq = get_algorithm(NEW).build(p, cfg).acquisition_factory
    pe_acq = get_algorithm(ANCHOR).build(p, cfg).acquisition_factory
    opt = BoxOptimizer(bounds, num_restarts=4, raw_samples=256, seed=0)
    out["mtucb_acq_s"] = best_time(lambda: opt(mt_acq(lean, scal)), 2)
    out["parego_acq_s"] = best_time(lambda: opt(pe_acq(model_list, scal)), 2)
    return out


# ----------------------------------------------------------------------------- rounds
def round_unit(name: str, k: int, algorithm: str, horizon: int) -> dict:
    problem = make_suite_problem(name, seed=k)
    t0 = time.perf_counter()
    tr = run_trial(problem, algorithm, horizon, seed=k, trial=k, bound="directional",
                   initial_design="sobol")
    wall = [r.wall_time for r in tr.history.rounds]
    return {
        "problem": name, "trial": k, "algorithm": algorithm, "horizon": horizon,
        "n0": int(tr.history.initial_X.shape[0]),
        "wall_time_per_round": sum(wall) / len(wall), "wall_times": wall,
        "hv_pct": 100.0 * float(tr.hypervolume[-1]) / problem.max_hv,
        "time_average_regret": float(tr.regret.mean()),
        "unit_seconds": time.perf_counter() - t0,
    }


def _mean_std(v: list[float]) -> tuple[float, float]:
    t = torch.tensor(v, dtype=DT)
    return float(t.mean()), (float(t.std()) if len(v) > 1 else 0.0)


def _paired(by: dict, alg: str, ks: list[int], label: str) -> dict:
    """``alg`` − ``OLD`` on trials ``ks``: time ratio, HV % and R_C(T)/T (sign tests)."""
    out: dict = {f"time_ratio_{label}_vs_old": sum(
        by[alg, k]["wall_time_per_round"] for k in ks) / sum(
        by[OLD, k]["wall_time_per_round"] for k in ks)}
    dhv = [by[alg, k]["hv_pct"] - by[OLD, k]["hv_pct"] for k in ks]
    drc = [by[alg, k]["time_average_regret"] - by[OLD, k]["time_average_regret"] for k in ks]
    w, lo = sum(d > 1e-9 for d in dhv), sum(d < -1e-9 for d in dhv)
    out[f"hv_{label}_minus_old"] = {"mean_std": _mean_std(dhv), "higher_lower": [w, lo],
                                    "sign_p": sign_test_p(w, lo), "per_trial": dhv}
    w, lo = sum(d < -1e-12 for d in drc), sum(d > 1e-12 for d in drc)
    out[f"rc_{label}_minus_old"] = {"mean_std": _mean_std(drc), "lower_higher": [w, lo],
                                    "sign_p": sign_test_p(w, lo), "per_trial": drc}
    return out


# ------------------------------------------------------------- ablation variants (script-only)
def _variant(kind: str):
    """MT-UCB with one of its two changes only: ``warm`` (warm-started lean refits after every
    round) or ``schedule`` (cold refits by ``practical_multitask_gp`` on ``RefitSchedule``)."""

    def build(problem, cfg: RunConfig) -> AlgorithmSetup:
        acq = get_algorithm(NEW).build(problem, cfg).acquisition_factory
        bounds = problem.bounds
        if kind == "warm":
            return AlgorithmSetup(WarmStartPracticalFactory(bounds), acq, update="refit")
        return AlgorithmSetup(lambda X, Y: practical_multitask_gp(X, Y, bounds), acq,
                              update="condition", refit_every=RefitSchedule())

    return build


VARIANTS = {
    "MT-UCB-warm-every-round": _variant("warm"),
    "MT-UCB-cold-schedule": _variant("schedule"),
}


def register_variants() -> None:
    """Add :data:`VARIANTS` to the registry of this process (the script's ablation only)."""
    for name, build in VARIANTS.items():
        ALGORITHMS[name] = AlgorithmSpec(name, "multi_task", f"ablation of MT-UCB ({name})",
                                         build, practical=True)


def summarize(rounds: list[dict]) -> dict:
    summary: dict = {}
    for name in sorted({r["problem"] for r in rounds}):
        by = {(r["algorithm"], r["trial"]): r for r in rounds if r["problem"] == name}
        trials = sorted({k for (_, k) in by})
        both = [k for k in trials if (OLD, k) in by and (NEW, k) in by]
        full = [k for k in both if (ANCHOR, k) in by]
        s: dict = {"trials_paired": both, "trials_with_anchor": full}
        for alg in (OLD, NEW, ANCHOR):
            ks = [k for k in trials if (alg, k) in by]
            s[alg] = {
                "trials": ks,
                "s_per_round": _mean_std([by[alg, k]["wall_time_per_round"] for k in ks]),
                "hv_pct": _mean_std([by[alg, k]["hv_pct"] for k in ks]),
                "time_average_regret": _mean_std([by[alg, k]["time_average_regret"] for k in ks]),
            }
        if full:
            anchor = sum(by[ANCHOR, k]["wall_time_per_round"] for k in full)
            for alg in (OLD, NEW):
                own = sum(by[alg, k]["wall_time_per_round"] for k in full)
                s[f"time_ratio_{alg}_vs_{ANCHOR}"] = own / anchor
        if both:
            s.update(_paired(by, NEW, both, "new"))
        for alg in VARIANTS:
            ks = [k for k in trials if (OLD, k) in by and (alg, k) in by]
            if ks:
                s[alg] = {"trials": ks, "s_per_round": _mean_std(
                    [by[alg, k]["wall_time_per_round"] for k in ks])}
                s.update(_paired(by, alg, ks, alg))
        summary[name] = s
    return summary


# ----------------------------------------------------------------------------- main
def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("profile", "rounds", "summary"), default="rounds")
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    ap.add_argument("--sizes", nargs="+", type=int, default=[10, 20, 40])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--anchor-trials", type=int, default=2)
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--out", type=Path, default=OUT, help="raw units (read back to continue)")
    ap.add_argument("--summary", type=Path, default=SUMMARY, help="summary JSON")
    ap.add_argument("--variants", action="store_true",
                    help="rounds: run only the two one-change ablations of MT-UCB")
    args = ap.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    register_variants()
    data = _load(args.out)
    data.setdefault("commit", {})[args.part] = provenance()["commit"]
    if args.part == "profile":
        cells = []
        for name in args.problems:
            for N in args.sizes:
                cell = profile_cell(name, N)
                cells.append(cell)
                print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v)
                                  for k, v in cell.items()}), flush=True)
        data["profile"] = cells
    elif args.part == "rounds":
        done = {(r["problem"], r["trial"], r["algorithm"]) for r in data.get("rounds", [])}
        data.setdefault("rounds", [])
        for k in range(args.trials):
            for name in args.problems:
                algs = [OLD, NEW] + ([ANCHOR] if k < args.anchor_trials else [])
                if args.variants:
                    algs = list(VARIANTS)
                algs = algs[k % len(algs):] + algs[: k % len(algs)]  # rotate the order
                for alg in algs:
                    if (name, k, alg) in done:
                        continue
                    unit = round_unit(name, k, alg, args.horizon)
                    data["rounds"].append(unit)
                    _save(args.out, data)
                    print(f"{name} trial {k} {alg}: {unit['wall_time_per_round']:.3f} s/round, "
                          f"HV {unit['hv_pct']:.1f} %", flush=True)
    data["summary"] = summarize(data.get("rounds", []))
    _save(args.out, data)
    write_summary(args.summary, {k: v for k, v in data.items() if k != "rounds"}, indent=1)
    print(json.dumps(data["summary"], indent=1, default=lambda x: None)[:4000])


if __name__ == "__main__":
    main()
