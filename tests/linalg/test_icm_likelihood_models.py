"""The ICM likelihood on the user path: ExactMarginalLogLikelihood on ExactMultiTaskGP."""

import copy
import math

import gpytorch
import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms import Normalize, Standardize
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from gpytorch.likelihoods import MultitaskGaussianLikelihood
from gpytorch.means import ConstantMean
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.kernels import (
    ICMKernel,
    IndependentTasksKernel,
    SumOfSeparableKernel,
    TaskSimilarityKernel,
)
from botorch_mtucb.linalg import (
    ICMAddedDiagLinearOperator,
    ICMMultitaskMultivariateNormal,
    use_icm_likelihood,
)
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import practical_mll_closure
from botorch_mtucb.multitask.solvers import exact as exact_solvers
from botorch_mtucb.multitask.solvers.exact import ICMCholeskySolver, ICMSolver

DT = torch.float64


def _data(t: int, n: int, d: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = 3.0 * torch.rand(t, d, generator=g, dtype=DT) - 1.0
    base = torch.sin(3 * X).sum(-1, keepdim=True)
    noise = 0.3 * torch.randn(t, n, generator=g, dtype=DT)
    Y = base * torch.linspace(0.5, 1.5, n, dtype=DT) + noise
    return X, 2.0 + 4.0 * Y


def _model(name: str, X, Y, seed: int = 0) -> ExactMultiTaskGP:
    n, d = Y.shape[-1], X.shape[-1]
    kw = {"learn_noise": True, "noise": 0.2}
    if name == "icm_rank1":
        kern = ICMKernel(RBFKernel(ard_num_dims=d), n, rank=1)
        model = ExactMultiTaskGP(X, Y, covar_module=kern, **kw)
    elif name == "default_transforms":  # BoTorch prior on lengthscales, full-rank B
        model = ExactMultiTaskGP(
            X, Y, input_transform=Normalize(d=d), outcome_transform=Standardize(m=n), **kw
        )
    elif name == "similarity_scale":
        kern = TaskSimilarityKernel(ScaleKernel(MaternKernel(nu=2.5)), n, learn_omega=True)
        model = ExactMultiTaskGP(X, Y, covar_module=kern, **kw)
    elif name == "mean_rank2":
        kern = ICMKernel(RBFKernel(), n, rank=min(2, n))
        model = ExactMultiTaskGP(
            X, Y, covar_module=kern, mean_module=ConstantMean(),
            outcome_transform=Standardize(m=n), **kw,
        )
    elif name == "independent_shared":
        model = ExactMultiTaskGP(X, Y, covar_module=IndependentTasksKernel(RBFKernel(), n), **kw)
    else:
        raise ValueError(name)
    model.to(DT)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # move every hyperparameter away from its default
        for key, p in model.named_parameters():
            step = 0.3 * torch.randn(p.shape, generator=g, dtype=DT)
            p.mul_(step.exp()) if "lengthscale" in key else p.add_(step)  # BoTorch's: no transform
    return model


MODELS = ["icm_rank1", "default_transforms", "similarity_scale", "mean_rank2", "independent_shared"]


def _mll_and_grads(model, enabled: bool, lazy: bool = True):
    model.train()
    model.zero_grad()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with use_icm_likelihood(enabled), gpytorch.settings.lazily_evaluate_kernels(lazy):
        with gpytorch.settings.max_cholesky_size(10**6):
            value = mll(model(*model.train_inputs), model.train_targets)
    value.backward()
    grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad}
    return value.detach(), grads


def _by_hand_log_prob(model) -> torch.Tensor:
    """log N(vec Y; μ, K ⊗ B + ηI) with torch.distributions on the dense matrix."""
    model.train()
    Xt = model.transform_inputs(model.train_inputs[0])
    k, B = model.covar_module.icm_components()
    K = k(Xt).to_dense()
    t, n = model.train_targets.shape
    cov = torch.kron(K, B) + model.likelihood.noise * torch.eye(t * n, dtype=DT)
    mean = model.mean_module(Xt).reshape(-1)
    mvn = torch.distributions.MultivariateNormal(mean, cov)
    return mvn.log_prob(model.train_targets.reshape(-1))


@pytest.mark.parametrize("name", MODELS)
def test_mll_value_and_gradients_match_dense_path(name):
    X, Y = _data(15, 3, seed=1)
    model = _model(name, X, Y)
    # the likelihood's marginal is our operator
    marginal = model.likelihood(model(*model.train_inputs))
    assert isinstance(marginal, ICMMultitaskMultivariateNormal)
    assert isinstance(marginal.lazy_covariance_matrix, ICMAddedDiagLinearOperator)
    fast, g_fast = _mll_and_grads(model, True)
    dense, g_dense = _mll_and_grads(model, False)
    torch.testing.assert_close(fast, dense, rtol=1e-10, atol=0.0)
    assert set(g_fast) == set(g_dense) and "likelihood.raw_noise" in g_fast
    for key in g_fast:
        torch.testing.assert_close(g_fast[key], g_dense[key], rtol=1e-7, atol=1e-10, msg=key)
    # and the log density equals the dense Gaussian by hand
    with torch.no_grad():
        ours = model.likelihood(model(*model.train_inputs)).log_prob(model.train_targets)
    torch.testing.assert_close(ours, _by_hand_log_prob(model).detach(), rtol=1e-10, atol=0.0)


