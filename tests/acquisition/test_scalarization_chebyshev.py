"""The Chebyshev scalarization's own module: the re-export and s_λ against its definition."""

import torch

from botorch_mtucb.acquisition import scalarization
from botorch_mtucb.acquisition.scalarization_chebyshev import ChebyshevScalarization

DT = torch.float64


def test_reexported_from_scalarization():
    assert scalarization.ChebyshevScalarization is ChebyshevScalarization


def test_value_and_directional_bound_by_hand():
    g = torch.Generator().manual_seed(0)
    lam = torch.tensor([0.2, 0.5, 0.3], dtype=DT)
    z = torch.randn(3, generator=g, dtype=DT)
    s = ChebyshevScalarization(lam, z, minimize=[False, True, False], augmentation=0.05)
    Y = torch.randn(6, 3, generator=g, dtype=DT)
    sign = torch.tensor([1.0, -1.0, 1.0], dtype=DT)
    pieces = lam * (Y * sign - z * sign)
    torch.testing.assert_close(s(Y), pieces.min(-1).values + 0.05 * pieces.sum(-1))
    var = torch.rand(6, 3, generator=g, dtype=DT)
    upper = lam * (Y * sign + 2.0 * var.sqrt() - z * sign)
    torch.testing.assert_close(s.directional_ucb_from_variances(Y, var, 2.0),
                               upper.min(-1).values + 0.05 * upper.sum(-1))
