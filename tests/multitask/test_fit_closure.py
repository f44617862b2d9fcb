"""The closed-form ICM fit objective and the L-BFGS-B fit on it."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.optim.utils import get_parameters_and_bounds
from gpytorch.kernels import MaternKernel, RBFKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior, NormalPrior

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.linalg import icm_factor_cache, icm_likelihood_method
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.multitask import fit_closure
from botorch_mtucb.multitask.fit_closure import (
    CLOSED_FORM_MAX_POINTS,
    NUMPY_MAX_POINTS,
    ICMFitObjective,
    fit_icm_lbfgsb,
    icm_fit_objective,
)
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import fit_practical_model
from botorch_mtucb.multitask.solvers import exact as exact_solvers
from tests.multitask.fit_helpers import perturb as _perturb
from tests.multitask.fit_helpers import reference as _reference

DT = torch.float64
#: ``NUMPY_MAX_POINTS`` that sends every CPU objective to one route of the t x t work.
ROUTES = {"numpy": 10**9, "torch": -1}


def _data(seed: int, N: int, d: int, n: int):
    """Correlated smooth objectives on the box [-1, 2]^d."""
    g = torch.Generator().manual_seed(seed)
    bounds = torch.tensor([[-1.0] * d, [2.0] * d], dtype=DT)
    X = -1.0 + 3.0 * torch.rand(N, d, generator=g, dtype=DT)
    W = torch.randn(d, 2, generator=g, dtype=DT)
    Y = torch.sin(X @ W) @ torch.randn(2, n, generator=g, dtype=DT) + 2.0
    return X, Y + 0.05 * torch.randn(N, n, generator=g, dtype=DT), bounds


def _zero_mean_model(X, Y, nu: float, ard: bool) -> ExactMultiTaskGP:
    d, n = X.shape[-1], Y.shape[-1]
    k = MaternKernel(nu=nu, ard_num_dims=d if ard else None, lengthscale_prior=GammaPrior(3, 6))
    model = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(k, num_tasks=n, rank=n),
                             learn_noise=True, noise=0.05)
    return model.to(DT)


MODELS = {
    "practical": lambda X, Y, b: practical_multitask_gp(X, Y, b, fit=False),
    "gamma": lambda X, Y, b: practical_multitask_gp(X, Y, b, fit=False, lengthscale_prior="gamma"),
    "matern32-iso-zero-mean": lambda X, Y, b: _zero_mean_model(X, Y, 1.5, False),
    "matern52-ard-zero-mean": lambda X, Y, b: _zero_mean_model(X, Y, 2.5, True),
}


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_equals_exact_marginal_log_likelihood(kind: str, seed: int) -> None:
    """Value and gradient equal BoTorch's closure of ExactMarginalLogLikelihood (autograd
    through GPyTorch) at random hyperparameters, in BoTorch's parameter order."""
    n, d = 2 + seed % 2, 1 + seed
    X, Y, bounds = _data(seed, 9 + 4 * seed, d, n)
    model = MODELS[kind](X, Y, bounds)
    _perturb(model, seed)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    objective = icm_fit_objective(mll)
    assert objective is not None
    value, grad = objective(objective.x0)
    ref_value, ref_grad, names = _reference(mll)
    assert objective.names == names
    assert isinstance(value, float) and grad.dtype == np.float64 and grad.shape == ref_grad.shape
    assert abs(value - ref_value) < 1e-10 * max(1.0, abs(ref_value))
    np.testing.assert_allclose(grad, ref_grad, atol=1e-9, rtol=1e-8)
    assert objective.num_evaluations == 1


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("seed", [0, 1])
def test_cholesky_route_equals_exact_marginal_log_likelihood(kind: str, seed: int) -> None:
    """The n-Cholesky route of the same objective: value and gradient equal BoTorch's."""
    n, d = 2 + seed, 2
    X, Y, bounds = _data(20 + seed, 15, d, n)
    model = MODELS[kind](X, Y, bounds)
    _perturb(model, seed)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    objective = ICMFitObjective(mll, method="cholesky")
    value, grad = objective(objective.x0)
    ref_value, ref_grad, _ = _reference(mll)
    assert abs(value - ref_value) < 1e-10 * max(1.0, abs(ref_value))
    np.testing.assert_allclose(grad, ref_grad, atol=1e-9, rtol=1e-8)
    eigh_value, eigh_grad = ICMFitObjective(mll, method="eigh")(objective.x0)
    assert abs(value - eigh_value) < 1e-11 * max(1.0, abs(value))
    np.testing.assert_allclose(grad, eigh_grad, atol=1e-10, rtol=1e-9)
    with pytest.raises(ValueError, match="`method` must be None, 'eigh' or 'cholesky'"):
        ICMFitObjective(mll, method="lu")


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_larger_data_takes_the_cholesky_route_and_the_posterior_reuses_it(
    monkeypatch, route: str
) -> None:
    """Where the rule says "cholesky" (n = 2, t = 150) the fit factorises ξ_i K + ηI and the
    posterior takes those factors: no t x t factorisation after the fit (either route)."""
    monkeypatch.setattr(fit_closure, "NUMPY_MAX_POINTS", ROUTES[route])
    X, Y, bounds = _data(13, 150, 3, 2)
    assert icm_likelihood_method(2, 150) == "cholesky"
    # the posterior takes the fit's Cholesky factors above this size (eigh's predictor below)
    monkeypatch.setattr(exact_solvers, "POSTERIOR_EIGH_MAX_POINTS", 100)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    objective = icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
    assert objective is not None and objective._method == "cholesky"
    model = practical_multitask_gp(X, Y, bounds)
    fresh = copy.deepcopy(model)
    calls = []
    for name in ("eigh", "cholesky", "cholesky_ex"):
        original = getattr(torch.linalg, name)
        monkeypatch.setattr(torch.linalg, name, _recording(original, calls))
    Xs = torch.rand(4, 3, dtype=DT, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        post = model.posterior(Xs)
        assert 150 not in calls
        ref = fresh.posterior(Xs)
    assert 150 in calls
    torch.testing.assert_close(post.mean, ref.mean, atol=1e-9, rtol=0)
    torch.testing.assert_close(post.variance, ref.variance, atol=1e-9, rtol=0)


def _recording(function, calls: list):
    """``function`` that first records the size of its matrix argument."""

    def recorded(A, *args, **kwargs):
        calls.append(A.shape[-1])
        return function(A, *args, **kwargs)

    return recorded


def test_objective_away_from_the_start_and_frozen_parameters() -> None:
    """At another vector than x0 (softplus above its threshold included), and with a frozen
    parameter left out of θ, the objective still equals the reference."""
    X, Y, bounds = _data(5, 14, 3, 2)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    model.covar_module.covar_factor.requires_grad_(False)
    _perturb(model, 5)
    with torch.no_grad():
        model.covar_module.raw_var[0] = 21.5  # softplus is the identity above 20
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    objective = icm_fit_objective(mll)
    assert all("covar_factor" not in name for name in objective.names)
    x = objective.x0 + 0.1 * np.random.default_rng(0).standard_normal(len(objective.x0))
    x = np.maximum(x, objective.bounds[:, 0])
    value, grad = objective(x)
    objective.write(x)
    ref_value, ref_grad, _ = _reference(mll)
    assert abs(value - ref_value) < 1e-10
    np.testing.assert_allclose(grad, ref_grad, atol=1e-9, rtol=1e-8)


def test_gradient_matches_finite_differences() -> None:
    """An independent check of the closed-form gradient (central differences)."""
    X, Y, bounds = _data(6, 12, 2, 2)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    _perturb(model, 6)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    objective = icm_fit_objective(mll)
    x0 = objective.x0
    _, grad = objective(x0)
    h = 1e-6
    fd = np.array([
        (objective(x0 + h * e)[0] - objective(x0 - h * e)[0]) / (2 * h) for e in np.eye(len(x0))
    ])
    np.testing.assert_allclose(grad, fd, atol=1e-6, rtol=1e-5)


def test_unsupported_models_are_refused() -> None:
    X, Y, bounds = _data(7, 10, 2, 2)
    cases = {
        "independent": practical_multitask_gp(X, Y, bounds, independent=True, fit=False),
        "known noise": practical_multitask_gp(X, Y, bounds, train_Yvar=torch.full_like(Y, 0.01),
                                              fit=False),
        "fixed B": ExactMultiTaskGP(X, Y, covar_module=ICMKernel(MaternKernel(), 2,
                                    task_covar=torch.eye(2)), learn_noise=True),
        "rbf": ExactMultiTaskGP(X, Y, covar_module=ICMKernel(RBFKernel(), 2, rank=2),
                                learn_noise=True),
        "matern12": ExactMultiTaskGP(X, Y, covar_module=ICMKernel(MaternKernel(nu=0.5), 2),
                                     learn_noise=True),
        "task prior": ExactMultiTaskGP(X, Y, covar_module=ICMKernel(
            MaternKernel(), 2, rank=2, task_covar_prior=GammaPrior(2.0, 1.0)), learn_noise=True),
    }
    normal = practical_multitask_gp(X, Y, bounds, fit=False)
    normal.covar_module.data_covar_module.register_prior(
        "lengthscale_prior", NormalPrior(0.5, 1.0), "lengthscale")
    cases["normal prior"] = normal
    for name, model in cases.items():
        model = model.to(DT)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        assert icm_fit_objective(mll) is None, name


def test_large_data_is_left_to_the_likelihood_routes() -> None:
    X, Y, bounds = _data(8, CLOSED_FORM_MAX_POINTS, 1, 2)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    assert icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model)) is None


