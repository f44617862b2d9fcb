"""Recommendation rules and references of :mod:`mtucb_bench.studies.ht_median_gap`.

An outlier-free *reference GP* (hyperparameters fitted once on 256 Sobol points with the inlier
noise N(0, 0.1²); posterior mean ``m + K (K + σ²I)⁻¹ (y − m)``, checked against BoTorch's
``SingleTaskGP`` by :func:`check_ideal_mean`), the regret other rules name on one design, a
RobustRelevancePursuit refit, and Spearman's rank correlation.
"""

from __future__ import annotations

import time

import torch

from mtucb_bench.ht_suite_problems import sobol_unit_design
from mtucb_bench.robust_baselines import (
    fit_rrp_gp,
    fit_single_task_gp,
    practical_truncated_gp,
)

INLIER_SD = 0.1


def branin_maximisers(problem) -> torch.Tensor:
    """``3 x 2`` global maximisers of the suite's Branin in the unit cube (BoTorch's list)."""
    lo, hi = problem.bounds
    opt = torch.tensor(problem.function._optimizers, dtype=torch.float64)
    return (opt - lo) / (hi - lo)



def reference_gp(problem) -> dict:
    """Hyperparameters of an outlier-free GP: ``SingleTaskGP`` fitted once on 256 Sobol points
    (seed 12345) with inlier noise N(0, 0.1²) (seed 7), in raw units; noise = the true 0.1²."""
    X = sobol_unit_design(256, problem.dim, 12345)
    gen = torch.Generator().manual_seed(7)
    Y = problem.f(X) + INLIER_SD * torch.randn(256, generator=gen, dtype=X.dtype)
    m = fit_single_task_gp(X, Y.unsqueeze(-1))
    mu, sd = float(m.outcome_transform.means), float(m.outcome_transform.stdvs)
    return {"lengthscale": m.covar_module.lengthscale.detach().view(-1).tolist(),
            "variance": sd**2, "mean": float(m.mean_module.constant.detach()) * sd + mu,
            "noise": INLIER_SD**2}



def _ref_smoother(ref: dict, X) -> torch.Tensor:
    """``A = K (K + σ²I)⁻¹`` of the reference GP at ``n x d`` points (``n x n``; A symmetric)."""
    Z = X / torch.tensor(ref["lengthscale"], dtype=X.dtype)
    K = ref["variance"] * torch.exp(-0.5 * torch.cdist(Z, Z).square())
    return torch.linalg.solve(K + ref["noise"] * torch.eye(X.shape[0], dtype=X.dtype), K).T



def resolvability(ref: dict, X, f, y, regret, draws: int, seed: int) -> dict:
    """Regret of the posterior-mean argmax of the fixed outlier-free GP over the design's
    inlier points: for the observed rewards, and over ``draws`` fresh N(0, 0.1²) noise draws
    (``μ = m + A (y − m)``, ``A = K (K + σ²I)⁻¹``, linear in ``y``: one solve per design)."""
    A = _ref_smoother(ref, X)
    gen = torch.Generator().manual_seed(seed)
    Yd = f + INLIER_SD * torch.randn(draws, X.shape[0], generator=gen, dtype=X.dtype)
    picks = regret[((Yd - ref["mean"]) @ A.T).argmax(-1)]
    actual = regret[int(((y - ref["mean"]) @ A.T).argmax())]
    return {"ideal_actual": float(actual), "ideal_mean": float(picks.mean()),
            "ideal_median": float(picks.median()),
            "ideal_p01": float((picks < 0.01).double().mean())}



def check_ideal_mean(ref: dict, X, y) -> float:
    """Max |difference| between the closed form ``m + A (y − m)`` and the posterior mean at
    ``X`` of a BoTorch ``SingleTaskGP`` with the same fixed hyperparameters (independent
    reference)."""
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import RBFKernel, ScaleKernel

    k = ScaleKernel(RBFKernel(ard_num_dims=X.shape[-1])).to(X)
    k.base_kernel.lengthscale = torch.tensor(ref["lengthscale"], dtype=X.dtype)
    k.outputscale = ref["variance"]
    gp = SingleTaskGP(X, y.unsqueeze(-1), covar_module=k, outcome_transform=None).to(X)
    gp.likelihood.noise = ref["noise"]
    gp.mean_module.constant = ref["mean"]
    gp.eval()
    with torch.no_grad():
        mu = gp.posterior(X).mean.view(-1)
    return float((ref["mean"] + (y - ref["mean"]) @ _ref_smoother(ref, X).T - mu).abs().max())



def _argmax_mean(model, X) -> int:
    with torch.no_grad():
        return int(model.posterior(X.unsqueeze(-2)).mean.view(-1).argmax())



def rules_on_design(ref: dict, X, y, regret, gross) -> dict:
    """Regret of the point other rules name on one replayed design: the clip model
    (``practical_truncated_gp(clip=True)``), the same clipped targets under the reference
    kernel (zero mean, as the clip model), ``SingleTaskGP`` on all points and on the inliers
    only (outliers removed by an oracle; kernel fitted on them); and the fitted lengthscales."""
    clip, _ = practical_truncated_gp(X, y.unsqueeze(-1), clip=True)
    mu = _ref_smoother(ref, X) @ clip.train_targets
    stgp = fit_single_task_gp(X, y.unsqueeze(-1))
    inl = (~gross).nonzero().view(-1)
    stgp_inl = fit_single_task_gp(X[inl], y[inl].unsqueeze(-1))
    return {"clip": float(regret[_argmax_mean(clip, X)]), "clip_ref_kernel": float(
        regret[int(mu.argmax())]), "stgp": float(regret[_argmax_mean(stgp, X)]),
        "stgp_inliers": float(regret[inl[_argmax_mean(stgp_inl, X[inl])]]),
        "ls_clip": clip.covar_module.base_kernel.lengthscale.view(-1).tolist(),
        "ls_stgp_inliers": stgp_inl.covar_module.lengthscale.detach().view(-1).tolist()}



def rrp_fit(X, Y, regret) -> dict:
    """RobustRelevancePursuit refitted on a design: its pick, lengthscales, outliers flagged."""
    start = time.process_time()
    model = fit_rrp_gp(X, Y)
    noise = model.likelihood.noise_covar
    return {"rec": float(regret[_argmax_mean(model, X)]),
            "ls": model.covar_module.lengthscale.detach().view(-1).tolist(),
            "support": len(getattr(noise, "support", noise._support)),
            "cpu_s": time.process_time() - start}



def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(v):
        t = torch.tensor(v, dtype=torch.float64)
        return (t.unsqueeze(0) < t.unsqueeze(1)).sum(1) + 0.5 * (
            (t.unsqueeze(0) == t.unsqueeze(1)).sum(1) - 1)
    ra, rb = ranks(a).double(), ranks(b).double()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.square().sum() * rb.square().sum()).sqrt())
