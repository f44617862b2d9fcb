"""Scalarizations s_λ of n objectives and the weight distributions P_λ (paper 000, §2 and §5).

* :mod:`~botorch_mtucb.acquisition.scalarization.base` — the contract (:class:`Scalarization`)
  and the sign convention for minimised objectives;
* :mod:`~botorch_mtucb.acquisition.scalarization.linear` — s_λ(y) = Σ_i λ_i y_i;
* :mod:`~botorch_mtucb.acquisition.scalarization.chebyshev` — s_λ(y) = min_i λ_i (y_i − z_i),
  plain, augmented and scale-free from data, and the model's payoff table that places z;
* :mod:`~botorch_mtucb.acquisition.scalarization.hypervolume` — s_λ(y) = min_i max(0,
  (y_i − z_i)/λ_i)ⁿ (Zhang & Golovin), HV_z(S) = c_n E_λ[max_{y∈S} s_λ(y)], plain and
  scale-free from data;
* :mod:`~botorch_mtucb.acquisition.scalarization.sampling` — λ ~ P_λ and the per-round sampler.
"""

from botorch_mtucb.acquisition.scalarization.base import Scalarization, project_covariance
from botorch_mtucb.acquisition.scalarization.chebyshev import (
    ChebyshevScalarization,
    predicted_anchors,
)
from botorch_mtucb.acquisition.scalarization.hypervolume import (
    HypervolumeScalarization,
    hypervolume_scalarization_constant,
)
from botorch_mtucb.acquisition.scalarization.linear import LinearScalarization
from botorch_mtucb.acquisition.scalarization.sampling import (
    ScalarizationSampler,
    sample_scalarization_weights,
)

__all__ = [
    "ChebyshevScalarization",
    "HypervolumeScalarization",
    "LinearScalarization",
    "Scalarization",
    "ScalarizationSampler",
    "hypervolume_scalarization_constant",
    "predicted_anchors",
    "project_covariance",
    "sample_scalarization_weights",
]