def test_fit_reaches_the_botorch_fit() -> None:
    """Same objective, start, bounds and optimiser: the same optimum as fit_gpytorch_mll with
    BoTorch's own closure, and a stationary point of ExactMarginalLogLikelihood."""
    X, Y, bounds = _data(9, 18, 2, 3)
    ours = practical_multitask_gp(X, Y, bounds, fit=False)
    ref = copy.deepcopy(ours)
    mll = ExactMarginalLogLikelihood(ours.likelihood, ours)
    mll.train()
    objective = icm_fit_objective(mll)
    assert fit_icm_lbfgsb(objective, {"maxcor": 20})
    fit_gpytorch_mll(ExactMarginalLogLikelihood(ref.likelihood, ref),
                     optimizer_kwargs={"options": {"maxcor": 20}})
    ours.train()
    value, grad, _ = _reference(mll)
    ref_mll = ExactMarginalLogLikelihood(ref.likelihood, ref)
    ref.train()
    ref_value, _, _ = _reference(ref_mll)
    assert abs(value - ref_value) < 1e-6
    free = (objective.bounds[:, 0] < np.concatenate(
        [p.detach().reshape(-1).numpy() for p in objective._params]) - 1e-8)
    assert np.abs(grad[free]).max() < 1e-3  # projected gradient of the bound-constrained fit
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        if "covar_factor" not in name:  # F is identified only up to an orthogonal factor
            torch.testing.assert_close(p, q, atol=5e-3, rtol=5e-2, msg=name)


