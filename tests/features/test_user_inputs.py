"""NumPy integers are integers for the feature maps' integer arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from botorch_mtucb.features import QuadratureFourierFeatures


def test_quadrature_fourier_features_take_numpy_integers() -> None:
    a = QuadratureFourierFeatures(lengthscale=0.3, num_nodes=np.int64(6), dim=np.int32(2))
    b = QuadratureFourierFeatures(lengthscale=0.3, num_nodes=6, dim=2)
    assert type(a.num_nodes) is int and type(a.dim) is int
    X = torch.rand(5, 2, dtype=torch.float64)
    torch.testing.assert_close(a(X), b(X))


@pytest.mark.parametrize("bad", [2.0, True, "2", 0])
def test_quadrature_fourier_features_refuse_non_integers(bad) -> None:
    with pytest.raises(ValueError, match="`dim` must be a positive integer"):
        QuadratureFourierFeatures(lengthscale=0.3, num_nodes=4, dim=bad)
    with pytest.raises(ValueError, match="`num_nodes` must be a positive integer"):
        QuadratureFourierFeatures(lengthscale=0.3, num_nodes=bad, dim=1)
