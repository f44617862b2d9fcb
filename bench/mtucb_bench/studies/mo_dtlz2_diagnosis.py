"""Why practical MT-UCB is below Sobol on DTLZ2 (issue 16): swap one component at a time.

MT-UCB (the suite's ``MT-UCB`` entry: :func:`practical_multitask_gp` refitted every round,
``ChebyshevScalarization.from_data``, directional ``ScalarizedMultiTaskUCB``, β = 1,
``BoxOptimizer(num_restarts=4, raw_samples=256)``) against qLogNParEGO, exchanging the model,
the scalarization, the acquisition or the optimizer between the two, one at a time, on the
suite's problems (normalised units, noise-free, HV % of BoTorch's ``max_hv``). Arms
(:data:`ARMS`)::

    ucb-icm            the MT-UCB entry (reference)
    ucb-icm-b0         β = 0 (scalarized posterior mean)
    ucb-list           MT-UCB's acquisition on qLogNParEGO's model (fitted ModelListGP)
    ucb-icm-zmin       MT-UCB with z = the observed minimum (no margin)
    ucb-icm-zmax       MT-UCB with qLogNParEGO's reference: z = the observed maximum (ideal
                       point): BoTorch's ParEGO maximises −max_i λ_i (y*_i − y_i)/r_i
                       = min_i λ_i (y_i − y*_i)/r_i (+ ρ Σ), i.e. z above the front
    nei-icm-zmax       qLogNEI of that scalarization on the ICM model
    parego-icm         qLogNParEGO on MT-UCB's ICM model
    parego-list        the qLogNParEGO entry
    nei-icm            qLogNEI of MT-UCB's scalarization on the ICM model (acquisition swap)
    qucb-icm           BoTorch's qUCB (β = 1) of MT-UCB's scalarization s(f(x)) on the ICM
                       model: a UCB of the scalarized value instead of s of per-objective UCBs
    ucb-icm-gamma      MT-UCB with BoTorch's former Gamma(3, 6) lengthscale prior
    sobol              random search: the trial's Sobol sequence continued (HV only)

Per trial it records, besides HV %, where the proposals lie: the share of proposal
coordinates within 10⁻³ of the box (``boundary``), and the fitted lengthscales (unit cube)
of the ICM model at the last round. ``probe`` fits the models on one design and prints, per
λ, the true scalarized value at the argmax of each acquisition (no loop).

Run (single-threaded, one process; resumable)::

    python -m mtucb_bench.studies.mo_dtlz2_diagnosis run --problems dtlz2 --trials 5
    python -m mtucb_bench.studies.mo_dtlz2_diagnosis summarize

Summary: ``docs/results/studies/mo_dtlz2_diagnosis.json``; one JSON per unit under ``--units``
(default ``benchmark-runs/mo_dtlz2_diagnosis``, git-ignored).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import torch
from botorch.acquisition import qUpperConfidenceBound
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.acquisition.objective import GenericMCObjective
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    ScalarizedMultiTaskUCB,
)
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.utils.initial_design import initial_design_size
from mtucb_bench.baselines import fitted_model_list
from mtucb_bench.measure import sign_test_p
from mtucb_bench.mo_suite_problems import (
    make_suite_problem,
    run_suite_protocol,
    suite_metrics,
    trial_sobol_points,
)
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary

UNITS = RUNS / "mo_dtlz2_diagnosis"  # one JSON per (problem, arm, trial) (raw, git-ignored)
SUMMARY = RESULTS / "studies" / "mo_dtlz2_diagnosis.json"
DT = torch.float64
ARMS = ("ucb-icm", "ucb-icm-b0", "ucb-list", "ucb-icm-zmin", "parego-icm", "parego-list",
        "nei-icm", "qucb-icm", "ucb-icm-gamma", "sobol", "ucb-icm-zmax", "nei-icm-zmax")


def _scal(arm: str, weights: Tensor, Y: Tensor) -> ChebyshevScalarization:
    s = ChebyshevScalarization.from_data(weights, Y)
    if arm.endswith("-zmin"):
        s = ChebyshevScalarization(s.weights, Y.min(0).values, augmentation=s.augmentation)
    if arm.endswith("-zmax"):  # qLogNParEGO's: Chebyshev distance to the observed ideal point
        s = ChebyshevScalarization(s.weights, Y.max(0).values, augmentation=s.augmentation)
    return s


def arm_setup(arm: str, problem, seed: int):
    """``(model_factory, acquisition_factory, model_data)`` of an arm."""
    bounds = problem.bounds
    data: dict[str, Tensor] = {}
    icm = not arm.endswith("-list")

    def model_factory(X: Tensor, Y: Tensor):
        data["X"], data["Y"] = X, Y
        if arm.endswith("-gamma"):  # (the results: a monkeypatch of _matern, same kernel)
            return practical_multitask_gp(X, Y, bounds, lengthscale_prior="gamma")
        if icm:
            return practical_multitask_gp(X, Y, bounds)
        return fitted_model_list(X, Y, bounds)

    def acq(model, scal):
        t = data["X"].shape[0]
        sampler = SobolQMCNormalSampler(torch.Size([64]), seed=seed * 100_003 + t)
        if arm.startswith("parego"):  # as the suite's entry, with X_baseline in raw units
            return qLogNParEGO(model, X_baseline=data["X"], sampler=sampler,
                               scalarization_weights=scal.weights.to(data["X"]))
        s = _scal(arm, scal.weights, data["Y"])
        if arm == "qucb-icm":  # UCB of the scalarized objective s(f(x)) itself, by QMC
            return qUpperConfidenceBound(model, beta=1.0, sampler=sampler,
                                         objective=GenericMCObjective(lambda Z, X=None: s(Z)))
        if arm.startswith("nei-icm"):
            return qLogNoisyExpectedImprovement(
                model, X_baseline=data["X"], sampler=sampler,
                objective=GenericMCObjective(lambda Z, X=None: s(Z)),
            )
        beta = 0.0 if arm.endswith("-b0") else 1.0
        return ScalarizedMultiTaskUCB(model, s, beta, bound="directional")

    return model_factory, acq, data


class _SobolHistory:
    """The two fields of a loop history the metrics read, for random search."""

    def __init__(self, X: Tensor, n: int) -> None:
        self.X = X
        w = torch.full((n,), 1.0 / n, dtype=DT)
        self.rounds = [type("Round", (), {"weights": w, "wall_time": 0.0})() for _ in X]


def run_unit(name: str, arm: str, trial: int, rounds: int, out: Path) -> dict:
    """One (problem, arm, trial) with the suite's protocol (same seeds as ``mo_ablation``)."""
    path = out / name / f"{arm}__t{trial:02d}.json"
    if path.exists():
        return json.loads(path.read_text())
    torch.set_num_threads(1)
    s = trial
    problem = make_suite_problem(name, seed=s)
    d, n, bounds = problem.dim, problem.num_objectives, problem.bounds
    n0 = initial_design_size(d)
    X0 = trial_sobol_points(problem, s, n0)
    model_factory, acq, data = arm_setup(arm, problem, s)
    start = time.perf_counter()
    if arm == "sobol":  # the trial's Sobol sequence continued (the suite's Sobol entry)
        hist = _SobolHistory(trial_sobol_points(problem, s, n0 + rounds)[n0:], n)
    else:
        hist = None
    hist = hist or run_suite_protocol(problem, X0, rounds, model_factory, acq, s)
    loop_s = time.perf_counter() - start
    X = torch.cat([X0, hist.X])
    W = torch.stack([r.weights for r in hist.rounds])
    wall = torch.tensor([r.wall_time for r in hist.rounds], dtype=DT)
    m = suite_metrics(problem, X, W, wall, num_initial=n0, bayes_samples=64, seed=s + 4)
    U = (hist.X - bounds[0]) / (bounds[1] - bounds[0])
    on_face = ((U < 1e-3) | (U > 1 - 1e-3)).to(DT)
    model = practical_multitask_gp(X, problem.f(X).detach(), bounds) if name == "dtlz2" else None
    ls = None if model is None else model.covar_module.data_covar_module.lengthscale.flatten()
    rec = {
        "problem": name, "arm": arm, "trial": trial, "rounds": rounds, "n0": n0,
        "hv_pct": m["hv_pct"], "hv_pct_curve": [float(v) for v in m["hv_pct_curve"]],
        "time_average_regret": float(m["time_average_regret"][-1]),
        "boundary_coord_share": float(on_face.mean()),
        "boundary_coord_share_per_dim": on_face.mean(0).tolist(),
        "icm_lengthscale_final": None if ls is None else ls.tolist(),
        "wall_time_per_round": m["wall_time_per_round"], "loop_s": loop_s, "X": X.tolist(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return rec


def probe(ns: argparse.Namespace) -> None:
    """Round 1 on DTLZ2, no loop: fit the ICM model on the 12-point design, then for a few λ
    maximise MT-UCB (β = 1, 0) and qLogNEI and compare the true scalarized value at the argmax
    with the same point with DTLZ2's distance variables x_3..x_6 moved to 0.5 (its Pareto set).
    """
    torch.set_num_threads(1)
    rows = []
    for seed in range(ns.trials):
        problem = make_suite_problem("dtlz2", seed=seed)
        d, bounds = problem.dim, problem.bounds
        X = SobolEngine(d, scramble=True, seed=seed + 1).draw(initial_design_size(d)).to(DT)
        Y = problem.f(X).detach()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = practical_multitask_gp(X, Y, bounds)
        ls = model.covar_module.data_covar_module.lengthscale.detach().flatten()
        gen = torch.Generator().manual_seed(seed)
        for k in range(ns.weights):
            lam = -torch.log(torch.rand(3, generator=gen, dtype=DT))
            s = ChebyshevScalarization.from_data(lam / lam.sum(), Y)
            sampler = SobolQMCNormalSampler(torch.Size([64]), seed=1)
            acqs = {
                "ucb-b1": ScalarizedMultiTaskUCB(model, s, 1.0),
                "ucb-b0": ScalarizedMultiTaskUCB(model, s, 0.0),
                "nei": qLogNoisyExpectedImprovement(
                    model, X_baseline=X, sampler=sampler,
                    objective=GenericMCObjective(lambda Z, X=None, _s=s: _s(Z))),
            }
            row = {"seed": seed, "weights": (lam / lam.sum()).tolist(),
                   "best_observed": float(s(Y).max()), "lengthscale": ls.tolist()}
            for name, acqf in acqs.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=256,
                                         options={"seed": 10 * seed + k})
                xc = x.clone()
                xc[..., 2:] = 0.5
                with torch.no_grad():
                    pred = float(ScalarizedMultiTaskUCB(model, s, 0.0)(x.unsqueeze(0)))
                row[name] = {"distance_x": x[0, 2:].tolist(), "predicted_mean": pred,
                             "true": float(s(problem.f(x))), "true_at_center": float(
                                 s(problem.f(xc)))}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "lengthscale"}), flush=True)
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(rows))


