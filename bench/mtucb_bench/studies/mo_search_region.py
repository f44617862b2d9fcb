"""Does a TuRBO trust region fix practical MT-UCB's DTLZ2 failure, and what does it cost?

Arms, all with the suite's protocol (``run_suite_protocol``: T rounds of q = 1, the model
refitted every round, the trial's common random numbers) and the ``ucb-icm`` arm's model and
acquisition of ``bench/mtucb_bench/studies/mo_dtlz2_diagnosis.py`` (``practical_multitask_gp``,
``ChebyshevScalarization.from_data``, directional ``ScalarizedMultiTaskUCB``, β = 1)::

    ref      BoxOptimizer(num_restarts=4, raw_samples=256, seed) on the whole box (the suite's)
    tr-iso   TrustRegionOptimizer(shape="isotropic"), same restarts / samples / seed
    tr-ls    TrustRegionOptimizer(shape="lengthscale") (TuRBO's ℓ_i / geometric-mean widths)
    sobol    the trial's Sobol sequence continued (HV only)

TuRBO's constants only (L_init 0.8, L_min 2⁻⁷, L_max 1.6, τ_succ 3, τ_fail max(4, d)), none
tuned. Initial design per trial: max(5, 2d) scrambled Sobol points (seed ``trial + 1``), as
the suite. Per unit: HV % (final and curve), R_C(T)/T, the share of proposed coordinates
within 1e-3 of a face, and for the trust-region arms the side lengths L per round and the
number of restarts.

Run (single-threaded, one process; resumable, one JSON per unit)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python bench/mtucb_bench/studies/mo_search_region.py run \
        --problems dtlz2 branin-currin --trials 5 --rounds 20
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_search_region.py summarize

Units: ``results/mo_search_region/<problem>/<arm>__t<k>.json``; summary
``results/mo_search_region.json`` and ``.md`` (paired wins/losses vs ``ref``, sign-test p).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch import Tensor

from botorch_mtucb.acquisition.optimizers import BoxOptimizer  # noqa: E402
from botorch_mtucb.acquisition.trust_region import TrustRegionOptimizer  # noqa: E402
from botorch_mtucb.utils.initial_design import initial_design_size  # noqa: E402
from mtucb_bench.measure import sign_test_p  # noqa: E402
from mtucb_bench.mo_suite_problems import (  # noqa: E402
    make_suite_problem,
    run_suite_protocol,
    suite_metrics,
    trial_sobol_points,
)
from mtucb_bench.studies.mo_dtlz2_diagnosis import _SobolHistory, arm_setup  # noqa: E402

ROOT = Path(__file__).resolve().parent / "results"
DT = torch.float64
ARMS = ("ref", "tr-iso", "tr-ls", "sobol")
PROBLEMS = ("dtlz2", "branin-currin", "vehicle-safety", "car-side-impact", "zdt1", "zdt2",
            "zdt3", "corr-rff", "corr-hartmann")


def make_optimizer(arm: str, bounds: Tensor, seed: int):
    """The arm's per-round maximiser (``ref``: the suite's ``BoxOptimizer``)."""
    if arm == "ref":
        return BoxOptimizer(bounds, num_restarts=4, raw_samples=256, seed=seed)
    shape = {"tr-iso": "isotropic", "tr-ls": "lengthscale"}[arm]
    return TrustRegionOptimizer(bounds, num_restarts=4, raw_samples=256, seed=seed, shape=shape)


def run_unit(name: str, arm: str, trial: int, rounds: int, out: Path) -> dict:
    """One (problem, arm, trial); a finished unit is read back, not recomputed."""
    path = out / name / f"{arm}__t{trial}.json"
    if path.exists():
        return json.loads(path.read_text())
    torch.set_num_threads(1)
    s = trial
    problem = make_suite_problem(name, seed=s)
    d, n, bounds = problem.dim, problem.num_objectives, problem.bounds
    n0 = initial_design_size(d)
    points = trial_sobol_points(problem, s, n0 + rounds)
    X0 = points[:n0]
    start = time.perf_counter()
    opt = None
    if arm == "sobol":  # the trial's Sobol sequence continued (the suite's Sobol entry)
        hist = _SobolHistory(points[n0:], n)
    else:
        model_factory, acq, _ = arm_setup("ucb-icm", problem, s)
        opt = make_optimizer(arm, bounds, s)
        hist = run_suite_protocol(problem, X0, rounds, model_factory, acq, s, optimizer=opt)
    loop_s = time.perf_counter() - start
    X = torch.cat([X0, hist.X])
    W = torch.stack([r.weights for r in hist.rounds])
    wall = torch.tensor([r.wall_time for r in hist.rounds], dtype=DT)
    m = suite_metrics(problem, X, W, wall, num_initial=n0, bayes_samples=64, seed=s + 4)
    U = (hist.X - bounds[0]) / (bounds[1] - bounds[0])
    on_face = ((U < 1e-3) | (U > 1 - 1e-3)).to(DT)
    rec = {
        "problem": name, "arm": arm, "trial": trial, "rounds": rounds, "n0": n0,
        "hv_pct": m["hv_pct"], "hv_pct_curve": [float(v) for v in m["hv_pct_curve"]],
        "time_average_regret": None if arm == "sobol" else float(m["time_average_regret"][-1]),
        "boundary_coord_share": float(on_face.mean()),
        "wall_time_per_round": m["wall_time_per_round"], "loop_s": loop_s, "X": X.tolist(),
    }
    if isinstance(opt, TrustRegionOptimizer):
        widths = torch.stack(opt.regions).diff(dim=-2).squeeze(-2) / (bounds[1] - bounds[0])
        rec["tr_restarts"] = opt.restarts
        rec["tr_final_length"] = opt.length
        rec["tr_region_mean_width"] = widths.mean(-1).tolist()  # unit-cube, per round
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    tmp.replace(path)
    return rec


def _stats(v: list[float]) -> list[float]:
    t = torch.tensor(v, dtype=DT)
    return [float(t.mean()), float(t.std()) if len(v) > 1 else 0.0]


def _paired(by_trial: dict, ref: dict, key: str) -> dict | None:
    common = sorted(k for k in set(by_trial) & set(ref)
                    if by_trial[k][key] is not None and ref[k][key] is not None)
    if not common:
        return None
    diff = [by_trial[k][key] - ref[k][key] for k in common]
    higher, lower = sum(x > 0 for x in diff), sum(x < 0 for x in diff)
    return {"pairs": len(common), "higher": higher, "lower": lower,
            "delta_mean": float(sum(diff) / len(diff)), "sign_p": sign_test_p(higher, lower)}


def summarize(ns: argparse.Namespace) -> dict:
    """Per problem and arm: means ± std and the pairs against ``ref`` (HV and R_C)."""
    summary: dict = {}
    units = Path(ns.units)
    for name in [p for p in PROBLEMS if (units / p).is_dir()]:
        recs: dict[str, dict[int, dict]] = {}
        for f in sorted((units / name).glob("*.json")):
            r = json.loads(f.read_text())
            recs.setdefault(r["arm"], {})[r["trial"]] = r
        ref = recs.get("ref", {})
        rows = {}
        for arm in [a for a in ARMS if a in recs]:
            by_trial = recs[arm]
            rc = [r["time_average_regret"] for r in by_trial.values()
                  if r["time_average_regret"] is not None]
            row = {"trials": sorted(by_trial),
                   "hv_pct": _stats([r["hv_pct"] for r in by_trial.values()]),
                   "time_average_regret": _stats(rc) if rc else None,
                   "boundary_coord_share": _stats([r["boundary_coord_share"]
                                                   for r in by_trial.values()]),
                   "loop_s": _stats([r["loop_s"] for r in by_trial.values()])}
            if "tr_restarts" in next(iter(by_trial.values())):
                row["tr_restarts"] = _stats([r["tr_restarts"] for r in by_trial.values()])
                row["tr_mean_width"] = _stats([sum(r["tr_region_mean_width"]) / len(
                    r["tr_region_mean_width"]) for r in by_trial.values()])
            if arm != "ref":
                row["hv_vs_ref"] = _paired(by_trial, ref, "hv_pct")
                row["rc_vs_ref"] = _paired(by_trial, ref, "time_average_regret")
            if arm != "sobol":
                row["hv_vs_sobol"] = _paired(by_trial, recs.get("sobol", {}), "hv_pct")
            if name == "dtlz2":  # g = Σ_{i≥3} (x_i − 0.5)² of the proposals (0 on the front)
                g = [_dtlz2_g(r) for r in by_trial.values()]
                row["mean_g"] = _stats([float(v.mean()) for v in g])
                row["share_g_below_0.1"] = _stats([float((v < 0.1).to(DT).mean()) for v in g])
            rows[arm] = row
        summary[name] = rows
    Path(ns.json).write_text(json.dumps(summary, indent=1))
    md = _markdown(summary)
    Path(ns.json).with_suffix(".md").write_text(md)
    print(md)
    return summary


def _dtlz2_g(rec: dict) -> Tensor:
    """DTLZ2's distance function g at the unit's proposals (DTLZ2's box is the unit cube)."""
    X = torch.tensor(rec["X"], dtype=DT)[rec["n0"]:]
    return (X[:, 2:] - 0.5).pow(2).sum(-1)


def _markdown(summary: dict) -> str:
    lines = ["| problem | arm | trials | HV % | R_C(T)/T | face share | HV vs ref (hi/lo, Δ, p) "
             "| R_C vs ref (lower/higher, Δ, p) | HV vs Sobol (hi/lo) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, rows in summary.items():
        for arm, r in rows.items():
            rc = r["time_average_regret"]
            hv_vs, rc_vs = r.get("hv_vs_ref"), r.get("rc_vs_ref")
            hv_txt = "" if not hv_vs else (
                f"{hv_vs['higher']}/{hv_vs['lower']} ({hv_vs['delta_mean']:+.1f}, "
                f"p={hv_vs['sign_p']:.2f})")
            rc_txt = "" if not rc_vs else (
                f"{rc_vs['lower']}/{rc_vs['higher']} ({rc_vs['delta_mean']:+.4f}, "
                f"p={rc_vs['sign_p']:.2f})")
            sob = r.get("hv_vs_sobol")
            sob_txt = "" if not sob else f"{sob['higher']}/{sob['lower']}"
            lines.append(
                f"| {name} | {arm} | {len(r['trials'])} | {r['hv_pct'][0]:.1f} ± "
                f"{r['hv_pct'][1]:.1f} | {'—' if rc is None else f'{rc[0]:.4f}'} | "
                f"{r['boundary_coord_share'][0]:.2f} | {hv_txt} | {rc_txt} | {sob_txt} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    r.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    r.add_argument("--trials", type=int, default=5)
    r.add_argument("--rounds", type=int, default=20)
    r.add_argument("--units", default=str(ROOT / "mo_search_region"))
    r.add_argument("--gate", default=None, help="write DTLZ2's summary here when it is done")
    s = sub.add_parser("summarize")
    s.add_argument("--units", default=str(ROOT / "mo_search_region"))
    s.add_argument("--json", default=str(ROOT / "mo_search_region.json"))
    ns = ap.parse_args()
    if ns.cmd == "summarize":
        summarize(ns)
        return
    for name in ns.problems:
        for trial in range(ns.trials):
            for arm in ns.arms:
                rec = run_unit(name, arm, trial, ns.rounds, Path(ns.units))
                print(f"{name} {arm} t{trial} HV {rec['hv_pct']:.1f} face "
                      f"{rec['boundary_coord_share']:.2f} ({rec['loop_s']:.0f} s)", flush=True)
        if name == "dtlz2" and ns.gate:
            _gate(Path(ns.units), Path(ns.gate))


def _gate(units: Path, gate: Path) -> None:
    """DTLZ2's HV means and paired counts, for the lead."""
    ns = argparse.Namespace(units=str(units), json=str(gate.with_suffix(".json")))
    rows = summarize(ns).get("dtlz2", {})
    lines = []
    for arm, r in rows.items():
        line = f"DTLZ2 (d=6, n=3), T=20, trials {r['trials']}: {arm} HV {r['hv_pct'][0]:.1f} ± "
        line += f"{r['hv_pct'][1]:.1f} %, mean g {r['mean_g'][0]:.2f}"
        for key, other in (("hv_vs_ref", "ref"), ("hv_vs_sobol", "sobol")):
            if r.get(key):
                line += (f"; HV vs {other} higher/lower {r[key]['higher']}/{r[key]['lower']}"
                         f" (p={r[key]['sign_p']:.2f})")
        lines.append(line)
    gate.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