def test_fit_stops_at_maxiter_and_is_accepted() -> None:
    X, Y, bounds = _data(10, 12, 2, 2)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    objective = icm_fit_objective(mll)
    before = objective(objective.x0)[0]
    assert fit_icm_lbfgsb(objective, {"maxiter": 2})
    mll.train()
    assert _reference(mll)[0] < before


def test_failed_fit_leaves_parameters_and_falls_back(monkeypatch) -> None:
    """A raising or failing L-BFGS-B leaves the model untouched; fit_practical_model then
    fits through fit_gpytorch_mll (its retries) and still reaches the optimum."""
    X, Y, bounds = _data(11, 12, 2, 2)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    start = [p.detach().clone() for p in model.parameters()]
    mll = ExactMarginalLogLikelihood(model.likelihood, model)

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(fit_closure, "minimize", boom)
    assert not fit_icm_lbfgsb(icm_fit_objective(mll))
    for p, q in zip(model.parameters(), start, strict=True):
        assert torch.equal(p, q)

    class Failed:
        success, fun, message = False, 0.0, "ABNORMAL_TERMINATION_IN_LNSRCH"
        x = np.zeros(0)

    monkeypatch.setattr(fit_closure, "minimize", lambda *a, **k: Failed())
    assert not fit_icm_lbfgsb(icm_fit_objective(mll))
    calls = []
    original = fit_closure.ICMFitObjective.__call__
    monkeypatch.setattr(fit_closure.ICMFitObjective, "__call__",
                        lambda self, x: calls.append(1) or original(self, x))
    fitted = fit_practical_model(model)  # falls back to fit_gpytorch_mll
    assert not fitted.training
    monkeypatch.undo()
    ref = fit_practical_model(practical_multitask_gp(X, Y, bounds, fit=False))
    value = _reference(ExactMarginalLogLikelihood(fitted.likelihood, fitted.train()))[0]
    ref_value = _reference(ExactMarginalLogLikelihood(ref.likelihood, ref.train()))[0]
    assert abs(value - ref_value) < 1e-6
    assert calls == []  # the failing minimiser never evaluated the objective


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_posterior_reuses_the_fits_last_eigendecomposition(monkeypatch, route: str) -> None:
    monkeypatch.setattr(fit_closure, "NUMPY_MAX_POINTS", ROUTES[route])
    X, Y, bounds = _data(12, 25, 2, 2)
    model = practical_multitask_gp(X, Y, bounds)  # closed-form fit
    fresh = copy.deepcopy(model)
    calls = []
    eigh = torch.linalg.eigh
    monkeypatch.setattr(torch.linalg, "eigh", lambda A: calls.append(A.shape[-1]) or eigh(A))
    Xs = torch.rand(4, 2, dtype=DT, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        post = model.posterior(Xs)
        assert 25 not in calls
        ref = fresh.posterior(Xs)
    assert 25 in calls
    torch.testing.assert_close(post.mean, ref.mean, atol=1e-9, rtol=0)
    torch.testing.assert_close(post.variance, ref.variance, atol=1e-9, rtol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_objective_and_fit_on_cuda_equal_cpu() -> None:
    X, Y, bounds = _data(13, 16, 2, 2)
    models = [practical_multitask_gp(X.to(dev), Y.to(dev), bounds.to(dev), fit=False)
              for dev in ("cpu", "cuda")]
    objectives = [icm_fit_objective(ExactMarginalLogLikelihood(m.likelihood, m))
                  for m in models]
    assert objectives[0]._xp is np and objectives[1]._xp is torch  # CUDA: the torch route
    (v0, g0), (v1, g1) = (o(objectives[0].x0) for o in objectives)
    assert abs(v0 - v1) < 1e-10
    np.testing.assert_allclose(g0, g1, atol=1e-9, rtol=1e-8)
    fitted = [fit_practical_model(m) for m in models]
    values = [_reference(ExactMarginalLogLikelihood(m.likelihood, m.train()))[0] for m in fitted]
    assert abs(values[0] - values[1]) < 1e-6


@pytest.mark.parametrize("method", ["eigh", "cholesky"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_profiled_objective_is_the_minimum_over_the_constants(method: str, seed: int) -> None:
    """The profiled objective at θ' equals the full objective at (θ', c*), whose gradient in
    c vanishes and whose other components are the profiled gradient; moving c off c* raises
    the full objective (a quadratic with its minimum at c*)."""
    n, d = 2 + seed % 2, 2 + seed
    X, Y, bounds = _data(40 + seed, 14 + 3 * seed, d, n)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    _perturb(model, seed)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    full = ICMFitObjective(mll, method=method)
    prof = ICMFitObjective(mll, method=method, profile_mean=True)
    assert prof.profiled and not full.profiled
    sizes = [p.numel() for p in full._params]
    starts = np.cumsum([0, *sizes])
    const = [int(starts[i]) for i, name in enumerate(full.names) if "raw_constant" in name]
    rest = [i for i in range(len(full.x0)) if i not in const]
    assert len(const) == n and prof.names == [m for m in full.names if "raw_constant" not in m]
    value, grad = prof(prof.x0)
    c_star = prof._last[2]
    x = full.x0.copy()
    x[const] = c_star
    full_value, full_grad = full(x)
    assert abs(value - full_value) < 1e-12 * max(1.0, abs(value))
    np.testing.assert_allclose(full_grad[const], 0.0, atol=1e-10)
    np.testing.assert_allclose(grad, full_grad[rest], atol=1e-10, rtol=1e-9)
    g = np.random.default_rng(seed)
    for _ in range(3):
        y = x.copy()
        y[const] += 0.1 * g.standard_normal(n)
        assert full(y)[0] > full_value
    # write() sets the constants to c*: the model's own likelihood is the profiled value
    prof.write(prof.x0)
    torch.testing.assert_close(
        torch.stack([m.constant for m in model.mean_module.base_means]).detach(),
        torch.as_tensor(c_star, dtype=DT),
    )
    assert abs(_reference(mll)[0] - value) < 1e-10 * max(1.0, abs(value))


def test_profiled_fit_reaches_the_full_fit() -> None:
    """Profiling c changes the L-BFGS-B path, not the optimum: the same MLL as the fit on the
    full vector (to 1e-6), over several data sets; zero-mean models are not profiled."""
    for seed in range(4):
        X, Y, bounds = _data(60 + seed, 30, 3, 2 + seed % 2)
        values = []
        for profile in (False, True):
            model = practical_multitask_gp(X, Y, bounds, fit=False)
            mll = ExactMarginalLogLikelihood(model.likelihood, model)
            mll.train()
            objective = icm_fit_objective(mll, profile_mean=profile)
            assert objective.profiled is profile
            assert fit_icm_lbfgsb(objective, {"maxcor": 20})
            mll.train()
            values.append(_reference(mll)[0])
        assert abs(values[0] - values[1]) < 1e-6, seed
    X, Y, bounds = _data(70, 12, 2, 2)
    model = _zero_mean_model(X, Y, 2.5, True)
    objective = icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model), True)
    assert objective is not None and not objective.profiled


def _sigma_parts(method: str, factors) -> list[torch.Tensor]:
    """What the stored factors mean, free of eigenvector signs: ``K`` (``eigh``: ``W diag(a)
    Wᵀ``) or ``ξ``, ``U diag(ξ) Uᵀ`` and the Cholesky factors ``L_i`` (``cholesky``)."""
    if method == "eigh":
        a, W = factors
        return [(W * a) @ W.T]
    xi, U, L = factors
    return [xi, (U * xi) @ U.T, L]


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("method", ["eigh", "cholesky"])
@pytest.mark.parametrize("profile", [False, True])
def test_numpy_route_equals_torch_route_and_the_reference(
    monkeypatch, kind: str, method: str, profile: bool
) -> None:
    """The NumPy route of the t x t work gives the torch route's value, gradient, ``c*`` and
    (as torch tensors on the data's device) factors, and BoTorch's closure of
    ExactMarginalLogLikelihood; profiled, at the constants ``c*`` that ``write`` sets (the
    reference's gradient in the constants vanishes there)."""
    X, Y, bounds = _data(80, 17, 2, 3)
    model = MODELS[kind](X, Y, bounds)
    _perturb(model, 3)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    runs = {}
    for route in ("torch", "numpy"):
        monkeypatch.setattr(fit_closure, "NUMPY_MAX_POINTS", ROUTES[route])
        objective = ICMFitObjective(mll, method=method, profile_mean=profile)
        assert (objective._xp is np) is (route == "numpy")
        assert objective.profiled is (profile and kind in ("gamma", "practical"))
        runs[route] = (*objective(objective.x0), objective)
    value, grad, objective = runs["numpy"]
    t_value, t_grad, t_objective = runs["torch"]
    assert isinstance(value, float) and grad.dtype == np.float64
    assert abs(value - t_value) < 1e-12 * max(1.0, abs(value))
    np.testing.assert_allclose(grad, t_grad, atol=1e-11, rtol=1e-10)
    np.testing.assert_allclose(objective._last[2], t_objective._last[2], atol=1e-12, rtol=1e-11)
    for ours, ref in zip(_sigma_parts(method, [torch.as_tensor(f) for f in objective._last[1]]),
                         _sigma_parts(method, t_objective._last[1]), strict=True):
        torch.testing.assert_close(ours, ref, atol=1e-11, rtol=1e-10)
    objective.write(objective.x0)  # profiled: the constants become c*
    cache = icm_factor_cache(model)
    assert cache.method == method
    assert all(isinstance(f, torch.Tensor) and f.dtype == DT and f.device == X.device
               for f in cache.factors)
    for ours, ref in zip(_sigma_parts(method, cache.factors),
                         _sigma_parts(method, t_objective._last[1]), strict=True):
        torch.testing.assert_close(ours, ref, atol=1e-11, rtol=1e-10)
    ref_value, ref_grad, names = _reference(mll)
    params = dict(get_parameters_and_bounds(mll)[0])
    kept = np.concatenate([np.full(params[name].numel(), name in objective.names)
                           for name in names])
    assert abs(value - ref_value) < 1e-10 * max(1.0, abs(ref_value))
    np.testing.assert_allclose(grad, ref_grad[kept], atol=1e-9, rtol=1e-8)
    np.testing.assert_allclose(ref_grad[~kept], 0.0, atol=1e-9)


def test_route_follows_the_constant(monkeypatch) -> None:
    """CPU data with at most NUMPY_MAX_POINTS points take the NumPy route, more the torch one;
    both fit to the same optimum."""
    X, Y, bounds = _data(81, 12, 2, 2)
    assert NUMPY_MAX_POINTS >= 12

    def route(limit: int):
        monkeypatch.setattr(fit_closure, "NUMPY_MAX_POINTS", limit)
        model = practical_multitask_gp(X, Y, bounds, fit=False)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        objective = icm_fit_objective(mll, profile_mean=True)
        assert fit_icm_lbfgsb(objective)
        return objective._xp, _reference(mll.train())[0]

    (xp_default, v_default), (xp_at, v_at), (xp_below, v_below) = (
        route(limit) for limit in (NUMPY_MAX_POINTS, 12, 11)
    )
    assert xp_default is np and xp_at is np and xp_below is torch
    assert abs(v_at - v_below) < 1e-6 and v_default == v_at
