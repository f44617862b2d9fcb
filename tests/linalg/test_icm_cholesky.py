"""The Cholesky route of the ICM likelihood against dense autograd and the eigen route."""

import pytest
import torch

from botorch_mtucb.linalg import (
    ICMAddedDiagLinearOperator,
    ICMCholeskyInvQuadLogdet,
    ICMFactorCache,
    ICMInvQuadLogdet,
    ICMKroneckerLinearOperator,
    ICMNotPositiveDefiniteError,
    icm_cholesky,
    icm_factor_cache,
    icm_inv_quad_logdet,
    icm_likelihood_method,
    take_icm_factors,
)

DT = torch.float64


def _inputs(t, n, g, bK=(), bB=(), be=(), br=(), dtype=DT):
    X = torch.rand(*bK, t, 2, generator=g, dtype=DT)
    K = torch.exp(-0.5 * torch.cdist(X, X).square() / 0.4**2)
    F = torch.randn(*bB, n, n, generator=g, dtype=DT)
    B = F @ F.mT / n + 0.05 * torch.eye(n, dtype=DT)
    eta = 0.03 + 0.1 * torch.rand(be, generator=g, dtype=DT)
    r = torch.randn(*br, t * n, generator=g, dtype=DT)
    return tuple(x.to(dtype) for x in (K, B, eta, r))


def _dense(K, B, eta, r):
    """rᵀΣ⁻¹r and log det Σ by brute force (kron, solve, logdet), differentiable by autograd."""
    t, n = K.shape[-1], B.shape[-1]
    S = (K[..., :, None, :, None] * B[..., None, :, None, :]).reshape(
        *torch.broadcast_shapes(K.shape[:-2], B.shape[:-2]), t * n, t * n
    ) + eta[..., None, None] * torch.eye(t * n, dtype=K.dtype)
    batch = torch.broadcast_shapes(S.shape[:-2], r.shape[:-1])
    rb = r.expand(*batch, t * n)
    quad = (rb * torch.linalg.solve(S.expand(*batch, t * n, t * n), rb)).sum(-1)
    return quad, torch.logdet(S)


def _run(fn, inputs, cot):
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    quad, logdet = fn(*leaves)
    torch.autograd.backward((quad, logdet), cot(quad, logdet))
    return [quad.detach(), logdet.detach()] + [x.grad for x in leaves]


BATCHES = [
    ((), (), (), ()),
    ((3,), (), (), ()),
    ((), (2,), (2,), ()),
    ((2, 1), (1, 3), (), (2, 3)),
    ((), (), (), (4,)),
]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("batches", BATCHES)
def test_value_and_all_gradients_match_dense_autograd(batches, n, dtype):
    g = torch.Generator().manual_seed(7 * n + len(batches[0]))
    inputs = _inputs(6, n, g, *batches, dtype=dtype)
    gq_seed = torch.Generator().manual_seed(3)

    def cot(q, ld):
        return (torch.randn(q.shape, generator=gq_seed, dtype=DT).to(q.dtype),
                torch.randn(ld.shape, generator=gq_seed, dtype=DT).to(ld.dtype))

    ours = _run(ICMCholeskyInvQuadLogdet.apply, inputs, cot)
    gq_seed.manual_seed(3)
    ref = _run(_dense, [x.to(DT) for x in inputs], cot)
    tol = 1e-9 if dtype == torch.float64 else 2e-4
    for name, a, b in zip(("quad", "logdet", "K", "B", "eta", "r"), ours, ref, strict=True):
        assert a.shape == b.shape, name
        assert a.dtype == dtype, name
        assert torch.allclose(a.to(DT), b, rtol=tol, atol=tol * b.abs().max()), name


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("batches", BATCHES)
def test_equals_the_eigen_route(batches, n):
    g = torch.Generator().manual_seed(11 * n)
    inputs = _inputs(9, n, g, *batches)

    def cot(q, ld):
        return torch.linspace(0.5, 1.5, q.numel(), dtype=DT).reshape(q.shape), torch.full_like(
            ld, -0.7)

    chol = _run(ICMCholeskyInvQuadLogdet.apply, inputs, cot)
    eig = _run(ICMInvQuadLogdet.apply, inputs, cot)
    for a, b in zip(chol, eig, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-10 * b.abs().max())


def test_gradcheck():
    g = torch.Generator().manual_seed(0)
    K, B, eta, r = _inputs(4, 2, g)
    leaves = [x.clone().requires_grad_(True) for x in (K, B, eta, r)]

    def fn(K, B, eta, r):  # symmetrise: the function reads the lower triangle of K only
        return ICMCholeskyInvQuadLogdet.apply(0.5 * (K + K.mT), 0.5 * (B + B.mT), eta, r)

    assert torch.autograd.gradcheck(fn, leaves)


