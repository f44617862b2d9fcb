"""The solver cache and the frozen predictor cached on it: reused while nothing changed, rebuilt
after every kind of change, equal to the general path."""

import copy

import pytest
import torch
from botorch.models.transforms import ChainedOutcomeTransform, Normalize, Standardize
from gpytorch.kernels import LinearKernel, MaternKernel, RBFKernel, ScaleKernel
from gpytorch.means import ConstantMean

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DT = torch.float64


def _fresh(model, X):
    return ExactMultiTaskGP(*model.train_inputs, model.train_targets,
                            covar_module=model.covar_module, noise=float(model.noise)).posterior(X)


def test_cache_reused_and_invalidated():
    g = torch.Generator().manual_seed(0)
    k = RBFKernel().to(DT)
    kernel = ICMKernel(k, 2, task_covar=torch.eye(2, dtype=DT))
    X, Y = torch.rand(8, 2, generator=g, dtype=DT), torch.randn(8, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel)
    Xs = torch.rand(3, 1, 2, generator=g, dtype=DT)
    model.posterior(Xs)
    solver = model.solver()
    assert model.solver() is solver  # nothing changed: reused
    k.lengthscale = 0.7  # a GPyTorch setter (writes through .data, no version bump)
    assert model.solver() is not solver
    torch.testing.assert_close(model.posterior(Xs).mean, _fresh(model, Xs).mean)
    solver = model.solver()
    kernel.fixed_task_covar = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=DT)  # a new buffer
    assert model.solver() is not solver
    torch.testing.assert_close(model.posterior(Xs).mean, _fresh(model, Xs).mean)
    solver = model.solver()
    model.likelihood.noise = 0.3  # noise through its setter
    assert model.solver() is not solver
    low = model.to(torch.float32)  # .to: a new solver in the new dtype
    assert low.solver().dtype == torch.float32


def test_storage_swap_and_deep_copy_invalidate():
    g = torch.Generator().manual_seed(1)
    k = RBFKernel().to(DT)
    model = ExactMultiTaskGP(torch.rand(8, 2, generator=g, dtype=DT),
                             torch.randn(8, 2, generator=g, dtype=DT),
                             covar_module=ICMKernel(k, 2, task_covar=torch.eye(2, dtype=DT)))
    Xs = torch.rand(3, 1, 2, generator=g, dtype=DT)
    solver = model.solver()
    k.raw_lengthscale.data = torch.full((1, 1), 0.3, dtype=DT)  # new storage, same module
    assert model.solver() is not solver
    torch.testing.assert_close(model.posterior(Xs).mean, _fresh(model, Xs).mean)
    twin = copy.deepcopy(model)  # its views must follow its own tensors
    twin.covar_module.data_covar_module.lengthscale = 0.9
    torch.testing.assert_close(twin.posterior(Xs).mean, _fresh(twin, Xs).mean)
    torch.testing.assert_close(model.posterior(Xs).mean, _fresh(model, Xs).mean)


# ---------------------------------------------------------------- the frozen predictor
def _model(kind: str, g: torch.Generator, t: int = 12, n: int = 3, d: int = 2):
    base = {
        "rbf": lambda: RBFKernel(ard_num_dims=d),
        "scaled": lambda: ScaleKernel(RBFKernel(ard_num_dims=d)),
        "matern": lambda: ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=d)),
    }[kind]().to(DT)
    with torch.no_grad():
        for p in base.parameters():
            p.add_(torch.rand(p.shape, generator=g, dtype=DT))
    A = torch.randn(n, n, generator=g, dtype=DT)
    kernel = ICMKernel(base, n, task_covar=A @ A.T / n + 0.1 * torch.eye(n, dtype=DT))
    X = 3.0 + 2.0 * torch.rand(t, d, generator=g, dtype=DT)
    Y = 5.0 * torch.randn(t, n, generator=g, dtype=DT) + 2.0
    return X, Y, kernel


def _general(model, X, W):
    """wᵀΓw from the n x n blocks of task_posterior (no predictor involved)."""
    mean, blocks = model.task_posterior(X)
    return mean, torch.einsum("...ab,ak,bk->...k", blocks, W, W)


