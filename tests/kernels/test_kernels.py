"""Kernel matrices against torch.kron references and GPyTorch's MultitaskKernel."""

import gpytorch
import pytest
import torch
from gpytorch.kernels import MaternKernel, MultitaskKernel, RBFKernel

from botorch_mtucb.kernels import (
    ICMKernel,
    IndependentTasksKernel,
    PrecomputedKernel,
    SumOfSeparableKernel,
    TaskSimilarityKernel,
)

DT = torch.float64


def _rbf(ls: float) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = ls
    return k


def _rand_psd(n: int, g: torch.Generator) -> torch.Tensor:
    A = torch.randn(n, n, generator=g, dtype=DT)
    return A @ A.T


@pytest.fixture
def data():
    g = torch.Generator().manual_seed(0)
    return g, torch.rand(6, 2, generator=g, dtype=DT), torch.rand(4, 2, generator=g, dtype=DT)


def _assert_psd(M: torch.Tensor) -> None:
    assert torch.allclose(M, M.T, atol=1e-12)
    assert torch.linalg.eigvalsh(M).min() > -1e-10


def test_icm_fixed_matches_kron(data):
    g, x1, x2 = data
    B = _rand_psd(3, g)
    k = _rbf(0.3)
    kern = ICMKernel(k, 3, task_covar=B)
    ref = torch.kron(k(x1, x2).to_dense(), B)
    assert torch.allclose(kern(x1, x2).to_dense(), ref, atol=1e-13)
    assert torch.allclose(kern(x1, diag=True), torch.kron(k(x1).to_dense(), B).diagonal())
    _assert_psd(kern(x1).to_dense())
    assert torch.equal(kern.task_covar_matrix, B)


def test_icm_learnable_equals_gpytorch_multitask(data):
    g, x1, x2 = data
    k = _rbf(0.4)
    ours = ICMKernel(k, 3, rank=2).to(DT)
    ref = MultitaskKernel(k, num_tasks=3, rank=2).to(DT)
    with torch.no_grad():
        ref.task_covar_module.covar_factor.copy_(ours.covar_factor)
        ref.task_covar_module.raw_var.copy_(ours.raw_var)
    assert torch.allclose(ours(x1, x2).to_dense(), ref(x1, x2).to_dense(), atol=1e-13)
    B = ours.task_covar_matrix
    F = ours.covar_factor
    assert torch.allclose(B, F @ F.T + torch.diag(torch.nn.functional.softplus(ours.raw_var)))
    _assert_psd(ours(x1).to_dense())
    # gradients flow to the task parameters
    ours(x1).to_dense().sum().backward()
    assert ours.covar_factor.grad is not None and ours.covar_factor.grad.abs().sum() > 0


def test_task_similarity(data):
    g, x1, x2 = data
    n, omega = 4, 0.3
    k = _rbf(0.2)
    kern = TaskSimilarityKernel(k, n, omega=omega)
    B = omega * torch.eye(n, dtype=DT) + (1 - omega) * torch.ones(n, n, dtype=DT) / n
    assert torch.allclose(kern.task_covar_matrix, B)
    assert torch.allclose(kern(x1, x2).to_dense(), torch.kron(k(x1, x2).to_dense(), B))
    # eigenvalues: one equal to 1, the others ω (paper 000, §4.1)
    ev = torch.linalg.eigvalsh(B)
    assert torch.allclose(ev, torch.tensor([omega] * (n - 1) + [1.0], dtype=DT))
    learn = TaskSimilarityKernel(k, n, omega=omega, learn_omega=True).to(DT)
    assert torch.allclose(learn.task_covar_matrix, B)
    assert any(p.requires_grad for p in learn.parameters())