def test_partial_gradients_and_rank_deficient_B():
    """Only some inputs need gradients; ξ_i = 0 (B of rank 1) is exact (no division by ξ)."""
    g = torch.Generator().manual_seed(1)
    K, _, eta, r = _inputs(7, 3, g)
    f = torch.randn(3, 1, generator=g, dtype=DT)
    B = f @ f.T  # two zero eigenvalues
    for wanted in ([0], [1], [2], [3], [1, 2]):
        inputs = [K, B, eta, r]
        leaves = [x.clone().requires_grad_(i in wanted) for i, x in enumerate(inputs)]
        q, ld = ICMCholeskyInvQuadLogdet.apply(*leaves)
        (q + ld).backward()
        ref_leaves = [x.clone().requires_grad_(i in wanted) for i, x in enumerate(inputs)]
        rq, rld = _dense(*ref_leaves)
        (rq + rld).backward()
        for i in wanted:
            assert torch.allclose(leaves[i].grad, ref_leaves[i].grad, rtol=1e-8, atol=1e-8)


def test_saved_state_is_one_txt_buffer():
    """After the forward only the log-det gradient accumulator is t x t; nothing is nt x nt."""
    t, n = 40, 3
    g = torch.Generator().manual_seed(2)
    K, B, eta, r = (x.requires_grad_(True) for x in _inputs(t, n, g))
    quad, _ = ICMCholeskyInvQuadLogdet.apply(K, B, eta, r)
    sizes = [s.numel() for s in quad.grad_fn.saved_tensors if s is not None]
    assert sum(s >= t * t for s in sizes) == 1
    assert max(sizes) == t * t
    K2 = K.detach()  # no K gradient: no t x t buffer kept at all
    quad, _ = ICMCholeskyInvQuadLogdet.apply(K2, B, eta, r)
    assert max(s.numel() for s in quad.grad_fn.saved_tensors if s is not None) < t * t


def test_not_positive_definite_falls_back_to_the_eigen_route():
    g = torch.Generator().manual_seed(3)
    K, B, eta, r = _inputs(8, 2, g)
    a, W = torch.linalg.eigh(K)
    K_bad = (W * torch.cat([a[:-1], a.new_tensor([-5.0])])) @ W.T  # one eigenvalue −5
    with pytest.raises(ICMNotPositiveDefiniteError):
        ICMCholeskyInvQuadLogdet.apply(K_bad, B, eta, r)
    quad, logdet = icm_inv_quad_logdet(K_bad, B, eta, r, method="cholesky")
    rq, rld = ICMInvQuadLogdet.apply(K_bad, B, eta, r)  # eigenvalues clamped at 0
    assert torch.allclose(quad, rq) and torch.allclose(logdet, rld)


def test_method_rule_and_dispatch(monkeypatch):
    assert icm_likelihood_method(2, 2000) == "cholesky"
    assert icm_likelihood_method(2, 20) == "eigh"
    assert icm_likelihood_method(8, 5000) == "eigh"
    g = torch.Generator().manual_seed(4)
    K, B, eta, r = _inputs(120, 2, g)
    calls = []
    eigh = torch.linalg.eigh
    monkeypatch.setattr(torch.linalg, "eigh", lambda A: calls.append(A.shape[-1]) or eigh(A))
    auto = icm_inv_quad_logdet(K, B, eta, r)
    assert 120 not in calls  # the Cholesky route: only eigh(B)
    forced = icm_inv_quad_logdet(K, B, eta, r, method="eigh")
    assert 120 in calls
    assert all(torch.allclose(a, b) for a, b in zip(auto, forced, strict=True))
    with pytest.raises(ValueError, match="method"):
        icm_inv_quad_logdet(K, B, eta, r, method="lu")


def test_operator_uses_the_auto_route(monkeypatch):
    g = torch.Generator().manual_seed(5)
    K, B, eta, r = _inputs(150, 2, g)
    op = ICMKroneckerLinearOperator(K, B).add_diagonal(eta)
    assert isinstance(op, ICMAddedDiagLinearOperator)
    calls = []
    eigh = torch.linalg.eigh
    monkeypatch.setattr(torch.linalg, "eigh", lambda A: calls.append(A.shape[-1]) or eigh(A))
    quad, logdet = op.inv_quad_logdet(r.unsqueeze(-1), logdet=True)
    assert 150 not in calls
    rq, rld = ICMInvQuadLogdet.apply(K, B, eta, r)
    assert torch.allclose(quad, rq) and torch.allclose(logdet, rld)


