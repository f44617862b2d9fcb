"""Nyström (MT-BKB) solvers against a brute-force nm-dimensional implementation of DESIGN.md."""

import numpy as np
import pytest
import scipy.linalg
import torch
from gpytorch.kernels import MaternKernel, RBFKernel

from botorch_mtucb.kernels import ICMKernel, SumOfSeparableKernel
from botorch_mtucb.linalg.nystrom import pivoted_cholesky, reduced_pinv_sqrt
from botorch_mtucb.multitask.solvers.exact import DenseSolver
from botorch_mtucb.multitask.solvers.nystrom import NystromSolver
from botorch_mtucb.multitask.solvers.nystrom_icm import ICMNystromSolver

DT = torch.float64
ETA = torch.tensor(0.1, dtype=DT)
METHODS = ["eigh", "pivoted_cholesky"]


def _rbf(ls: float) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = ls
    return k


def _psd(n: int, g: torch.Generator, rank: int | None = None) -> torch.Tensor:
    A = torch.randn(n, rank or n, generator=g, dtype=DT)
    return A @ A.T / n


def _solvers(kernel, X, Y, idx, p, method, rtol=None):
    """The generic solver, plus the ICM one when the kernel is separable."""
    out = [NystromSolver(kernel, X, Y, ETA, idx, p, rtol=rtol, method=method)]
    icm = kernel.icm_components()
    if icm is not None:
        out.append(ICMNystromSolver(*icm, X, Y, ETA, idx, p, rtol=rtol, method=method))
    return out


def brute_force(kernel, X, Y, idx, p, Xs, eta=0.1):
    """DESIGN.md "MT-BKB" in the full nm dimensions (numpy/scipy, loop over the data).

    G̃ = W Γ(X_D, X_D) W, Φ̃(x) = (G̃^{1/2})⁺ W Γ(X_D, x), Ṽ = Σ_s Φ̃(x_s)Φ̃(x_s)ᵀ, then μ̃ and
    the joint Γ̃ over the rows of ``Xs`` (``q x d``).
    """
    n = Y.shape[1]
    XD = X[idx]
    w = np.repeat(1.0 / np.sqrt(p.numpy()), n)
    with torch.no_grad():
        G = kernel(XD).to_dense().numpy() * w[:, None] * w[None, :]
        cross = lambda Z: kernel(XD, Z).to_dense().numpy() * w[:, None]  # noqa: E731
        prior = kernel(Xs).to_dense().numpy()
        cross_s = cross(Xs)
        cross_train = [cross(X[s : s + 1]) for s in range(X.shape[0])]
    root = np.real(scipy.linalg.sqrtm(G))
    pinv_root = np.linalg.pinv(root, rcond=1e-10, hermitian=True)
    Phi_s = pinv_root @ cross_s  # nm x qn
    V = np.zeros_like(G)
    rhs = np.zeros((G.shape[0], 1))
    for s, c in enumerate(cross_train):
        phi = pinv_root @ c  # nm x n
        V += phi @ phi.T
        rhs += phi @ Y[s].numpy().reshape(n, 1)
    A = V + eta * np.eye(V.shape[0])
    mean = (Phi_s.T @ np.linalg.solve(A, rhs)).reshape(Xs.shape[0], n)
    cov = prior - Phi_s.T @ Phi_s + eta * Phi_s.T @ np.linalg.solve(A, Phi_s)
    sign, logdet = np.linalg.slogdet(np.eye(V.shape[0]) + V / eta)
    return torch.from_numpy(mean), torch.from_numpy(cov), 0.5 * logdet


def _problem(name: str, seed: int = 0, t: int = 14, n: int = 3):
    g = torch.Generator().manual_seed(seed)
    if name == "icm":
        kernel = ICMKernel(_rbf(0.2), n, task_covar=_psd(n, g))
    else:
        kernel = SumOfSeparableKernel(
            [
                ICMKernel(_rbf(0.2), n, task_covar=_psd(n, g)),
                ICMKernel(MaternKernel(nu=2.5).to(DT), n, task_covar=_psd(n, g)),
            ]
        )
    X = torch.rand(t, 2, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    idx = torch.tensor([0, 3, 4, 8, 11], dtype=torch.long)
    p = torch.rand(idx.numel(), generator=g, dtype=DT) * 0.8 + 0.2
    Xs = torch.rand(4, 2, generator=g, dtype=DT)
    return kernel, X, Y, idx, p, Xs


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["icm", "sum"])
def test_fixed_dictionary_matches_brute_force(name, method):
    kernel, X, Y, idx, p, Xs = _problem(name)
    mean_ref, cov_ref, ig_ref = brute_force(kernel, X, Y, idx, p, Xs)
    solvers = _solvers(kernel, X, Y, idx, p, method)
    assert len(solvers) == (2 if name == "icm" else 1)
    n = Y.shape[1]
    with torch.no_grad():
        for s in solvers:
            assert torch.allclose(s.mean(Xs), mean_ref, atol=1e-8)
            assert torch.allclose(s.covariance(Xs), cov_ref, atol=1e-8)
            blocks = cov_ref.reshape(4, n, 4, n).diagonal(dim1=0, dim2=2).permute(2, 0, 1)
            assert torch.allclose(s.task_blocks(Xs), blocks, atol=1e-8)
            assert abs(float(s.information_gain()) - ig_ref) < 1e-7
            # batched queries: batch x q x d
            Xb = Xs.reshape(2, 2, 2)
            assert torch.allclose(s.mean(Xb), mean_ref.reshape(2, 2, n), atol=1e-8)
            cb = s.covariance(Xb)
            assert cb.shape == (2, 2 * n, 2 * n)
            assert torch.allclose(cb[1], s.covariance(Xs[2:]), atol=1e-10)


