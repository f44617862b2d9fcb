"""The loop's defaults under observation noise (issue 26): noisy GMM and companions.

``run_bo_loop(observe, num_rounds=T, initial_X=..., bounds=..., generator=...)`` with its
defaults against the same loop with other model updates, qLogNParEGO and Sobol, on:

* ``gmm``: BoTorch's ``GMM(num_objectives=2, negate=True)`` (d = 2, maximised; BoTorch's
  reference point; the maximum hypervolume is estimated as the suite does for problems
  BoTorch does not know, :func:`mtucb_bench.mo_suite_base.estimate_max_hv`);
* ``branin-currin`` and ``dtlz2`` (d = 6, n = 2) with BoTorch's reference point and maximum
  hypervolume.

Noise: Gaussian with standard deviation ``noise`` × the objective's range over 2^12 Sobol
points (``--noise 0.07`` = 7 %), drawn from ``Generator(seed + 2)``. Initial design: the
first max(5, 2d) points of trial ``seed``'s scrambled Sobol sequence (engine seed
``seed + 1``), shared by every method; the loop's generator is ``Generator(seed + 3)``. The
metric is the hypervolume of the noise-free f at the evaluated points (initial design
included) as % of the maximum, after every round.

Methods (``--methods``):

* ``default``: ``run_bo_loop``'s defaults as they are in the checkout;
* ``before``: the defaults with the factory that only warm-starts
  (``WarmStartPracticalFactory(bounds, restart=False)``; the plain factory in a checkout
  without the ``restart`` option);
* ``patched``: the defaults with ``WarmStartPracticalFactory(bounds, restart=True)`` (needs
  the patch ``/work/notes/n1_practical.patch``);
* ``logprior``: the defaults with ``WarmStartPracticalFactory(bounds, log_space_priors=True)``
  (the priors as densities of the log-hyperparameters);
* ``readme``: the README's loop: a cold ``practical_multitask_gp`` refit every round;
* ``warm-every``: the warm-started factory refitted every round;
* ``multistart``: the patch's rule monkeypatched into an unpatched checkout (each
  warm-started fit also fitted cold, the higher penalised likelihood kept), with the
  default ``RefitSchedule``;
* ``sobol``: the next Sobol points of the trial's sequence;
* ``parego``: qLogNParEGO on BoTorch-default independent GPs refitted every round.

``--diagnose`` records, for every fit, the fitted noise, lengthscales, task correlation and
normalised marginal log likelihood, and the likelihood of a cold fit on the same data.

Usage::

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.noisy_gmm run --problem gmm --noise 0.07 \
        --seeds 0 1 2 3 4 5 6 7 8 9 --methods default readme sobol parego
    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.noisy_gmm run --problem gmm --noise 0.07 \
        --seeds 3 --methods default readme --diagnose

Raw per-trial JSON goes under ``benchmark-runs/studies/noisy_gmm/``; ``summarize`` writes
``docs/results/studies/noisy_gmm_<problem>_<noise>.json``.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import time
import warnings
from collections.abc import Callable
from functools import lru_cache

import torch
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from botorch.test_functions.multi_objective import DTLZ2, GMM, BraninCurrin
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.sampling import sample_simplex
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

import botorch_mtucb.multitask.practical as practical_module
from botorch_mtucb.loop import run_bo_loop
from botorch_mtucb.loop.defaults import RefitSchedule
from botorch_mtucb.models import practical_multitask_gp
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
from botorch_mtucb.multitask.practical_fit import fit_practical_model, practical_mll
from botorch_mtucb.utils import initial_design_size
from mtucb_bench.baselines import fitted_model_list
from mtucb_bench.mo_suite_base import DT, estimate_max_hv, sobol_points
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary

RAW = RUNS / "studies" / "noisy_gmm"
SUMMARY = RESULTS / "studies"

PROBLEMS: dict[str, Callable[[], object]] = {
    "gmm": lambda: GMM(num_objectives=2, negate=True),
    "branin-currin": lambda: BraninCurrin(negate=True),
    "dtlz2": lambda: DTLZ2(dim=6, num_objectives=2, negate=True),
}


@lru_cache(maxsize=8)
def problem_setup(name: str) -> dict:
    """f (noise-free, maximised), bounds, reference point, maximum HV, objective ranges."""
    p = PROBLEMS[name]().to(DT)
    bounds = p.bounds.to(DT)

    def f(X: Tensor) -> Tensor:
        return p(X, noise=False).to(DT)

    X = sobol_points(2**12, bounds, 1234)
    with torch.no_grad():
        F = f(X)
    ref = p.ref_point.to(DT)
    try:
        max_hv, source = float(p.max_hv), "botorch"
    except NotImplementedError:
        cache = RAW / f"max_hv_{name}.json"
        if cache.exists():
            max_hv = json.loads(cache.read_text())["max_hv"]
        else:
            Xs = sobol_points(2**14, bounds, 1234)
            with torch.no_grad():
                Fs = f(Xs)
            max_hv = estimate_max_hv(f, Xs, Fs, ref, bounds, 0)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"max_hv": max_hv}))
        source = "estimate_max_hv (2^14 Sobol + 64 polished Chebyshev maximisers)"
    span = F.max(dim=0).values - F.min(dim=0).values
    return dict(f=f, bounds=bounds, ref=ref, max_hv=max_hv, source=source, span=span, d=p.dim)


def hv_percent_curve(setup: dict, X: Tensor, n0: int) -> list[float]:
    """HV % of the noise-free f at X[:n0 + t] for t = 0, …, T."""
    F = setup["f"](X)
    hv = Hypervolume(setup["ref"])
    out = []
    for k in range(n0, X.shape[0] + 1):
        front = F[:k][is_non_dominated(F[:k])]
        front = front[(front > setup["ref"]).all(-1)]
        out.append(100.0 * (hv.compute(front) if len(front) else 0.0) / setup["max_hv"])
    return out


# --------------------------------------------------------------------------- diagnostics
def fit_summary(model) -> dict:
    """Fitted noise (standardised units), lengthscales, task correlation, normalised MLL."""
    out = {"noise": float(model.likelihood.noise.reshape(-1)[0])}
    kern = model.covar_module
    base = getattr(kern, "base_kernel", None) or kern.separable_components()[0][0]
    out["lengthscale"] = [round(float(v), 4) for v in base.lengthscale.reshape(-1)]
    B = kern.task_covar_matrix.detach()
    out["B_diag"] = [round(float(v), 4) for v in torch.diagonal(B)]
    out["corr"] = float(B[0, 1] / (B[0, 0] * B[1, 1]).sqrt()) if B.shape[0] > 1 else 1.0
    m = copy.deepcopy(model).train()
    with torch.no_grad():
        out["mll"] = float(practical_mll(ExactMarginalLogLikelihood(m.likelihood, m)))
    return out


class Recorder:
    """Wraps a model factory; records each fit (and a cold fit's MLL on the same data)."""

    def __init__(self, factory: Callable, bounds: Tensor, cold: bool = True) -> None:
        self.factory, self.bounds, self.cold, self.fits = factory, bounds, cold, []

    def __call__(self, X: Tensor, Y: Tensor):
        model = self.factory(X, Y)
        rec = {"N": int(X.shape[0]), **fit_summary(model)}
        if self.cold:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cold = practical_multitask_gp(X, Y, self.bounds)
            rec["cold"] = fit_summary(cold)
        self.fits.append(rec)
        return model


# --------------------------------------------------------------------- multi-start patch
def multistart_fit(model, warm_start=None, lean=True, fit_kwargs=None):
    """The patch's rule: a warm-started fit also fitted from the default start; the one
    with the higher marginal likelihood (priors included) is kept."""
    if warm_start is None:
        return fit_practical_model(model, None, lean, fit_kwargs)
    cold = copy.deepcopy(model)
    fit_practical_model(cold, None, lean, fit_kwargs)
    fit_practical_model(model, warm_start, lean, fit_kwargs)
    a, b = fit_summary(model)["mll"], fit_summary(cold)["mll"]
    if b > a:
        return cold_into(model, cold)
    return model


def cold_into(model, cold):
    from botorch_mtucb.multitask.practical_fit import copy_hyperparameters

    copy_hyperparameters(cold, model)
    model.eval()
    return model


class MultiStartFactory(WarmStartPracticalFactory):
    """WarmStartPracticalFactory whose fits go through :func:`multistart_fit`."""

    def __call__(self, X, Y):
        original = practical_module.fit_practical_model
        practical_module.fit_practical_model = multistart_fit
        try:
            return super().__call__(X, Y)
        finally:
            practical_module.fit_practical_model = original


# ----------------------------------------------------------------------------- methods
def _loop(setup, observe, X0, T, seed, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = run_bo_loop(observe, initial_X=X0, num_rounds=T, bounds=setup["bounds"],
                        generator=torch.Generator().manual_seed(seed + 3), **kwargs)
    return torch.cat([h.initial_X, h.X]), [r.wall_time for r in h.rounds]


def run_method(method: str, setup: dict, observe, X0: Tensor, T: int, seed: int,
               diagnose: bool) -> tuple[Tensor, list[float], list[dict]]:
    bounds = setup["bounds"]
    rec = None

    def wrap(factory):
        nonlocal rec
        rec = Recorder(factory, bounds) if diagnose else None
        return rec if diagnose else factory

    if method == "default":
        if diagnose:  # the defaults, written out, to record the fits
            X, w = _loop(setup, observe, X0, T, seed,
                         model_factory=wrap(WarmStartPracticalFactory(bounds)),
                         refit_every=RefitSchedule())
        else:
            X, w = _loop(setup, observe, X0, T, seed)
    elif method in ("before", "patched"):
        X, w = _loop(setup, observe, X0, T, seed,
                     model_factory=wrap(_factory(bounds, method == "patched")),
                     refit_every=RefitSchedule())
    elif method == "logprior":  # the defaults with the priors as densities of log θ
        X, w = _loop(setup, observe, X0, T, seed,
                     model_factory=wrap(WarmStartPracticalFactory(bounds, log_space_priors=True)),
                     refit_every=RefitSchedule())
    elif method == "readme":
        X, w = _loop(setup, observe, X0, T, seed,
                     model_factory=wrap(lambda X, Y: practical_multitask_gp(X, Y, bounds)),
                     update="refit")
    elif method == "warm-every":
        X, w = _loop(setup, observe, X0, T, seed,
                     model_factory=wrap(WarmStartPracticalFactory(bounds)), update="refit")
    elif method == "multistart":
        X, w = _loop(setup, observe, X0, T, seed,
                     model_factory=wrap(MultiStartFactory(bounds)), refit_every=RefitSchedule())
    elif method == "sobol":
        X = sobol_points(X0.shape[0] + T, bounds, seed + 1)
        w = [0.0] * T
    elif method == "parego":
        X, w = run_parego(setup, observe, X0, T, seed)
    else:
        raise ValueError(f"unknown method {method!r}")
    return X, w, ([] if rec is None else rec.fits)


def _factory(bounds: Tensor, restart: bool) -> WarmStartPracticalFactory:
    """The factory with the restart on or off; without the option (unpatched checkout) the
    plain factory, which only warm-starts (an error when the restart is asked for)."""
    if "restart" in inspect.signature(WarmStartPracticalFactory).parameters:
        return WarmStartPracticalFactory(bounds, restart=restart)
    if restart:
        raise RuntimeError("`patched` needs WarmStartPracticalFactory(restart=...) (the patch).")
    return WarmStartPracticalFactory(bounds)


def run_parego(setup, observe, X0, T, seed):
    bounds, X = setup["bounds"], X0.clone()
    Y = observe(X)
    walls = []
    for t in range(T):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fitted_model_list(X, Y, bounds)
            w = sample_simplex(Y.shape[-1], dtype=DT, seed=seed * 1000 + t).squeeze(0)
            acqf = qLogNParEGO(model, X_baseline=X, scalarization_weights=w,
                               sampler=SobolQMCNormalSampler(torch.Size([64]), seed=seed + t))
            x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=256)
        walls.append(time.perf_counter() - start)
        X, Y = torch.cat([X, x]), torch.cat([Y, observe(x)])
    return X, walls


def trial(problem: str, noise: float, method: str, seed: int, T: int, diagnose: bool) -> dict:
    setup = problem_setup(problem)
    n0 = initial_design_size(setup["d"])
    X0 = sobol_points(n0, setup["bounds"], seed + 1)
    sd = noise * setup["span"]
    g = torch.Generator().manual_seed(seed + 2)

    def observe(X: Tensor) -> Tensor:
        F = setup["f"](X)
        return F + sd * torch.randn(F.shape, generator=g, dtype=DT)

    torch.manual_seed(seed)
    start = time.perf_counter()
    X, walls, fits = run_method(method, setup, observe, X0, T, seed, diagnose)
    total = time.perf_counter() - start
    curve = hv_percent_curve(setup, X, n0)
    return dict(problem=problem, noise=noise, method=method, seed=seed, rounds=T,
                hv=curve, final=curve[-1], wall_per_round=sum(walls) / max(T, 1),
                total_s=total, fits=fits, X=X.tolist())


def _path(problem, noise, method, seed, T, tag=""):
    return RAW / f"{problem}_n{noise:g}_T{T}_{method}{tag}_s{seed}.json"


def cmd_run(args) -> None:
    for seed in args.seeds:
        for method in args.methods:
            path = _path(args.problem, args.noise, method, seed, args.rounds, args.tag)
            if path.exists() and not args.force and not args.diagnose:
                r = json.loads(path.read_text())
            else:
                r = trial(args.problem, args.noise, method, seed, args.rounds, args.diagnose)
                path.parent.mkdir(parents=True, exist_ok=True)
                if not args.diagnose:
                    path.write_text(json.dumps(r))
                else:
                    path.with_suffix(".diag.json").write_text(json.dumps(r))
            print(f"{args.problem} noise={args.noise} seed={seed} {method:11s} "
                  f"HV%={r['final']:6.2f} start={r['hv'][0]:6.2f} "
                  f"s/round={r['wall_per_round']:.3f}", flush=True)
            if args.diagnose:
                for k, fit in enumerate(r["fits"]):
                    c = fit.get("cold", {})
                    print(f"   fit{k:2d} N={fit['N']:2d} noise={fit['noise']:.3g} "
                          f"ls={fit['lengthscale']} corr={fit['corr']:+.2f} "
                          f"mll={fit['mll']:.3f} | cold noise={c.get('noise', 0):.3g} "
                          f"ls={c.get('lengthscale')} mll={c.get('mll', 0):.3f}")


def cmd_summarize(args) -> None:
    rows: dict[str, dict[int, dict]] = {}
    for method in args.methods:
        for seed in args.seeds:
            path = _path(args.problem, args.noise, method, seed, args.rounds)
            if path.exists():
                rows.setdefault(method, {})[seed] = json.loads(path.read_text())
    out = {"problem": args.problem, "noise": args.noise, "rounds": args.rounds,
           "max_hv_source": problem_setup(args.problem)["source"], "methods": {}}
    base = rows.get(args.baseline, {})
    for method, per in rows.items():
        finals = {s: r["final"] for s, r in per.items()}
        entry = {
            "final_hv_percent": finals,
            "mean": sum(finals.values()) / len(finals),
            "min": min(finals.values()),
            "s_per_round": sum(r["wall_per_round"] for r in per.values()) / len(per),
        }
        common = [s for s in finals if s in base]
        if method != args.baseline and common:
            entry[f"vs_{args.baseline}"] = {
                "wins": sum(finals[s] > base[s]["final"] + 1e-9 for s in common),
                "ties": sum(abs(finals[s] - base[s]["final"]) <= 1e-9 for s in common),
                "losses": sum(finals[s] < base[s]["final"] - 1e-9 for s in common),
            }
        sob = rows.get("sobol", {})
        entry["seeds_below_sobol"] = sum(finals[s] < sob[s]["final"] for s in finals if s in sob)
        out["methods"][method] = entry
        print(f"{method:11s} mean={entry['mean']:6.2f} min={entry['min']:6.2f} "
              f"below_sobol={entry['seeds_below_sobol']} s/round={entry['s_per_round']:.3f} "
              f"{entry.get(f'vs_{args.baseline}', '')}")
    write_summary(SUMMARY / f"noisy_gmm_{args.problem}_{args.noise:g}.json", out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("run", "summarize"):
        p = sub.add_parser(name)
        p.add_argument("--problem", default="gmm", choices=sorted(PROBLEMS))
        p.add_argument("--noise", type=float, default=0.07)
        p.add_argument("--rounds", type=int, default=20)
        p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
        p.add_argument("--methods", nargs="+",
                       default=["default", "readme", "sobol", "parego"])
        p.add_argument("--force", action="store_true")
        p.add_argument("--diagnose", action="store_true")
        p.add_argument("--baseline", default="before")
        p.add_argument("--tag", default="", help="suffix of the raw files' method names")
    args = parser.parse_args()
    (cmd_run if args.cmd == "run" else cmd_summarize)(args)


if __name__ == "__main__":
    main()
