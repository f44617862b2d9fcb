"""Baseline pieces the papers compare against that the package proper does not provide.

* :class:`AppendixEBeta` — the IT-KB / IT-BKB radii "as in Appendix E" of paper 000: the
  single-task radius of GP-UCB (Chowdhury & Gopalan 2017) or BKB (Calandriello et al. 2019),
  blown up by √n for n tasks.
* :class:`ScalarizedIndependentUCB` — MOBO (Paria et al. 2019): one UCB per objective,
  μ_i(x) + β_t σ_i(x), scalarized with the round's random s_λ.
* :func:`srinivas_beta` — the finite-domain GP-UCB width β_t = 2 log(|X| t² π² / (6δ))
  (Srinivas et al. 2010) that Paria et al.'s UCB analysis builds on; MOBO uses √β_t.
* :func:`gp_ucb_width` — plain GP-UCB on heavy-tailed rewards (paper 001's foil): the
  authors' TGP-UCB width B√λ + b √(ln t) with b = √v (second-moment scale) and no truncation.

It also holds the registry builders of the multi-objective baselines (``MOBO``,
``qLogNParEGO``, ``qLogNEHVI``; :mod:`~mtucb_bench.algorithms` registers them):
independent GPs with the problem's fixed hyperparameters on the papers' problems
(``update="condition"``), BoTorch-default fitted ``SingleTaskGP`` s refitted after every
round on the suite's (``update="refit"``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.fit import fit_gpytorch_mll
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.model import Model
from botorch.models.transforms import Normalize, Standardize
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import SumMarginalLogLikelihood
from torch import Tensor

from botorch_mtucb.acquisition import BetaSchedule
from botorch_mtucb.acquisition.beta import model_noise
from botorch_mtucb.acquisition.multi_task_ucb import task_mean_and_covariance
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.utils import original_train_inputs
from mtucb_bench.algorithm_types import AlgorithmSetup, RunConfig
from mtucb_bench.mo_suite_base import SuiteProblem
from mtucb_bench.problems import MultiTaskProblem

__all__ = [
    "MAX_NEHVI_OBJECTIVES",
    "AppendixEBeta",
    "ScalarizedIndependentUCB",
    "build_mobo",
    "build_nehvi",
    "build_parego",
    "fitted_model_list",
    "gp_ucb_width",
    "nehvi_available",
    "per_task_log_dets",
    "srinivas_beta",
    "suite_baseline_models",
]


def per_task_log_dets(model: Model) -> Tensor:
    """``n`` values log det(I_t + η⁻¹ B_ii K_t) of a model with diagonal ICM kernel k·diag(B).

    Read from the model's training inputs and kernel (one ``t x t`` eigendecomposition).
    """
    icm = model.covar_module.icm_components()
    if icm is None:
        raise ValueError("per_task_log_dets needs a model with an ICM (k·B) kernel.")
    k, B = icm
    (X,) = model.train_inputs
    with torch.no_grad():
        K = k(X).to_dense()
    a = torch.linalg.eigvalsh(0.5 * (K + K.T)).clamp_min(0.0)
    eta = model_noise(model).to(a)
    return torch.log1p(torch.diagonal(B).to(a)[:, None] * a[None, :] / eta).sum(dim=-1)


class AppendixEBeta(BetaSchedule):
    """√n × the single-task radius of each independent task (paper 000, Appendix E).

    * ``"gp-ucb"`` (IT-KB): single-task IGP-UCB radius (Chowdhury & Gopalan 2017, Thm 2) in
      the η-scaling of Theorem 2: b + (σ/√η) √(2(γ_i + 1 + ln(1/δ))), γ_i the information gain
      of task i, maximised over tasks.
    * ``"bkb"`` (IT-BKB): the single-task (n = 1) case of Theorem 3 (which generalises BKB):
      b(1 + 1/√(1−ε)) + (σ/√η) √(2 ln(2/δ) + ρ S / n), with S the model's accumulated
      Theorem-3 log-det sum over all n tasks (so S / n is the per-task average; the per-task
      sums are not tracked separately).
    """

    def __init__(
        self,
        b: float,
        sigma: float,
        num_tasks: int,
        kind: str = "gp-ucb",
        delta: float = 0.1,
        epsilon: float = 0.5,
    ) -> None:
        """
        Args:
            b: RKHS-norm bound.
            sigma: Noise σ.
            num_tasks: n (the blow-up factor is √n).
            kind: ``"gp-ucb"`` or ``"bkb"``.
            delta: Confidence δ.
            epsilon: Nyström accuracy ε (``"bkb"`` only).
        """
        if kind not in ("gp-ucb", "bkb"):
            raise ValueError(f"`kind` must be 'gp-ucb' or 'bkb', got {kind!r}.")
        if num_tasks < 1 or b < 0 or sigma < 0 or not 0 < delta <= 1 or not 0 < epsilon < 1:
            raise ValueError(
                "Need num_tasks >= 1, b >= 0, sigma >= 0, delta in (0, 1] and epsilon in (0, 1)."
            )
        self.b, self.sigma, self.n = float(b), float(sigma), int(num_tasks)
        self.kind, self.delta, self.epsilon = kind, float(delta), float(epsilon)

    def __call__(self, model: Model) -> Tensor:
        eta = float(model_noise(model))
        scale = self.sigma / math.sqrt(eta)
        if self.kind == "gp-ucb":
            gamma = 0.5 * float(per_task_log_dets(model).max())
            single = self.b + scale * math.sqrt(2.0 * (gamma + 1.0 + math.log(1.0 / self.delta)))
        else:
            S = float(torch.as_tensor(model.log_det_variance_sum))
            rho = (1.0 + self.epsilon) / (1.0 - self.epsilon)
            c_eps = 1.0 + 1.0 / math.sqrt(1.0 - self.epsilon)
            inner = 2.0 * math.log(2.0 / self.delta) + rho * S / self.n
            single = c_eps * self.b + scale * math.sqrt(max(inner, 0.0))
        return torch.tensor(math.sqrt(self.n) * single, dtype=torch.float64)


def srinivas_beta(t: int, num_points: int, delta: float = 0.1) -> float:
    """β_t = 2 log(|X| t² π² / (6δ)) (Srinivas et al. 2010, Thm 1); the UCB width is √β_t."""
    t = max(int(t), 1)
    return 2.0 * math.log(num_points * t**2 * math.pi**2 / (6.0 * delta))


def gp_ucb_width(t: int, v: float, B: float, lam: float = 1.0) -> float:
    """Plain GP-UCB width for heavy-tailed rewards: B√λ + √v √(ln(t+1)) (t observations so far)."""
    return B * math.sqrt(lam) + math.sqrt(v) * math.sqrt(math.log(t + 1))


class ScalarizedIndependentUCB(AcquisitionFunction):
    """MOBO (Paria et al. 2019): s_λ(μ(x) + β σ(x)) with per-objective UCBs (q = 1).

    Works on any multi-output model whose q = 1 posterior gives per-objective variances
    (a ``ModelListGP`` of independent GPs in the benchmarks).
    """

    def __init__(self, model: Model, scalarization: Scalarization, beta: float) -> None:
        """
        Args:
            model: Multi-output model (independent objectives).
            scalarization: s_λ of the round.
            beta: Width β ≥ 0 multiplying each σ_i.
        """
        super().__init__(model=model)
        if not math.isfinite(beta) or beta < 0:
            raise ValueError(f"`beta` must be a finite number >= 0, got {beta!r}.")
        if scalarization.num_objectives != model.num_outputs:
            raise ValueError(
                f"`scalarization` has {scalarization.num_objectives} weights, the model "
                f"{model.num_outputs} outputs."
            )
        self.scalarization = scalarization
        self.beta = float(beta)

    def forward(self, X: Tensor) -> Tensor:
        """``batch_shape x 1 x d`` → ``batch_shape`` values."""
        if X.dim() == 2:
            X = X.unsqueeze(0)
        if X.shape[-2] != 1:
            raise ValueError(f"q = 1 only: `X` must be batch_shape x 1 x d, got {tuple(X.shape)}.")
        mean, covar = task_mean_and_covariance(self.model, X)
        mean = mean[..., 0, :]
        sigma = torch.diagonal(covar[..., 0, :, :], dim1=-2, dim2=-1).clamp_min(1e-30).sqrt()
        return self.scalarization(mean + self.beta * sigma)


# ------------------------------------------- registry builders of the multi-objective baselines
#: Exact hypervolume-based acquisitions are exponential in n; refuse qLogNEHVI above this.
#: Below it a suite decides per problem by timing one round (the many-objective suite's
#: ``probe``: qLogNEHVI where one round fits in 60 s).
MAX_NEHVI_OBJECTIVES = 10


def _model_list(problem: MultiTaskProblem) -> Callable[[Tensor, Tensor], Model]:
    """Independent GPs with the problem's fixed hyperparameters (k scaled by B_ii, noise η)."""
    diag = torch.diagonal(problem.task_covar)

    def model_factory(X: Tensor, Y: Tensor) -> Model:
        models = []
        for i in range(Y.shape[-1]):
            kern = ScaleKernel(problem.scalar_kernel()).to(X)
            kern.outputscale = float(diag[i])
            m = SingleTaskGP(X, Y[:, i : i + 1], covar_module=kern, outcome_transform=None)
            m.likelihood.noise = problem.eta
            m.eval()
            models.append(m)
        return ModelListGP(*models)

    return model_factory


