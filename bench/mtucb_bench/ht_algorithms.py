"""Heavy-tailed entries of the algorithm registry (merged by ``algorithms.ALGORITHMS``).

Heavy-tailed (paper 001; λ = 1, δ = 0.1, ε = 0.1):

==========================  ================================================================
``TGP-UCB``                 TruncatedGP + HeavyTailedUCB (its own β).
``ATA-GP-UCB-QFF``          AdaptiveTruncationGP with QuadratureFourierFeatures (SE only).
``ATA-GP-UCB-Nystrom``      AdaptiveTruncationGP with NystromFeatures.
``GP-UCB``                  TruncatedGP without truncation, width :func:`gp_ucb_width`.
``TGP-UCB-practical``       ``TruncatedGP(X, Y)`` data-driven (median centring, median-of-
                            means v, BoTorch-fitted kernel) + ``HeavyTailedUCB``, width 1.
``TGP-LogEI-practical``     the same model + ``LogExpectedImprovement`` (``best_f`` = the
                            largest posterior mean at an evaluated point), as ``RRP-LogEI``.
``GP-UCB-practical``        the same without truncation, width 1.
``ATA-GP-UCB-practical``    ``AdaptiveTruncationGP(X, Y)`` data-driven (median centring,
                            median-of-means v, Nyström features on a BoTorch-fitted kernel)
                            + ``HeavyTailedUCB``, width 1.
``STGP-UCB``, ``-LogEI``    ``SingleTaskGP`` (BoTorch defaults) + UCB(β = 1) / LogEI.
``RRP-UCB``, ``RRP-LogEI``  ``RobustRelevancePursuitSingleTaskGP`` + UCB(β = 1) / LogEI.
``StudentT-GP-UCB``         variational GP with a Student-t likelihood
                            (``robust_baselines.fit_student_t_gp``) + UCB(β = 1) on ``f``.
==========================  ================================================================

The issue-16 entries (``*-practical`` and the BoTorch baselines) refit on all data every
round up to t = 32 and at every power of two after that (RRP and Student-t: every round),
condition in between, start from the prior of a plain GP for t < 2, and need arm
coordinates (not a PrecomputedKernel): short horizons only (``O(t³)`` refits). The
data-driven TruncatedGP truncates every reward at the current round's level ``b_t``, as the
issue-16 suite's ``practical_truncated_gp`` does (``TruncatedGP(..., level="current")``),
and winsorises instead of zeroing (``clip=True``, the data-driven default). The UCB entries
take a width: ``NAME@beta=B`` (``run --beta B``) maximises μ + B σ (BoTorch's
``UpperConfidenceBound(beta=B²)``); default B = 1.

``RunConfig.constants`` picks the theory or the authors' constants of the heavy-tailed models
(the papers' figures used the authors' code; default ``"authors"``).
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction, LogExpectedImprovement, UpperConfidenceBound
from botorch.models.model import Model
from botorch.posteriors import Posterior
from torch import Tensor

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.algorithm_types import AlgorithmSetup, AlgorithmSpec, RunConfig
from mtucb_bench.baselines import gp_ucb_width
from mtucb_bench.problems import HeavyTailedProblem
from mtucb_bench.robust_baselines import fit_rrp_gp, fit_single_task_gp, fit_student_t_gp

__all__ = ["HT_ALGORITHMS", "ScheduledRefitModel"]


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


class ScheduledRefitModel(Model):
    """A model rebuilt from all data on a schedule and conditioned in between (see above)."""

    _num_outputs = 1

    def __init__(self, build, X: Tensor, Y: Tensor, refit_upto: float) -> None:
        super().__init__()
        self._build, self._X, self._Y, self._upto = build, X, Y, refit_upto
        self.inner = build(X, Y)

    @property
    def num_outputs(self) -> int:
        return 1

    def posterior(self, X: Tensor, **kwargs) -> Posterior:
        return self.inner.posterior(X, **kwargs)

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs) -> ScheduledRefitModel:
        Xa, Ya = torch.cat([self._X, X]), torch.cat([self._Y, Y])
        t = Xa.shape[0]
        if t <= self._upto or t & (t - 1) == 0:
            return ScheduledRefitModel(self._build, Xa, Ya, self._upto)
        new = ScheduledRefitModel.__new__(ScheduledRefitModel)
        Model.__init__(new)
        new._build, new._X, new._Y, new._upto = self._build, Xa, Ya, self._upto
        new.inner = self.inner.condition_on_observations(X, Y)
        return new


def _prior(problem: HeavyTailedProblem, X: Tensor, Y: Tensor) -> Model:
    return TruncatedGP(X, Y, 1.0, 1.0, truncate=False, constants="practical",
                       arms=problem.arms)


def _build_practical(kind: str):
    def build(problem: HeavyTailedProblem, cfg: RunConfig) -> AlgorithmSetup:
        gen = torch.Generator().manual_seed(cfg.seed)

        def inner(X: Tensor, Y: Tensor) -> Model:
            if X.shape[0] < 2:
                return _prior(problem, X, Y)
            if kind in ("TGP", "GP", "TGP-LogEI"):
                return TruncatedGP(X, Y, truncate=kind != "GP", arms=problem.arms)
            if kind == "ATA":
                return AdaptiveTruncationGP(X, Y, arms=problem.arms, generator=gen)
            if kind.startswith("StudentT"):
                return fit_student_t_gp(X, Y)
            return (fit_rrp_gp if kind.startswith("RRP") else fit_single_task_gp)(X, Y)

        upto = math.inf if kind.startswith(("RRP", "StudentT")) else 32

        def model_factory(X: Tensor, Y: Tensor) -> Model:
            return ScheduledRefitModel(inner, X, Y, upto)

        width = 1.0 if cfg.beta is None else float(cfg.beta)  # NAME@beta=B: μ + B σ

        def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
            m = model.inner
            ours = isinstance(m, (TruncatedGP, AdaptiveTruncationGP))
            if kind.endswith("LogEI"):  # best_f: the largest posterior mean at the data
                X_obs = m.train_X if ours else m.train_inputs[0]
                with torch.no_grad():  # no data yet (round 1): the prior mean, zero
                    best = (m.posterior(X_obs.unsqueeze(-2)).mean.max() if X_obs.shape[-2]
                            else X_obs.new_zeros(()))
                return LogExpectedImprovement(m, best_f=best)
            if ours:
                return HeavyTailedUCB(m, beta=width)  # data-driven default: width 1
            return UpperConfidenceBound(m, beta=width**2)  # BoTorch's β is the squared width

        return AlgorithmSetup(model_factory, acq)

    return build


def _coordinates(problem: HeavyTailedProblem) -> str | None:
    if isinstance(problem.kernel(), PrecomputedKernel):
        return "needs arm coordinates for BoTorch's kernels (this problem has a data kernel)"
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
    AlgorithmSpec("TGP-UCB-practical", "heavy_tailed",
                  "data-driven TruncatedGP (centred, fitted kernel), width 1",
                  _build_practical("TGP"), _coordinates,
                  tunable_width=True),
    AlgorithmSpec("TGP-LogEI-practical", "heavy_tailed",
                  "data-driven TruncatedGP (as TGP-UCB-practical) + LogEI",
                  _build_practical("TGP-LogEI"), _coordinates),
    AlgorithmSpec("GP-UCB-practical", "heavy_tailed", "TGP-UCB-practical without truncation",
                  _build_practical("GP"), _coordinates,
                  tunable_width=True),
    AlgorithmSpec("ATA-GP-UCB-practical", "heavy_tailed",
                  "data-driven AdaptiveTruncationGP (centred, Nystrom on a fitted kernel), "
                  "width 1", _build_practical("ATA"), _coordinates,
                  tunable_width=True),
    AlgorithmSpec("STGP-UCB", "heavy_tailed", "SingleTaskGP + UCB(beta=1)",
                  _build_practical("STGP-UCB"), _coordinates,
                  tunable_width=True),
    AlgorithmSpec("STGP-LogEI", "heavy_tailed", "SingleTaskGP + LogEI",
                  _build_practical("STGP-LogEI"), _coordinates),
    AlgorithmSpec("RRP-UCB", "heavy_tailed", "RobustRelevancePursuitSingleTaskGP + UCB(beta=1)",
                  _build_practical("RRP-UCB"), _coordinates,
                  tunable_width=True),
    AlgorithmSpec("RRP-LogEI", "heavy_tailed", "RobustRelevancePursuitSingleTaskGP + LogEI",
                  _build_practical("RRP-LogEI"), _coordinates),
    AlgorithmSpec("StudentT-GP-UCB", "heavy_tailed",
                  "variational GP with a Student-t likelihood + UCB(beta=1)",
                  _build_practical("StudentT-GP-UCB"), _coordinates,
                  tunable_width=True),
]
