"""Posterior solvers: incremental ICM conditioning against a scratch build and brute force."""

import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.multitask.solvers.exact import DenseSolver, ICMSolver, extend_solver

DT = torch.float64
ETA = torch.tensor(0.05, dtype=DT)


def _setup(n: int, t: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    k = ScaleKernel(RBFKernel()).to(DT)
    k.base_kernel.lengthscale = 0.3
    k.outputscale = 1.7
    A = torch.randn(n, n, generator=g, dtype=DT)
    B = A @ A.T / n + 0.1 * torch.eye(n, dtype=DT)
    X = torch.rand(t, 2, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    return k, B, X, Y, g


def _brute(k, B, X, Y, Xs):
    kern = ICMKernel(k, B.shape[0], task_covar=B)
    nt = X.shape[0] * B.shape[0]
    with torch.no_grad():
        G = kern(X).to_dense() + ETA * torch.eye(nt, dtype=DT)
        Gx = kern(Xs, X).to_dense()
        mean = (Gx @ torch.linalg.solve(G, Y.reshape(-1, 1))).reshape(*Xs.shape[:-1], -1)
        cov = kern(Xs).to_dense() - Gx @ torch.linalg.solve(G, Gx.transpose(-1, -2))
        gain = 0.5 * torch.logdet(torch.eye(nt, dtype=DT) + G / ETA - torch.eye(nt, dtype=DT))
    return mean, cov, gain


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("steps", [[1], [2, 1, 3], [1] * 6])
def test_icm_extend_matches_scratch(n, steps):
    k, B, X, Y, g = _setup(n, 12 + sum(steps))
    t0 = 12
    Xs = torch.rand(4, 3, 2, generator=g, dtype=DT)
    with torch.no_grad():
        solver = ICMSolver(k, B, X[:t0], Y[:t0], ETA)
        end = t0
        for m in steps:
            solver = extend_solver(solver, X[end : end + m], X[: end + m], Y[: end + m])
            end += m
        assert solver.block_size == sum(steps)
        scratch = ICMSolver(k, B, X, Y, ETA)
        for full_cov in (True, False):
            m1, c1 = solver.predict(Xs, full_cov=full_cov)
            m2, c2 = scratch.predict(Xs, full_cov=full_cov)
            torch.testing.assert_close(m1, m2, atol=1e-10, rtol=1e-8)
            torch.testing.assert_close(c1, c2, atol=1e-10, rtol=1e-8)
        bm, bc, bg = _brute(k, B, X, Y, Xs)
        torch.testing.assert_close(solver.mean(Xs), bm, atol=1e-9, rtol=1e-8)
        torch.testing.assert_close(solver.covariance(Xs), bc, atol=1e-9, rtol=1e-8)
        torch.testing.assert_close(solver.information_gain(), bg, atol=1e-8, rtol=1e-8)
        torch.testing.assert_close(solver.information_gain(), scratch.information_gain())
        s = solver.eigen_variances(Xs)
        blocks = solver.task_blocks(Xs)
        torch.testing.assert_close(s.max(-1).values, torch.linalg.eigvalsh(blocks)[..., -1])


def test_icm_extend_rebuilds_when_block_outgrows_eigen_part():
    k, B, X, Y, g = _setup(2, 9)
    with torch.no_grad():
        solver = ICMSolver(k, B, X[:3], Y[:3], ETA)
        solver = solver.extend(X[3:6], X[:6], Y[:6])
        assert solver.block_size == 3
        solver = solver.extend(X[6:9], X, Y)  # 6 appended > 3 eigen rows: scratch build
        assert solver.block_size == 0 and solver.base_X.shape[0] == 9
        Xs = torch.rand(5, 1, 2, generator=g, dtype=DT)
        torch.testing.assert_close(solver.mean(Xs), _brute(k, B, X, Y, Xs)[0])


def test_icm_extend_gradients_wrt_inputs():
    k, B, X, Y, g = _setup(2, 10)
    with torch.no_grad():
        solver = ICMSolver(k, B, X[:6], Y[:6], ETA).extend(X[6:], X, Y)
        scratch = ICMSolver(k, B, X, Y, ETA)
    Xs = torch.rand(3, 1, 2, generator=g, dtype=DT, requires_grad=True)
    grads = []
    for s in (solver, scratch):
        mean, cov = s.predict(Xs, full_cov=False)
        (g1,) = torch.autograd.grad(mean.sum() + cov.diagonal(dim1=-2, dim2=-1).sum(), Xs)
        grads.append(g1)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-9, rtol=1e-7)


def test_dense_extend_matches_scratch():
    k, B, X, Y, g = _setup(2, 10)
    kern = ICMKernel(k, 2, task_covar=B)
    with torch.no_grad():
        solver = DenseSolver(kern, X[:7], Y[:7], ETA).extend(X[7:], X, Y)
        scratch = DenseSolver(kern, X, Y, ETA)
        Xs = torch.rand(4, 2, 2, generator=g, dtype=DT)
        for a, b in zip(solver.predict(Xs), scratch.predict(Xs), strict=True):
            torch.testing.assert_close(a, b)
        torch.testing.assert_close(solver.information_gain(), scratch.information_gain())


@pytest.mark.parametrize("batch", [(), (3,)])
def test_dense_mean_alone_equals_brute_force_and_skips_the_solve(batch, monkeypatch):
    """``mean`` and ``projected_variances`` with no direction (``k = 0``): the brute-force mean,
    without the triangular solve that the variances need."""
    k, B, X, Y, g = _setup(3, 9)
    kern = ICMKernel(k, 3, task_covar=B)
    Xs = torch.rand(*batch, 4, 2, generator=g, dtype=DT)
    solver = DenseSolver(kern, X, Y, ETA)
    ref_mean, _, _ = _brute(k, B, X, Y, Xs)
    full_mean, _ = solver.predict(Xs, full_cov=False)
    monkeypatch.setattr(DenseSolver, "_solve", lambda *a: pytest.fail("solved"))
    with torch.no_grad():
        mean = solver.mean(Xs)
        pm, quad = solver.projected_variances(Xs, torch.zeros(3, 0, dtype=DT))
    assert mean.shape == (*batch, 4, 3) and quad.shape == (*batch, 4, 0)
    torch.testing.assert_close(mean, ref_mean, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(full_mean, mean, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(pm, mean, atol=0, rtol=0)