@pytest.mark.parametrize("t,n", [(100, 9), (50, 20)])  # nt = 900 and 1000 > 800
def test_mll_above_max_cholesky_size(t, n):
    X, Y = _data(t, n, seed=2)
    model = _model("default_transforms", X, Y, seed=3)
    fast, g_fast = _mll_and_grads(model, True)
    dense, g_dense = _mll_and_grads(model, False)
    torch.testing.assert_close(fast, dense, rtol=1e-9, atol=0.0)
    for key in g_fast:
        torch.testing.assert_close(g_fast[key], g_dense[key], rtol=1e-6, atol=1e-9, msg=key)
    # with GPyTorch's default (iterative above 800) settings the value is still exact
    model.zero_grad()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    gp_defaults = gpytorch.settings.fast_computations(log_prob=True)
    with gp_defaults, gpytorch.settings.max_cholesky_size(800):
        value = mll(model(*model.train_inputs), model.train_targets)
    torch.testing.assert_close(value.detach(), dense, rtol=1e-9, atol=0.0)


@pytest.mark.parametrize("lazy", [True, False])
def test_fast_path_never_factors_the_nt_matrix(lazy, monkeypatch):
    X, Y = _data(30, 4, seed=4)
    model = _model("mean_rank2", X, Y)
    expected, _ = _mll_and_grads(model, False, lazy)

    def _forbidden(*args, **kwargs):
        raise AssertionError("a Cholesky factor was computed on the ICM fast path")

    monkeypatch.setattr(torch.linalg, "cholesky_ex", _forbidden)
    monkeypatch.setattr(torch.linalg, "cholesky", _forbidden)
    value, grads = _mll_and_grads(model, True, lazy)
    torch.testing.assert_close(value, expected, rtol=1e-10, atol=0.0)
    assert all(torch.isfinite(g).all() for g in grads.values())


def test_non_icm_kernels_and_task_noise_keep_generic_path():
    X, Y = _data(12, 3, seed=5)
    n = 3
    kern = SumOfSeparableKernel(
        [ICMKernel(RBFKernel(), n, rank=1), ICMKernel(MaternKernel(), n, rank=1)]
    )
    model = ExactMultiTaskGP(X, Y, covar_module=kern, learn_noise=True).to(DT)
    model.train()
    marginal = model.likelihood(model(X))
    assert not isinstance(marginal.lazy_covariance_matrix, ICMAddedDiagLinearOperator)
    comps = kern.separable_components()
    dense = sum(torch.kron(k(X).to_dense(), B) for k, B in comps)
    cov = dense + model.likelihood.noise * torch.eye(12 * n, dtype=DT)
    ref = torch.distributions.MultivariateNormal(torch.zeros(12 * n, dtype=DT), cov)
    torch.testing.assert_close(
        marginal.log_prob(Y).detach(), ref.log_prob(Y.reshape(-1)).detach(), rtol=1e-10, atol=0.0
    )
    # task-specific noise: heteroscedastic across tasks, not a constant diagonal
    icm = ICMKernel(RBFKernel(), n, rank=2).to(DT)
    lik = MultitaskGaussianLikelihood(num_tasks=n, has_task_noise=True).to(DT)
    with torch.no_grad():
        lik.raw_task_noises.copy_(torch.tensor([-2.0, 0.0, 1.0]))
    prior = ICMMultitaskMultivariateNormal(torch.zeros(12, n, dtype=DT), icm(X))
    marg = lik(prior)
    assert not isinstance(marg.lazy_covariance_matrix, ICMAddedDiagLinearOperator)
    noise = torch.kron(torch.eye(12, dtype=DT), torch.diag(lik.task_noises))
    noise = noise + lik.noise * torch.eye(12 * n, dtype=DT)
    cov = torch.kron(icm.data_covar_module(X).to_dense(), icm.task_covar_matrix) + noise
    ref = torch.distributions.MultivariateNormal(torch.zeros(12 * n, dtype=DT), cov)
    torch.testing.assert_close(
        marg.log_prob(Y).detach(), ref.log_prob(Y.reshape(-1)).detach(), rtol=1e-10, atol=0.0
    )


