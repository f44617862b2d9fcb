"""Heavy-tailed entries of the algorithm registry (merged by ``algorithms.ALGORITHMS``).

Heavy-tailed (paper 001; λ = 1, δ = 0.1, ε = 0.1):

==========================  ================================================================
``TGP-UCB``                 TruncatedGP + HeavyTailedUCB (its own β).
``ATA-GP-UCB-QFF``          AdaptiveTruncationGP with QuadratureFourierFeatures (SE only).
``ATA-GP-UCB-Nystrom``      AdaptiveTruncationGP with NystromFeatures.
``GP-UCB``                  TruncatedGP without truncation, width :func:`gp_ucb_width`.
==========================  ================================================================

``RunConfig.constants`` picks the theory or the authors' constants of the heavy-tailed models
(the papers' figures used the authors' code; default ``"authors"``).
"""

from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.benchmarks.algorithm_types import AlgorithmSetup, AlgorithmSpec, RunConfig
from botorch_mtucb.benchmarks.baselines import gp_ucb_width
from botorch_mtucb.benchmarks.problems import HeavyTailedProblem
from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.features.quadrature_fourier import QuadratureFourierFeatures
from botorch_mtucb.kernels.precomputed import PrecomputedKernel
from botorch_mtucb.models.adaptive_truncation_gp import AdaptiveTruncationGP
from botorch_mtucb.models.truncated_gp import TruncatedGP

__all__ = ["HT_ALGORITHMS"]


def _arms_kw(problem: HeavyTailedProblem, kernel) -> dict[str, Tensor]:
    """``arms=`` for the fast finite-arm path (implicit with a PrecomputedKernel)."""
    return {} if isinstance(kernel, PrecomputedKernel) else {"arms": problem.arms}


def _build_tgp(truncate: bool):
    def build(problem: HeavyTailedProblem, cfg: RunConfig) -> AlgorithmSetup:
        def model_factory(X: Tensor, Y: Tensor) -> Model:
            kern = problem.kernel()
            return TruncatedGP(
                X,
                Y,
                alpha=problem.alpha,
                v=problem.v,
                covar_module=kern,
                lam=cfg.lam,
                delta=cfg.delta,
                B=problem.B,
                constants=cfg.constants,
                truncate=truncate,
                **_arms_kw(problem, kern),
            )

        if truncate:

            def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
                return HeavyTailedUCB(model)

        else:

            def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
                width = gp_ucb_width(model.num_observations, problem.v, problem.B, cfg.lam)
                return HeavyTailedUCB(model, beta=width)

        return AlgorithmSetup(model_factory, acq)

    return build


def _build_ata(kind: str):
    def build(problem: HeavyTailedProblem, cfg: RunConfig) -> AlgorithmSetup:
        if kind == "qff":
            spec = problem.qff
            arms = spec.arms
            features = QuadratureFourierFeatures(
                lengthscale=spec.lengthscale, num_nodes=spec.num_nodes, dim=arms.shape[-1]
            )
            arms_kw = {"arms": arms}
        else:
            kern = problem.kernel()
            gen = torch.Generator().manual_seed(cfg.seed)
            features = NystromFeatures(kern, epsilon=cfg.epsilon_ht, generator=gen)
            arms_kw = _arms_kw(problem, kern)

        def model_factory(X: Tensor, Y: Tensor) -> Model:
            return AdaptiveTruncationGP(
                X,
                Y,
                alpha=problem.alpha,
                v=problem.v,
                features=features,
                lam=cfg.lam,
                delta=cfg.delta,
                B=problem.B,
                horizon=cfg.horizon,
                constants=cfg.constants,
                **arms_kw,
            )

        def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
            return HeavyTailedUCB(model)

        return AlgorithmSetup(model_factory, acq, "qff" if kind == "qff" else "kernel")

    return build


def _qff_available(problem: HeavyTailedProblem) -> str | None:
    if problem.qff is None:
        return "no QFF variant (the kernel has no analytic SE form; paper 001 excludes it too)"
    return None


#: The heavy-tailed registry entries.
HT_ALGORITHMS: list[AlgorithmSpec] = [
    AlgorithmSpec("TGP-UCB", "heavy_tailed", "truncated GP-UCB (paper 001 Alg. 1)",
                  _build_tgp(True)),
    AlgorithmSpec("ATA-GP-UCB-QFF", "heavy_tailed", "adaptive truncation, QFF features",
                  _build_ata("qff"), _qff_available),
    AlgorithmSpec("ATA-GP-UCB-Nystrom", "heavy_tailed",
                  "adaptive truncation, Nystrom features", _build_ata("nystrom")),
    AlgorithmSpec("GP-UCB", "heavy_tailed", "GP-UCB without truncation", _build_tgp(False)),
]
