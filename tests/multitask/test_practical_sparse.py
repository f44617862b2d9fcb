"""The practical sparse model: capped dictionary, subset fit, factory switch, loop."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.test_functions.multi_objective import BraninCurrin

from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.scalarization import LinearScalarization
from botorch_mtucb.loop import run_bo_loop
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP, practical_multitask_gp
from botorch_mtucb.multitask.nystrom import capped_oversampling
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
from botorch_mtucb.multitask.practical_sparse import practical_sparse_multitask_gp


def _data(N: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    bounds = torch.tensor([[-5.0, 0.0], [10.0, 15.0]], dtype=torch.float64)
    X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(N, 2, generator=g, dtype=torch.float64)
    U = (X - bounds[0]) / (bounds[1] - bounds[0])
    f = torch.sin(6 * U).sum(-1, keepdim=True)
    Y = torch.cat([50 * f + 3.0, -2 * f + U[:, :1] ** 2], dim=-1)
    return X, Y + 0.05 * torch.randn(Y.shape, generator=g, dtype=torch.float64), bounds


def _matern52(A, B, lengthscale):
    """Matérn-5/2 written out: (1 + √5 r + 5r²/3) exp(−√5 r), r the ARD distance."""
    r = ((A[:, None, :] - B[None, :, :]) / lengthscale).pow(2).sum(-1).clamp_min(0).sqrt()
    s = math.sqrt(5.0) * r
    return (1 + s + s**2 / 3) * torch.exp(-s)


def _brute_force_dtc(model, X, Y, bounds, Xs, dictionary):
    """Dense DTC posterior in original units: Q = k(·, D) K_DD⁻¹ k(D, ·) ⊗ B,
    mean μ + Q_*X (Q_XX + ηI)⁻¹ r, covariance Γ_** − Q_*X (Q_XX + ηI)⁻¹ Q_X*."""
    kern = model.covar_module
    ls = kern.data_covar_module.lengthscale.detach().reshape(-1)
    B = kern.task_covar_matrix.detach()
    eta = model.likelihood.noise.detach().reshape(())
    mu = torch.stack([m.constant.detach().reshape(()) for m in model.mean_module.base_means])
    U, Us = (X - bounds[0]) / (bounds[1] - bounds[0]), (Xs - bounds[0]) / (bounds[1] - bounds[0])
    ym, ys = Y.mean(0), Y.std(0)
    Z = (Y - ym) / ys
    D = U[dictionary]
    Kdd_inv = torch.linalg.inv(_matern52(D, D, ls))

    def q(A, C):
        return _matern52(A, D, ls) @ Kdd_inv @ _matern52(D, C, ls)

    n = Y.shape[-1]
    QXX = torch.kron(q(U, U), B) + eta * torch.eye(len(X) * n, dtype=X.dtype)
    QsX = torch.kron(q(Us, U), B)
    resid = (Z - mu).reshape(-1)
    mean = (mu + (QsX @ torch.linalg.solve(QXX, resid)).reshape(len(Xs), n)) * ys + ym
    cov = torch.kron(_matern52(Us, Us, ls), B) - QsX @ torch.linalg.solve(QXX, QsX.T)
    scale = ys.repeat(len(Xs))
    return mean, cov * scale[:, None] * scale[None, :]


# ---------------------------------------------------------------- the cap
def _expected_size(v, q):
    return (q * v).clamp(max=1.0).sum()


@pytest.mark.parametrize("seed", range(5))
def test_capped_oversampling_matches_bisection(seed):
    g = torch.Generator().manual_seed(seed)
    v = torch.rand(60, generator=g, dtype=torch.float64) ** 4
    v[:5] = 0.0
    for m in (1, 7, 30, 54):
        q = capped_oversampling(v, math.inf, m)
        lo, hi = -50.0, 50.0  # bisection on log q, independent of the sort formula
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if _expected_size(v, math.exp(mid)) < m else (lo, mid)
        assert float(q) == pytest.approx(math.exp(hi), rel=1e-9)
        assert float(_expected_size(v, q)) == pytest.approx(m, rel=1e-9)
    # a small q, or a cap above the number of positive variances, leaves q unchanged
    assert float(capped_oversampling(v, 0.5, 30)) == 0.5
    q_55 = float(capped_oversampling(v, math.inf, 55))  # all 55 positive ones saturated
    assert q_55 == pytest.approx(1 / float(v[v > 0].min()))
    assert float(capped_oversampling(v, 1e8, 56)) == 1e8
    assert float(capped_oversampling(v, 1e8, 60)) == 1e8


def test_uncapped_and_non_binding_caps_draw_the_same_dictionary():
    X, Y, _ = _data(64)
    ref = NystromMultiTaskGP(X, Y, q=5.0, generator=0)
    for cap in (None, 64, 1000, ref.dictionary_size):
        model = NystromMultiTaskGP(X, Y, q=5.0, generator=0, max_dictionary_size=cap)
        assert torch.equal(model.dictionary_indices, ref.dictionary_indices)
        assert torch.equal(model.previous_variances, ref.previous_variances)
        assert model.effective_q == ref.q


def test_binding_cap_bounds_the_dictionary_and_keeps_probabilities_proportional():
    X, Y, _ = _data(80)
    free = NystromMultiTaskGP(X, Y, generator=0)  # the paper's q: a large dictionary
    assert free.dictionary_size > 20
    sizes = []
    for seed in range(20):
        model = NystromMultiTaskGP(X, Y, generator=seed, max_dictionary_size=12)
        assert model.dictionary_size <= 12
        q_eff = model.effective_q
        assert q_eff < model.q
        v = model.previous_variances
        assert float(_expected_size(v, q_eff)) == pytest.approx(12.0, rel=1e-9)
        probs = (q_eff * v).clamp(max=1.0)
        torch.testing.assert_close(model.dictionary_probabilities, probs[model.dictionary_indices])
        sizes.append(model.dictionary_size)
    assert 9 <= sum(sizes) / len(sizes) <= 12  # truncated at 12, expected size 12
    # conditioning keeps the cap
    cond = model.condition_on_observations(X[:3] + 0.1, Y[:3])
    assert cond.max_dictionary_size == 12 and cond.dictionary_size <= 12


@pytest.mark.parametrize("cap", [0, -1, 2.5, True])
def test_bad_cap_raises(cap):
    X, Y, _ = _data(10)
    with pytest.raises(ValueError, match="max_dictionary_size"):
        NystromMultiTaskGP(X, Y, max_dictionary_size=cap)


# ---------------------------------------------------------------- the sparse practical model
def test_sparse_model_has_the_subset_fit_and_the_dtc_posterior():
    X, Y, bounds = _data(40)
    gen = torch.Generator().manual_seed(3)
    factory = WarmStartPracticalFactory(
        bounds, sparse_above=30, fit_subset_size=25, max_dictionary_size=10, generator=gen
    )
    model = factory(X, Y)
    assert isinstance(model, NystromMultiTaskGP) and not model.training
    assert model.dictionary_size <= 10 and model.learn_noise
    # the hyperparameters: a cold practical fit on the documented subset
    subset = WarmStartPracticalFactory(
        bounds, fit_subset_size=25, generator=torch.Generator().manual_seed(3)
    ).fit_subset(40)
    assert subset.shape == (25,) and bool((subset.diff() > 0).all())
    ref = practical_multitask_gp(X[subset], Y[subset], bounds)
    params = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        torch.testing.assert_close(p, params[name], rtol=0, atol=0)
    assert any(name == "likelihood.noise_prior" for name, *_ in model.named_priors())
    # the posterior: the dense DTC posterior of the model's dictionary
    Xs = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
        6, 2, generator=torch.Generator().manual_seed(1), dtype=X.dtype
    )
    with torch.no_grad():
        post = model.posterior(Xs)
        mean, cov = _brute_force_dtc(model, X, Y, bounds, Xs, model.dictionary_indices)
    torch.testing.assert_close(post.mean, mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(post.distribution.covariance_matrix, cov, rtol=1e-5, atol=1e-6)


def test_full_dictionary_gives_the_exact_practical_posterior():
    X, Y, bounds = _data(30)
    model = practical_sparse_multitask_gp(X, Y, bounds, fit_subset_size=30, max_dictionary_size=30)
    exact = practical_multitask_gp(X, Y, bounds)  # the same cold fit on all 30 points
    model._previous_variances.fill_(1.0)  # every p = min(q, 1) = 1
    model.resample_dictionary()
    assert model.dictionary_size == 30
    Xs = X[:5] + 0.3
    with torch.no_grad():
        a, b = model.posterior(Xs), exact.posterior(Xs)
    torch.testing.assert_close(a.mean, b.mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(a.variance, b.variance, rtol=1e-5, atol=1e-7)


def test_factory_switches_at_the_threshold_and_warm_starts_across_modes():
    X, Y, bounds = _data(40)
    factory = WarmStartPracticalFactory(bounds, sparse_above=30, fit_subset_size=20)
    assert WarmStartPracticalFactory(bounds).sparse_above == WarmStartPracticalFactory.SPARSE_ABOVE
    assert isinstance(factory(X[:30], Y[:30]), ExactMultiTaskGP)
    first = dict(factory._previous.named_parameters())
    sparse = factory(X, Y)
    assert isinstance(sparse, NystromMultiTaskGP) and factory.num_fits == 2
    assert set(first) == {name for name, _ in sparse.named_parameters()}
    assert isinstance(WarmStartPracticalFactory(bounds, sparse_above=None)(X, Y), ExactMultiTaskGP)


@pytest.mark.parametrize(
    "kwargs",
    [{"sparse_above": -1}, {"sparse_above": 1.5}, {"fit_subset_size": 1},
     {"max_dictionary_size": 0}, {"generator": 3}],
)
def test_factory_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        WarmStartPracticalFactory(**kwargs)


def test_public_builder_rejects_empty_data_and_returns_the_sparse_model():
    X, Y, bounds = _data(12)
    with pytest.raises(ValueError, match="N >= 1"):
        practical_sparse_multitask_gp(X[:0], Y[:0], bounds)
    model = practical_sparse_multitask_gp(X, Y, bounds, max_dictionary_size=4)
    assert isinstance(model, NystromMultiTaskGP) and model.dictionary_size <= 4


# ---------------------------------------------------------------- acquisition and loop
def test_ucb_and_loop_run_on_the_sparse_model():
    problem = BraninCurrin(negate=True).to(torch.float64)
    X = problem.bounds[0] + (problem.bounds[1] - problem.bounds[0]) * torch.rand(
        24, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    factory = WarmStartPracticalFactory(problem.bounds, sparse_above=20, max_dictionary_size=8)
    model = factory(X, problem(X))
    acqf = ScalarizedMultiTaskUCB(model, LinearScalarization(torch.tensor([0.5, 0.5])), beta=2.0)
    Xq = X[:4].unsqueeze(-2).clone().requires_grad_(True)
    value = acqf(Xq)
    value.sum().backward()
    assert value.shape == (4,) and bool(torch.isfinite(Xq.grad).all())

    h = run_bo_loop(
        problem, initial_X=X, num_rounds=2, bounds=problem.bounds,
        model_factory=WarmStartPracticalFactory(
            problem.bounds, sparse_above=20, max_dictionary_size=8
        ),
        refit_every=2, generator=torch.Generator().manual_seed(0),
    )
    assert h.X.shape == (2, 2) and isinstance(h.model, NystromMultiTaskGP)
    assert h.model.dictionary_size <= 8
