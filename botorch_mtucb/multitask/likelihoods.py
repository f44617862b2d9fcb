"""Known per-observation noise for the multi-task GPs (``train_Yvar``).

With known variances the regulariser ``ηI`` of paper 000, eq. (1) becomes
``N = diag(vec Yvar)`` (interleaved order): ``μ_t(x) = G_t(x)ᵀ (G_t + N)⁻¹ Y_t``.
"""

from __future__ import annotations

from typing import Any

import torch
from gpytorch.likelihoods.multitask_gaussian_likelihood import _MultitaskGaussianLikelihoodBase
from gpytorch.likelihoods.noise_models import FixedGaussianNoise
from linear_operator.operators import DiagLinearOperator, LinearOperator
from torch import Tensor

__all__ = ["FixedNoiseMultitaskGaussianLikelihood"]


class FixedNoiseMultitaskGaussianLikelihood(_MultitaskGaussianLikelihoodBase):
    """Multi-task Gaussian likelihood with known noise variances ``Yvar[s, i]`` per observation.

    The marginal at the training inputs adds ``diag(vec Yvar)`` (interleaved order) to the
    prior covariance, so ``ExactMarginalLogLikelihood`` fits the other hyperparameters. The
    ICM eigen identity needs homoscedastic noise; with this likelihood the model takes the
    generic path (see :class:`~botorch_mtucb.models.ExactMultiTaskGP`).

    Args:
        noise: ``batch_shape x N x n`` known noise variances (> 0).

    Example:
        >>> lik = FixedNoiseMultitaskGaussianLikelihood(torch.full((N, n), 0.05))
        >>> lik.noise.shape  # N x n
    """

    def __init__(self, noise: Tensor) -> None:
        super().__init__(num_tasks=noise.shape[-1], noise_covar=FixedGaussianNoise(noise=noise))
        self.has_global_noise, self.has_task_noise = False, False

    @property
    def noise(self) -> Tensor:
        """The ``batch_shape x N x n`` noise variances."""
        return self.noise_covar.noise

    @noise.setter
    def noise(self, value: Tensor) -> None:
        self.noise_covar.noise = value

    def _shaped_noise_covar(
        self, shape: torch.Size, add_noise: bool | None = True, interleaved: bool = True,
        *params: Any, **kwargs: Any,
    ) -> LinearOperator:
        noise = self.noise
        if not interleaved or noise.shape[-2:] != shape[-2:]:
            raise ValueError(
                "FixedNoiseMultitaskGaussianLikelihood knows the noise at the training inputs "
                f"only ({tuple(noise.shape[-2:])}); got an interleaved={interleaved} "
                f"distribution of shape {tuple(shape)}."
            )
        noise = noise.expand(*shape[:-2], *noise.shape[-2:])
        return DiagLinearOperator(noise.reshape(*shape[:-2], -1))