def _assert_same(model, X, W, fast_expected=True, tol=1e-12):
    assert (model._projected_predictor(W) is not None) == fast_expected
    X1, X2 = X.clone().requires_grad_(True), X.clone().requires_grad_(True)
    m1, q1 = model.projected_task_posterior(X1, W)
    m2, q2 = _general(model, X2, W)
    torch.testing.assert_close(m1, m2, atol=tol, rtol=tol)
    torch.testing.assert_close(q1, q2, atol=tol, rtol=tol)
    (g1,) = torch.autograd.grad((m1.sum(-1) + q1.sqrt().sum(-1)).sum(), X1)
    (g2,) = torch.autograd.grad((m2.sum(-1) + q2.sqrt().sum(-1)).sum(), X2)
    torch.testing.assert_close(g1, g2, atol=10 * tol, rtol=100 * tol)


@pytest.mark.parametrize("kind", ["rbf", "scaled", "matern"])
@pytest.mark.parametrize("transforms", ["none", "standardize", "both", "const_mean"])
def test_predictor_equals_general_path(kind, transforms):
    g = torch.Generator().manual_seed(3)
    X, Y, kernel = _model(kind, g)
    kw = {}
    if transforms != "none":
        kw["outcome_transform"] = Standardize(m=3)
    if transforms == "both":
        kw["input_transform"] = Normalize(2, bounds=torch.tensor([[3.0, 3], [5, 5]], dtype=DT))
    if transforms == "const_mean":
        kw["mean_module"] = ConstantMean()
        kw["mean_module"].constant.data.fill_(0.7)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=0.05, **kw).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    Xs = 3.0 + 2.0 * torch.rand(4, 5, 2, generator=g, dtype=DT)  # batch x q x d and q = 1
    for W in (torch.eye(3, dtype=DT), torch.tensor([[0.2], [-0.5], [0.3]], dtype=DT)):
        _assert_same(model, Xs, W)
        _assert_same(model, Xs[:, :1], W)
    Xs[0, 0] = model.train_inputs[0][0] if transforms != "both" else X[0]  # at a datum
    _assert_same(model, Xs, torch.eye(3, dtype=DT))


@pytest.mark.parametrize("transforms", ["none", "standardize", "both"])
def test_nystrom_predictor_equals_general_path(transforms):
    g = torch.Generator().manual_seed(6)
    X, Y, kernel = _model("scaled", g, t=40)
    kw = {}
    if transforms != "none":
        kw["outcome_transform"] = Standardize(m=3)
    if transforms == "both":
        kw["input_transform"] = Normalize(2, bounds=torch.tensor([[3.0, 3], [5, 5]], dtype=DT))
    model = NystromMultiTaskGP(X, Y, covar_module=kernel, noise=0.05, q=0.5, generator=0, **kw)
    Xs = 3.0 + 2.0 * torch.rand(5, 1, 2, generator=g, dtype=DT)
    solver = model.solver()
    assert 0 < solver.rank < 40  # a proper sub-dictionary
    # Both paths round differently (association, folded scales), and the rounding is amplified
    # by the embedding's size: with Normalize the smooth kernel makes |M_q| ~ 1e5, so the two
    # agree to ~1e-11 there (eps · |M_q|), and to 1e-14 without it.
    tol = 1e-12 * max(1.0, float(solver.Mq.abs().max()))
    for W in (torch.eye(3, dtype=DT), torch.tensor([[0.2], [-0.5], [0.3]], dtype=DT)):
        _assert_same(model, Xs, W, tol=tol)


