"""ICMInvQuadLogdet and the ICM linear operators against dense references."""

import math

import pytest
import torch
from linear_operator.operators import (
    ConstantDiagLinearOperator,
    DiagLinearOperator,
    KroneckerProductLinearOperator,
    to_linear_operator,
)

from botorch_mtucb.linalg import (
    ICMAddedDiagLinearOperator,
    ICMInvQuadLogdet,
    ICMKroneckerLinearOperator,
    icm_inv_quad_logdet,
)

DT = torch.float64


def _rbf_matrix(t: int, ls: float, g: torch.Generator, batch=(), dtype=DT) -> torch.Tensor:
    X = torch.rand(*batch, t, 2, generator=g, dtype=DT)
    return torch.exp(-0.5 * torch.cdist(X, X).square() / ls**2).to(dtype)


def _psd(n: int, g: torch.Generator, batch=(), rank: int | None = None) -> torch.Tensor:
    F = torch.randn(*batch, n, rank or n, generator=g, dtype=DT)
    return F @ F.mT / n + 0.05 * torch.eye(n, dtype=DT)


def _dense(K, B, eta):
    t, n = K.shape[-1], B.shape[-1]
    eta = torch.as_tensor(eta, dtype=K.dtype)
    eta = eta.squeeze(-1) if eta.dim() else eta
    S = (K[..., :, None, :, None] * B[..., None, :, None, :]).reshape(
        *torch.broadcast_shapes(K.shape[:-2], B.shape[:-2]), t * n, t * n
    )
    return S + eta[..., None, None] * torch.eye(t * n, dtype=K.dtype)


def _dense_quad_logdet(K, B, eta, r):
    S = _dense(K, B, eta)
    L = torch.linalg.cholesky(S)
    r_b = r.expand(*torch.broadcast_shapes(S.shape[:-2], r.shape[:-1]), r.shape[-1])
    sol = torch.cholesky_solve(r_b.unsqueeze(-1), L).squeeze(-1)
    return (r_b * sol).sum(-1), 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


@pytest.mark.parametrize("t,n", [(1, 1), (7, 1), (1, 4), (12, 3), (30, 5)])
def test_log_likelihood_matches_torch_mvn(t, n):
    g = torch.Generator().manual_seed(t * 10 + n)
    K, B = _rbf_matrix(t, 0.4, g), _psd(n, g)
    eta = torch.tensor(0.07, dtype=DT)
    y, mu = torch.randn(t * n, generator=g, dtype=DT), torch.randn(t * n, generator=g, dtype=DT)
    quad, logdet = icm_inv_quad_logdet(K, B, eta, y - mu)
    ours = -0.5 * (quad + logdet + t * n * math.log(2 * math.pi))
    ref = torch.distributions.MultivariateNormal(mu, _dense(K, B, eta)).log_prob(y)
    torch.testing.assert_close(ours, ref, rtol=1e-8, atol=0.0)
    # the interleaved order is torch.kron(K, B)
    torch.testing.assert_close(_dense(K, B, eta), torch.kron(K, B) + eta * torch.eye(t * n))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "bK,bB,beta,br",
    [((), (), (), ()), ((3,), (), (), ()), ((), (2, 1), (1,), (3,)), ((2, 1), (1, 4), (2, 4), ())],
)
def test_batch_broadcasting_and_gradients(bK, bB, beta, br, dtype):
    g = torch.Generator().manual_seed(1)
    t, n = 6, 3
    K, B = _rbf_matrix(t, 0.5, g, bK), _psd(n, g, bB)
    eta = torch.tensor(0.1, dtype=DT)
    if beta:
        eta = 0.05 + torch.rand(*beta, 1, generator=g, dtype=DT)
    r = torch.randn(*br, t * n, generator=g, dtype=DT)
    inputs = [x.to(dtype).requires_grad_(True) for x in (K, B, eta, r)]
    quad, logdet = icm_inv_quad_logdet(*inputs)
    assert quad.dtype == logdet.dtype == dtype
    # reference: the dense Cholesky formula in float64 on the same (rounded) inputs
    ref_inputs = [x.detach().to(DT).requires_grad_(True) for x in inputs]
    rq, rl = _dense_quad_logdet(*ref_inputs)
    assert quad.shape == rq.shape and logdet.shape == rl.shape
    tol = {"rtol": 1e-9, "atol": 1e-10} if dtype == DT else {"rtol": 1e-6, "atol": 1e-5}
    torch.testing.assert_close(quad.to(DT), rq, **tol)
    torch.testing.assert_close(logdet.to(DT), rl, **tol)
    wq, wl = torch.rand_like(rq), torch.rand_like(rl)
    ours = torch.autograd.grad((wq.to(dtype) * quad).sum() + (wl.to(dtype) * logdet).sum(), inputs)
    refs = torch.autograd.grad((wq * rq).sum() + (wl * rl).sum(), ref_inputs)
    gtol = {"rtol": 1e-7, "atol": 1e-9} if dtype == DT else {"rtol": 1e-5, "atol": 1e-5}
    for name, a, b in zip("K B eta r".split(), ours, refs, strict=True):
        assert a.shape == b.shape and a.dtype == dtype, name
        torch.testing.assert_close(a.to(DT), b, **gtol, msg=name)


