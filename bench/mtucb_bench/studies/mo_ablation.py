"""Ablation of practical MT-UCB (issue 16): width β × initial-design size × fixed vs learned B.

MT-UCB as in the suite's ``MT-UCB`` entry (:func:`practical_multitask_gp` refitted every
round, the round's λ_t applied scale-free by ``ChebyshevScalarization.from_data`` — augmented,
ρ = 0.05, z at the observed non-dominated nadir — and the directional bound of
``ScalarizedMultiTaskUCB``), one factor changed at a time, on the suite's problems
(``mtucb_bench.mo_suite_problems``, normalised units, noise-free):

* ``beta``: ``0.5``, ``1`` (the practical default), ``2``, or ``thm2``: paper 000's Theorem-2
  radius β_t = b + (σ/√η)√(2 log(1/δ) + log det(I + G_t/η)) with b by paper 000's rule
  (``problem.b``), δ = 0.1 and σ² = η = the model's fitted noise variance (the suite's
  problems are noise-free, so σ = 0 would make the radius the constant b; with σ² = η the
  radius grows with the information gain as in the theorem);
* ``n0``: initial scrambled-Sobol design of ``1``, ``d+1`` or ``default`` =
  ``initial_design_size(d)`` = max(5, 2d) points (the package's default, Ax's rule), at a fixed
  total budget of N = max(5, 2d) + ``--rounds`` evaluations (T = N − n0 BO rounds), so a
  larger design costs BO rounds;
* ``B``: ``learned`` (full rank, the default), ``true`` (fixed at the correlation matrix of
  the objectives over the problem's 2¹⁴-point Sobol sample: the outcomes are standardised, so
  the correlation is the task covariance the standardised model should find) or
  ``identity`` (fixed B = I: independent tasks sharing one Matérn lengthscale vector).

* ``z`` (added after the first runs): the Chebyshev reference point — ``data`` (the
  scale-free ``from_data`` above, the default) or ``hv``: the sampler's plain s_λ with z = the
  problem's hypervolume reference point (what ``MT-UCB-paper`` uses).

Design: ``--design ofat`` (default) changes one factor at a time around the reference
configuration (β = 1, n0 = default, B learned, z = data): 4 widths, 2 other designs, 2 fixed
B, 1 other z — 9 configurations; ``--design full`` runs the factorial β × n0 × B × z (72).

Common random numbers: trial k (seed s = 1000·seed + k) uses the same problem instance
(``corr-rff`` draws one per trial), the same Sobol sequence (the smaller designs are its
prefixes), λ_t sequence and optimiser seeds for every configuration.

Metrics (``suite_metrics``): hypervolume of all N evaluated points as % of the problem's
maximum, R_C(T)/T (Chebyshev regret of the BO rounds against the SLSQP-polished maximiser of
s_{λ_t}), Bayes regret of all N points (64 Monte-Carlo λ) and the wall time per round
(fit + acquisition). Paired comparison against the reference configuration (β = 1,
n0 = default, B learned): trials where HV is higher / lower, mean ± std of the HV difference.

Run from the repository root (single-threaded processes, resumable: finished units are
skipped)::

    PYTHONPATH=. python bench/mtucb_bench/studies/mo_ablation.py run --problems corr-rff dtlz2 --trials 10 \
        --workers 2
    PYTHONPATH=. python bench/mtucb_bench/studies/mo_ablation.py summarize

Files: ``results/mo_ablation/<problem>/<config>__t<k>.json`` (one per unit),
``results/mo_ablation.json`` (summary), ``results/mo_ablation.md`` (tables),
``results/mo_ablation.png`` (final HV % per configuration).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
import warnings
from multiprocessing import get_context
from pathlib import Path

import torch
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import (
    BetaSchedule,
    ChebyshevScalarization,
    ConstantBeta,
    ScalarizedMultiTaskUCB,
    TheoremTwoBeta,
)
from botorch_mtucb.acquisition.beta import model_noise
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.utils.initial_design import initial_design_size
from mtucb_bench.algorithms import practical_multitask_gp
from mtucb_bench.measure import sign_test_p
from mtucb_bench.mo_suite_problems import (
    make_suite_problem,
    run_suite_protocol,
    suite_metrics,
    trial_sobol_points,
)

ROOT = Path(__file__).resolve().parent / "results"
OUT = ROOT / "mo_ablation"
BETAS = ("0.5", "1", "2", "thm2")
INITS = ("1", "d+1", "default")
BS = ("learned", "true", "identity")
ZS = ("data", "hv")
REFERENCE = ("1", "default", "learned", "data")
DT = torch.float64


class FittedNoiseTheoremTwoBeta(BetaSchedule):
    """Theorem-2 radius with σ² = η = the model's fitted noise variance (see the module doc)."""

    def __init__(self, b: float, delta: float = 0.1) -> None:
        self.b, self.delta = float(b), float(delta)

    def __call__(self, model) -> Tensor:
        eta = model_noise(model)
        return TheoremTwoBeta(self.b, float(eta.sqrt()), None, self.delta)(model)