def fitted_model_list(X: Tensor, Y: Tensor, bounds: Tensor | None) -> ModelListGP:
    """Independent BoTorch-default SingleTaskGPs (Normalize + Standardize), fitted."""
    d = X.shape[-1]
    model = ModelListGP(*[
        SingleTaskGP(X, Y[:, i : i + 1], outcome_transform=Standardize(m=1),
                     input_transform=None if bounds is None else Normalize(d, bounds=bounds))
        for i in range(Y.shape[-1])
    ])
    if X.shape[0] >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    with torch.no_grad():  # prediction caches, which condition_on_observations needs
        model.posterior(X[:1])
    return model



def suite_baseline_models(problem: MultiTaskProblem):
    """Fitted hyperparameters for the suite's problems (issue 16), fixed for the papers'.

    Returns ``(model_factory, update)``: ``update="refit"`` (a fitted ModelListGP rebuilt on
    all data after every round) on the suite's problems, ``"condition"`` on the papers'.
    """
    if not isinstance(problem, SuiteProblem):
        return _model_list(problem), "condition"
    bounds = problem.bounds
    return (lambda X, Y: fitted_model_list(X, Y, bounds)), "refit"


def _num_train(model: Model) -> int:
    sub = model.models[0] if isinstance(model, ModelListGP) else model
    return int(sub.train_inputs[0].shape[-2])


