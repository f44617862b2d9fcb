"""Acquisitions, confidence radii, batches and the per-round maximisers.

* :class:`ScalarizedMultiTaskUCB` — MT-KB / MT-BKB selection rule (paper 000, eq. (2) and the
  directional bound of App. B.1) with :class:`LinearScalarization` /
  :class:`ChebyshevScalarization` / :class:`HypervolumeScalarization` and λ ~ P_λ
  (:func:`sample_scalarization_weights`, :class:`ScalarizationSampler`);
  :mod:`~botorch_mtucb.acquisition.scalarization`.
* :class:`HypervolumeImprovementUCB` — the hypervolume improvement of the per-objective upper
  bounds μ + βσ over the model's front (UCB-HVI); :mod:`~botorch_mtucb.acquisition.hypervolume_ucb`.
* :class:`LogExpectedHypervolumeImprovement` — the log of the expected hypervolume improvement
  over the model's front (analytic, q = 1); :mod:`~botorch_mtucb.acquisition.hypervolume_ei`.
* :class:`ScalarizedThompsonSampling` — s_λ of a Matheron posterior sample path (scalarized
  Thompson sampling).
* :class:`HeavyTailedUCB` — TGP-UCB / ATA-GP-UCB (paper 001, Algorithms 1–2).
* :func:`robust_acquisition` — LogEI with a robust incumbent (the best posterior mean at
  evaluated points with a trusted reading) or UCB, for :func:`~botorch_mtucb.models.robust_gp`
  and any single-output model; :mod:`~botorch_mtucb.acquisition.robust`.
* :class:`TheoremTwoBeta`, :class:`TheoremThreeBeta`, :class:`ConstantBeta` — β schedules
  (:mod:`~botorch_mtucb.acquisition.beta`).
* :mod:`~botorch_mtucb.acquisition.pending` — GP-BUCB batches (``set_X_pending``,
  :func:`hallucinate_mean`, :func:`gp_bucb_inflation`).
* :mod:`~botorch_mtucb.acquisition.optimizers`, :mod:`~botorch_mtucb.acquisition.dedup`,
  :mod:`~botorch_mtucb.acquisition.trust_region` — the per-round maximisers (a box, a finite
  arm set, a box without repeats, a TuRBO trust region).
* :mod:`~botorch_mtucb.acquisition.protocols` — what the loop may ask of an acquisition.
* :func:`recommend_pareto_set` — the evaluated points whose posterior means are non-dominated
  (the model's Pareto set under noise); :mod:`~botorch_mtucb.acquisition.recommend`.

The acquisitions import no model class: they ask a model for what they need through
:mod:`botorch_mtucb.protocols`.
"""

from botorch_mtucb.acquisition.beta import (
    BetaSchedule,
    ConstantBeta,
    TheoremThreeBeta,
    TheoremTwoBeta,
    log_det_information,
)
from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.acquisition.hypervolume_ei import LogExpectedHypervolumeImprovement
from botorch_mtucb.acquisition.hypervolume_ucb import HypervolumeImprovementUCB
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.pending import gp_bucb_inflation, hallucinate_mean
from botorch_mtucb.acquisition.protocols import ConfidenceWidthAcquisition, ScalarizedAcquisition
from botorch_mtucb.acquisition.recommend import ParetoSetRecommendation, recommend_pareto_set
from botorch_mtucb.acquisition.robust import DEFAULT_ROBUST_ACQUISITION, robust_acquisition
from botorch_mtucb.acquisition.scalarization import (
    ChebyshevScalarization,
    HypervolumeScalarization,
    LinearScalarization,
    Scalarization,
    ScalarizationSampler,
    sample_scalarization_weights,
)
from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors
from botorch_mtucb.acquisition.thompson import ScalarizedThompsonSampling

__all__ = [
    "BetaSchedule",
    "ChebyshevScalarization",
    "ConfidenceWidthAcquisition",
    "ConstantBeta",
    "DEFAULT_ROBUST_ACQUISITION",
    "HeavyTailedUCB",
    "HypervolumeImprovementUCB",
    "HypervolumeScalarization",
    "LinearScalarization",
    "LogExpectedHypervolumeImprovement",
    "ParetoSetRecommendation",
    "Scalarization",
    "ScalarizationSampler",
    "ScalarizedAcquisition",
    "ScalarizedMultiTaskUCB",
    "ScalarizedThompsonSampling",
    "TheoremThreeBeta",
    "TheoremTwoBeta",
    "gp_bucb_inflation",
    "hallucinate_mean",
    "log_det_information",
    "predicted_anchors",
    "recommend_pareto_set",
    "robust_acquisition",
    "sample_scalarization_weights",
]
