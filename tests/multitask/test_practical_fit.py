"""Tests of the lean likelihood closure and warm-started refits of the practical model."""

from __future__ import annotations

import warnings

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.linalg.icm_likelihood import use_icm_likelihood
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory, practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import (
    copy_hyperparameters,
    fit_practical_model,
    practical_mll,
    practical_mll_closure,
)

DT = torch.float64


def _data(seed: int, N: int, d: int, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Correlated smooth objectives on a box [-1, 2]^d: n mixtures of 2 random sine latents."""
    g = torch.Generator().manual_seed(seed)
    bounds = torch.tensor([[-1.0] * d, [2.0] * d], dtype=DT)
    X = -1.0 + 3.0 * torch.rand(N, d, generator=g, dtype=DT)
    W = torch.randn(d, 2, generator=g, dtype=DT)
    latents = torch.sin(X @ W + torch.randn(2, generator=g, dtype=DT))
    Y = latents @ torch.randn(2, n, generator=g, dtype=DT) + 3.0
    Y = Y + 0.05 * torch.randn(N, n, generator=g, dtype=DT)
    return X, Y, bounds


def _perturb(model, seed: int) -> None:
    """Random valid hyperparameters (the lengthscale is bounded below, untransformed)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            z = torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.mul_(torch.exp(0.4 * z)) if "lengthscale" in name else p.add_(0.4 * z)


def _gpytorch_mll(mll):
    model = mll.model
    return mll(model(*model.train_inputs), model.train_targets)


def _mll_value(model) -> float:
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    with torch.no_grad():
        value = float(_gpytorch_mll(mll))
    mll.eval()
    return value


@pytest.mark.parametrize("independent", [False, True])
@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_practical_mll_equals_gpytorch(independent: bool, generic: bool, seed: int) -> None:
    """Value and gradient equal ExactMarginalLogLikelihood's, with GPyTorch's ICM fast path
    on or off (off: its dense Cholesky path, an independent reference for the eigh path)."""
    n, d = 2 + seed, 1 + seed
    X, Y, bounds = _data(seed, 8 + 5 * seed, d, n)
    model = practical_multitask_gp(X, Y, bounds, independent, fit=False)
    _perturb(model, seed)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    params = [p for p in model.parameters() if p.requires_grad]
    ours = practical_mll(mll)
    g_ours = torch.autograd.grad(ours, params)
    with use_icm_likelihood(not generic):
        ref = _gpytorch_mll(mll)
    g_ref = torch.autograd.grad(ref, params)
    assert ours.dtype == DT and ours.shape == ()
    assert abs(float((ours - ref).detach())) < 1e-10
    for a, b in zip(g_ours, g_ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_closure_matches_botorch_closure_and_order() -> None:
    """The closure's (loss, grads) equal BoTorch's default closure of the same mll."""
    from botorch.optim.closures import get_loss_closure_with_grads
    from botorch.optim.utils import get_parameters_and_bounds

    X, Y, bounds = _data(3, 12, 2, 3)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    _perturb(model, 3)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    ours = practical_mll_closure(mll)
    params = {k: p for k, p in get_parameters_and_bounds(mll)[0].items() if p.requires_grad}
    ref = get_loss_closure_with_grads(mll, parameters=params)
    (v1, g1), (v2, g2) = ours(), ref()
    assert list(ours.parameters) == list(params)
    assert abs(float((v1 - v2).detach())) < 1e-10
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_closure_refuses_unsupported_models() -> None:
    X, Y, bounds = _data(4, 10, 2, 2)
    known = practical_multitask_gp(X, Y, bounds, train_Yvar=torch.full_like(Y, 0.01), fit=False)
    mll = ExactMarginalLogLikelihood(known.likelihood, known)
    assert practical_mll_closure(mll) is None
    with pytest.raises(ValueError, match="homoscedastic learned noise"):
        practical_mll(mll)


@pytest.mark.parametrize("seed", [5, 6])
def test_lean_fit_reaches_the_default_fit(seed: int) -> None:
    """Same objective, same optimiser: the default fit (closed-form objective), the fit
    through the lean autograd closure and BoTorch's default fit reach the same MLL."""
    X, Y, bounds = _data(seed, 15, 2, 3)
    closed = fit_practical_model(practical_multitask_gp(X, Y, bounds, fit=False))
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    closure = practical_mll_closure(ExactMarginalLogLikelihood(model.likelihood, model))
    lean = fit_practical_model(model, fit_kwargs={"closure": closure})
    ref = fit_practical_model(practical_multitask_gp(X, Y, bounds, fit=False), lean=False)
    assert abs(_mll_value(closed) - _mll_value(ref)) < 1e-6
    assert abs(_mll_value(lean) - _mll_value(ref)) < 1e-6
    assert not closed.training and not lean.training


@pytest.mark.slow
@pytest.mark.parametrize("independent", [False, True])
def test_warm_start_reaches_cold_fit(independent: bool) -> None:
    """Warm-started from the previous round's fit, the refit on more data reaches the cold
    fit's MLL (random correlated problems, a sequence of refits as in a BO loop), and a
    warm start never ends below its own starting point."""
    gaps = []
    for seed in range(4):
        X, Y, bounds = _data(10 + seed, 22, 2, 3)
        factory = WarmStartPracticalFactory(bounds, independent)
        for N in (8, 11, 14, 17, 20):
            start = None if factory._previous is None else _start_value(factory, X[:N], Y[:N])
            warm = factory(X[:N], Y[:N])
            cold = practical_multitask_gp(X[:N], Y[:N], bounds, independent)
            value = _mll_value(warm)
            if start is not None:
                assert value >= start - 1e-9
            gaps.append(value - _mll_value(cold))
    gaps = torch.tensor(gaps)
    assert factory.num_fits == 5
    # a warm start may end in another local optimum than the cold start (better or worse):
    # mostly the same optimum, not worse on average, never much worse
    assert (gaps.abs() < 1e-4).double().mean() >= 0.75, gaps
    assert gaps.mean() > -1e-3 and gaps.min() > -1e-2, gaps


def _start_value(factory: WarmStartPracticalFactory, X, Y) -> float:
    model = practical_multitask_gp(X, Y, factory.bounds, factory.independent, fit=False)
    copy_hyperparameters(factory._previous, model)
    return _mll_value(model)


def test_copy_hyperparameters_leaves_buffers() -> None:
    X, Y, bounds = _data(6, 14, 2, 2)
    src = practical_multitask_gp(X[:10], Y[:10], bounds)
    dst = practical_multitask_gp(X, Y, bounds, fit=False)
    means = dst.outcome_transform.means.clone()
    assert copy_hyperparameters(src, dst) == len(list(dst.parameters()))
    for (k, p), (_, q) in zip(src.named_parameters(), dst.named_parameters(), strict=True):
        assert torch.equal(p, q), k
    torch.testing.assert_close(dst.outcome_transform.means, means, atol=0, rtol=0)


def test_factory_first_fit_is_cold_and_inputs_untouched() -> None:
    X, Y, bounds = _data(7, 12, 2, 2)
    X0, Y0 = X.clone(), Y.clone()
    model = WarmStartPracticalFactory(bounds)(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = practical_multitask_gp(X, Y, bounds)
    assert abs(_mll_value(model) - _mll_value(ref)) < 1e-6
    assert torch.equal(X, X0) and torch.equal(Y, Y0)
    assert model.train_inputs[0].dtype == DT


def test_factory_cold_mode_matches_practical_every_call() -> None:
    X, Y, bounds = _data(8, 16, 2, 2)
    factory = WarmStartPracticalFactory(bounds, warm=False)
    factory(X[:10], Y[:10])
    second = factory(X, Y)
    assert abs(_mll_value(second) - _mll_value(practical_multitask_gp(X, Y, bounds))) < 1e-6


def test_factory_validates_bounds() -> None:
    with pytest.raises(ValueError):
        WarmStartPracticalFactory(torch.zeros(2, 2, dtype=DT))
    assert fit_gpytorch_mll is not None


def test_lbfgs_memory_is_passed_and_bounded(monkeypatch) -> None:
    from botorch_mtucb.multitask import practical_fit

    assert [practical_fit.lbfgs_memory(k) for k in (3, 22, 500)] == [10, 22, 100]
    seen = []

    def spy(mll, **kwargs):
        seen.append(kwargs)
        return mll.eval()

    closed = []

    def closed_spy(objective, options=None):
        closed.append(options)
        return True

    monkeypatch.setattr(practical_fit, "fit_gpytorch_mll", spy)
    monkeypatch.setattr(practical_fit, "fit_icm_lbfgsb", closed_spy)
    X, Y, bounds = _data(9, 10, 3, 4)
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    fit_practical_model(model)  # the closed-form fit gets the same options
    size = sum(p.numel() for p in model.parameters())  # 3 + 16 + 4 + 4 + 1
    assert size == 28 and closed == [{"maxcor": 28}] and seen == []
    fit_practical_model(model, fit_kwargs={"optimizer_kwargs": {"options": {"maxiter": 5}}})
    assert closed[1] == {"maxiter": 5}
    fit_practical_model(model, lean=False)  # BoTorch's path
    assert seen[0]["optimizer_kwargs"] == {"options": {"maxcor": 28}}
    fit_practical_model(model, lean=False,
                        fit_kwargs={"optimizer_kwargs": {"options": {"maxiter": 5}}})
    assert seen[1]["optimizer_kwargs"] == {"options": {"maxiter": 5}} and len(closed) == 2