def test_independent_and_sum(data):
    g, x1, x2 = data
    ks = [_rbf(0.2), MaternKernel(nu=2.5).to(DT)]
    kern = IndependentTasksKernel(ks)
    ref = torch.zeros(12, 8, dtype=DT)
    for i, k in enumerate(ks):
        E = torch.zeros(2, 2, dtype=DT)
        E[i, i] = 1
        ref += torch.kron(k(x1, x2).to_dense(), E)
    assert torch.allclose(kern(x1, x2).to_dense(), ref)
    assert torch.allclose(kern(x1, diag=True), kern(x1).to_dense().diagonal())
    assert kern.icm_components() is None
    shared = IndependentTasksKernel(ks[0], num_tasks=3)
    k0, B0 = shared.icm_components()
    assert k0 is ks[0] and torch.allclose(B0, torch.eye(3, dtype=DT))

    B1, B2 = _rand_psd(2, g), _rand_psd(2, g)
    s = SumOfSeparableKernel(
        [ICMKernel(ks[0], 2, task_covar=B1), ICMKernel(ks[1], 2, task_covar=B2)]
    )
    ref = torch.kron(ks[0](x1, x2).to_dense(), B1) + torch.kron(ks[1](x1, x2).to_dense(), B2)
    assert torch.allclose(s(x1, x2).to_dense(), ref)
    assert torch.allclose(s(x1, diag=True), s(x1).to_dense().diagonal())
    assert len(s.task_covar_matrices) == 2 and s.icm_components() is None
    _assert_psd(s(x1).to_dense())


def test_batched_inputs(data):
    g, _, _ = data
    B = _rand_psd(2, g)
    k = _rbf(0.3)
    kern = ICMKernel(k, 2, task_covar=B)
    xb = torch.rand(5, 3, 2, generator=g, dtype=DT)
    out = kern(xb).to_dense()
    assert out.shape == (5, 6, 6)
    assert torch.allclose(out[2], torch.kron(k(xb[2]).to_dense(), B))


def test_precomputed_kernel():
    g = torch.Generator().manual_seed(1)
    A = torch.randn(5, 5, generator=g, dtype=DT)
    M = A @ A.T
    k = PrecomputedKernel(M)
    x1 = torch.tensor([[0.0], [3.0], [4.0]], dtype=DT)
    x2 = torch.tensor([[1.0], [3.0]], dtype=DT)
    assert torch.allclose(k(x1, x2).to_dense(), M[[0, 3, 4]][:, [1, 3]])
    assert torch.allclose(k(x1, diag=True), M.diagonal()[[0, 3, 4]])
    icm = ICMKernel(k, 2, task_covar=torch.eye(2, dtype=DT))
    assert torch.allclose(icm(x1).to_dense(), torch.kron(M[[0, 3, 4]][:, [0, 3, 4]], torch.eye(2)))
    with pytest.raises(ValueError, match="outside"):
        k(torch.tensor([[5.0]], dtype=DT)).to_dense()
    with pytest.raises(ValueError, match="integer"):
        k(torch.tensor([[0.5]], dtype=DT)).to_dense()
    with pytest.raises(ValueError, match="size 1"):
        k(torch.zeros(2, 2, dtype=DT)).to_dense()
    with torch.inference_mode():  # inference tensors have no version counter to cache by
        assert torch.allclose(k(x1.clone(), x2.clone()).to_dense(), M[[0, 3, 4]][:, [1, 3]])


def test_fixed_task_matrices_follow_the_inputs_dtype():
    """A float64 fixed B (TaskSimilarityKernel's ω, ICMKernel's task_covar) evaluated on
    float32 inputs gives the float32 kernel, equal to the float64 one."""
    X = torch.rand(4, 2, generator=torch.Generator().manual_seed(3), dtype=DT)
    for kernel in (TaskSimilarityKernel(RBFKernel(), 2, omega=0.3),
                   ICMKernel(RBFKernel(), 2, task_covar=torch.tensor([[1.0, 0.3], [0.3, 2.0]],
                                                                     dtype=DT))):
        K32 = kernel(X.float()).to_dense()
        assert K32.dtype == torch.float32
        torch.testing.assert_close(K32.double(), kernel.to(DT)(X).to_dense(), atol=1e-6,
                                   rtol=1e-6)


