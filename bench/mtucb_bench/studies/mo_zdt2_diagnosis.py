"""Why practical MT-UCB stalls on ZDT2 (issue 16), and the suite-wide judgement of the fixes.

``diagnose`` runs the suite's MT-UCB (``ucb-icm`` of ``mo_dtlz2_diagnosis.py``: the ICM model
refitted every round, ``ChebyshevScalarization.from_data``, directional UCB, β = 1,
``BoxOptimizer(num_restarts=4, raw_samples=256)`` with the trial's seed) on ZDT2 through
``run_suite_protocol`` and records per round: λ_t, the four restarts' points and values (one
``optimize_acqf(..., return_best_only=False)`` call with the BoxOptimizer's seed: its best is
the BoxOptimizer's proposal), whether the proposal is an evaluated point, the posterior mean and
std there and at the TRUE maximiser of the same s_λ (ZDT2's Pareto set is x_2..x_4 = 0, so the
augmented Chebyshev maximiser, Pareto optimal for ρ > 0, is found by brute force on a grid of
x_1; a 2^14-point Sobol sample checks that nothing beats it), the fitted noise, the
scalarization's span r_i, reference z and the share of the Pareto front that lies above z
(the only part s_λ can rank above z), and which part decides the round:

    scalarization  the true s_λ maximiser is within 10⁻³ of an evaluated point
    found          it is new and the proposal is it (within 10⁻³)
    model          it is elsewhere and the UCB there is below the UCB at the proposal
    optimizer      the UCB there is above the proposal's (L-BFGS-B missed it)

``counterfactual`` swaps z and r_i at the stuck state (which of the two decides); ``timing``
measures the seconds per round of ``ref`` and ``pred-front`` and the share spent in
``predicted_anchors``.
``run`` / ``summarize`` judge the arms of :data:`ARMS` on the whole suite (same protocol,
paired trials, sign test): ``ref`` (the MT-UCB entry), ``pred-front`` (``from_data(...,
predicted=μ(x*), span="front")``: reference point and ranges from the observed non-dominated
points and the model's payoff table, ``predicted_anchors``) and ``dedup``
(:class:`~botorch_mtucb.acquisition.dedup.DedupOptimizer` with the BoxOptimizer's settings);
``pred-only`` and ``span-front`` are the two halves of ``pred-front`` alone.

Run (single-threaded, one process; resumable)::

    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py diagnose --trials 5
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py counterfactual
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py run --trials 5
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py run --trials 10 --arms ref pred-front
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py run --trials 5 --arms pred-only span-front
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py summarize
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_zdt2_diagnosis.py timing --trials 2

(``diagnose --arm pred-front --out <results>/mo_zdt2_diagnosis_pred_front.json``: the fix's
rounds.) JSON: ``results/mo_zdt2_diagnosis.json`` (rounds, and ``_pred_front``),
``results/mo_zdt2_counterfactual.json``, ``results/mo_zdt2_timing.json``,
``results/mo_zdt2/<problem>/<arm>__t<k>.json`` (units), ``results/mo_zdt2.json`` / ``.md``
(summary).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from botorch.optim import optimize_acqf
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.dedup import DedupOptimizer
from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.utils.initial_design import initial_design_size
from mtucb_bench.mo_suite_problems import (
    make_suite_problem,
    run_suite_protocol,
    suite_metrics,
    trial_sobol_points,
)

ROOT = Path(__file__).resolve().parent / "results"
DT = torch.float64
PROBLEMS = ("zdt2", "branin-currin", "vehicle-safety", "car-side-impact", "zdt1", "zdt3",
            "dtlz2", "corr-rff", "corr-hartmann")
ARMS = ("ref", "pred-front", "dedup", "pred-only", "span-front")


def design(problem, trial: int) -> tuple[Tensor, int]:
    """The trial's scrambled-Sobol design (as ``mo_dtlz2_diagnosis``) and its size."""
    n0 = initial_design_size(problem.dim)
    return trial_sobol_points(problem, trial, n0), n0


