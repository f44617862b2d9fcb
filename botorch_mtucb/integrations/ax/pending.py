"""Pending points in the Ax layer: now handled by the acquisitions themselves.

GP-BUCB hallucination lives in :mod:`botorch_mtucb.acquisition.pending` (``set_X_pending`` of
:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` and
:class:`~botorch_mtucb.acquisition.HeavyTailedUCB`); the Ax input constructors pass
``X_pending`` (and ``maximize`` for a minimised heavy-tailed objective) to them. This module
re-exports ``check_pending`` and ``hallucinate_mean`` from there and keeps
:class:`SignedHallucinatedModel` (a single-output view ``(s · μ_t, σ²_{t,pending})``) for code
that used it directly.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_mtucb.acquisition.pending import PendingState, check_pending, hallucinate_mean
from botorch_mtucb.protocols import MarginalMomentsModel

__all__ = ["SignedHallucinatedModel", "check_pending", "hallucinate_mean"]


def _marginal_moments(model: Model, X: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and variance (``batch x q``) of a single-output model."""
    if isinstance(model, MarginalMomentsModel):
        return model.mean_and_variance(X)
    post = model.posterior(X)
    return post.mean.squeeze(-1), post.variance.squeeze(-1)


class SignedHallucinatedModel(Model):
    """Single-output view ``(s · μ_t(x), σ²_{t, pending}(x))`` of a heavy-tailed model.

    ``s = ±1`` turns a minimised objective into a maximised one (TGP / ATA truncate ``|y|``,
    so negating the rewards and negating the estimate are the same thing), and the variance
    comes from ``base`` conditioned on ``X_pending`` (GP-BUCB, see the module docstring).
    It provides what :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` reads:
    ``num_outputs``, ``mean_and_variance`` and ``posterior``.
    """

    _num_outputs = 1

    def __init__(self, base: Model, sign: float, X_pending: Tensor | None) -> None:
        """
        Args:
            base: Single-output model (``TruncatedGP``, ``AdaptiveTruncationGP``, ...).
            sign: ``+1`` (maximise) or ``-1`` (minimise).
            X_pending: ``m x d`` pending points, or ``None``.
        """
        super().__init__()
        if sign not in (1.0, -1.0):
            raise ValueError(f"`sign` must be +1 or -1, got {sign!r}.")
        self.base = base
        self.sign = float(sign)
        self.variance_model = PendingState(base).update(check_pending(X_pending, None))

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return self.base.batch_shape

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """``(s · μ_t(X), σ²_{t,pending}(X))``, each ``batch x q``, at ``batch x q x d`` inputs."""
        mean, var = _marginal_moments(self.base, X)
        if self.variance_model is not self.base:
            _, var = _marginal_moments(self.variance_model, X)
        return self.sign * mean, var

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior: mean ``s · μ_t``, covariance of the hallucinated model."""
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        mean = self.base.posterior(X).mean.squeeze(-1)
        var_post = self.variance_model.posterior(X, observation_noise=observation_noise)
        cov = var_post.distribution.lazy_covariance_matrix
        post = GPyTorchPosterior(MultivariateNormal(self.sign * mean, to_linear_operator(cov)))
        return post if posterior_transform is None else posterior_transform(post)

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior` or `mean_and_variance`.")
