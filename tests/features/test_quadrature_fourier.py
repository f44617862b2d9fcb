"""Quadrature Fourier features vs the exact SE kernel (GPyTorch) and Mutný–Krause's bound.

Feature values are computed in the input's dtype. float32 tolerances add ``16 · eps32`` to the
float64 ones: ``φ(x)ᵀφ(y)`` sums ``m`` products of magnitude ≤ ``ν_j`` with ``Σ ν_j = 1``, so its
round-off is a few ``eps`` (measured 1.9e-7), on top of the quadrature error itself.
"""

from __future__ import annotations

import math

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.features import QuadratureFourierFeatures

DT = torch.float64
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])


def _extra(dtype: torch.dtype) -> float:
    return 0.0 if dtype == torch.float64 else 16 * torch.finfo(dtype).eps


def _rbf(lengthscale: float, X: torch.Tensor) -> torch.Tensor:
    """Independent reference exp(-r²/(2l²)) from explicit differences.

    (GPyTorch's RBFKernel expands ‖x−y‖² = ‖x‖² + ‖y‖² − 2xᵀy, which costs ~1e-8 of accuracy:
    too coarse to measure a 1e-9 quadrature error; it is checked separately below.)
    """
    diff = X.unsqueeze(-2) - X.unsqueeze(-3)
    return torch.exp(-0.5 * diff.square().sum(-1) / lengthscale**2)


def _mk_bound(d: int, num_nodes: int, lengthscale: float) -> float:
    """Paper 001 §5.2 (Mutný & Krause, 2018): ε ≤ d 2^{d−1} (√2 m̄^m̄)⁻¹ (e/(4l²))^m̄."""
    log_b = (
        math.log(d * 2 ** (d - 1))
        - 0.5 * math.log(2.0)
        - num_nodes * math.log(num_nodes)
        + num_nodes * (1.0 - math.log(4.0 * lengthscale**2))
    )
    return math.exp(log_b)


@DTYPES
def test_qff_1d_error_below_1e6_and_theory_bound(dtype: torch.dtype) -> None:
    l, nodes = 0.2, 32
    qff = QuadratureFourierFeatures(l, nodes, 1)
    X = torch.linspace(0, 1, 201, dtype=DT).unsqueeze(-1).to(dtype)
    phi = qff(X)
    assert phi.shape == (201, 2 * nodes) and phi.dtype == dtype
    phi, X = phi.to(DT), X.to(DT)  # compare in float64 against the exact kernel
    err = (phi @ phi.T - _rbf(l, X)).abs().max().item()
    bound = _mk_bound(1, nodes, l)
    assert err < min(1e-6, bound) + _extra(dtype), (err, bound)
    if dtype == DT:
        assert math.isclose(qff.kernel_error(X).item(), err, rel_tol=1e-6, abs_tol=1e-15)
    # Same kernel as GPyTorch's RBFKernel (up to GPyTorch's own round-off).
    k = RBFKernel().to(DT)
    k.lengthscale = l
    with torch.no_grad():
        assert (phi @ phi.T - k(X, X).to_dense()).abs().max() < 1e-7 + _extra(dtype)


@DTYPES
def test_qff_2d_error_below_1e4_and_theory_bound(dtype: torch.dtype) -> None:
    l, nodes = math.sqrt(0.1), 16
    qff = QuadratureFourierFeatures(l, nodes, 2)
    g = torch.linspace(0, 1, 25, dtype=DT)
    X = torch.cartesian_prod(g, g).to(dtype)
    phi = qff(X)
    assert phi.shape == (625, 2 * nodes**2) and phi.dtype == dtype
    phi, X = phi.to(DT), X.to(DT)
    err = (phi @ phi.T - _rbf(l, X)).abs().max().item()
    bound = _mk_bound(2, nodes, l)
    assert err < min(1e-4, bound) + _extra(dtype), (err, bound)


@DTYPES
def test_qff_unit_diagonal_and_exponential_decay(dtype: torch.dtype) -> None:
    X = torch.rand(50, 1, dtype=DT, generator=torch.Generator().manual_seed(0))
    qff = QuadratureFourierFeatures(0.2, 20, 1)
    # k(x, x) = Σ ν_j (cos² + sin²) = Σ ν_j = 1 exactly (normalised Gauss–Hermite weights).
    diag = qff(X.to(dtype)).square().sum(-1)
    assert diag.dtype == dtype
    torch.testing.assert_close(diag.to(DT), torch.ones(50, dtype=DT), atol=1e-12 + _extra(dtype),
                               rtol=0)
    errs = [QuadratureFourierFeatures(0.2, m, 1).kernel_error(X).item() for m in (12, 20, 28)]
    assert errs[1] < 1e-2 * errs[0] and errs[2] < 1e-2 * errs[1], errs


def test_qff_batch_shapes_and_dtype() -> None:
    qff = QuadratureFourierFeatures([0.3, 0.5], 14, 2)
    X = torch.rand(3, 5, 2, dtype=torch.float32)
    out = qff(X)
    assert out.shape == (3, 5, 2 * 14**2) and out.dtype == torch.float32
    # ARD lengthscales: compare with the per-dimension product of 1-d kernels.
    X64 = torch.rand(7, 2, dtype=DT)
    phi = qff(X64)
    approx = phi @ phi.T
    diff = (X64.unsqueeze(-2) - X64.unsqueeze(-3)) / torch.tensor([0.3, 0.5], dtype=DT)
    exact = torch.exp(-0.5 * diff.square().sum(-1))
    assert (approx - exact).abs().max() < 1e-4
    torch.testing.assert_close(qff.kernel(X64, X64), exact)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lengthscale=0.0, num_nodes=4, dim=1), "lengthscale"),
        (dict(lengthscale=-1.0, num_nodes=4, dim=1), "lengthscale"),
        (dict(lengthscale=0.2, num_nodes=0, dim=1), "num_nodes"),
        (dict(lengthscale=0.2, num_nodes=4, dim=0), "dim"),
        (dict(lengthscale=0.2, num_nodes=2.5, dim=1), "num_nodes"),
        (dict(lengthscale=[0.2, 0.3, 0.4], num_nodes=4, dim=2), "lengthscale"),
        (dict(lengthscale=0.2, num_nodes=16, dim=5), "features"),
        (dict(lengthscale=0.2, num_nodes=10, dim=30), "features"),
        (dict(lengthscale=0.2, num_nodes=500, dim=1), "num_nodes"),
    ],
)
def test_qff_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        QuadratureFourierFeatures(**kwargs)


def test_qff_bad_X() -> None:
    qff = QuadratureFourierFeatures(0.2, 4, 2)
    with pytest.raises(ValueError, match="dim=2"):
        qff(torch.rand(3, 1, dtype=DT))
    with pytest.raises(ValueError, match="NaN"):
        qff.kernel_error(torch.tensor([[float("nan"), 0.0]], dtype=DT))
    with pytest.raises(ValueError, match="torch.Tensor"):
        qff([[0.1, 0.2]])  # type: ignore[arg-type]
    # The feature map itself does not check values (no host sync on a posterior's hot path).
    assert torch.isnan(qff(torch.tensor([[float("nan"), 0.0]], dtype=DT))).all()
