"""Pending points for the UCB acquisitions: hallucinated observations (GP-BUCB).

Both UCBs of the package evaluate one point at a time (``q = 1``). When Ax generates several
trials before their results arrive (``client.get_next_trials(max_trials=k)``), it re-builds the
acquisition for each new trial with the earlier ones as ``X_pending``. We then condition the
model on the pending points with *hallucinated* observations, as in GP-BUCB (Desautels,
Krause & Burdick, JMLR 2014): the posterior mean is kept and the posterior variance shrinks
where evaluations are already under way, so the next UCB maximiser moves elsewhere. β is read
from the model *before* hallucination (it measures the information of real data only).

* Exact GP (``ExactMultiTaskGP``): conditioning on ``y_p = μ_t(x_p)`` leaves the mean unchanged
  exactly (``μ + Γ(x, x_p)(Γ_pp + ηI)⁻¹ (y_p − μ_t(x_p)) = μ``), so the conditioned model is used
  as is.
* Heavy-tailed models: a hallucinated reward would itself be truncated (``|y| > b_s`` ⇒ 0),
  which would move the mean, so :class:`SignedHallucinatedModel` takes the mean from the
  original model and the variance from the model conditioned on the pending points (the
  variance of TGP / ATA does not depend on the rewards).
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

from botorch_mtucb.models.protocols import MarginalMomentsModel
from botorch_mtucb.utils.validation import check_finite

__all__ = ["SignedHallucinatedModel", "check_pending", "hallucinate_mean"]


def check_pending(X_pending: Tensor | None, d: int) -> Tensor | None:
    """Validate ``X_pending`` (``m x d``); return ``None`` when there are no pending points."""
    if X_pending is None:
        return None
    check_finite(X_pending, "X_pending")
    if X_pending.dim() != 2 or X_pending.shape[-1] != d:
        raise ValueError(
            f"`X_pending` must have shape m x {d} (one row per pending point), got "
            f"{tuple(X_pending.shape)}."
        )
    return X_pending if X_pending.shape[0] > 0 else None


def hallucinate_mean(model: Model, X_pending: Tensor) -> Model:
    """``model`` conditioned on ``(X_pending, μ(X_pending))``: same mean, smaller variance.

    Args:
        model: A model with ``condition_on_observations`` (exact GP posterior).
        X_pending: ``m x d`` pending points.

    Returns:
        The conditioned model (``model`` itself is left unchanged).
    """
    with torch.no_grad():
        Y = model.posterior(X_pending).mean.detach()  # m x n
    try:
        return model.condition_on_observations(X_pending, Y)
    except NotImplementedError as err:
        raise ValueError(
            f"{type(model).__name__} cannot be conditioned on pending points "
            "(`condition_on_observations` is not implemented), so `X_pending` is unsupported; "
            "generate one trial at a time."
        ) from err


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
        if X_pending is None:
            self.variance_model = base
        else:
            zeros = X_pending.new_zeros(X_pending.shape[0], 1)
            self.variance_model = base.condition_on_observations(X_pending, zeros)

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