def design_size(init: str, d: int) -> int:
    """n0 of an ``INITS`` label."""
    return {"1": 1, "d+1": d + 1, "default": initial_design_size(d)}[init]


def true_task_correlation(problem) -> Tensor:
    """Correlation matrix of the objectives over the problem's Sobol sample (``task_covar``)."""
    C = problem.task_covar.to(DT)
    s = torch.diagonal(C).sqrt()
    return C / (s[:, None] * s[None, :])


def fixed_b_model(X: Tensor, Y: Tensor, bounds: Tensor, B: Tensor, fit: bool = True):
    """``practical_multitask_gp`` with the task matrix fixed at ``B`` (standardised units)."""
    from botorch.fit import fit_gpytorch_mll
    from botorch.models.transforms import Normalize, Standardize
    from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
    from gpytorch.means import ConstantMean, MultitaskMean
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from gpytorch.priors import LogNormalPrior

    d, n = X.shape[-1], Y.shape[-1]
    kern = ICMKernel(get_covar_module_with_dim_scaled_prior(ard_num_dims=d, use_rbf_kernel=False),
                     num_tasks=n, task_covar=B.to(X))
    model = ExactMultiTaskGP(
        X, Y, covar_module=kern, noise=math.exp(-5.0), learn_noise=True,
        input_transform=Normalize(d, bounds=bounds.to(X)), outcome_transform=Standardize(m=n),
        mean_module=MultitaskMean(ConstantMean(), n),
    )
    lik = model.likelihood
    lik.register_prior("noise_prior", LogNormalPrior(-4.0, 1.0), lambda m: m.noise,
                       lambda m, v: m._set_noise(v))
    lik.raw_noise_constraint.lower_bound.fill_(1e-4)
    model = model.to(X)
    if fit and X.shape[0] >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    return model


def check_fixed_b_model() -> float:
    """The fixed-B builder is the practical model up to B: load a fitted practical model's
    hyperparameters and learned B into it, compare posteriors; returns the max difference."""
    problem = make_suite_problem("corr-rff", seed=0)
    X = SobolEngine(problem.dim, scramble=True, seed=7).draw(12).to(DT)
    Y = problem.f(X).detach()
    ref = practical_multitask_gp(X, Y, problem.bounds)
    B = ref.covar_module.task_covar_matrix.detach()
    mine = fixed_b_model(X, Y, problem.bounds, B, fit=False)
    state = {k: v for k, v in ref.state_dict().items()
             if "covar_factor" not in k and "raw_var" not in k}
    theirs = {k for k in mine.state_dict() if "fixed_task_covar" not in k}
    if theirs != set(state):
        raise RuntimeError(f"fixed-B model differs in structure: {theirs ^ set(state)}")
    mine.load_state_dict(state, strict=False)
    Xt = SobolEngine(problem.dim, scramble=True, seed=8).draw(64).to(DT)
    with torch.no_grad():
        a, b = ref.posterior(Xt), mine.posterior(Xt)
        diff = max(float((a.mean - b.mean).abs().max()),
                   float((a.variance - b.variance).abs().max()))
    if diff > 1e-8:
        raise RuntimeError(f"fixed-B model's posterior differs from the practical one by {diff}")
    return diff


def config_name(beta: str, init: str, B: str, z: str = "data") -> str:
    return f"beta={beta}_n0={init}_B={B}" + ("" if z == "data" else f"_z={z}")


def unit_path(problem: str, cfg: tuple[str, ...], trial: int, out: Path = OUT) -> Path:
    return out / problem / f"{config_name(*cfg)}__t{trial:02d}.json"