def test_scalar_kernels_with_active_dims_are_refused():
    """The multi-task kernels evaluate their scalar kernels on all input dimensions (GPyTorch's
    slicing happens in Kernel.__call__, which they bypass): refuse rather than ignore."""
    from gpytorch.kernels import ScaleKernel

    X = torch.rand(4, 2, dtype=DT)
    for kernel in (IndependentTasksKernel([RBFKernel(active_dims=[0]), RBFKernel()]),
                   ICMKernel(ScaleKernel(RBFKernel(active_dims=[1])), 2)):
        with pytest.raises(ValueError, match="`active_dims` is not supported"):
            kernel.to(DT)(X).to_dense()


def test_bad_input():
    k = RBFKernel()
    with pytest.raises(ValueError, match="positive semi-definite"):
        ICMKernel(k, 2, task_covar=torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="symmetric"):
        ICMKernel(k, 2, task_covar=torch.tensor([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="2 x 2"):
        ICMKernel(k, 2, task_covar=torch.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        ICMKernel(k, 2, task_covar=torch.tensor([[1.0, float("nan")], [float("nan"), 1.0]]))
    with pytest.raises(ValueError, match="rank"):
        ICMKernel(k, 2, rank=3)
    with pytest.raises(ValueError, match="omega"):
        TaskSimilarityKernel(k, 2, omega=1.5)
    with pytest.raises(ValueError, match="omega"):
        TaskSimilarityKernel(k, 2, omega=-0.1)
    with pytest.raises(ValueError, match="num_tasks"):
        ICMKernel(k, 0)
    with pytest.raises(ValueError, match="num_tasks"):
        SumOfSeparableKernel([ICMKernel(k, 2), ICMKernel(k, 3)])
    with pytest.raises(ValueError, match="positive semi-definite"):
        PrecomputedKernel(-torch.eye(3))


def test_forward_returns_the_icm_operator_for_one_separable_term(data):
    """One Kronecker term (merged when terms share a scalar kernel) -> ICM operator."""
    from botorch_mtucb.linalg import ICMKroneckerLinearOperator, use_icm_likelihood

    g, x1, x2 = data
    k, k2 = _rbf(0.3), MaternKernel(nu=2.5).to(DT)
    B1, B2 = _rand_psd(2, g), _rand_psd(2, g)
    merged = SumOfSeparableKernel([ICMKernel(k, 2, task_covar=B1), ICMKernel(k, 2, task_covar=B2)])
    cases = {
        "icm": (ICMKernel(k, 2, task_covar=B1), torch.kron(k(x1, x2).to_dense(), B1)),
        "shared": (IndependentTasksKernel(k, num_tasks=2), torch.kron(k(x1, x2).to_dense(),
                                                                      torch.eye(2, dtype=DT))),
        "merged": (merged, torch.kron(k(x1, x2).to_dense(), B1 + B2)),
    }
    for name, (kern, ref) in cases.items():
        out = kern(x1, x2).evaluate_kernel()  # GPyTorch evaluates kernels lazily
        assert isinstance(out, ICMKroneckerLinearOperator), name
        torch.testing.assert_close(out.to_dense(), ref, msg=name)
        with use_icm_likelihood(False):
            plain = kern(x1, x2).evaluate_kernel()
        assert not isinstance(plain, ICMKroneckerLinearOperator), name
        torch.testing.assert_close(plain.to_dense(), ref, msg=name)
    two = SumOfSeparableKernel([ICMKernel(k, 2, task_covar=B1), ICMKernel(k2, 2, task_covar=B2)])
    assert not isinstance(two(x1, x2).evaluate_kernel(), ICMKroneckerLinearOperator)


def test_sum_of_terms_is_one_dense_tensor_evaluating_each_kernel_once(data):
    """A sum with distinct scalar kernels (a shared one in two terms) is the dense sum of the
    Kronecker products, batched inputs and a batched task matrix included, and evaluates each
    distinct scalar kernel once per call."""
    g, x1, x2 = data
    k, k2 = _rbf(0.3), MaternKernel(nu=2.5).to(DT)
    B1, B2, B3 = _rand_psd(2, g), _rand_psd(2, g), _rand_psd(2, g)
    calls = []
    forward = type(k).forward

    def counted(self, *args, **kwargs):
        calls.append(self)
        return forward(self, *args, **kwargs)

    kern = SumOfSeparableKernel([
        ICMKernel(k, 2, task_covar=B1), ICMKernel(k2, 2, task_covar=B2),
        ICMKernel(k, 2, task_covar=B3),
    ])
    ref = torch.kron(k(x1, x2).to_dense(), B1 + B3) + torch.kron(k2(x1, x2).to_dense(), B2)
    type(k).forward = counted
    try:
        out = kern.forward(x1, x2)
    finally:
        type(k).forward = forward
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, ref)
    assert sum(c is k for c in calls) == 1
    xb = torch.rand(3, 4, 2, generator=g, dtype=DT)
    out = kern(xb).to_dense()
    for b in range(3):
        ref_b = torch.kron(k(xb[b]).to_dense(), B1 + B3) + torch.kron(k2(xb[b]).to_dense(), B2)
        torch.testing.assert_close(out[b], ref_b)
    Bb = torch.stack([_rand_psd(2, g) for _ in range(3)])
    batched = SumOfSeparableKernel([ICMKernel(k, 2, task_covar=B1), ICMKernel(k2, 2)])
    with torch.no_grad():
        got = batched._dense_sum([(k, B1), (k2, Bb)], x1, x2, {})
    for b in range(3):
        ref_b = torch.kron(k(x1, x2).to_dense(), B1) + torch.kron(k2(x1, x2).to_dense(), Bb[b])
        torch.testing.assert_close(got[b], ref_b)


def _fit_task_covar(F0: torch.Tensor, target: torch.Tensor, steps: int = 3000) -> float:
    """Gradient descent on ‖F Fᵀ + diag(softplus(r)) − target‖²_F from ``F0``; final error."""
    F = F0.clone().to(DT).requires_grad_(True)
    r = torch.full((len(target),), -6.0, dtype=DT, requires_grad=True)
    opt = torch.optim.Adam([F, r], lr=0.02)
    for _ in range(steps):
        opt.zero_grad()
        B = F @ F.T + torch.diag(torch.nn.functional.softplus(r))
        loss = ((B - target) ** 2).sum()
        loss.backward()
        opt.step()
    return float(loss.detach())


def test_icm_initial_factor_is_full_rank_and_learns_a_rank_two_B():
    from botorch_mtucb.kernels.icm import initial_covar_factor

    n = 3
    assert torch.equal(ICMKernel(_rbf(0.3), n, rank=1).covar_factor.detach(),
                       0.5 * torch.ones(n, 1))
    for rank in (2, 3):
        F0 = ICMKernel(_rbf(0.3), n, rank=rank).covar_factor.detach()
        assert torch.equal(F0, initial_covar_factor(n, rank))
        assert torch.linalg.matrix_rank(F0) == rank
    # conflicting tasks: B = u uᵀ + w wᵀ with u ⟂ w (rank two, negative correlations)
    u = torch.tensor([1.0, -1.0, 0.0], dtype=DT)
    w = torch.tensor([1.0, 1.0, -2.0], dtype=DT) / 2
    target = torch.outer(u, u) + torch.outer(w, w)
    err_new = _fit_task_covar(initial_covar_factor(n, 2), target)
    err_rank_one_start = _fit_task_covar(0.5 * torch.ones(n, 2) / 2**0.5, target)
    assert err_new < 1e-4
    # the rank-one start stays rank one (columns equal): it cannot fit a rank-two B
    assert err_rank_one_start > 0.1


def test_low_rank_float32_task_matrices_are_psd_to_their_round_off():
    """A float32 PSD matrix of low rank has eigenvalues of order −k·eps·‖M‖ from rounding:
    accepted (the same data in float64 were); a clearly indefinite one is still refused."""
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(5, 20, generator=g)
    M = torch.corrcoef(Z.T)  # 20 x 20, rank 5, float32
    assert float(torch.linalg.eigvalsh(M.double()).min()) < -1e-8 * 20  # old tolerance fails
    PrecomputedKernel(M)
    for _ in range(20):
        u = torch.randn(10, 1, generator=g)
        ICMKernel(RBFKernel(), 10, task_covar=u @ u.T)
    with pytest.raises(ValueError, match="positive semi-definite"):
        ICMKernel(RBFKernel(), 2, task_covar=torch.tensor([[1.0, 2.0], [2.0, 1.0]]))


@pytest.mark.parametrize("make", [
    lambda: ICMKernel(RBFKernel(), 2, task_covar=torch.tensor([[1.0, 0.5], [0.5, 1.0]])),
    lambda: TaskSimilarityKernel(RBFKernel(), 2, omega=0.3),
    lambda: IndependentTasksKernel(RBFKernel(), num_tasks=2),
    lambda: IndependentTasksKernel([RBFKernel(), MaternKernel()]),
])
@pytest.mark.parametrize("diag", [False, True])
def test_a_float64_kernel_on_float32_inputs_gives_float64(make, diag):
    """As GPyTorch's kernels: the result has the dtype of the kernel's parameters, and its
    values are those of the float64 inputs rounded to float32."""
    kernel = make().double()
    x = torch.rand(4, 2, generator=torch.Generator().manual_seed(1))
    out = kernel(x, diag=diag) if diag else kernel(x).to_dense()
    ref = kernel(x.double(), diag=diag) if diag else kernel(x.double()).to_dense()
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, ref)


def test_kernel_argument_errors_name_the_argument():
    for bad in (True, 2.0, "3", -1, 0):
        with pytest.raises(ValueError, match="`num_tasks` must be a positive integer"):
            IndependentTasksKernel(RBFKernel(), num_tasks=bad)
        with pytest.raises(ValueError, match="`num_tasks` must be a positive integer"):
            ICMKernel(RBFKernel(), num_tasks=bad)
    for bad in (None, torch.tensor([0.2, 0.3]), "a"):
        with pytest.raises(ValueError, match="`omega` must be a number in \\[0, 1\\]"):
            TaskSimilarityKernel(RBFKernel(), 3, omega=bad)
    learnable = TaskSimilarityKernel(RBFKernel(), 3, omega=0.5, learn_omega=True)
    for edge in (0.0, 1.0):
        with pytest.raises(ValueError, match="strictly inside \\(0, 1\\)"):
            learnable.omega = edge
    assert torch.isfinite(learnable.raw_omega).all()
    with pytest.raises(ValueError, match="`task_covar_prior` is a prior on a learnable B"):
        ICMKernel(RBFKernel(), 3, task_covar=torch.eye(3),
                  task_covar_prior=gpytorch.priors.LKJCovariancePrior(
                      3, 1.0, gpytorch.priors.SmoothedBoxPrior(0.1, 2.0)))


def test_precomputed_kernel_reads_indices_written_past_the_version_counter():
    """A write through a NumPy view does not bump the tensor's version: the kernel still reads
    the current indices (no stale cache)."""
    M = torch.tensor([[1.0, 0.8, 0.1], [0.8, 1.0, 0.3], [0.1, 0.3, 1.0]], dtype=torch.float64)
    kernel = PrecomputedKernel(M)
    x = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    kernel(x).to_dense()
    x.numpy()[:] = [[2.0], [2.0]]
    torch.testing.assert_close(kernel(x).to_dense(), torch.ones(2, 2, dtype=torch.float64))