def factories(arm: str, problem, trial: int = 0):
    """``(model_factory, acquisition_factory, data)`` of an arm (the ``ucb-icm`` parts).

    ``pred-front``: ``from_data(..., predicted=μ(x*), span="front")`` with μ(x*) the model's
    payoff table (``scalarization_chebyshev.predicted_anchors``): z and r_i from the observed
    non-dominated points and the predicted per-objective optima. Its two parts alone:
    ``pred-only`` (``predicted``, ranges of all data), ``span-front`` (``span="front"`` only).
    """
    bounds, data = problem.bounds, {"round": 0}

    def model_factory(X: Tensor, Y: Tensor):
        data["X"], data["Y"] = X, Y
        return practical_multitask_gp(X, Y, bounds)

    def acq(model, scal):
        kw = {"span": "front"} if arm in ("pred-front", "span-front") else {}
        if arm in ("pred-front", "pred-only"):
            data["round"] += 1
            t0 = time.perf_counter()
            kw["predicted"] = predicted_anchors(
                model, bounds, data["Y"], seed=4 * (1000 * trial + data["round"]))
            data.setdefault("anchor_s", []).append(time.perf_counter() - t0)
        s = ChebyshevScalarization.from_data(scal.weights, data["Y"], **kw)
        data["s"] = s
        return ScalarizedMultiTaskUCB(model, s, 1.0, bound="directional")

    return model_factory, acq, data


def _unit(problem, X: Tensor) -> Tensor:
    b = problem.bounds
    return (X - b[0]) / (b[1] - b[0])


class _Recorder:
    """The BoxOptimizer's call, with every restart kept, and the round's diagnostics."""

    def __init__(self, problem, seed: int, data: dict) -> None:
        self.problem, self.seed, self.data, self.calls, self.rows = problem, seed, data, 0, []
        u = torch.linspace(0, 1, 10001, dtype=DT)
        self.front_X = torch.cat([u[:, None], torch.zeros(u.numel(), problem.dim - 1,
                                                          dtype=DT)], -1)
        self.sobol_X = SobolEngine(problem.dim, scramble=True, seed=99).draw(2**14).to(DT)
        with torch.no_grad():
            self.front_F = problem.f(self.front_X)
            self.sobol_F = problem.f(self.sobol_X)

    def __call__(self, acqf: ScalarizedMultiTaskUCB) -> Tensor:
        opts = {"seed": self.seed + self.calls}
        self.calls += 1
        bounds = self.problem.bounds
        cands, vals = optimize_acqf(acqf, bounds=bounds, q=1, num_restarts=4, raw_samples=256,
                                    options=opts, return_best_only=False)
        best = int(vals.argmax())
        x = cands[best].detach()
        self.rows.append(self._diagnose(acqf, cands.detach().squeeze(1), vals.detach(), x))
        return x

    @torch.no_grad()
    def _diagnose(self, acqf, cands: Tensor, vals: Tensor, x: Tensor) -> dict:
        X, Y, s, model = self.data["X"], self.data["Y"], self.data["s"], acqf.model
        U = _unit(self.problem, X)
        dist = (_unit(self.problem, x) - U).abs().amax(-1)
        s_front = s(self.front_F)
        k = int(s_front.argmax())
        x_true = self.front_X[k : k + 1]
        s_max = float(s_front[k])
        s_sobol = float(s(self.sobol_F).max())
        dist_true = (self.front_X[k] - U).abs().amax(-1)
        post = model.posterior(torch.cat([x, x_true]))
        mean, std = post.mean, post.variance.clamp_min(0).sqrt()
        ucb_true = float(acqf(x_true.unsqueeze(0)))
        ucb_x = float(acqf(x.unsqueeze(0)))
        mean_s = ScalarizedMultiTaskUCB(model, s, 0.0, bound="directional")
        nd = Y[is_non_dominated(Y)]
        span_all = Y.max(0).values - Y.min(0).values
        span_nd = nd.max(0).values - nd.min(0).values
        above = (self.front_F > s.ref_point).all(-1)
        lik = model.likelihood
        noise = getattr(lik, "task_noises", None)
        noise = lik.noise if noise is None else noise
        if float(dist_true.min()) < 1e-3:
            decides = "scalarization"
        elif float((_unit(self.problem, x)[0] - self.front_X[k]).abs().max()) < 1e-3:
            decides = "found"
        elif ucb_true < ucb_x:
            decides = "model"
        else:
            decides = "optimizer"
        return {
            "t": len(self.rows) + 1, "N": X.shape[0], "weights_eff": s.weights.tolist(),
            "ref_point": s.ref_point.tolist(), "span_all": span_all.tolist(),
            "span_nondominated": span_nd.tolist(), "num_nondominated": nd.shape[0],
            "front_share_above_z": float(above.to(DT).mean()),
            "x": x.flatten().tolist(), "evaluated": bool(dist.min() < 1e-6),
            "dist_to_evaluated": float(dist.min()),
            "restart_x": cands.tolist(), "restart_ucb": vals.tolist(),
            "restarts_at_origin": int((_unit(self.problem, cands).abs().amax(-1) < 1e-6).sum()),
            "true_argmax_x1": float(x_true[0, 0]), "true_max": s_max, "sobol_max": s_sobol,
            "true_argmax_evaluated": bool(dist_true.min() < 1e-3),
            "true_at_x": float(s(self.problem.f(x))), "ucb_x": ucb_x, "ucb_true": ucb_true,
            "mean_s_x": float(mean_s(x.unsqueeze(0))),
            "mean_s_true": float(mean_s(x_true.unsqueeze(0))),
            "post_mean_x": mean[0].tolist(), "post_std_x": std[0].tolist(),
            "post_mean_true": mean[1].tolist(), "post_std_true": std[1].tolist(),
            "f_true_argmax": self.problem.f(x_true)[0].tolist(),
            "noise": noise.detach().flatten().tolist(), "decides": decides,
        }


