r"""Study: is the log-EHVI's loss under noise the value it gives to re-reading the front?

:class:`~botorch_mtucb.acquisition.LogExpectedHypervolumeImprovement` scores a candidate by
its expected hypervolume improvement over the front of posterior means, with the candidate's
posterior marginal variances σ_i²(x). With noisy readings σ_i² stays positive at and near the
front's inputs, so re-reading them looks like room for improvement. BoTorch's qLogNEHVI
gives re-reading no value: it integrates over the joint posterior of the front and the
candidate. The variant here (``MT-LogEHVI-cond``) keeps the plug-in front but replaces σ_i²(x)
by the variance of f_i(x) given f at the front's inputs (at their means, which leaves the
mean unchanged):

.. math::
    σ_{c,i}^2(x) = Σ_{xx,ii} − \big(Σ_{xF} Σ_{FF}^{-1} Σ_{Fx}\big)_{ii},

from the joint posterior of the front's inputs F and x (interleaved multi-output covariance,
jitter 1e-9 × its mean diagonal). It is 0 at a front input, ≈ σ_i² far from F.

``run``: the multi-objective suite with ``MT-LogEHVI-cond`` (the loop's ``MT-LogEHVI`` entry,
this forward patched in, in-process), one run folder per problem as the suite's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from botorch.acquisition.analytic import _log_ei_helper
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.safe_math import log1mexp
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from botorch_mtucb.acquisition import LogExpectedHypervolumeImprovement
from mtucb_bench import algorithms
from mtucb_bench.experiments import ExperimentOptions
from mtucb_bench.runner import run_experiment


def _front_inputs(acqf: LogExpectedHypervolumeImprovement) -> Tensor:
    points = acqf.X_baseline if acqf.X_pending is None else torch.cat(
        [acqf.X_baseline, acqf.X_pending]
    )
    with torch.no_grad():
        means = acqf.model.posterior(points).mean * acqf.signs
    return points[is_non_dominated(means)]


def conditional_forward(self: LogExpectedHypervolumeImprovement, X: Tensor) -> Tensor:
    """log EHVI with σ_i² replaced by the variance given f at the front's inputs."""
    if X.dim() == 2:
        X = X.unsqueeze(0)
    F = _front_inputs(self)
    t, n = F.shape[0], self.signs.shape[0]
    joint = self.model.posterior(torch.cat([F.expand(*X.shape[:-2], *F.shape), X], dim=-2))
    C = joint.mvn.covariance_matrix
    tn = t * n
    C_ff, C_xf, C_xx = C[..., :tn, :tn], C[..., tn:, :tn], C[..., tn:, tn:]
    jitter = 1e-9 * C_ff.diagonal(dim1=-2, dim2=-1).mean(-1).clamp_min(1e-30)
    L = psd_safe_cholesky(C_ff + jitter[..., None, None] * torch.eye(tn).to(C_ff))
    A = torch.linalg.solve_triangular(L, C_xf.transpose(-1, -2), upper=False)
    var = (C_xx.diagonal(dim1=-2, dim2=-1) - A.square().sum(-2)).clamp_min(1e-30)
    mean = (joint.mean[..., -1, :] * self.signs - self.ref_point) / self.ranges
    mean, sd = mean.unsqueeze(-2), (var.sqrt() / self.ranges).unsqueeze(-2)
    lower, upper = self.cell_lower, self.cell_upper
    bounded = upper.isfinite()
    upper = torch.where(bounded, upper, lower + 1.0)
    log_lo, log_up = _log_ei_helper((mean - lower) / sd), _log_ei_helper((mean - upper) / sd)
    gap = torch.where(bounded, log1mexp((log_up - log_lo).clamp_max(-1e-12)), 0.0)
    return torch.logsumexp((sd.log() + log_lo + gap).sum(-1), dim=-1)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m mtucb_bench.studies.logehvi_conditional")
    p.add_argument("command", choices=["run"])
    p.add_argument("--problems", nargs="+", required=True)
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--horizon", type=int, default=20)
    p.add_argument("--noise", type=float, default=None)
    p.add_argument("--out", type=Path, required=True)
    ns = p.parse_args(argv)
    LogExpectedHypervolumeImprovement.forward = conditional_forward
    base = algorithms.ALGORITHMS["MT-LogEHVI"]
    algorithms.ALGORITHMS["MT-LogEHVI-cond"] = type(base)(
        "MT-LogEHVI-cond", base.kind, "MT-LogEHVI, variance given f at the front's inputs",
        base.build, practical=True,
    )
    noise = None if ns.noise is None else f"gaussian:{ns.noise:g}"
    for prob in ns.problems:
        run_experiment(f"mo-{prob}", algorithms=["MT-LogEHVI-cond"], trials=ns.trials,
                       horizon=ns.horizon, bound="directional", out_dir=ns.out / prob,
                       options=ExperimentOptions(noise=noise), progress=False)


if __name__ == "__main__":
    main()
