"""Finite feature maps ``φ: X → R^m`` of ATA-GP-UCB (paper 001, §5.1).

* :class:`QuadratureFourierFeatures` — deterministic quadrature Fourier features of the SE
  kernel, ``φ(x)ᵀφ(y) ≈ k(x, y)`` with ``m = 2 m̄^d`` (§5.1 (a), eq. (1));
* :class:`NystromFeatures` — the Nyström embedding ``φ(x) = (K_D^{1/2})⁺ k_D(x)`` of any kernel
  on a dictionary ``D`` resampled from the training points (§5.1 (b)).

Both are plain callables mapping ``... x d`` inputs to ``... x m`` features, passed to
:class:`~botorch_mtucb.models.AdaptiveTruncationGP` as ``features=``.
"""

from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.features.quadrature_fourier import QuadratureFourierFeatures

__all__ = ["NystromFeatures", "QuadratureFourierFeatures"]
