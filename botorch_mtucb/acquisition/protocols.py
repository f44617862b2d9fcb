"""Declared interfaces of acquisition functions and samplers, read instead of attribute probing.

These runtime-checkable ``typing.Protocol`` classes are what the loop and the trust region ask
of an acquisition (``isinstance(acqf, ScalarizedAcquisition)``); any object that offers the
attributes qualifies, whether or not it comes from this package.

* :class:`ConfidenceWidthAcquisition` — the confidence width β it uses (``beta``), recorded per
  round by the loop; implemented by ScalarizedMultiTaskUCB and HeavyTailedUCB.
* :class:`ScalarizedAcquisition` — its model and scalarization s_λ (``model``,
  ``scalarization``), read by the trust region's incumbent rule
  (:class:`~botorch_mtucb.acquisition.trust_region.TrustRegionOptimizer`); implemented by
  ScalarizedMultiTaskUCB.
* :class:`ModelAnchoredSampler` — a per-round scalarization sampler whose reference point
  also uses the model's predicted front (``uses_model``, ``anchors``), so the loop computes
  the payoff table once per round; implemented by ScalarizationSampler (``front="predicted"``).
* :class:`RoundAwareOptimizer` — a per-round maximiser with state across rounds that the loop
  tells when a round starts (``new_round``); implemented by the trust region.
* :class:`AvoidingOptimizer` — a maximiser told which inputs it must not return besides the
  evaluated ones (``avoid``: the loop's failed inputs); implemented by DedupOptimizer, the
  loop's default.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import Scalarization

__all__ = [
    "AvoidingOptimizer",
    "ConfidenceWidthAcquisition",
    "ModelAnchoredSampler",
    "RoundAwareOptimizer",
    "ScalarizedAcquisition",
]


@runtime_checkable
class ConfidenceWidthAcquisition(Protocol):
    """An optimistic acquisition with one confidence width β (recorded per round by the loop).

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from botorch_mtucb.acquisition import HeavyTailedUCB
        >>> model = SingleTaskGP(torch.rand(4, 1, dtype=torch.float64),
        ...                      torch.rand(4, 1, dtype=torch.float64))
        >>> isinstance(HeavyTailedUCB(model, beta=2.0), ConfidenceWidthAcquisition)
        True
    """

    beta: Tensor | float


@runtime_checkable
class ScalarizedAcquisition(Protocol):
    """An acquisition of a scalarized objective s_λ(f(x)) that declares its model and s_λ.

    Example:
        >>> from botorch_mtucb.acquisition import LinearScalarization, ScalarizedMultiTaskUCB
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> train_X = torch.rand(5, 1, dtype=torch.float64)
        >>> model = ExactMultiTaskGP(train_X, torch.cat([train_X, -train_X], dim=-1))
        >>> acqf = ScalarizedMultiTaskUCB(model, LinearScalarization([0.5, 0.5]))
        >>> isinstance(acqf, ScalarizedAcquisition)
        True
    """

    model: Model
    scalarization: Scalarization


@runtime_checkable
class ModelAnchoredSampler(Protocol):
    """A scalarization sampler that needs the model's payoff table each round.

    When ``uses_model`` is true, :func:`~botorch_mtucb.loop.run_bo_loop` calls
    ``anchors(model, bounds, Y, seed)`` once per round and passes the result as
    ``predicted=`` to every draw of the round.

    Example:
        >>> from botorch_mtucb.acquisition import ScalarizationSampler
        >>> sampler = ScalarizationSampler(2, ref_point="data", front="predicted")
        >>> isinstance(sampler, ModelAnchoredSampler), sampler.uses_model
        (True, True)
    """

    uses_model: bool

    def anchors(
        self, model: Model, bounds: Tensor, Y: Tensor, seed: int | None = None
    ) -> Tensor:
        """The ``n x n`` payoff table of ``model``.

        Args:
            model: A fitted model with ``n`` outputs.
            bounds: ``2 x d`` search box.
            Y: ``N x n`` observations.
            seed: Seed of the maximisation's raw samples.

        Returns:
            ``n x n`` tensor, row i = the posterior mean at objective i's optimum.
        """
        ...


@runtime_checkable
class RoundAwareOptimizer(Protocol):
    """A maximiser that keeps state across rounds and must know where a round starts.

    :func:`~botorch_mtucb.loop.run_bo_loop` calls ``new_round()`` before the first point of
    every round; the acquisitions of a round's later points carry the earlier points as
    ``X_pending``, and so may those of a first point (the loop's failed evaluations), so
    ``X_pending`` alone does not tell them apart.

    Example:
        >>> from botorch_mtucb.acquisition.trust_region import TrustRegionOptimizer
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> isinstance(TrustRegionOptimizer(bounds), RoundAwareOptimizer)
        True
    """

    def new_round(self) -> None:
        """The next call is the first point of a new round."""
        ...


@runtime_checkable
class AvoidingOptimizer(Protocol):
    """A maximiser that can be told inputs it must not return (besides the evaluated ones).

    :func:`~botorch_mtucb.loop.run_bo_loop` calls ``avoid(failed_X)`` before each proposal
    (``None`` while nothing has failed), so that an input whose evaluation failed is not
    proposed again.

    Example:
        >>> from botorch_mtucb.acquisition.dedup import DedupOptimizer
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> isinstance(DedupOptimizer(bounds), AvoidingOptimizer)
        True
    """

    def avoid(self, X: Tensor | None) -> None:
        """The ``F x d`` inputs the next calls must not return (``None``: none)."""
        ...
