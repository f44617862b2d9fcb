"""Declared interfaces of acquisition functions, read by the loop instead of attribute probing.

* :class:`ConfidenceWidthAcquisition` — the confidence width β it uses (``beta``), recorded per
  round by the loop; implemented by ScalarizedMultiTaskUCB, HeavyTailedUCB and the benchmark
  MOBO UCB.
* :class:`ScalarizedAcquisition` — its model and scalarization s_λ (``model``,
  ``scalarization``), read by the trust region's incumbent rule
  (:class:`~botorch_mtucb.acquisition.trust_region.TrustRegionOptimizer`); implemented by
  ScalarizedMultiTaskUCB.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import Scalarization

__all__ = ["ConfidenceWidthAcquisition", "ScalarizedAcquisition"]


@runtime_checkable
class ConfidenceWidthAcquisition(Protocol):
    """An optimistic acquisition with one confidence width β (recorded per round by the loop)."""

    beta: Tensor | float


@runtime_checkable
class ScalarizedAcquisition(Protocol):
    """An acquisition of a scalarized objective s_λ(f(x)) that declares its model and s_λ."""

    model: Model
    scalarization: Scalarization
