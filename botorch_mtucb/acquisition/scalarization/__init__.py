"""Scalarizations s_λ of n objectives and the weight distributions P_λ (paper 000, §2, §5)."""

from botorch_mtucb.acquisition.scalarization.base import (
    LinearScalarization,
    Scalarization,
    project_covariance,
)
from botorch_mtucb.acquisition.scalarization.chebyshev import (
    ChebyshevScalarization,
    predicted_anchors,
)
from botorch_mtucb.acquisition.scalarization.sampling import (
    ScalarizationSampler,
    sample_scalarization_weights,
)

__all__ = [
    "ChebyshevScalarization",
    "LinearScalarization",
    "Scalarization",
    "ScalarizationSampler",
    "predicted_anchors",
    "project_covariance",
    "sample_scalarization_weights",
]