def _stats(v: list[float]) -> tuple[float, float]:
    t = torch.tensor(v, dtype=DT)
    return float(t.mean()), float(t.std()) if len(v) > 1 else 0.0


def summarize(ns: argparse.Namespace) -> None:
    summary: dict = {}
    for prob_dir in sorted(p for p in Path(ns.units).iterdir() if p.is_dir()):
        recs: dict[str, dict[int, dict]] = {}
        for f in sorted(prob_dir.glob("*.json")):
            r = json.loads(f.read_text())
            recs.setdefault(r["arm"], {})[r["trial"]] = r
        ref = recs.get(ns.reference, {})
        rows = {}
        for arm, by_trial in recs.items():
            hv = [r["hv_pct"] for r in by_trial.values()]
            row = {"trials": len(hv), "hv_pct": _stats(hv),
                   "time_average_regret": _stats([r["time_average_regret"]
                                                  for r in by_trial.values()]),
                   "boundary_coord_share": _stats([r["boundary_coord_share"]
                                                   for r in by_trial.values()]),
                   "wall_time_per_round": _stats([r["wall_time_per_round"]
                                                  for r in by_trial.values()])}
            common = sorted(set(by_trial) & set(ref))
            if arm != ns.reference and common:
                diff = [by_trial[k]["hv_pct"] - ref[k]["hv_pct"] for k in common]
                wins = sum(x > 0 for x in diff)
                losses = sum(x < 0 for x in diff)
                rc = [by_trial[k]["time_average_regret"] - ref[k]["time_average_regret"]
                      for k in common]
                row["vs_reference"] = {"wins": wins, "losses": losses,
                                       "delta_hv": _stats(diff),
                                       "sign_p": sign_test_p(wins, losses),
                                       "rc_lower": sum(x < 0 for x in rc),
                                       "rc_higher": sum(x > 0 for x in rc),
                                       "delta_rc": _stats(rc)}
            rows[arm] = row
        summary[prob_dir.name] = rows
    for prob, rows in summary.items():
        print(f"\n{prob}")
        for arm, r in rows.items():
            vs = r.get("vs_reference")
            txt = "" if vs is None else (
                f"  vs ref {vs['wins']}/{vs['losses']} d={vs['delta_hv'][0]:+.1f} "
                f"p={vs['sign_p']:.3f}  R_C lower/higher {vs['rc_lower']}/{vs['rc_higher']} "
                f"dR_C={vs['delta_rc'][0]:+.4f}")
            print(f"  {arm:16s} n={r['trials']} HV {r['hv_pct'][0]:5.1f} ± {r['hv_pct'][1]:4.1f}"
                  f"  R_C {r['time_average_regret'][0]:.4f}"
                  f"  face {r['boundary_coord_share'][0]:.2f}"
                  f"  s/round {r['wall_time_per_round'][0]:.2f}{txt}")
    write_summary(Path(ns.json), summary)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--problems", nargs="+", default=["dtlz2"])
    r.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    r.add_argument("--trials", type=int, default=5)
    r.add_argument("--rounds", type=int, default=20)
    r.add_argument("--units", default=str(UNITS))
    pr = sub.add_parser("probe")
    pr.add_argument("--trials", type=int, default=3)
    pr.add_argument("--weights", type=int, default=4)
    pr.add_argument("--out", default=str(RUNS / "mo_dtlz2_probe.json"))
    s = sub.add_parser("summarize")
    s.add_argument("--units", default=str(UNITS))
    s.add_argument("--reference", default="ucb-icm")
    s.add_argument("--json", default=str(SUMMARY))
    ns = ap.parse_args()
    if ns.cmd == "run":
        for name in ns.problems:
            for trial in range(ns.trials):
                for arm in ns.arms:
                    rec = run_unit(name, arm, trial, ns.rounds, Path(ns.units))
                    print(f"{name} {arm} t{trial} HV {rec['hv_pct']:.1f} face "
                          f"{rec['boundary_coord_share']:.2f} ({rec['loop_s']:.0f} s)", flush=True)
    elif ns.cmd == "probe":
        probe(ns)
    else:
        summarize(ns)


if __name__ == "__main__":
    main()
