"""Why does scalarized MT-UCB cover a conflicting Pareto front badly? (issue 16, multi-objective)

Each configuration changes one factor of the README's plain-BoTorch loop at a time, on BoTorch's
``DTLZ2`` (d = 6, 3 objectives), ``BraninCurrin`` (d = 2) and ``VehicleSafety`` (d = 5), all
negated (maximised), with the issue's protocol: 10 scrambled-Sobol points, then 30 rounds of
q = 1, 3 seeds (common random numbers: the same Sobol design and λ_t sequence for every
configuration of a seed). Factors:

* ``x``: inputs on the problem's box as the README does (``raw``), or ``Normalize(d)`` (``norm``);
* ``scal``: Chebyshev s_λ(y) = min_i λ_i (y_i − z_i) in raw units with z = observed minimum
  (``raw``, the README), or scale-free (``scaled``): the same λ applied to y normalised by the
  observed range, z = observed minimum − 0.1 × range (implemented as Chebyshev weights
  λ_i / range_i, renormalised: s_λ is only rescaled by a positive constant, so the argmax and
  the directional bound are those of the normalised problem);
* ``lam``: λ sampler: paper 000 / Paria et al. (λ ∝ 1/u, u ~ U[0, 1]ⁿ: the Chebyshev optimum
  lies on the ray z + c·u, directions uniform in the cube) or ``simplex`` (λ ~ Dirichlet(1));
* ``beta``: the directional-UCB width β (0 = posterior mean only);
* ``model``: ``paper`` = ``ExactMultiTaskGP`` defaults (ICM with RBF and BoTorch's
  dim-scaled lengthscale prior, learned full-rank B, zero mean, η = 0.1 fixed) + Standardize,
  or ``careful`` (ICM with Matérn-5/2 + the same prior, constant mean per task, noise learned
  with BoTorch's LogNormal(−4, 1) prior, floor 1e-4); hyperparameters fitted every round with
  ``fit_gpytorch_mll`` in both;
* ``ref``: the Chebyshev reference point of the scale-free scalarization: observed minimum
  (``min``) or ``nadir``, the worst value of the observed *non-dominated* points (both minus
  0.1 × range);
* ``aug``: augmented Chebyshev ρ (ParEGO's 0.05): min_i w_i (u_i − z_i) + ρ Σ_i w_i (u_i − z_i)
  on per-objective UCBs u = μ + βσ (:class:`AugmentedChebyshevUCB`; maximisers Pareto optimal,
  not only weakly);
* ``model="stgp"``: the same acquisition on independent BoTorch-default SingleTaskGPs;
  ``icm-qLogNParEGO``: qLogNParEGO on the ``careful`` ICM model (model vs acquisition);
* references: ``sobol`` (40 Sobol points) and ``qLogNParEGO`` (ModelListGP of BoTorch-default
  SingleTaskGPs with Normalize + Standardize, the round's λ_t as weights).

Recorded per run: hypervolume of the 40 evaluated points as % of the problem's maximum
(``DominatedPartitioning`` above BoTorch's reference point), the fraction of proposals on the
box boundary (some coordinate within 1e-3 of a bound, in unit-cube units), the number of
proposals repeating an evaluated point (sup-norm < 1e-6 in the unit cube), the share of
proposals whose value falls inside the hypervolume box, the largest number of identical
proposals, and the wall time per round (fit + acquisition). A second table gives the held-out
NRMSE (RMSE / std of f, averaged over objectives, 256 Sobol test points) of the models fitted
on 20 Sobol points, against independent BoTorch ``SingleTaskGP`` s.

Run: ``python bench/mtucb_bench/studies/mo_diagnosis.py [--seeds 3] [--rounds 30] [--configs a,b]
[--problems DTLZ2,...] [--no-nrmse] [--out benchmarks/results/mo_diagnosis.json]``
(single-threaded; about an hour for all configurations). Results of issue 16:
``mo_diagnosis.json`` (the factor ladder and leave-one-out), ``mo_diagnosis_ref.json``
(reference point and augmentation), ``mo_diagnosis_model.json`` (model vs acquisition).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.fit import fit_gpytorch_mll
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from botorch.test_functions.multi_objective import DTLZ2, BraninCurrin, VehicleSafety
from botorch.utils.multi_objective.box_decompositions.dominated import DominatedPartitioning
from botorch.utils.multi_objective.pareto import is_non_dominated
from gpytorch.means import ConstantMean, MultitaskMean
from gpytorch.mlls import ExactMarginalLogLikelihood, SumMarginalLogLikelihood
from gpytorch.priors import LogNormalPrior
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP

DT = torch.float64
PROBLEMS = {
    "DTLZ2": lambda: DTLZ2(dim=6, num_objectives=3, negate=True).to(DT),
    "BraninCurrin": lambda: BraninCurrin(negate=True).to(DT),
    "VehicleSafety": lambda: VehicleSafety(negate=True).to(DT),
}
README = {"x": "raw", "scal": "raw", "lam": "paper", "beta": 2.0, "model": "paper"}
FIXED = {"x": "norm", "scal": "scaled", "lam": "paper", "beta": 1.0, "model": "careful"}
CONFIGS: dict[str, dict] = {
    "sobol": {"method": "sobol"},
    "readme": dict(README),
    "readme+norm": {**README, "x": "norm"},
    "readme+norm+scaled": {**README, "x": "norm", "scal": "scaled"},
    "readme+norm+scaled+careful": {**README, "x": "norm", "scal": "scaled", "model": "careful"},
    "fixed": dict(FIXED),
    "fixed-beta0": {**FIXED, "beta": 0.0},
    "fixed-beta0.5": {**FIXED, "beta": 0.5},
    "fixed-beta2": {**FIXED, "beta": 2.0},
    "fixed-xraw": {**FIXED, "x": "raw"},
    "fixed-scalraw": {**FIXED, "scal": "raw"},
    "fixed-modelpaper": {**FIXED, "model": "paper"},
    "fixed-simplex": {**FIXED, "lam": "simplex"},
    "fixed-nadir": {**FIXED, "ref": "nadir"},
    "fixed-aug": {**FIXED, "aug": 0.05},
    "fixed-aug-nadir": {**FIXED, "aug": 0.05, "ref": "nadir"},
    "fixed-aug-nadir-beta2": {**FIXED, "aug": 0.05, "ref": "nadir", "beta": 2.0},
    "fixed-aug-nadir-simplex": {**FIXED, "aug": 0.05, "ref": "nadir", "lam": "simplex"},
    "fixed-aug-nadir-beta0": {**FIXED, "aug": 0.05, "ref": "nadir", "beta": 0.0},
    "fixed-aug-nadir-beta0.25": {**FIXED, "aug": 0.05, "ref": "nadir", "beta": 0.25},
    "stgp-aug-nadir": {**FIXED, "aug": 0.05, "ref": "nadir", "model": "stgp"},
    "stgp-aug-nadir-beta0": {**FIXED, "aug": 0.05, "ref": "nadir", "model": "stgp", "beta": 0.0},
    "icm-qLogNParEGO": {"method": "parego", "model": "careful", "x": "norm"},
    "qLogNParEGO": {"method": "parego"},
}


def sobol(n: int, bounds: Tensor, seed: int) -> Tensor:
    """``n`` scrambled Sobol points in the box ``bounds`` (2 x d)."""
    U = SobolEngine(bounds.shape[-1], scramble=True, seed=seed).draw(n).to(bounds)
    return bounds[0] + (bounds[1] - bounds[0]) * U


def draw_lambdas(n: int, num: int, kind: str, seed: int) -> Tensor:
    """``num x n`` weights: paper 000 (λ ∝ 1/u) or uniform on the simplex."""
    g = torch.Generator().manual_seed(seed)
    u = 1.0 - torch.rand(num, n, generator=g, dtype=DT)
    if kind == "paper":
        u = 1.0 / u
    else:  # Dirichlet(1): normalised exponentials
        u = -u.log()
    return u / u.sum(dim=-1, keepdim=True)


def make_mt_model(X: Tensor, Y: Tensor, bounds: Tensor, cfg: dict) -> ExactMultiTaskGP:
    d, n = X.shape[-1], Y.shape[-1]
    tf = Normalize(d, bounds=bounds) if cfg["x"] == "norm" else None
    if cfg["model"] == "paper":
        return ExactMultiTaskGP(X, Y, input_transform=tf, outcome_transform=Standardize(m=n))
    base = get_covar_module_with_dim_scaled_prior(ard_num_dims=d, use_rbf_kernel=False)
    model = ExactMultiTaskGP(
        X, Y, covar_module=ICMKernel(base, num_tasks=n, rank=n), noise=math.exp(-5.0),
        learn_noise=True, input_transform=tf, outcome_transform=Standardize(m=n),
        mean_module=MultitaskMean(ConstantMean(), num_tasks=n),
    )
    lik = model.likelihood
    lik.register_prior("noise_prior", LogNormalPrior(-4.0, 1.0), lambda m: m.noise,
                       lambda m, v: m._set_noise(v))
    lik.raw_noise_constraint.lower_bound.fill_(1e-4)
    return model.to(X)


def fit(model) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(model, ModelListGP):
            fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
        else:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))


def scalarization(lam: Tensor, Y: Tensor, kind: str, ref: str = "min") -> ChebyshevScalarization:
    lo, hi = Y.min(dim=0).values, Y.max(dim=0).values
    if kind == "raw":
        return ChebyshevScalarization(lam, ref_point=lo)
    span = (hi - lo).clamp_min(1e-9)
    if ref == "nadir":  # worst value of the observed non-dominated points
        lo = Y[is_non_dominated(Y)].min(dim=0).values
    w = lam / span
    return ChebyshevScalarization(w / w.sum(), ref_point=lo - 0.1 * span)


class AugmentedChebyshevUCB(AcquisitionFunction):
    """min_i w_i (u_i − z_i) + ρ Σ_i w_i (u_i − z_i) on per-objective UCBs u = μ + βσ.

    An upper bound on the augmented Chebyshev value of f (monotone in every u_i), whose
    maximisers are Pareto optimal rather than only weakly Pareto optimal.
    """

    def __init__(self, model, scal: ChebyshevScalarization, beta: float, rho: float) -> None:
        super().__init__(model=model)
        self.w, self.z = scal.weights.to(DT), scal.ref_point.to(DT)
        self.beta, self.rho = beta, rho

    def forward(self, X: Tensor) -> Tensor:
        post = self.model.posterior(X)
        u = post.mean[..., 0, :] + self.beta * post.variance[..., 0, :].clamp_min(1e-30).sqrt()
        pieces = self.w * (u - self.z)
        return pieces.min(dim=-1).values + self.rho * pieces.sum(dim=-1)


def parego_model(X: Tensor, Y: Tensor, bounds: Tensor) -> ModelListGP:
    d = X.shape[-1]
    return ModelListGP(*[
        SingleTaskGP(X, Y[:, i:i + 1], input_transform=Normalize(d, bounds=bounds),
                     outcome_transform=Standardize(m=1)) for i in range(Y.shape[-1])
    ])


def run(problem, cfg: dict, seed: int, n0: int, rounds: int) -> dict:
    """One configuration on one seed; returns the per-run metrics."""
    bounds = problem.bounds.to(DT)
    n = problem.num_objectives
    X = sobol(n0, bounds, seed)
    method = cfg.get("method", "mtucb")
    lam_all = draw_lambdas(n, rounds, cfg.get("lam", "paper"), seed + 7)
    times = []
    if method == "sobol":
        X = sobol(n0 + rounds, bounds, seed)
    else:
        for t in range(rounds):
            Y = problem(X)
            start = time.perf_counter()
            torch.manual_seed(seed * 1000 + t)
            if method == "parego":
                if cfg.get("model") == "careful":
                    model = make_mt_model(X, Y, bounds, cfg)
                else:
                    model = parego_model(X, Y, bounds)
                fit(model)
                acqf = qLogNParEGO(model, X_baseline=X, scalarization_weights=lam_all[t],
                                   sampler=SobolQMCNormalSampler(torch.Size([64]), seed=t))
            else:
                if cfg["model"] == "stgp":
                    model = parego_model(X, Y, bounds)
                else:
                    model = make_mt_model(X, Y, bounds, cfg)
                fit(model)
                scal = scalarization(lam_all[t], Y, cfg["scal"], cfg.get("ref", "min"))
                if cfg.get("aug", 0.0) > 0:
                    acqf = AugmentedChebyshevUCB(model, scal, cfg["beta"], cfg["aug"])
                else:
                    acqf = ScalarizedMultiTaskUCB(model, scal, beta=cfg["beta"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=128)
            times.append(time.perf_counter() - start)
            X = torch.cat([X, x.detach()])
    Y = problem(X)
    return metrics(problem, X, Y, n0) | {"time_per_round": sum(times) / max(len(times), 1)}


def metrics(problem, X: Tensor, Y: Tensor, n0: int) -> dict:
    bounds = problem.bounds.to(DT)
    ref = problem.ref_point.to(DT)
    hv = DominatedPartitioning(ref_point=ref, Y=Y).compute_hypervolume().item()
    U = (X - bounds[0]) / (bounds[1] - bounds[0])
    P = U[n0:]
    boundary = ((P < 1e-3) | (P > 1 - 1e-3)).any(dim=-1).double().mean().item()
    dist = torch.cdist(P, U, p=float("inf"))  # proposals vs all points
    idx = torch.arange(P.shape[0])
    earlier = idx[:, None] + n0 > torch.arange(U.shape[0])[None, :]
    repeats = int(((dist < 1e-6) & earlier).any(dim=-1).sum())
    same = (torch.cdist(P, P, p=float("inf")) < 1e-6).sum(dim=-1).max().item()
    inside = (Y[n0:] > ref).all(dim=-1).double().mean().item()
    return {"hv_pct": 100 * hv / problem.max_hv, "boundary_frac": boundary,
            "repeats": repeats, "max_identical": int(same), "in_hv_box": inside}


def nrmse_table(seeds: int, n_train: int = 20) -> dict:
    """Held-out NRMSE of the MT models vs independent SingleTaskGPs."""
    out: dict = {}
    for pname, make in PROBLEMS.items():
        problem = make()
        bounds = problem.bounds.to(DT)
        rows: dict[str, list[float]] = {"paper": [], "careful": [], "SingleTaskGPs": []}
        for s in range(seeds):
            X, Xt = sobol(n_train, bounds, s), sobol(256, bounds, 10_000 + s)
            Y, Ft = problem(X), problem(Xt)
            for name in rows:
                if name == "SingleTaskGPs":
                    model = parego_model(X, Y, bounds)
                else:
                    model = make_mt_model(X, Y, bounds, {"x": "norm", "model": name})
                fit(model)
                with torch.no_grad():
                    mu = model.posterior(Xt).mean
                err = ((mu - Ft).square().mean(dim=0).sqrt() / Ft.std(dim=0)).mean().item()
                rows[name].append(err)
        out[pname] = {k: sum(v) / len(v) for k, v in rows.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--n0", type=int, default=10)
    ap.add_argument("--configs", type=str, default=",".join(CONFIGS))
    ap.add_argument("--problems", type=str, default=",".join(PROBLEMS))
    ap.add_argument("--no-nrmse", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/mo_diagnosis.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    configs = args.configs.split(",")
    results: dict = {"protocol": {"n0": args.n0, "rounds": args.rounds, "seeds": args.seeds},
                     "configs": {c: CONFIGS[c] for c in configs}, "runs": {}, "mean": {}}
    keys = ["hv_pct", "boundary_frac", "repeats", "max_identical", "in_hv_box", "time_per_round"]
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        print(f"\n## {pname}\n\n| config | HV % | on boundary | repeats | max identical | "
              "in HV box | s/round |\n|---|---|---|---|---|---|---|", flush=True)
        for c in configs:
            runs = [run(problem, CONFIGS[c], s, args.n0, args.rounds) for s in range(args.seeds)]
            results["runs"].setdefault(pname, {})[c] = runs
            mean = {k: sum(r[k] for r in runs) / len(runs) for k in keys}
            results["mean"].setdefault(pname, {})[c] = mean
            print(f"| {c} | {mean['hv_pct']:.1f} (" + ", ".join(
                f"{r['hv_pct']:.0f}" for r in runs) + f") | {mean['boundary_frac']:.2f} | "
                f"{mean['repeats']:.1f} | {mean['max_identical']:.1f} | {mean['in_hv_box']:.2f}"
                f" | {mean['time_per_round']:.2f} |", flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
    if not args.no_nrmse:
        results["nrmse"] = nrmse_table(args.seeds)
        print("\n| problem | NRMSE paper model | careful model | SingleTaskGPs |")
        print("|---|---|---|---|")
        for pname, row in results["nrmse"].items():
            print(f"| {pname} | {row['paper']:.3f} | {row['careful']:.3f} | "
                  f"{row['SingleTaskGPs']:.3f} |")
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
