"""Declared interfaces of acquisition functions, read by the loop instead of attribute probing.

* :class:`ConfidenceWidthAcquisition` — the confidence width β it uses (``beta``), recorded per
  round by the loop; implemented by ScalarizedMultiTaskUCB, HeavyTailedUCB and the benchmark
  MOBO UCB.
* :class:`ScalarizedAcquisition` — its model and scalarization s_λ (``model``,
  ``scalarization``), read by the trust region's incumbent rule
  (:class:`~botorch_mtucb.acquisition.trust_region.TrustRegionOptimizer`); implemented by
  ScalarizedMultiTaskUCB.
* :class:`ModelAnchoredSampler` — a per-round scalarization sampler whose reference point
  also uses the model's predicted front (``uses_model``, ``anchors``), so the loop computes
  the payoff table once per round; implemented by ScalarizationSampler (``front="predicted"``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import Scalarization

__all__ = ["ConfidenceWidthAcquisition", "ModelAnchoredSampler", "ScalarizedAcquisition"]


@runtime_checkable
class ConfidenceWidthAcquisition(Protocol):
    """An optimistic acquisition with one confidence width β (recorded per round by the loop)."""

    beta: Tensor | float


@runtime_checkable
class ScalarizedAcquisition(Protocol):
    """An acquisition of a scalarized objective s_λ(f(x)) that declares its model and s_λ."""

    model: Model
    scalarization: Scalarization


@runtime_checkable
class ModelAnchoredSampler(Protocol):
    """A scalarization sampler that needs the model's payoff table each round.

    When ``uses_model`` is true, :func:`~botorch_mtucb.loop.run_bo_loop` calls
    ``anchors(model, bounds, Y, seed)`` once per round and passes the result as
    ``predicted=`` to every draw of the round.
    """

    uses_model: bool

    def anchors(
        self, model: Model, bounds: Tensor, Y: Tensor, seed: int | None = None
    ) -> Tensor:
        """``n x n`` payoff table of ``model`` on the box ``bounds`` (``Y``: ``N x n``)."""
        ...