def run_unit(args: tuple[str, tuple[str, str, str, str], int, int, int, str]) -> str:
    """One (problem, configuration, trial); writes its JSON and returns the path."""
    name, (beta_l, init_l, b_l, z_l), trial, rounds, seed, out = args
    torch.set_num_threads(1)
    s = 1000 * seed + trial
    problem = make_suite_problem(name, seed=s)
    d, n, bounds = problem.dim, problem.num_objectives, problem.bounds
    n0 = design_size(init_l, d)
    T = initial_design_size(d) + rounds - n0
    X0 = trial_sobol_points(problem, s, n0)
    B = None if b_l == "learned" else (
        true_task_correlation(problem) if b_l == "true" else torch.eye(n, dtype=DT))
    beta = FittedNoiseTheoremTwoBeta(problem.b) if beta_l == "thm2" else ConstantBeta(
        float(beta_l))
    data: dict[str, Tensor] = {}

    def model_factory(X: Tensor, Y: Tensor):
        data["Y"] = Y
        if B is None:
            return practical_multitask_gp(X, Y, bounds)
        return fixed_b_model(X, Y, bounds, B)

    def acq(model, scal):
        if z_l == "data":  # else: the sampler's plain s_λ with z = the HV reference point
            scal = ChebyshevScalarization.from_data(scal.weights, data["Y"], scal.minimize)
        return ScalarizedMultiTaskUCB(model, scal, beta, bound="directional")

    start = time.perf_counter()
    hist = run_suite_protocol(problem, X0, T, model_factory, acq, s)
    loop_s = time.perf_counter() - start
    X = torch.cat([X0, hist.X])
    W = torch.stack([r.weights for r in hist.rounds])
    wall = torch.tensor([r.wall_time for r in hist.rounds], dtype=DT)
    m = suite_metrics(problem, X, W, wall, num_initial=n0, bayes_samples=64, seed=s + 4)
    betas = [r.beta for r in hist.rounds if r.beta is not None]
    rec = {
        "problem": name, "beta": beta_l, "init": init_l, "B": b_l, "z": z_l, "trial": trial,
        "seed": s,
        "n0": n0, "rounds": T, "hv_pct": m["hv_pct"],
        "hv_pct_curve": [float(v) for v in m["hv_pct_curve"]],
        "time_average_regret": float(m["time_average_regret"][-1]),
        "bayes_regret": float(m["bayes_regret"][-1]),
        "wall_time_per_round": m["wall_time_per_round"], "loop_s": loop_s,
        "beta_first_last": [betas[0], betas[-1]] if betas else None,
        "X": X.tolist(),
    }
    path = unit_path(name, (beta_l, init_l, b_l, z_l), trial, Path(out))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    tmp.replace(path)
    return str(path)


def configs(design: str) -> list[tuple[str, str, str, str]]:
    """``"ofat"``: one factor at a time around the reference (every β, every n0, every B with
    the other two at the reference: 8 configurations); ``"full"``: β × n0 × B (36)."""
    if design == "full":
        return list(itertools.product(BETAS, INITS, BS, ZS))
    b0, n0, B0, z0 = REFERENCE
    out = [(b, n0, B0, z0) for b in BETAS]
    out += [(b0, i, B0, z0) for i in INITS if i != n0]
    out += [(b0, n0, B, z0) for B in BS if B != B0]
    out += [(b0, n0, B0, z) for z in ZS if z != z0]
    return out


def run(ns: argparse.Namespace) -> None:
    print(f"fixed-B builder check: max posterior difference {check_fixed_b_model():.1e}")
    cfgs = configs(ns.design)
    units = [(p, c, k, ns.rounds, ns.seed, str(ns.out))
             for k in range(ns.first_trial, ns.first_trial + ns.trials)
             for p in ns.problems for c in cfgs]
    todo = [u for u in units if not unit_path(u[0], u[1], u[2], ns.out).is_file()]
    print(f"{len(units)} units, {len(todo)} to run on {ns.workers} process(es)")
    start = time.perf_counter()
    if ns.workers <= 1:
        for i, u in enumerate(todo):
            print(i, run_unit(u), f"{time.perf_counter() - start:.0f}s", flush=True)
    else:
        with get_context("spawn").Pool(ns.workers) as pool:
            for i, p in enumerate(pool.imap_unordered(run_unit, todo)):
                print(i, p, f"{time.perf_counter() - start:.0f}s", flush=True)


def _stats(v: list[float]) -> tuple[float, float]:
    t = torch.tensor(v, dtype=DT)
    return float(t.mean()), float(t.std()) if len(v) > 1 else 0.0


