"""The ICM Nyström solver (eqs. (7)–(8)) against the generic Nyström solver on ICM kernels."""

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.multitask.solvers.nystrom import NystromSolver
from botorch_mtucb.multitask.solvers.nystrom_icm import ICMNystromSolver

DT = torch.float64
ETA = torch.tensor(0.1, dtype=DT)


@pytest.mark.parametrize("method", ["eigh", "pivoted_cholesky"])
def test_projected_variances_and_blocks_match_the_generic_solver(method):
    g = torch.Generator().manual_seed(0)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.3
    A = torch.randn(3, 3, generator=g, dtype=DT)
    kernel = ICMKernel(k, 3, task_covar=A @ A.T / 3 + 0.05 * torch.eye(3, dtype=DT))
    X, Y = torch.rand(15, 2, generator=g, dtype=DT), torch.randn(15, 3, generator=g, dtype=DT)
    idx = torch.tensor([0, 2, 3, 5, 7, 8, 11, 14])
    p = 0.3 + 0.7 * torch.rand(idx.numel(), generator=g, dtype=DT)
    Xs = torch.rand(5, 1, 2, generator=g, dtype=DT)
    W = torch.randn(3, 2, generator=g, dtype=DT)
    with torch.no_grad():
        icm = ICMNystromSolver(*kernel.icm_components(), X, Y, ETA, idx, p, method=method)
        ref = NystromSolver(kernel, X, Y, ETA, idx, p, method=method)
        mean, blocks = ref.predict(Xs, full_cov=False)
        m1, b1 = icm.predict(Xs, full_cov=False)
        m2, quad = icm.projected_variances(Xs, W)
    torch.testing.assert_close(m1, mean, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(b1, blocks, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(m2, mean, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(quad, torch.einsum("...ab,ak,bk->...k", blocks, W, W),
                               atol=1e-10, rtol=1e-9)
    s = icm.eigen_variances(Xs)
    torch.testing.assert_close(s.max(-1).values, torch.linalg.eigvalsh(blocks)[..., -1],
                               atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(icm.information_gain(), ref.information_gain())
