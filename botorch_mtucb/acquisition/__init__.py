"""acquisition."""

from botorch_mtucb.acquisition.beta import (
    BetaSchedule,
    ConstantBeta,
    TheoremTwoBeta,
    log_det_information,
)
from botorch_mtucb.acquisition.beta_nystrom import TheoremThreeBeta
from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.pending import gp_bucb_inflation, hallucinate_mean
from botorch_mtucb.acquisition.protocols import ConfidenceWidthAcquisition
from botorch_mtucb.acquisition.scalarization import (
    ChebyshevScalarization,
    LinearScalarization,
    Scalarization,
    ScalarizationSampler,
    sample_scalarization_weights,
)

__all__ = [
    "BetaSchedule",
    "ChebyshevScalarization",
    "ConfidenceWidthAcquisition",
    "ConstantBeta",
    "HeavyTailedUCB",
    "LinearScalarization",
    "Scalarization",
    "ScalarizationSampler",
    "ScalarizedMultiTaskUCB",
    "TheoremThreeBeta",
    "TheoremTwoBeta",
    "gp_bucb_inflation",
    "hallucinate_mean",
    "log_det_information",
    "sample_scalarization_weights",
]
