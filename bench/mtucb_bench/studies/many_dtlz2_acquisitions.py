"""Does another acquisition on MT-UCB's model lift DTLZ2 at n >= 5? (study; many-objective suite)

MT-UCB proposes on the box faces of DTLZ2-n5's distance variables (66 % of the coordinates) and
adds no hypervolume to its Sobol design in 20 rounds. Hypothesis tested here: the directional
width min_i λ_i(μ_i + βσ_i − z_i), optimistic in all n objectives at once, grows looser with n.
Arms, each the suite's ``MT-UCB`` entry (same model, refit schedule, scale-free augmented
Chebyshev s_λ, optimizer) with only the acquisition swapped:

* ``MT-QUCB``: the Φ(β)-quantile (β = 1) of s_λ(f(x)) under the joint n-task posterior at x
  (256 fixed normal base samples per round), a width at one level for any n;
* ``MT-NEI``: qLogNEI of s_λ with z at the observed ideal point (qLogNParEGO's reference),
  the pair that matched qLogNParEGO at n = 3 (``mo_dtlz2_diagnosis``'s ``nei-icm-zmax``);
* ``MT-TS`` (the registry's entry): s_λ of one posterior path.

Run (one process per trial; the suite's common random numbers)::

    python -m mtucb_bench.studies.many_dtlz2_acquisitions --problem dtlz2-n5 \\
        --algorithms MT-QUCB MT-NEI MT-TS --trials 5 --out benchmark-runs/many_dtlz2_acq
    python -m mtucb_bench.suites.many_suite summarize --rounds 20 \\
        --out benchmark-runs/many_dtlz2_acq --results <scratch>
"""

from __future__ import annotations

import argparse
import sys

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.objective import GenericMCObjective
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor
from torch.distributions import Normal

import mtucb_bench.algorithms as algorithms
from botorch_mtucb.acquisition import ChebyshevScalarization
from botorch_mtucb.acquisition.multi_task_ucb import task_mean_and_covariance
from mtucb_bench.algorithm_types import AlgorithmSetup, AlgorithmSpec
from mtucb_bench.cli import main as cli_main


class QuantileScalarizedUCB(AcquisitionFunction):
    """Φ(β)-quantile of s_λ(f(x)), f(x) ~ N(μ(x), Γ(x, x)), by fixed base samples (q = 1)."""

    def __init__(self, model, scalarization, beta: float, seed: int, num_samples: int = 256):
        super().__init__(model)
        self.scalarization = scalarization
        self.level = float(Normal(0.0, 1.0).cdf(torch.tensor(float(beta))))
        g = torch.Generator().manual_seed(seed)
        n = scalarization.weights.shape[-1]
        self.register_buffer("Z", torch.randn(num_samples, n, generator=g, dtype=torch.float64))

    def forward(self, X: Tensor) -> Tensor:
        mean, covar = task_mean_and_covariance(self.model, X if X.dim() > 2 else X.unsqueeze(0))
        mean, covar = mean[..., 0, :], covar[..., 0, :, :]
        eye = torch.eye(mean.shape[-1], dtype=mean.dtype, device=mean.device)
        L = torch.linalg.cholesky(covar + 1e-10 * eye)
        f = mean.unsqueeze(-2) + torch.einsum("...ij,mj->...mi", L, self.Z.to(mean))
        return torch.quantile(self.scalarization(f), self.level, dim=-1)


def _swap(kind: str):
    base = algorithms._practical(False)

    def build(problem, cfg) -> AlgorithmSetup:
        setup = base(problem, cfg)

        def acq(model, scal):
            scal = algorithms._scale_free(model, scal, problem.bounds, cfg.seed, False)
            X, Y = algorithms.training_data(model)
            if kind == "quantile":
                beta = algorithms.PRACTICAL_BETA if cfg.beta is None else cfg.beta
                return QuantileScalarizedUCB(model, scal, beta, seed=7919 * cfg.seed + len(X))
            s = ChebyshevScalarization(scal.weights, Y.max(0).values,
                                       augmentation=scal.augmentation)
            sampler = SobolQMCNormalSampler(torch.Size([64]), seed=cfg.seed * 100_003 + len(X))
            return qLogNoisyExpectedImprovement(
                model, X_baseline=X, sampler=sampler,
                objective=GenericMCObjective(lambda Z, X=None: s(Z)))

        return AlgorithmSetup(setup.model_factory, acq, update=setup.update,
                              refit_every=setup.refit_every, optimizer=setup.optimizer)

    return build


# registered at import, so that the runner's worker processes (which import this module as
# their main module) find them too
for _name, _kind in (("MT-QUCB", "quantile"), ("MT-NEI", "nei")):
    algorithms.ALGORITHMS[_name] = AlgorithmSpec(
        _name, "multi_task", f"study: MT-UCB with the {_kind} acquisition", _swap(_kind),
        practical=True, tunable_width=_kind == "quantile")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="dtlz2-n5")
    ap.add_argument("--algorithms", nargs="+", default=["MT-QUCB", "MT-NEI", "MT-TS"])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--out", required=True)
    ns = ap.parse_args()
    return cli_main(["run", f"many-{ns.problem}", "--algorithms", *ns.algorithms, "--trials",
                     str(ns.trials), "--horizon", str(ns.horizon), "--bound", "directional",
                     "--workers", "1", "--no-progress", "--out", ns.out])


if __name__ == "__main__":
    sys.exit(main())
