"""Frozen stationary cross-covariances against GPyTorch's kernels (values and input gradients)."""

import pytest
import torch
from gpytorch.kernels import LinearKernel, MaternKernel, RBFKernel, ScaleKernel

from botorch_mtucb.linalg.stationary import FrozenStationaryCross

DT = torch.float64


@pytest.mark.parametrize(
    "make",
    [
        lambda: RBFKernel(),
        lambda: RBFKernel(ard_num_dims=3),
        lambda: ScaleKernel(RBFKernel(ard_num_dims=3)),
        lambda: MaternKernel(nu=0.5),
        lambda: MaternKernel(nu=1.5, ard_num_dims=3),
        lambda: ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=3)),
    ],
)
def test_matches_gpytorch_values_and_gradients(make):
    g = torch.Generator().manual_seed(0)
    kernel = make().to(DT)
    with torch.no_grad():
        for p in kernel.parameters():
            p.add_(torch.rand(p.shape, generator=g, dtype=DT))
    Z = torch.rand(15, 3, generator=g, dtype=DT)
    X = torch.rand(2, 4, 3, generator=g, dtype=DT, requires_grad=True)
    X2 = torch.cat([X.detach()[:, :1], Z[:1].expand(2, 1, 3)], dim=1)  # a zero distance
    frozen = FrozenStationaryCross.maybe(kernel, Z)
    assert frozen is not None
    for Xq in (X, X2.requires_grad_(True)):
        ref = kernel(Xq, Z).to_dense()
        val = frozen(Xq)
        torch.testing.assert_close(val, ref, atol=1e-12, rtol=1e-10)
        (g1,) = torch.autograd.grad(val.sum(), Xq)
        (g2,) = torch.autograd.grad(ref.sum(), Xq)
        assert torch.isfinite(g1).all()
        torch.testing.assert_close(g1, g2, atol=1e-9, rtol=1e-7)
    torch.testing.assert_close(frozen.diag(X), kernel(X, X, diag=True))


def test_unsupported_kernels_and_batches_fall_back():
    Z = torch.rand(5, 2, dtype=DT)
    assert FrozenStationaryCross.maybe(LinearKernel().to(DT), Z) is None
    assert FrozenStationaryCross.maybe(RBFKernel(batch_shape=torch.Size([2])).to(DT), Z) is None
    assert FrozenStationaryCross.maybe(RBFKernel(active_dims=[0]).to(DT), Z) is None
    assert FrozenStationaryCross.maybe(RBFKernel().to(DT), Z.expand(3, 5, 2)) is None