def diagnose(ns: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    problem = make_suite_problem("zdt2")
    out = []
    for trial in range(ns.trials):
        X0, n0 = design(problem, trial)
        mf, acq, data = factories(ns.arm, problem, trial)
        rec = _Recorder(problem, trial, data)
        hist = run_suite_protocol(problem, X0, ns.rounds, mf, acq, trial, optimizer=rec)
        for row, r in zip(rec.rows, hist.rounds, strict=True):
            row["lambda"] = r.weights.tolist()
        out.append({"trial": trial, "arm": ns.arm, "rounds": rec.rows})
        for row in rec.rows:
            print(f"t{trial} r{row['t']:2d} lam {row['lambda'][0]:.2f} eval {row['evaluated']:d} "
                  f"x1* {row['true_argmax_x1']:.3f} {row['decides']:13s} "
                  f"above-z {row['front_share_above_z']:.3f} span {row['span_all'][1]:.3f}/"
                  f"{row['span_nondominated'][1]:.3f} nd {row['num_nondominated']} "
                  f"std@x {max(row['post_std_x']):.1e} rs0 {row['restarts_at_origin']}",
                  flush=True)
    Path(ns.out).write_text(json.dumps(out))


def counterfactual(ns: argparse.Namespace) -> None:
    """At the stuck state (round 10 of each diagnosed trial: f(0) dominates all data), swap z
    and the ranges r_i of s_λ one at a time and report, over 25 λ on a grid, the share whose
    true maximiser on ZDT2's Pareto set is x_1 = 0 (augmented Chebyshev, ρ = 0.05)."""
    problem = make_suite_problem("zdt2")
    u = torch.linspace(0, 1, 10001, dtype=DT)
    F = problem.f(torch.cat([u[:, None], torch.zeros(u.numel(), problem.dim - 1, dtype=DT)], -1))
    r_front = F.max(0).values - F.min(0).values
    rows = []
    for tr in json.loads(Path(ns.diagnosis).read_text()):
        r_all = torch.tensor(tr["rounds"][9]["span_all"], dtype=DT)
        cases = {"z = f(0) - 0.1 r_all, r_all (the default's state)": (F[0] - 0.1 * r_all, r_all),
                 "z = front nadir - 0.1 r_all, r_all": (F.min(0).values - 0.1 * r_all, r_all),
                 "z = f(0) - 0.1 r_front, r_front": (F[0] - 0.1 * r_front, r_front),
                 "z = front nadir - 0.1 r_front, r_front": (F.min(0).values - 0.1 * r_front,
                                                            r_front)}
        for case, (z, r) in cases.items():
            at0 = 0
            for lam1 in torch.linspace(0.02, 0.98, 25, dtype=DT):
                w = torch.stack([lam1, 1 - lam1]) / r
                s = ChebyshevScalarization(w / w.sum(), z, augmentation=0.05)
                at0 += int(u[s(F).argmax()] < 1e-3)
            rows.append({"trial": tr["trial"], "case": case, "share_at_x0": at0 / 25,
                         "r_all": r_all.tolist(), "r_front": r_front.tolist()})
            print(f"t{tr['trial']} {case:52s} share of λ with argmax x_1 = 0: {at0 / 25:.2f}")
    Path(ns.out).write_text(json.dumps(rows))


def timing(ns: argparse.Namespace) -> None:
    """Wall time per round (the loop's: acquisition, optimisation, refit) of ``ref`` and
    ``pred-front`` and the share of ``pred-front``'s spent in ``predicted_anchors``, on the
    first ``--trials`` trials of every problem (same protocol; no unit files)."""
    torch.set_num_threads(1)
    rows = {}
    for name in ns.problems:
        rows[name] = {}
        for arm in ("ref", "pred-front"):
            wall, anchor = [], []
            for trial in range(ns.trials):
                problem = make_suite_problem(name, seed=trial)
                X0, _ = design(problem, trial)
                mf, acq, data = factories(arm, problem, trial)
                hist = run_suite_protocol(problem, X0, ns.rounds, mf, acq, trial)
                wall += [r.wall_time for r in hist.rounds]
                anchor += data.get("anchor_s", [])
            w = sum(wall) / len(wall)
            a = sum(anchor) / len(wall) if anchor else 0.0
            rows[name][arm] = {"s_per_round": w, "anchors_s_per_round": a,
                               "anchors_share": a / w, "rounds": len(wall)}
        ref, pf = rows[name]["ref"], rows[name]["pred-front"]
        print(f"{name:16s} ref {ref['s_per_round']:.3f} s/round  pred-front "
              f"{pf['s_per_round']:.3f} ({pf['s_per_round'] / ref['s_per_round']:.2f}x), "
              f"anchors {pf['anchors_s_per_round']:.3f} s = {100 * pf['anchors_share']:.0f} %",
              flush=True)
    Path(ns.out).write_text(json.dumps({"trials": ns.trials, "rounds": ns.rounds,
                                        "problems": rows}, indent=1))


def run_unit(name: str, arm: str, trial: int, rounds: int, out: Path) -> dict:
    """One (problem, arm, trial) with the suite's protocol (seeds as ``mo_dtlz2_diagnosis``)."""
    path = out / name / f"{arm}__t{trial}.json"
    if path.exists():
        return json.loads(path.read_text())
    torch.set_num_threads(1)
    problem = make_suite_problem(name, seed=trial)
    X0, n0 = design(problem, trial)
    mf, acq, _ = factories(arm, problem, trial)
    opt = None
    if arm == "dedup":  # the suite's BoxOptimizer settings and seed
        opt = DedupOptimizer(problem.bounds, num_restarts=4, raw_samples=256, seed=trial)
    start = time.perf_counter()
    hist = run_suite_protocol(problem, X0, rounds, mf, acq, trial, optimizer=opt)
    loop_s = time.perf_counter() - start
    X = torch.cat([X0, hist.X])
    W = torch.stack([r.weights for r in hist.rounds])
    wall = torch.tensor([r.wall_time for r in hist.rounds], dtype=DT)
    m = suite_metrics(problem, X, W, wall, num_initial=n0, bayes_samples=64, seed=trial + 4)
    U = _unit(problem, X)
    repeats = sum(bool(((U[i] - U[:i]).abs().amax(-1) < 1e-6).any()) for i in range(n0, len(U)))
    rec = {"problem": name, "arm": arm, "trial": trial, "rounds": rounds, "n0": n0,
           "hv_pct": m["hv_pct"], "hv_pct_curve": [float(v) for v in m["hv_pct_curve"]],
           "time_average_regret": float(m["time_average_regret"][-1]), "repeats": repeats,
           "wall_time_per_round": m["wall_time_per_round"], "loop_s": loop_s, "X": X.tolist()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return rec


def _mean_std(v: list[float]) -> tuple[float, float]:
    t = torch.tensor(v, dtype=DT)
    return float(t.mean()), float(t.std()) if len(v) > 1 else 0.0


def summarize(ns: argparse.Namespace) -> None:
    from mtucb_bench.measure import sign_test_p

    summary, lines = {}, ["| problem | arm | trials | HV % | HV w/l vs ref (Δ, p) | R_C(T)/T | "
                          "R_C lower/higher | repeats | s/round |",
                          "|---|---|---|---|---|---|---|---|---|"]
    for name in PROBLEMS:
        d = Path(ns.units) / name
        if not d.is_dir():
            continue
        recs: dict[str, dict[int, dict]] = {}
        for f in sorted(d.glob("*.json")):
            r = json.loads(f.read_text())
            recs.setdefault(r["arm"], {})[r["trial"]] = r
        ref, rows = recs.get("ref", {}), {}
        for arm in [a for a in ARMS if a in recs]:
            by = recs[arm]
            row = {"trials": len(by), "hv_pct": _mean_std([r["hv_pct"] for r in by.values()]),
                   "time_average_regret": _mean_std([r["time_average_regret"]
                                                     for r in by.values()]),
                   "repeats": sum(r["repeats"] for r in by.values()),
                   "wall_time_per_round": _mean_std([r["wall_time_per_round"]
                                                     for r in by.values()])}
            common = sorted(set(by) & set(ref))
            vs = ""
            if arm != "ref" and common:
                dh = [by[k]["hv_pct"] - ref[k]["hv_pct"] for k in common]
                dr = [by[k]["time_average_regret"] - ref[k]["time_average_regret"]
                      for k in common]
                w, l_ = sum(x > 0 for x in dh), sum(x < 0 for x in dh)
                row["vs_ref"] = {"wins": w, "losses": l_, "delta_hv": _mean_std(dh),
                                 "sign_p": sign_test_p(w, l_), "rc_lower": sum(x < 0 for x in dr),
                                 "rc_higher": sum(x > 0 for x in dr), "delta_rc": _mean_std(dr)}
                v = row["vs_ref"]
                vs = (f"{w}/{l_} ({v['delta_hv'][0]:+.1f}, p = {v['sign_p']:.2f}) | ",
                      f"{v['rc_lower']}/{v['rc_higher']}")
            hv, rc = row["hv_pct"], row["time_average_regret"][0]
            lines.append(f"| {name} | {arm} | {row['trials']} | {hv[0]:.1f} ± {hv[1]:.1f} | "
                         f"{vs[0] if vs else '— | '}{rc:.4f} | {vs[1] if vs else '—'} | "
                         f"{row['repeats']} | {row['wall_time_per_round'][0]:.2f} |")
            rows[arm] = row
        summary[name] = rows
    Path(ns.json).write_text(json.dumps(summary, indent=1))
    Path(ns.json).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("diagnose")
    g.add_argument("--trials", type=int, default=3)
    g.add_argument("--rounds", type=int, default=20)
    g.add_argument("--arm", default="ref", choices=ARMS[:2])
    g.add_argument("--out", default=str(ROOT / "mo_zdt2_diagnosis.json"))
    c = sub.add_parser("counterfactual")
    c.add_argument("--diagnosis", default=str(ROOT / "mo_zdt2_diagnosis.json"))
    c.add_argument("--out", default=str(ROOT / "mo_zdt2_counterfactual.json"))
    tm = sub.add_parser("timing")
    tm.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    tm.add_argument("--trials", type=int, default=2)
    tm.add_argument("--rounds", type=int, default=20)
    tm.add_argument("--out", default=str(ROOT / "mo_zdt2_timing.json"))
    r = sub.add_parser("run")
    r.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    r.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    r.add_argument("--trials", type=int, default=5)
    r.add_argument("--rounds", type=int, default=20)
    r.add_argument("--units", default=str(ROOT / "mo_zdt2"))
    s = sub.add_parser("summarize")
    s.add_argument("--units", default=str(ROOT / "mo_zdt2"))
    s.add_argument("--json", default=str(ROOT / "mo_zdt2.json"))
    ns = ap.parse_args(argv)
    if ns.cmd == "diagnose":
        diagnose(ns)
    elif ns.cmd == "counterfactual":
        counterfactual(ns)
    elif ns.cmd == "timing":
        timing(ns)
    elif ns.cmd == "run":
        for name in ns.problems:
            for trial in range(ns.trials):
                for arm in ns.arms:
                    rec = run_unit(name, arm, trial, ns.rounds, Path(ns.units))
                    print(f"{name} {arm} t{trial} HV {rec['hv_pct']:.1f} repeats "
                          f"{rec['repeats']} ({rec['loop_s']:.0f} s)", flush=True)
    else:
        summarize(ns)


if __name__ == "__main__":
    main(sys.argv[1:])