def test_batched_model_inputs_and_float32():
    X, Y = _data(10, 2, seed=6)
    model = _model("icm_rank1", X, Y)
    model.train()
    k, B = model.covar_module.icm_components()
    Xb = torch.stack([X, X.flip(0)])
    Yb = torch.stack([model.train_targets, model.train_targets.flip(0)])
    marg = model.likelihood(ICMMultitaskMultivariateNormal(
        model.mean_module(Xb), model.covar_module(Xb)
    ))
    assert isinstance(marg.lazy_covariance_matrix, ICMAddedDiagLinearOperator)
    lp = marg.log_prob(Yb)
    assert lp.shape == (2,)
    for i in range(2):
        cov = torch.kron(k(Xb[i]).to_dense(), B) + model.likelihood.noise * torch.eye(20, dtype=DT)
        ref = torch.distributions.MultivariateNormal(torch.zeros(20, dtype=DT), cov)
        torch.testing.assert_close(lp[i], ref.log_prob(Yb[i].reshape(-1)), rtol=1e-10, atol=0.0)
    # float32 model: same value to float32 precision, float32 result and gradients
    m32 = _model("icm_rank1", X.float(), Y.float())
    m32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    m32.float()
    v32, g32 = _mll_and_grads(m32, True)
    v64, g64 = _mll_and_grads(model, True)
    assert v32.dtype == torch.float32 and all(g.dtype == torch.float32 for g in g32.values())
    torch.testing.assert_close(v32.double(), v64, rtol=1e-5, atol=0.0)
    for key in g64:
        torch.testing.assert_close(g32[key].double(), g64[key], rtol=1e-3, atol=1e-4, msg=key)


def test_eval_mode_prediction_still_matches_the_dense_formula():
    """GPyTorch's prediction strategy (model(X) in eval mode) on the new operators."""
    X, Y = _data(12, 3, seed=7)
    model = _model("mean_rank2", X, Y)
    model.eval()
    Xs = torch.rand(4, 2, dtype=DT)
    with torch.no_grad(), gpytorch.settings.fast_pred_var(False):
        pred = model(Xs)
        k, B = model.covar_module.icm_components()
        Xt = model.train_inputs[0]
        cov = torch.kron(k(Xt).to_dense(), B) + model.noise * torch.eye(36, dtype=DT)
        cross = torch.kron(k(Xs, Xt).to_dense(), B)
        resid = (model.train_targets - model.mean_module(Xt)).reshape(-1)
        mean = model.mean_module(Xs).reshape(-1) + cross @ torch.linalg.solve(cov, resid)
        var = torch.kron(k(Xs).to_dense(), B) - cross @ torch.linalg.solve(cov, cross.T)
    torch.testing.assert_close(pred.mean.reshape(-1), mean, rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(pred.covariance_matrix, var, rtol=1e-6, atol=1e-8)


def test_fit_reaches_the_dense_optimum():
    X, Y = _data(20, 3, seed=8)
    fits = {}
    for enabled in (True, False):
        torch.manual_seed(0)
        model = _model("default_transforms", X, Y, seed=9)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with use_icm_likelihood(enabled):
            fit_gpytorch_mll(mll)
            value, _ = _mll_and_grads(model, enabled)
        fits[enabled] = (value, model.covar_module.task_covar_matrix.detach(), model.noise.detach())
    (v1, B1, e1), (v0, B0, e0) = fits[True], fits[False]
    assert math.isfinite(v1.item())
    torch.testing.assert_close(v1, v0, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(B1, B0, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(e1, e0, rtol=2e-2, atol=1e-4)


@pytest.mark.parametrize("t,n,route", [(120, 2, "cholesky"), (30, 2, "eigh"), (40, 6, "eigh")])
def test_posterior_reuses_the_last_fit_factorisation(t, n, route, monkeypatch):
    """After a fit through ``practical_mll_closure`` the posterior factorises nothing t x t and
    equals the posterior of a model that factorises from scratch."""
    X, Y = _data(t, n, seed=3)
    # the posterior takes a fit's Cholesky factors above this size (eigh's predictor below)
    monkeypatch.setattr(exact_solvers, "POSTERIOR_EIGH_MAX_POINTS", 100)
    bounds = torch.tensor([[-1.0, -1.0], [2.0, 2.0]], dtype=DT)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll, closure=practical_mll_closure(mll),
                     optimizer_kwargs={"options": {"maxiter": 5}})
    model.eval()
    fresh = copy.deepcopy(model)  # same hyperparameters, no stored factors
    calls = []
    eigh, chol, chol_ex = torch.linalg.eigh, torch.linalg.cholesky, torch.linalg.cholesky_ex
    monkeypatch.setattr(torch.linalg, "eigh", lambda A: calls.append(A.shape[-1]) or eigh(A))
    monkeypatch.setattr(torch.linalg, "cholesky",
                        lambda A, **kw: calls.append(A.shape[-1]) or chol(A, **kw))
    monkeypatch.setattr(torch.linalg, "cholesky_ex",
                        lambda A, **kw: calls.append(A.shape[-1]) or chol_ex(A, **kw))
    Xs = torch.rand(5, 2, generator=torch.Generator().manual_seed(9), dtype=DT)
    with torch.no_grad():
        post = model.posterior(Xs)
    solver = model.solver()
    assert t not in calls, "the posterior factorised K again"
    assert isinstance(solver, ICMCholeskySolver if route == "cholesky" else ICMSolver)
    with torch.no_grad():
        ref = fresh.posterior(Xs)
    assert t in calls  # the fresh model does factorise (the counter works)
    assert torch.allclose(post.mean, ref.mean, atol=1e-9)
    assert torch.allclose(post.variance, ref.variance, atol=1e-9)