def test_predictor_reused_and_invalidated():
    g = torch.Generator().manual_seed(4)
    X, Y, kernel = _model("scaled", g)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, outcome_transform=Standardize(m=3))
    Xs = 3.0 + 2.0 * torch.rand(6, 1, 2, generator=g, dtype=DT)
    W = torch.eye(3, dtype=DT)
    fast = model._projected_predictor(W)
    assert fast is not None and model._projected_predictor(W) is fast  # reused
    kernel.data_covar_module.outputscale = 2.5  # a hyperparameter, through .data
    assert model._projected_predictor(W) is not fast
    _assert_same(model, Xs, W)
    fast = model._projected_predictor(W)
    model.outcome_transform.stdvs.mul_(2.0)  # transform statistics (a buffer, in place)
    assert model._projected_predictor(W) is not fast
    _assert_same(model, Xs, W)
    fast = model._projected_predictor(W)
    W[1, 1] = 3.0  # the directions, in place
    assert model._projected_predictor(W) is not fast
    _assert_same(model, Xs, W)
    cond = model.condition_on_observations(Xs[0], Y[:1] + 0.5)  # appended block: general path
    _assert_same(cond, Xs, W, fast_expected=False)
    scratch = copy.deepcopy(cond)
    scratch._solver_cache = None  # the same model, factorised from scratch: the fast path again
    assert scratch._projected_predictor(W) is not None
    for a, b in zip(cond.projected_task_posterior(Xs, W), scratch.projected_task_posterior(Xs, W),
                    strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-8)
    low = copy.deepcopy(model).to(torch.float32)
    m32, _ = low.projected_task_posterior(Xs.float(), W.float())
    torch.testing.assert_close(m32.double(), _general(model, Xs, W)[0], atol=1e-3, rtol=1e-3)


def test_predictor_falls_back_where_there_is_no_exact_fold():
    g = torch.Generator().manual_seed(5)
    X, Y, _ = _model("rbf", g)
    W = torch.eye(3, dtype=DT)
    Xs = 3.0 + 2.0 * torch.rand(4, 1, 2, generator=g, dtype=DT)
    lin = ICMKernel(LinearKernel().to(DT), 3, task_covar=torch.eye(3, dtype=DT))
    _assert_same(ExactMultiTaskGP(X, Y, covar_module=lin), Xs, W, fast_expected=False)
    chained = ChainedOutcomeTransform(s=Standardize(m=3))
    _, _, kernel = _model("rbf", g)
    _assert_same(ExactMultiTaskGP(X, Y, covar_module=kernel, outcome_transform=chained), Xs, W,
                 fast_expected=False)
    warp = Normalize(2, bounds=torch.tensor([[3.0, 3.0], [5.0, 5.0]], dtype=DT), indices=[0])
    _assert_same(ExactMultiTaskGP(X, Y, covar_module=kernel, input_transform=warp), Xs, W,
                 fast_expected=False)


def test_predictor_in_float32_against_a_float64_reference():
    g = torch.Generator().manual_seed(4)
    X, Y, kernel = _model("scaled", g)
    m64 = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=0.5, outcome_transform=Standardize(m=3))
    m32 = ExactMultiTaskGP(X.float(), Y.float(), covar_module=copy.deepcopy(kernel).float(),
                           noise=0.5, outcome_transform=Standardize(m=3))
    assert m32.solver().dtype == torch.float32  # well conditioned: no float64 promotion
    Xs = 3.0 + 2.0 * torch.rand(6, 1, 2, generator=g, dtype=DT)
    W = torch.tensor([[1.0, 0.2], [0.0, -0.5], [0.0, 0.3]], dtype=DT)
    assert m32._projected_predictor(W.float()) is not None
    fast = m32.projected_task_posterior(Xs, W.float())  # float64 X: cast to the model's dtype
    assert all(v.dtype == torch.float32 for v in fast)
    ref = m64.projected_task_posterior(Xs, W)
    for a, b in zip(fast, ref, strict=True):  # |μ| ≈ 0.1–6: float32 round-off of the solve
        torch.testing.assert_close(a.double(), b, atol=5e-4, rtol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_predictor_on_cuda_follows_the_device():
    g = torch.Generator().manual_seed(7)
    X, Y, kernel = _model("scaled", g)
    dev = torch.device("cuda")
    model = ExactMultiTaskGP(X.to(dev), Y.to(dev), covar_module=kernel.to(dev),
                             outcome_transform=Standardize(m=3))
    Xs = (3.0 + 2.0 * torch.rand(4, 1, 2, generator=g, dtype=DT)).to(dev)
    W = torch.eye(3, dtype=DT, device=dev)
    _assert_same(model, Xs, W)
    mean, quad = model.projected_task_posterior(Xs, W)
    assert mean.device.type == "cuda" and quad.device.type == "cuda"
