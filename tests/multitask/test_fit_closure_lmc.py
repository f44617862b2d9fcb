"""The closed-form fit objective of a sum of separable kernels (LMC) and the fit on it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior, NormalPrior

from botorch_mtucb.kernels import ICMKernel, IndependentTasksKernel, SumOfSeparableKernel
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.multitask import fit_closure_lmc, practical_fit
from botorch_mtucb.multitask.fit_closure_lmc import (
    LMC_CLOSED_FORM_MAX_SIZE,
    LMC_NUMPY_MAX_SIZE,
    LMCFitObjective,
    lmc_fit_objective,
)
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import fit_practical_model, practical_mll
from tests.multitask.fit_helpers import perturb as _perturb
from tests.multitask.fit_helpers import reference as _reference

DT = torch.float64
#: ``LMC_NUMPY_MAX_SIZE`` that sends every CPU objective to one route of the Nn x Nn work.
ROUTES = {"numpy": 10**9, "torch": -1}


def _data(seed: int, N: int, d: int, n: int):
    """Smooth objectives with their own input dependence on the box [-1, 2]^d."""
    g = torch.Generator().manual_seed(seed)
    bounds = torch.tensor([[-1.0] * d, [2.0] * d], dtype=DT)
    X = -1.0 + 3.0 * torch.rand(N, d, generator=g, dtype=DT)
    W = torch.randn(d, n, generator=g, dtype=DT)
    Y = torch.sin(X @ W) + 0.5 * (X**2) @ torch.randn(d, n, generator=g, dtype=DT) + 1.0
    return X, Y + 0.05 * torch.randn(N, n, generator=g, dtype=DT), bounds


def _mixed_sum(X, Y, b):
    """Zero mean; a fixed-B ICM over a scaled isotropic Matérn-3/2 with an output-scale prior,
    a rank-one learned ICM over an ARD Matérn-5/2, and independent terms sharing one Matérn
    (the shared module's gradient accumulates over the tasks)."""
    d, n = X.shape[-1], Y.shape[-1]
    g = torch.Generator().manual_seed(3)
    A = torch.randn(n, n, generator=g, dtype=DT)
    fixed = ICMKernel(
        ScaleKernel(MaternKernel(nu=1.5), outputscale_prior=GammaPrior(2.0, 2.0)), n,
        task_covar=A @ A.T / n + 0.1 * torch.eye(n, dtype=DT),
    )
    learned = ICMKernel(
        MaternKernel(nu=2.5, ard_num_dims=d, lengthscale_prior=LogNormalPrior(0.0, 1.0)), n,
        rank=1,
    )
    shared = IndependentTasksKernel(MaternKernel(nu=2.5, ard_num_dims=d), num_tasks=n)
    kernel = SumOfSeparableKernel([fixed, SumOfSeparableKernel([learned, shared])])
    return ExactMultiTaskGP(X, Y, covar_module=kernel, learn_noise=True, noise=0.05).to(DT)


MODELS = {
    "per_task": lambda X, Y, b: practical_multitask_gp(X, Y, b, per_task=True, fit=False),
    "per_task-gamma-log-space": lambda X, Y, b: practical_multitask_gp(
        X, Y, b, per_task=True, fit=False, lengthscale_prior="gamma", log_space_priors=True),
    "independent": lambda X, Y, b: practical_multitask_gp(X, Y, b, independent=True, fit=False),
    "mixed-sum-zero-mean": _mixed_sum,
}


def _objective(kind: str, seed: int, N: int = 11, d: int = 3, n: int = 3, profile=False):
    X, Y, bounds = _data(seed, N, d, n)
    model = MODELS[kind](X, Y, bounds)
    _perturb(model, seed)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    objective = lmc_fit_objective(mll, profile_mean=profile)
    assert isinstance(objective, LMCFitObjective), kind
    return objective, mll, model


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_objective_equals_exact_marginal_log_likelihood(
    kind: str, seed: int, route: str, monkeypatch
) -> None:
    """Value and gradient equal GPyTorch's ExactMarginalLogLikelihood (BoTorch's closure,
    autograd) at random hyperparameters, on both routes of the Nn x Nn work."""
    monkeypatch.setattr(fit_closure_lmc, "LMC_NUMPY_MAX_SIZE", ROUTES[route])
    objective, mll, _ = _objective(kind, seed)
    assert (objective._xp is np) is (route == "numpy")
    value, grad = objective(objective.x0)
    ref_value, ref_grad, names = _reference(mll)
    assert objective.names == names
    assert abs(value - ref_value) < 1e-10 * max(1.0, abs(ref_value))
    np.testing.assert_allclose(grad, ref_grad, atol=1e-9, rtol=1e-8)


def test_gradient_matches_finite_differences() -> None:
    """An independent check of the closed-form gradient (central differences), away from x0."""
    objective, _, _ = _objective("per_task", 4, N=9, d=2, n=2)
    x0 = objective.x0 + 0.05 * np.random.default_rng(0).standard_normal(len(objective.x0))
    x0 = np.maximum(x0, objective.bounds[:, 0] + 1e-3)
    _, grad = objective(x0)
    h = 1e-6
    fd = np.array([
        (objective(x0 + h * e)[0] - objective(x0 - h * e)[0]) / (2 * h) for e in np.eye(len(x0))
    ])
    np.testing.assert_allclose(grad, fd, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("kind", ["per_task", "independent"])
def test_profiled_objective_is_the_minimum_over_the_constants(kind: str) -> None:
    """The profiled value is the full objective at c*, where the constants' gradient vanishes
    and the other gradients agree; any other constants give a larger value."""
    full, _, _ = _objective(kind, 2)
    profiled, _, model = _objective(kind, 2, profile=True)
    assert profiled.profiled and not full.profiled
    assert all("raw_constant" not in name for name in profiled.names)
    value, grad = profiled(profiled.x0)
    cstar = profiled._last[1]
    # the flat positions of the constants (scalars) among the full vector's entries
    sizes = [p.numel() for p in full._params]
    starts = np.cumsum([0] + sizes[:-1])
    const = np.array([s for s, name in zip(starts, full.names, strict=True)
                      if "raw_constant" in name])
    assert len(const) == len(cstar)
    x = full.x0.copy()
    x[const] = cstar
    full_value, full_grad = full(x)
    assert abs(value - full_value) < 1e-12
    np.testing.assert_allclose(full_grad[const], 0.0, atol=1e-10)
    kept = np.setdiff1d(np.arange(len(x)), const)
    np.testing.assert_allclose(grad, full_grad[kept], atol=1e-10, rtol=1e-9)
    for shift in (-0.1, 0.1):
        assert full(x + shift * np.isin(np.arange(len(x)), const))[0] > value
    profiled.write(profiled.x0)  # the constants become c*
    got = [float(m.constant.detach()) for m in model.mean_module.base_means]
    np.testing.assert_allclose(got, cstar, atol=0)


def test_unsupported_models_are_refused(monkeypatch) -> None:
    X, Y, bounds = _data(7, 10, 2, 2)
    cases = {
        "rbf": ExactMultiTaskGP(X, Y, covar_module=IndependentTasksKernel(
            [RBFKernel(), MaternKernel()]), learn_noise=True),
        "matern12": ExactMultiTaskGP(X, Y, covar_module=SumOfSeparableKernel([
            ICMKernel(MaternKernel(), 2, rank=2), ICMKernel(MaternKernel(nu=0.5), 2, rank=1)]),
            learn_noise=True),
        "task prior": ExactMultiTaskGP(X, Y, covar_module=SumOfSeparableKernel([
            ICMKernel(MaternKernel(), 2, rank=2, task_covar_prior=GammaPrior(2.0, 1.0)),
            IndependentTasksKernel([MaternKernel(), MaternKernel()])]), learn_noise=True),
        "known noise": practical_multitask_gp(X, Y, bounds, per_task=True, fit=False,
                                              train_Yvar=torch.full_like(Y, 0.01)),
    }
    normal = practical_multitask_gp(X, Y, bounds, per_task=True, fit=False)
    own = normal.covar_module.kernels[1].data_covar_modules[0]
    own.register_prior("outputscale_prior", NormalPrior(0.5, 1.0), "outputscale")
    cases["normal prior"] = normal
    for name, model in cases.items():
        model = model.to(DT)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        assert lmc_fit_objective(mll) is None, name
    model = practical_multitask_gp(X, Y, bounds, per_task=True, fit=False)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    assert lmc_fit_objective(mll) is not None
    monkeypatch.setattr(fit_closure_lmc, "LMC_CLOSED_FORM_MAX_SIZE", X.shape[0] * 2 - 1)
    assert lmc_fit_objective(mll) is None  # N·n above the limit: the autograd closure


def test_route_follows_the_constant(monkeypatch) -> None:
    """CPU data with N·n at most LMC_NUMPY_MAX_SIZE take the NumPy route, more the torch one."""
    assert LMC_NUMPY_MAX_SIZE < LMC_CLOSED_FORM_MAX_SIZE
    routes = {}
    for limit in (33, 32):  # N·n = 11·3 = 33
        monkeypatch.setattr(fit_closure_lmc, "LMC_NUMPY_MAX_SIZE", limit)
        routes[limit] = _objective("per_task", 0)[0]._xp
    assert routes[33] is np and routes[32] is torch


@pytest.mark.parametrize("kind", ["per_task", "independent"])
def test_fit_uses_the_closed_form_and_reaches_the_botorch_fit(kind: str, monkeypatch) -> None:
    """fit_practical_model fits the per-task and independent models on the closed form (no
    fallback to fit_gpytorch_mll), to a likelihood at least that of fit_gpytorch_mll with
    BoTorch's own closure from the same start, and a stationary point of it."""
    X, Y, bounds = _data(9, 16, 3, 2)
    reference = MODELS[kind](X, Y, bounds)
    model = MODELS[kind](X, Y, bounds)
    mll_ref = ExactMarginalLogLikelihood(reference.likelihood, reference)
    fit_gpytorch_mll(mll_ref)

    def refuse(*args, **kwargs):
        raise AssertionError("fell back to fit_gpytorch_mll")

    monkeypatch.setattr(practical_fit, "fit_gpytorch_mll", refuse)
    fit_practical_model(model)
    values = []
    for m in (reference, model):
        m.train()
        with torch.no_grad():
            values.append(float(practical_mll(ExactMarginalLogLikelihood(m.likelihood, m))))
    assert values[1] >= values[0] - 1e-4
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    objective = lmc_fit_objective(mll.train())
    _, grad = objective(objective.x0)
    free = (objective.x0 > objective.bounds[:, 0] + 1e-6)
    assert np.abs(grad[free]).max() < 1e-3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_objective_on_cuda_equals_cpu() -> None:
    X, Y, bounds = _data(1, 12, 3, 2)
    values = []
    for device in ("cpu", "cuda"):
        model = practical_multitask_gp(X.to(device), Y.to(device), bounds.to(device),
                                       per_task=True, fit=False)
        _perturb(model, 1)
        objective = lmc_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
        assert (objective._xp is torch) is (device == "cuda")
        values.append(objective(objective.x0))
    assert abs(values[0][0] - values[1][0]) < 1e-10
    np.testing.assert_allclose(values[0][1], values[1][1], atol=1e-9, rtol=1e-8)


def _independent_zero_mean(X, Y, b):
    """Zero mean, one scaled Matérn per task (no learned or fixed B: a block-diagonal Σ)."""
    d, n = X.shape[-1], Y.shape[-1]
    kernel = IndependentTasksKernel(
        [ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=d)) for _ in range(n)]
    )
    return ExactMultiTaskGP(X, Y, covar_module=kernel, learn_noise=True, noise=0.05).to(DT)


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("profile", [False, True])
def test_block_diagonal_route_equals_the_dense_one(route: str, profile: bool, monkeypatch):
    """Independent tasks take n Choleskys of N x N blocks; the value, gradient and profiled
    constants equal those of the dense Nn x Nn route and of GPyTorch's likelihood."""
    monkeypatch.setattr(fit_closure_lmc, "LMC_NUMPY_MAX_SIZE", ROUTES[route])
    X, Y, bounds = _data(5, 11, 3, 3)
    for build in (MODELS["independent"], _independent_zero_mean):
        model = build(X, Y, bounds)
        _perturb(model, 5)
        mll = ExactMarginalLogLikelihood(model.likelihood, model).train()
        objective = lmc_fit_objective(mll, profile_mean=profile)
        assert objective._block_diagonal
        value, grad = objective(objective.x0)
        c_blocks = objective._last[1].copy()
        objective._block_diagonal = False
        dense_value, dense_grad = objective(objective.x0)
        assert abs(value - dense_value) < 1e-11 * max(1.0, abs(dense_value))
        np.testing.assert_allclose(grad, dense_grad, atol=1e-10, rtol=1e-9)
        np.testing.assert_allclose(c_blocks, objective._last[1], atol=1e-10, rtol=1e-9)
        if not profile:
            ref_value, ref_grad, _ = _reference(mll)
            assert abs(value - ref_value) < 1e-10 * max(1.0, abs(ref_value))
            np.testing.assert_allclose(grad, ref_grad, atol=1e-9, rtol=1e-8)
    assert not _objective("per_task", 5)[0]._block_diagonal