def test_gradcheck_function():
    g = torch.Generator().manual_seed(2)
    t, n = 5, 3
    K, B = _rbf_matrix(t, 0.6, g, (2,)), _psd(n, g)
    eta = torch.tensor([0.1, 0.3], dtype=DT)  # one η per batch element (the Function's layout)
    r = torch.randn(2, t * n, generator=g, dtype=DT)
    args = [x.clone().requires_grad_(True) for x in (K, B, eta, r)]
    assert torch.autograd.gradcheck(ICMInvQuadLogdet.apply, args)
    # broadcasting batches: K unbatched, B 2 x 1, one η, r batched 3
    B21 = _psd(n, g, (2, 1))
    args = [x.clone().requires_grad_(True) for x in (K[0], B21, eta[:1], r[:1].expand(3, -1))]
    assert torch.autograd.gradcheck(ICMInvQuadLogdet.apply, args)
    eta0 = torch.tensor([0.2], dtype=DT, requires_grad=True)  # GPyTorch's (1,) noise shape
    args = [K[0].clone().requires_grad_(True), B.clone().requires_grad_(True), eta0, r[0]]
    assert torch.autograd.gradcheck(icm_inv_quad_logdet, args)


def test_closed_form_gradient_is_finite_for_clustered_eigenvalues():
    """A smooth kernel on many points: eigenvalues cluster at 0, where eigh's backward fails."""
    g = torch.Generator().manual_seed(3)
    t, n = 60, 2
    K, B = _rbf_matrix(t, 2.0, g), torch.eye(n, dtype=DT)  # B = I: every eigenvalue repeated
    r = torch.randn(t * n, generator=g, dtype=DT)
    Kg = K.clone().requires_grad_(True)
    quad, logdet = icm_inv_quad_logdet(Kg, B, 0.01, r)
    (gK,) = torch.autograd.grad(quad + logdet, Kg)
    Kr = K.clone().requires_grad_(True)
    rq, rl = _dense_quad_logdet(Kr, B, torch.tensor(0.01, dtype=DT), r)
    (gr,) = torch.autograd.grad(rq + rl, Kr)
    assert torch.isfinite(gK).all()
    torch.testing.assert_close(gK, gr, rtol=1e-6, atol=1e-6 * gr.abs().max().item())
    a = torch.linalg.eigvalsh(K)
    assert (a < 1e-10).sum() > 10  # a cluster of numerically zero (clamped) eigenvalues


def test_eigenvalues_are_clamped_at_zero():
    """K with eigenvalues −η (x3) and 4 − η: unclamped, Λ = aξ + η would vanish."""
    eta = 1e-6
    K = torch.ones(4, 4, dtype=DT) - eta * torch.eye(4, dtype=DT)
    B = torch.eye(2, dtype=DT)
    r = torch.arange(8, dtype=DT)
    Kg = K.clone().requires_grad_(True)
    quad, logdet = icm_inv_quad_logdet(Kg, B, eta, r)
    (gK,) = torch.autograd.grad(quad + logdet, Kg)
    Kc = (4 - eta) * torch.ones(4, 4, dtype=DT) / 4  # K with its eigenvalues clamped at 0
    Kc.requires_grad_(True)
    rq, rl = _dense_quad_logdet(Kc, B, torch.tensor(eta, dtype=DT), r)
    (gc,) = torch.autograd.grad(rq + rl, Kc)
    torch.testing.assert_close(quad, rq, rtol=1e-9, atol=0.0)
    torch.testing.assert_close(logdet, rl, rtol=1e-9, atol=0.0)
    torch.testing.assert_close(gK, gc, rtol=1e-7, atol=1e-6)


def test_float32_is_computed_in_float64_internally():
    g = torch.Generator().manual_seed(4)
    t, n = 40, 4
    K, B = _rbf_matrix(t, 1.0, g), _psd(n, g)  # ill-conditioned: a spans 1e-12 .. 1e1
    r = torch.randn(t * n, generator=g, dtype=DT)
    eta = 1e-4
    args32 = [x.float().requires_grad_(True) for x in (K, B, r)]
    q32, l32 = icm_inv_quad_logdet(args32[0], args32[1], eta, args32[2])
    assert q32.dtype == l32.dtype == torch.float32
    gr32 = torch.autograd.grad(q32 + l32, args32)
    assert all(x.dtype == torch.float32 for x in gr32)
    # reference: the same float32-rounded inputs, in float64
    args64 = [x.detach().double().requires_grad_(True) for x in args32]
    q64, l64 = icm_inv_quad_logdet(args64[0], args64[1], eta, args64[2])
    gr64 = torch.autograd.grad(q64 + l64, args64)
    torch.testing.assert_close(q32.double(), q64, rtol=1e-6, atol=0.0)
    torch.testing.assert_close(l32.double(), l64, rtol=1e-6, atol=1e-5)
    for a, b in zip(gr32, gr64, strict=True):
        torch.testing.assert_close(a.double(), b, rtol=1e-5, atol=1e-6 * b.abs().max().item())


