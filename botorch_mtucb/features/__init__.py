"""features."""

from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.features.quadrature_fourier import QuadratureFourierFeatures

__all__ = ["NystromFeatures", "QuadratureFourierFeatures"]