@pytest.mark.parametrize("method", ["cholesky", "eigh"])
def test_factor_cache_stores_the_factors_under_the_key(method):
    g = torch.Generator().manual_seed(6)
    K, B, eta, r = _inputs(10, 3, g)
    cache = ICMFactorCache()
    cache.begin((K, eta))
    icm_inv_quad_logdet(K, B, eta, r, method=method, cache=cache)
    assert cache.take((K, eta + 1e-12)) is None  # another key: not handed out
    got_method, factors = cache.take((K.clone(), eta.clone()))
    assert got_method == method
    if method == "cholesky":
        xi, U, L = factors
        blocks = xi[:, None, None] * K + eta * torch.eye(10, dtype=DT)
        assert torch.allclose(L @ L.mT, blocks)
        assert torch.allclose((U * xi) @ U.T, B)
    else:
        a, W = factors
        assert torch.allclose((W * a) @ W.T, K)
    assert cache.take((K, eta)) is None  # handed out once


def test_factor_cache_without_cholesky_and_batched_inputs_store_nothing():
    g = torch.Generator().manual_seed(7)
    K, B, eta, r = _inputs(10, 2, g)
    cache = ICMFactorCache(keep_cholesky=False)
    cache.begin((K,))
    icm_inv_quad_logdet(K, B, eta, r, method="cholesky", cache=cache)
    assert cache.take((K,)) is None
    cache = ICMFactorCache()
    cache.begin((K,))
    icm_inv_quad_logdet(K.expand(2, 10, 10), B, eta, r, method="eigh", cache=cache)
    assert cache.take((K,)) is None


def test_owner_cache_registry():
    class Owner:
        pass

    owner = Owner()
    cache = icm_factor_cache(owner)
    assert icm_factor_cache(owner) is cache
    K = torch.eye(2, dtype=DT)
    cache.begin((K,))
    cache.store("eigh", (K[0], K))
    assert take_icm_factors(owner, (K,))[0] == "eigh"
    assert take_icm_factors(Owner(), (K,)) is None


def _large_allocations(fn, nbytes):
    """Sizes of the CPU allocations of at least ``nbytes`` made by ``fn`` (torch's allocator,
    internal temporaries included) and the peak of their live total."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        fn()
    sizes, live, peak = [], 0, 0
    for e in sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns()):
        if e.name() == "[memory]" and abs(e.nbytes()) >= nbytes:
            live += e.nbytes()
            peak = max(peak, live)
            if e.nbytes() > 0:
                sizes.append(e.nbytes())
    return sizes, peak


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_blocks_are_factorised_and_inverted_in_place(monkeypatch, n, keep, batch):
    """Forward + backward allocate the accumulator, one work buffer (n ≥ 2), the K gradient
    and, for a cache keeping the factors, their n x t x t buffer: no other t x t buffer."""
    t = 300
    g = torch.Generator().manual_seed(30 + n)
    K, B, eta, r = (x.requires_grad_(True) for x in _inputs(t, n, g, bK=batch))
    txt = t * t * 8 * (batch[0] if batch else 1)  # one t x t buffer per batch member
    cache = ICMFactorCache(keep_cholesky=keep)
    keep = keep and not batch  # the cache keeps the factors of unbatched inputs only

    def step():
        quad, logdet = ICMCholeskyInvQuadLogdet.apply(K, B, eta, r, cache)
        torch.autograd.backward((quad, logdet), (torch.ones_like(quad), torch.ones_like(logdet)))

    step()  # warm up
    K.grad = None
    sizes, peak = _large_allocations(step, txt)
    expected = [n * txt] * keep + [txt] * (3 if n > 1 else 2)
    assert sorted(sizes) == sorted(expected)
    # at most two buffers live at once in the forward or the backward (an upper bound: the
    # profiler's memory events can share a timestamp, and a free sorted before an allocation
    # of the same instant lowers the measured peak)
    assert (n * keep + 1) * txt <= peak <= (n * keep + 2) * txt
    ref = _dense(K.detach(), B.detach(), eta.detach(), r.detach())
    quad, logdet = ICMCholeskyInvQuadLogdet.apply(K, B, eta, r)
    assert torch.allclose(quad, ref[0]) and torch.allclose(logdet, ref[1])

    def copying_factor(S):  # what a factorisation into a new buffer would allocate
        S.copy_(torch.linalg.cholesky(S))

    monkeypatch.setattr(icm_cholesky, "_factor_", copying_factor)
    K.grad = None
    copy_sizes, _ = _large_allocations(step, txt)
    assert len(copy_sizes) > len(expected)  # the count sees such a copy