def summarize(ns: argparse.Namespace) -> None:
    recs: dict[str, dict[tuple, dict[int, dict]]] = {}
    for f in sorted(ns.out.glob("*/*.json")):
        r = json.loads(f.read_text())
        cfg = (r["beta"], r["init"], r["B"], r.get("z", "data"))
        recs.setdefault(r["problem"], {}).setdefault(cfg, {})[r["trial"]] = r
    summary: dict[str, dict] = {}
    lines = []
    for prob, by_cfg in recs.items():
        ref = by_cfg.get(REFERENCE, {})
        rows = {}
        for cfg in sorted(by_cfg, key=lambda c: (ZS.index(c[3]), BS.index(c[2]),
                                                 BETAS.index(c[0]), INITS.index(c[1]))):
            runs = by_cfg[cfg]
            trials = sorted(runs)
            row = {"trials": len(trials), "n0": runs[trials[0]]["n0"],
                   "rounds": runs[trials[0]]["rounds"]}
            for key in ("hv_pct", "time_average_regret", "bayes_regret",
                        "wall_time_per_round"):
                row[key] = _stats([runs[k][key] for k in trials])
            common = [k for k in trials if k in ref]
            if cfg != REFERENCE and common:
                for key in ("hv_pct", "time_average_regret"):
                    dv = [runs[k][key] - ref[k][key] for k in common]
                    up, down = sum(x > 1e-12 for x in dv), sum(x < -1e-12 for x in dv)
                    row[f"paired_{key}"] = {"trials": len(common), "higher": up, "lower": down,
                                            "mean_std": _stats(dv), "sign_p": sign_test_p(up, down)}
            row["config"] = list(cfg)
            rows[config_name(*cfg)] = row
        summary[prob] = rows
        first = rows[next(iter(rows))]
        lines += [f"**{prob}** (N = n0 + T = {first['n0'] + first['rounds']} evaluations; "
                  f"reference {config_name(*REFERENCE)})", "",
                  "| β | n0 | B | trials | HV % | R_C(T)/T | Bayes regret | s / round | "
                  "HV vs ref: higher/lower, Δ (p) | R_C vs ref: lower/higher, Δ (p) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for row in rows.values():
            beta, init, B, z = row["config"]
            B = B if z == "data" else f"{B}, z = {z}"
            pr, rr = row.get("paired_hv_pct"), row.get("paired_time_average_regret")
            pcell = "ref | ref" if pr is None else (
                f"{pr['higher']}/{pr['lower']}, {pr['mean_std'][0]:+.1f} ± "
                f"{pr['mean_std'][1]:.1f} ({pr['sign_p']:.2f}) | {rr['lower']}/{rr['higher']}, "
                f"{rr['mean_std'][0]:+.4f} ± {rr['mean_std'][1]:.4f} ({rr['sign_p']:.2f})")
            lines.append(
                f"| {beta} | {init} ({row['n0']}) | {B} | {row['trials']} | "
                f"{row['hv_pct'][0]:.1f} ± {row['hv_pct'][1]:.1f} | "
                f"{row['time_average_regret'][0]:.4f} ± {row['time_average_regret'][1]:.4f} | "
                f"{row['bayes_regret'][0]:.4f} ± {row['bayes_regret'][1]:.4f} | "
                f"{row['wall_time_per_round'][0]:.2f} | {pcell} |")
        lines.append("")
    stem = ns.out.parent / ns.out.name
    stem.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    _plot(summary, stem.with_suffix(".png"))


def _plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = list(summary)
    fig, axes = plt.subplots(1, len(probs), figsize=(5.5 * len(probs), 4), squeeze=False)
    colours = {"0.5": "tab:blue", "1": "tab:orange", "2": "tab:green", "thm2": "tab:red"}
    for ax, prob in zip(axes[0], probs, strict=True):
        rows = summary[prob]
        for B, marker, shift in (("learned", "o", -0.12), ("true", "s", 0.0),
                                 ("identity", "^", 0.12)):
            for beta in BETAS:
                xs, ms, ss = [], [], []
                for i, init in enumerate(INITS):
                    row = rows.get(config_name(beta, init, B))
                    if row:
                        xs.append(i + shift + 0.03 * BETAS.index(beta))
                        ms.append(row["hv_pct"][0])
                        ss.append(row["hv_pct"][1] / max(row["trials"], 1) ** 0.5)
                if xs:
                    ax.errorbar(xs, ms, yerr=ss, fmt=marker + ("-" if B == "learned" else ":"),
                                color=colours[beta], capsize=2, ms=4,
                                label=f"β={beta}, B {B}")
        ax.set_xticks(range(len(INITS)), [f"n0={i}" for i in INITS])
        ax.set_title(prob)
        ax.set_ylabel("final HV % (mean ± s.e. over trials)")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--problems", nargs="+", default=["corr-rff", "dtlz2"])
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--first-trial", type=int, default=0)
    r.add_argument("--rounds", type=int, default=15,
                   help="T at the default n0 (budget max(5, 2d) + rounds evaluations)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--design", choices=("ofat", "full"), default="ofat",
                   help="one factor at a time around the reference (default) or factorial")
    s = sub.add_parser("summarize")
    for p in (r, s):
        p.add_argument("--out", type=Path, default=OUT,
                       help="unit folder (summary files: <out>.json/.md/.png)")
    ns = ap.parse_args()
    torch.set_num_threads(1)
    run(ns) if ns.cmd == "run" else summarize(ns)


if __name__ == "__main__":
    main()
