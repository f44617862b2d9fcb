r"""A signed single-output view of a heavy-tailed model with pending points (GP-BUCB).

The Ax input constructors hand ``X_pending`` to the acquisitions, which condition on it
themselves (:mod:`botorch_mtucb.acquisition.pending`). :class:`SignedHallucinatedModel` is the
same computation as a model: mean s · μ_t(x) of the base model, variance σ²_{t,pending}(x) of
the base model conditioned on hallucinated observations at the pending points.
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

from botorch_mtucb.acquisition.pending import PendingState, check_pending
from botorch_mtucb.protocols import MarginalMomentsModel

__all__ = ["SignedHallucinatedModel"]


def _marginal_moments(model: Model, X: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and variance (``batch x q``) of a single-output model."""
    if isinstance(model, MarginalMomentsModel):
        return model.mean_and_variance(X)
    post = model.posterior(X)
    return post.mean.squeeze(-1), post.variance.squeeze(-1)


class SignedHallucinatedModel(Model):
    r"""Single-output view (s · μ_t(x), σ²_{t, pending}(x)) of a heavy-tailed model.

    s = ±1 turns a minimised objective into a maximised one (TGP / ATA truncate
    ``|y − loc|``, so negating the rewards and negating the estimate are the same), and the
    variance is that of ``base`` conditioned on ``X_pending`` (GP-BUCB: same mean, shrunk
    variance). It provides what :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` reads:
    ``num_outputs``, ``mean_and_variance`` and ``posterior``.

    Example:
        >>> import torch
        >>> from botorch_mtucb.integrations.ax.pending import SignedHallucinatedModel
        >>> from botorch_mtucb.models import TruncatedGP
        >>> X = torch.rand(6, 1, dtype=torch.float64)
        >>> base = TruncatedGP(X, torch.sin(6 * X), alpha=1.0, v=2.0)
        >>> view = SignedHallucinatedModel(base, -1.0, torch.full((1, 1), 0.5, dtype=X.dtype))
        >>> [t.shape for t in view.mean_and_variance(torch.rand(4, 1, 1, dtype=X.dtype))]
        [torch.Size([4, 1]), torch.Size([4, 1])]
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
