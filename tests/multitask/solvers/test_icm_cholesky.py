"""ICMCholeskySolver against DenseSolver / ICMSolver / brute force; the solver choice; reuse."""

import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.linalg import ICMFactorCache, icm_inv_quad_logdet
from botorch_mtucb.multitask.solvers import exact as exact_solvers
from botorch_mtucb.multitask.solvers.exact import (
    POSTERIOR_EIGH_MAX_POINTS,
    DenseSolver,
    ICMCholeskySolver,
    ICMSolver,
    extend_solver,
    icm_posterior_method,
    icm_solver,
)

DT = torch.float64
ETA = torch.tensor(0.05, dtype=DT)


def _setup(n: int, t: int, seed: int = 0, batch=()):
    g = torch.Generator().manual_seed(seed)
    k = ScaleKernel(RBFKernel()).to(DT)
    k.base_kernel.lengthscale = 0.3
    k.outputscale = 1.7
    A = torch.randn(n, n, generator=g, dtype=DT)
    B = A @ A.T / n + 0.1 * torch.eye(n, dtype=DT)
    X = torch.rand(*batch, t, 2, generator=g, dtype=DT)
    Y = torch.randn(*batch, t, n, generator=g, dtype=DT)
    return k, B, X, Y, g


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_predictions_equal_dense_and_icm_solvers(n, batch):
    k, B, X, Y, g = _setup(n, 15, seed=n, batch=batch)
    kern = ICMKernel(k, n, task_covar=B)
    chol = ICMCholeskySolver(k, B, X, Y, ETA)
    dense = DenseSolver(kern, X, Y, ETA)
    eig = ICMSolver(k, B, X, Y, ETA)
    Xs = torch.rand(*batch, 4, 2, generator=g, dtype=DT)
    with torch.no_grad():
        for full_cov in (True, False):
            m, c = chol.predict(Xs, full_cov=full_cov)
            md, cd = dense.predict(Xs, full_cov=full_cov)
            assert m.shape == md.shape and c.shape == cd.shape
            assert torch.allclose(m, md, atol=1e-9) and torch.allclose(c, cd, atol=1e-9)
        one = Xs[..., :1, :]  # q = 1: the block
        assert torch.allclose(chol.predict(one)[1], dense.predict(one)[1], atol=1e-9)
        assert torch.allclose(chol.information_gain(), dense.information_gain(), atol=1e-9)
        assert torch.allclose(chol.information_gain(), eig.information_gain(), atol=1e-9)
        if not batch:
            W = torch.randn(n, 2, generator=g, dtype=DT)
            mp, vp = chol.projected_variances(Xs, W)
            me, ve = eig.projected_variances(Xs, W)
            assert torch.allclose(mp, me, atol=1e-9) and torch.allclose(vp, ve, atol=1e-9)
            s = chol.eigen_variances(Xs)
            blocks = chol.task_blocks(Xs)
            assert torch.allclose(torch.linalg.eigvalsh(blocks), s.sort(-1).values, atol=1e-9)


def test_extend_matches_scratch():
    k, B, X, Y, g = _setup(2, 20, seed=4)
    old = ICMCholeskySolver(k, B, X[:12], Y[:12], ETA)
    new = extend_solver(old, X[12:], X, Y)
    scratch = ICMCholeskySolver(k, B, X, Y, ETA)
    Xs = torch.rand(5, 2, generator=g, dtype=DT)
    with torch.no_grad():
        for a, b in zip(new.predict(Xs), scratch.predict(Xs), strict=True):
            assert torch.allclose(a, b, atol=1e-9)
        assert torch.allclose(new.information_gain(), scratch.information_gain())


def test_icm_solver_choice_by_size(monkeypatch):
    assert icm_posterior_method(2, POSTERIOR_EIGH_MAX_POINTS) == "eigh"
    assert icm_posterior_method(2, POSTERIOR_EIGH_MAX_POINTS + 1) == "cholesky"
    assert icm_posterior_method(8, 10 * POSTERIOR_EIGH_MAX_POINTS) == "eigh"
    k, B, X, Y, _ = _setup(2, 120)
    assert isinstance(icm_solver(k, B, X, Y, ETA), ICMSolver)
    monkeypatch.setattr(exact_solvers, "POSTERIOR_EIGH_MAX_POINTS", 100)
    assert isinstance(icm_solver(k, B, X, Y, ETA), ICMCholeskySolver)
    assert isinstance(icm_solver(k, B, X[:20], Y[:20], ETA), ICMSolver)
    k, B, X, Y, _ = _setup(8, 120)
    assert isinstance(icm_solver(k, B, X, Y, ETA), ICMSolver)


