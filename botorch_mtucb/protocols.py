"""The model contracts: what acquisitions, β schedules and the loop may ask of a model.

Acquisitions and schedules ask a model for what they need through these runtime-checkable
``typing.Protocol`` classes (``isinstance(model, TaskPosteriorModel)``) instead of probing
attributes with ``getattr`` or importing model classes. Any BoTorch model that offers the
methods qualifies, whether or not it comes from this package; models without them take the
generic BoTorch path (``model.posterior``) where one exists. This module imports nothing of
the package, so every layer can depend on it.

=============================  ============================================  ======================
protocol                       what it gives                                 implemented by
=============================  ============================================  ======================
TaskPosteriorModel             μ(x) and the n x n block Γ_t(x, x)            ExactMultiTaskGP,
                                                                             NystromMultiTaskGP,
                                                                             NystromMultiTaskBatch
InformationGainModel           ½ log det(I + η⁻¹ G_t) (Lemma 4)              ExactMultiTaskGP,
                                                                             NystromMultiTaskGP,
                                                                             NystromMultiTaskBatch
RegularisedModel               the regulariser η (λ in paper 001)            all four models
NystromRadiusModel             ε, δ and Σ_s log det(I + η⁻¹ Γ̃_{s−1})         NystromMultiTaskGP
                               (Theorem 3)
DictionaryModel                the dictionary size m_t                       NystromMultiTaskGP,
                                                                             AdaptiveTruncationGP
MarginalMomentsModel           marginal mean and variance, no posterior      TruncatedGP,
                               object                                        AdaptiveTruncationGP
WidthScheduleModel             the next round's width β_{t+1}                TruncatedGP,
                                                                             AdaptiveTruncationGP
ProjectedTaskPosteriorModel    μ(x) and wᵀ Γ_t(x, x) w along directions W    ExactMultiTaskGP,
                               (no n x n blocks; paper 000 App. B.1)         NystromMultiTaskGP,
                                                                             NystromMultiTaskBatch
RandomStateModel               the generators its conditioning draws from    NystromMultiTaskGP,
                               (a resampled Nyström dictionary)              NystromMultiTaskBatch,
                                                                             AdaptiveTruncationGP,
                                                                             HeavyTailedBatch
=============================  ============================================  ======================

``NystromMultiTaskBatch`` (batched training data) returns batch-shaped tensors where an unbatched
model returns 0-dim ones (``information_gain``, ``noise``, ``log_det_variance_sum``,
``dictionary_size``), so the theory's β schedules refuse it.

Example:
    >>> from botorch.models import SingleTaskGP
    >>> from botorch_mtucb.models import ExactMultiTaskGP
    >>> X = torch.rand(5, 1, dtype=torch.float64)
    >>> isinstance(ExactMultiTaskGP(X, torch.cat([X, -X], dim=-1)), TaskPosteriorModel)
    True
    >>> isinstance(SingleTaskGP(X, X), TaskPosteriorModel)  # the generic posterior path
    False
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

__all__ = [
    "DictionaryModel",
    "InformationGainModel",
    "MarginalMomentsModel",
    "NystromRadiusModel",
    "ProjectedTaskPosteriorModel",
    "RandomStateModel",
    "RegularisedModel",
    "TaskPosteriorModel",
    "WidthScheduleModel",
]


@runtime_checkable
class TaskPosteriorModel(Protocol):
    """A multi-output model that returns the per-point task block of its posterior."""

    def task_posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean ``batch_shape x q x n`` and blocks Γ_t(x, x) ``batch_shape x q x n x n``.

        In the original outcome scale; no cross-point covariance is formed.
        """
        ...


@runtime_checkable
class InformationGainModel(Protocol):
    """A model that knows the information gain of the data it holds."""

    def information_gain(self) -> Tensor:
        """½ log det(I_{nt} + η⁻¹ G_t) as a 0-dim tensor (paper 000, Lemma 4)."""
        ...


@runtime_checkable
class RegularisedModel(Protocol):
    """A model with one scalar regulariser η (the Gaussian noise variance of its GP view)."""

    @property
    def noise(self) -> Tensor:
        """η as a 0-dim tensor, on the scale where the kernel lives."""
        ...


@runtime_checkable
class NystromRadiusModel(Protocol):
    """A Nyström model that accumulates Theorem 3's log-det sum round by round."""

    epsilon: float
    delta: float

    @property
    def log_det_variance_sum(self) -> Tensor:
        """Σ_{s≤t} log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)), a 0-dim tensor."""
        ...


@runtime_checkable
class DictionaryModel(Protocol):
    """A model whose posterior uses a sampled dictionary of ``m_t`` points."""

    @property
    def dictionary_size(self) -> int:
        """m_t, the number of points in the current dictionary."""
        ...


@runtime_checkable
class MarginalMomentsModel(Protocol):
    """A single-output model that gives marginal moments without a posterior object."""

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and variance at ``batch_shape x q x d`` inputs, each ``batch_shape x q``."""
        ...


@runtime_checkable
class WidthScheduleModel(Protocol):
    """A model that carries its own confidence-width schedule (paper 001's β_{t+1})."""

    def beta(self) -> float:
        """The width β_{t+1} for choosing the next point."""
        ...


@runtime_checkable
class ProjectedTaskPosteriorModel(Protocol):
    """A multi-output model that gives the task variances along chosen directions."""

    def projected_task_posterior(self, X: Tensor, directions: Tensor) -> tuple[Tensor, Tensor]:
        """Mean ``batch_shape x q x n`` and ``wⱼᵀ Γ_t(x, x) wⱼ`` ``batch_shape x q x k``.

        ``directions`` is the ``n x k`` matrix W (original outcome scale); no n x n block is
        formed, and ``k = 0`` asks for the mean alone. What the directional UCBs need (paper
        000, App. B.1).
        """
        ...


@runtime_checkable
class RandomStateModel(Protocol):
    """A model whose ``condition_on_observations`` draws random numbers.

    Nyström models resample their dictionary when conditioned. Code that conditions a model
    only to look ahead (pending points, fantasies) saves these generators' states and puts
    them back, so a seeded run draws the same dictionaries as without the look-ahead.
    """

    def random_generators(self) -> list[torch.Generator]:
        """The generators conditioning draws from, each once.

        Empty when conditioning uses torch's global generator only.
        """
        ...