def test_inputs_are_not_mutated():
    g = torch.Generator().manual_seed(5)
    K, B, r = _rbf_matrix(5, 0.5, g), _psd(2, g), torch.randn(10, generator=g, dtype=DT)
    copies = [x.clone() for x in (K, B, r)]
    icm_inv_quad_logdet(K, B, 0.1, r)
    assert all(torch.equal(a, b) for a, b in zip((K, B, r), copies, strict=True))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"K": torch.ones(3, 4)}, "`K` must have shape"),
        ({"B": torch.ones(2)}, "`B` must have shape"),
        ({"r": torch.ones(5)}, "`r` must have shape"),
        ({"eta": torch.ones(3)}, "`eta` must be 0-dim"),
        ({"eta": torch.tensor(0.0)}, "must be positive"),
        ({"eta": -1.0}, "must be positive"),
        ({"K": torch.ones(2, 3, 3), "r": torch.ones(3, 6)}, "do not broadcast"),
        ({"K": torch.ones(3, 3, dtype=torch.long)}, "floating-point"),
    ],
)
def test_bad_input_errors(kwargs, match):
    args = {"K": torch.eye(3), "B": torch.eye(2), "eta": 0.1, "r": torch.ones(6)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        icm_inv_quad_logdet(**args)


def _operator(g, batch=()):
    t, n = 8, 3
    K, B = _rbf_matrix(t, 0.5, g, batch), _psd(n, g, batch)
    kop = ICMKroneckerLinearOperator(to_linear_operator(K), to_linear_operator(B))
    eta = torch.full((*batch, 1), 0.2, dtype=DT)
    return kop, K, B, eta


@pytest.mark.parametrize("batch", [(), (2,)])
def test_operator_sum_with_constant_diag(batch):
    g = torch.Generator().manual_seed(6)
    kop, K, B, eta = _operator(g, batch)
    N = kop.shape[-1]
    op = kop + ConstantDiagLinearOperator(eta, diag_shape=N)
    assert type(op) is ICMAddedDiagLinearOperator
    assert type(kop.add_diagonal(torch.tensor(0.2, dtype=DT))) is ICMAddedDiagLinearOperator
    dense = _dense(K, B, eta)
    torch.testing.assert_close(op.to_dense(), dense)
    rhs = torch.randn(*batch, N, 3, generator=g, dtype=DT)
    torch.testing.assert_close(op @ rhs, dense @ rhs)
    torch.testing.assert_close(op.diagonal(dim1=-2, dim2=-1), dense.diagonal(dim1=-2, dim2=-1))
    sol = torch.linalg.solve(dense, rhs)
    quad, logdet = op.inv_quad_logdet(rhs, logdet=True, reduce_inv_quad=False)
    torch.testing.assert_close(quad, (rhs * sol).sum(-2))
    torch.testing.assert_close(logdet, torch.logdet(dense))
    quad_r, none = op.inv_quad_logdet(rhs, logdet=False)
    assert none is None
    torch.testing.assert_close(quad_r, (rhs * sol).sum((-2, -1)))
    torch.testing.assert_close(op.logdet(), torch.logdet(dense))
    vec = rhs[..., 0]
    torch.testing.assert_close(op.inv_quad_logdet(vec)[0], (vec * sol[..., 0]).sum(-1))
    # a further constant diagonal stays on the fast path
    op2 = op + ConstantDiagLinearOperator(eta, diag_shape=N)
    assert type(op2) is ICMAddedDiagLinearOperator
    torch.testing.assert_close(op2.logdet(), torch.logdet(dense + 0.2 * torch.eye(N)))


def test_operator_other_sums_keep_generic_path():
    g = torch.Generator().manual_seed(7)
    kop, K, B, eta = _operator(g)
    N = kop.shape[-1]
    hetero = kop + DiagLinearOperator(torch.rand(N, generator=g, dtype=DT) + 0.1)
    assert not isinstance(hetero, ICMAddedDiagLinearOperator)
    other = KroneckerProductLinearOperator(to_linear_operator(K), to_linear_operator(B))
    assert not isinstance(kop + other, ICMAddedDiagLinearOperator)
    # the product itself behaves as GPyTorch's Kronecker product
    torch.testing.assert_close(kop.to_dense(), torch.kron(K, B))