def test_stored_factors_of_the_other_route_are_not_used(monkeypatch):
    """Cholesky factors of a fit at a size where the posterior takes eigh: an ICMSolver."""
    k, B, X, Y, _ = _setup(2, 120)
    xi, U = torch.linalg.eigh(B)
    eye = torch.eye(120, dtype=DT)
    L = torch.linalg.cholesky(xi[:, None, None] * k(X, X).to_dense() + ETA * eye)
    solver = icm_solver(k, B, X, Y, ETA, stored=("cholesky", (xi, U, L)))
    assert isinstance(solver, ICMSolver)
    monkeypatch.setattr(exact_solvers, "POSTERIOR_EIGH_MAX_POINTS", 100)
    solver = icm_solver(k, B, X, Y, ETA, stored=("cholesky", (xi, U, L)))
    assert isinstance(solver, ICMCholeskySolver) and solver.factor.L is L


@pytest.mark.parametrize("method", ["cholesky", "eigh"])
def test_stored_factors_build_the_same_solver_without_factorising(method, monkeypatch):
    # the posterior's route at t = 25 is `method` (the threshold moved for the test)
    limit = 10 if method == "cholesky" else POSTERIOR_EIGH_MAX_POINTS
    monkeypatch.setattr(exact_solvers, "POSTERIOR_EIGH_MAX_POINTS", limit)
    monkeypatch.setattr(exact_solvers, "icm_likelihood_method", lambda n, t: method)
    k, B, X, Y, g = _setup(3, 25, seed=5)
    with torch.no_grad():
        K = k(X).to_dense()
    cache = ICMFactorCache()
    cache.begin((X,))
    icm_inv_quad_logdet(K, B, ETA, Y.reshape(-1), method=method, cache=cache)
    stored = cache.take((X,))
    calls = []
    eigh, chol_ex = torch.linalg.eigh, torch.linalg.cholesky_ex
    monkeypatch.setattr(torch.linalg, "eigh", lambda A: calls.append(A.shape) or eigh(A))
    monkeypatch.setattr(torch.linalg, "cholesky_ex",
                        lambda A, **kw: calls.append(A.shape) or chol_ex(A, **kw))
    with torch.no_grad():
        solver = icm_solver(k, B, X, Y, ETA, stored=stored)
    assert all(s[-1] != 25 for s in calls)  # no t x t factorisation
    assert isinstance(solver, ICMCholeskySolver if method == "cholesky" else ICMSolver)
    ref = DenseSolver(ICMKernel(k, 3, task_covar=B), X, Y, ETA)
    Xs = torch.rand(3, 2, generator=g, dtype=DT)
    with torch.no_grad():
        for a, b in zip(solver.predict(Xs), ref.predict(Xs), strict=True):
            assert torch.allclose(a, b, atol=1e-9)


@pytest.mark.parametrize("solver_cls", ["cholesky", "eigh-with-block"])
@pytest.mark.parametrize("test_batch", [(), (5,), (3, 2)])
def test_a_test_batch_never_copies_the_factors(solver_cls, test_batch, monkeypatch):
    """The triangular solves see each ``n x t x t`` factor once, whatever the test batch, and
    give the same moments as point-by-point calls."""
    n, t = 2, 12
    k, B, X, Y, g = _setup(n, t, seed=7)
    if solver_cls == "cholesky":
        solver = ICMCholeskySolver(k, B, X, Y, ETA)
    else:  # an eigen solver with an appended Schur block (its own n factors)
        solver = extend_solver(ICMSolver(k, B, X[:8], Y[:8], ETA), X[8:], X, Y)
        assert solver.block_size == 4
    Xs = torch.rand(*test_batch, 3, 2, generator=g, dtype=DT)
    seen = []
    solve = torch.linalg.solve_triangular

    def recording(A, rhs, **kwargs):
        seen.append((A.shape, rhs.shape))
        return solve(A, rhs, **kwargs)

    monkeypatch.setattr(torch.linalg, "solve_triangular", recording)
    with torch.no_grad():
        s = solver.eigen_variances(Xs)
        mean, cov = solver.predict(Xs, full_cov=True)
    # factors and right-hand sides both n x t x k: no broadcast of a factor over the test batch
    assert seen and all(len(a) == 3 and a[0] == n and len(r) == 3 for a, r in seen), seen
    monkeypatch.setattr(torch.linalg, "solve_triangular", solve)
    with torch.no_grad():
        flat = Xs.reshape(-1, 2)
        s_ref = torch.stack([solver.eigen_variances(x.reshape(1, 2)) for x in flat])
        assert torch.allclose(s.reshape(-1, n), s_ref.reshape(-1, n), atol=1e-10)
        ref = [solver.predict(x) for x in Xs.reshape(-1, 3, 2)]
        assert torch.allclose(mean.reshape(-1, 3, n), torch.stack([m for m, _ in ref]), atol=1e-10)
        assert torch.allclose(cov.reshape(-1, 3 * n, 3 * n), torch.stack([c for _, c in ref]),
                              atol=1e-10)
