"""Moment checks shared by the pathwise-sampling tests.

Sample moments of ``S`` paths are compared with a Gaussian posterior by z-scores against their
Monte-Carlo standard errors: ``√(var/S)`` for a mean, ``√((σ_aa σ_bb + σ_ab²)/S)`` for a
covariance entry (the variance of a Gaussian sample covariance), plus an allowance for the
random-feature error of a prior path where it is not negligible.
"""

from __future__ import annotations

import torch
from torch import Tensor

S = 4000  # paths per moment check
Z_MAX = 5.0  # largest allowed |z| of a sample moment
D64 = torch.float64


def flat(samples: Tensor, n: int) -> Tensor:
    """``S x n x q`` (or ``S x q``) path values as ``S x (q·n)`` in interleaved order."""
    if n == 1:
        return samples
    return samples.transpose(-1, -2).reshape(samples.shape[0], -1)


def z_scores(
    samples: Tensor, mean: Tensor, cov: Tensor, feature_se: float = 0.0
) -> tuple[float, float]:
    """Largest |z| of the sample mean and of the sample covariance of ``samples: S x m``
    against ``mean: m`` and ``cov: m x m`` (``feature_se`` added to the covariance's error)."""
    samples, mean, cov = samples.detach().double(), mean.detach().double(), cov.detach().double()
    num = samples.shape[0]
    var = cov.diagonal()
    z_mean = (samples.mean(0) - mean) / (var / num).sqrt()
    se_cov = ((var[:, None] * var[None, :] + cov**2) / num + feature_se**2).sqrt()
    z_cov = (torch.cov(samples.T) - cov) / se_cov
    return float(z_mean.abs().max()), float(z_cov.abs().max())


def posterior_z_scores(
    posterior, samples: Tensor, n: int, feature_se: float = 0.0
) -> tuple[float, float]:
    """:func:`z_scores` of ``samples`` (``S x n x q`` or ``S x q`` path values) against a
    BoTorch posterior at the same ``q`` points (unbatched)."""
    mean = posterior.mean.reshape(-1)
    cov = posterior.distribution.covariance_matrix
    return z_scores(flat(samples, n), mean, cov, feature_se)