def test_variance_summary_is_norm_and_logdet_of_blocks():
    kernel, X, Y, idx, p, Xs = _problem("icm")
    with torch.no_grad():
        for s in _solvers(kernel, X, Y, idx, p, "eigh"):
            blocks = s.task_blocks(Xs)
            norm, logdet = s.variance_summary(Xs)
            assert torch.allclose(norm, torch.linalg.matrix_norm(blocks, ord=2), atol=1e-10)
            eye = torch.eye(Y.shape[1], dtype=DT)
            assert torch.allclose(logdet, torch.logdet(eye + blocks / ETA), atol=1e-9)
            tn, tl = s.train_variance_summary()
            tb = s.task_blocks(X)
            assert torch.allclose(tn, torch.linalg.matrix_norm(tb, ord=2), atol=1e-10)
            assert torch.allclose(tl, torch.logdet(eye + tb / ETA), atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_full_dictionary_equals_exact_posterior(method):
    """All points in D_t: P_t projects on the whole span (Lemma 8), so μ̃ = μ, Γ̃ = Γ_t."""
    kernel, X, Y, _, _, Xs = _problem("sum", seed=3, t=20, n=2)
    g = torch.Generator().manual_seed(5)
    idx = torch.arange(20)
    p = torch.rand(20, generator=g, dtype=DT) * 0.9 + 0.1  # weights must not matter
    exact = DenseSolver(kernel, X, Y, ETA)
    with torch.no_grad():
        (s,) = _solvers(kernel, X, Y, idx, p, method)
        assert torch.allclose(s.mean(Xs), exact.mean(Xs), atol=1e-7)
        assert torch.allclose(s.covariance(Xs), exact.covariance(Xs), atol=1e-8)
        assert torch.allclose(s.information_gain(), exact.information_gain(), atol=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_rank_deficient_dictionary_no_crash_and_span_invariance(method):
    """Repeated dictionary points and a rank-one B make G̃ singular. The posterior depends on
    the dictionary only through its span (Lemma 8): duplicates and weights change nothing."""
    g = torch.Generator().manual_seed(1)
    n = 3
    u = torch.randn(n, 1, generator=g, dtype=DT)
    kernel = ICMKernel(_rbf(0.3), n, task_covar=u @ u.T)  # rank 1
    X = torch.rand(12, 1, generator=g, dtype=DT)
    X[7] = X[2]  # a repeated training point
    Y = torch.randn(12, n, generator=g, dtype=DT)
    Xs = torch.rand(5, 1, generator=g, dtype=DT)
    base_idx = torch.tensor([1, 2, 5, 9])
    dup_idx = torch.tensor([1, 2, 5, 7, 9, 9])
    p_base = torch.full((4,), 0.5, dtype=DT)
    p_dup = torch.rand(6, generator=g, dtype=DT) * 0.9 + 0.1
    with torch.no_grad():
        for a, b in zip(
            _solvers(kernel, X, Y, base_idx, p_base, method),
            _solvers(kernel, X, Y, dup_idx, p_dup, method),
            strict=True,
        ):
            assert torch.isfinite(b.covariance(Xs)).all()
            assert torch.allclose(a.mean(Xs), b.mean(Xs), atol=1e-8)
            assert torch.allclose(a.covariance(Xs), b.covariance(Xs), atol=1e-8)
            assert torch.allclose(a.information_gain(), b.information_gain(), atol=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_generic_and_icm_paths_agree_on_larger_dictionary(method):
    g = torch.Generator().manual_seed(2)
    n = 2
    kernel = ICMKernel(_rbf(0.15), n, task_covar=_psd(n, g))
    X = torch.rand(300, 2, generator=g, dtype=DT)
    Y = torch.randn(300, n, generator=g, dtype=DT)
    idx = torch.nonzero(torch.rand(300, generator=g, dtype=DT) < 0.6).reshape(-1)
    p = torch.full((idx.numel(),), 0.6, dtype=DT)
    Xs = torch.rand(6, 2, generator=g, dtype=DT)
    with torch.no_grad():
        gen, icm = _solvers(kernel, X, Y, idx, p, method)
        assert torch.allclose(gen.mean(Xs), icm.mean(Xs), atol=1e-7)
        assert torch.allclose(gen.covariance(Xs), icm.covariance(Xs), atol=1e-8)
        assert torch.allclose(gen.information_gain(), icm.information_gain(), atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_empty_dictionary_and_no_data_give_the_prior(method):
    kernel, X, Y, _, _, Xs = _problem("sum")
    icm_kernel = _problem("icm")[0]
    empty = torch.zeros(0, dtype=torch.long)
    for kern in (kernel, icm_kernel):
        prior = kern(Xs).to_dense().detach()
        for t in (X.shape[0], 0):
            with torch.no_grad():
                for s in _solvers(kern, X[:t], Y[:t], empty, empty.to(DT), method):
                    assert s.rank == 0
                    assert torch.equal(s.mean(Xs), torch.zeros(4, 3, dtype=DT))
                    assert torch.allclose(s.covariance(Xs), prior, atol=1e-12)
                    assert float(s.information_gain()) == 0.0


def test_variance_far_from_data_is_the_prior():
    kernel, X, Y, idx, p, _ = _problem("sum")
    far = torch.tensor([[60.0, -60.0], [80.0, 40.0]], dtype=DT)
    prior = kernel(far).to_dense().detach()
    with torch.no_grad():
        for method in METHODS:
            (s,) = _solvers(kernel, X, Y, idx, p, method)
            assert torch.allclose(s.covariance(far), prior, atol=1e-12)
            assert torch.allclose(s.mean(far), torch.zeros(2, 3, dtype=DT), atol=1e-12)
    icm_kernel = _problem("icm")[0]
    s = ICMNystromSolver(*icm_kernel.icm_components(), X, Y, ETA, idx, p)
    B = icm_kernel.task_covar_matrix.detach()
    with torch.no_grad():
        assert torch.allclose(s.task_blocks(far), B.expand(2, 3, 3), atol=1e-12)


def test_pivoted_cholesky_factor_and_stopping_rule():
    g = torch.Generator().manual_seed(4)
    k = _rbf(0.3)
    X = torch.rand(200, 2, generator=g, dtype=DT)
    with torch.no_grad():
        A = k(X).to_dense()
    rtol = 1e-10
    piv, L = pivoted_cholesky(torch.diagonal(A).clone(), lambda i: A[:, i].clone(), rtol)
    r = piv.numel()
    assert 0 < r < 200 and piv.unique().numel() == r
    assert torch.allclose(L @ L.T, A[piv][:, piv], atol=1e-12)
    assert torch.equal(L, L.tril())
    # Every residual of the Nyström approximation on the pivots is below the tolerance.
    cross = A[:, piv]
    resid = torch.diagonal(A) - (torch.linalg.solve_triangular(L, cross.T, upper=False) ** 2).sum(0)
    assert float(resid.max()) <= rtol * float(torch.diagonal(A).max()) * (1 + 1e-6) + 1e-15
    # full rank and zero matrices
    eye = torch.eye(5, dtype=DT)
    piv, L = pivoted_cholesky(torch.ones(5, dtype=DT), lambda i: eye[:, i], 1e-12)
    assert piv.numel() == 5 and torch.allclose(L, eye)
    piv, L = pivoted_cholesky(torch.zeros(5, dtype=DT), lambda i: torch.zeros(5, dtype=DT), 0.1)
    assert piv.numel() == 0 and L.shape == (0, 0)


def test_reduced_pinv_sqrt():
    g = torch.Generator().manual_seed(6)
    F = torch.randn(6, 3, generator=g, dtype=DT)
    M = F @ F.T  # rank 3
    R = reduced_pinv_sqrt(M, 1e-10)
    assert R.shape == (3, 6)
    # (M^{1/2})⁺ M (M^{1/2})⁺ = projection on the range: R M Rᵀ = I_r
    assert torch.allclose(R @ M @ R.T, torch.eye(3, dtype=DT), atol=1e-10)
    assert reduced_pinv_sqrt(torch.zeros(4, 4, dtype=DT), 1e-10).shape == (0, 4)
    assert reduced_pinv_sqrt(torch.zeros(0, 0, dtype=DT), 1e-10).shape == (0, 0)


def test_bad_dictionary_input():
    kernel, X, Y, idx, p, _ = _problem("icm")
    with pytest.raises(ValueError, match="probs"):
        NystromSolver(kernel, X, Y, ETA, idx, torch.zeros_like(p))
    with pytest.raises(ValueError, match="probs"):
        ICMNystromSolver(*kernel.icm_components(), X, Y, ETA, idx, p + 1.0)
    with pytest.raises(ValueError, match="indices"):
        NystromSolver(kernel, X, Y, ETA, torch.tensor([0, 99]), p[:2])
    with pytest.raises(ValueError, match="same length"):
        NystromSolver(kernel, X, Y, ETA, idx, p[:2])
    with pytest.raises(ValueError, match="method"):
        NystromSolver(kernel, X, Y, ETA, idx, p, method="svd")