def _baseline_inputs(model: ModelListGP) -> Tensor:
    """The observed inputs in the problem's units, for ``X_baseline``: an eval-mode BoTorch
    model with an input transform holds *transformed* ``train_inputs`` (BoTorch keeps the
    originals in ``_original_train_inputs``); the acquisition transforms ``X_baseline`` again."""
    return original_train_inputs(model.models[0])


def build_mobo(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
    """Registry builder of ``MOBO``: :class:`ScalarizedIndependentUCB` with √β_t of
    :func:`srinivas_beta` on the models of :func:`suite_baseline_models`."""
    num_points = problem.regret_X.shape[0]
    factory, update = suite_baseline_models(problem)

    def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
        beta_t = srinivas_beta(_num_train(model), num_points, problem.delta)
        return ScalarizedIndependentUCB(model, scal, beta_t**0.5)

    return AlgorithmSetup(factory, acq, update=update)


def build_parego(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
    """Registry builder of ``qLogNParEGO``: BoTorch's acquisition with the round's λ_t as
    its weights, on the models of :func:`suite_baseline_models`."""
    factory, update = suite_baseline_models(problem)

    def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
        t = _num_train(model)
        sampler = SobolQMCNormalSampler(torch.Size([64]), seed=cfg.seed * 100_003 + t)
        X_base = _baseline_inputs(model)
        return qLogNParEGO(
            model, X_baseline=X_base, scalarization_weights=scal.weights.to(X_base), sampler=sampler
        )

    return AlgorithmSetup(factory, acq, update=update)


def build_nehvi(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
    """Registry builder of ``qLogNEHVI``: BoTorch's acquisition at the problem's reference
    point, on the models of :func:`suite_baseline_models`."""
    factory, update = suite_baseline_models(problem)

    def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
        t = _num_train(model)
        sampler = SobolQMCNormalSampler(torch.Size([32]), seed=cfg.seed * 100_003 + t)
        X_base = _baseline_inputs(model)
        return qLogNoisyExpectedHypervolumeImprovement(
            model,
            ref_point=problem.ref_point.to(X_base).tolist(),
            X_baseline=X_base,
            sampler=sampler,
            prune_baseline=True,
        )

    return AlgorithmSetup(factory, acq, update=update)


def nehvi_available(problem: MultiTaskProblem) -> str | None:
    """Why ``qLogNEHVI`` cannot run on ``problem`` (too many objectives), or ``None``."""
    if problem.num_objectives > MAX_NEHVI_OBJECTIVES:
        return (
            f"qLogNEHVI is limited to n <= {MAX_NEHVI_OBJECTIVES} objectives here (the exact "
            f"box decomposition is exponential in n; this problem has n = "
            f"{problem.num_objectives})"
        )
    return None
