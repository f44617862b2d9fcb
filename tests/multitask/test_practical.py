"""practical_multitask_gp: fitted, equal to a brute-force ICM posterior, inputs untouched."""

from __future__ import annotations

import math

import pytest
import torch
from gpytorch.kernels import MaternKernel
from gpytorch.means import ConstantMean, MultitaskMean
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.kernels.icm import ICMKernel
from botorch_mtucb.kernels.independent import IndependentTasksKernel
from botorch_mtucb.models import ExactMultiTaskGP, practical_multitask_gp
from botorch_mtucb.multitask.practical import PRACTICAL_NOISE_FLOOR


def _data(N: int = 12, d: int = 2, dtype=torch.float64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    bounds = torch.tensor([[-5.0, 0.0], [10.0, 15.0]], dtype=dtype)[:, :d]
    X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(N, d, generator=g, dtype=dtype)
    U = (X - bounds[0]) / (bounds[1] - bounds[0])
    f = torch.sin(6 * U).sum(-1, keepdim=True)
    Y = torch.cat([50 * f, 0.1 * f + 0.05 * U[:, :1] ** 2, -3 * f + 1], dim=-1)
    Y = Y + 0.01 * torch.randn(Y.shape, generator=g, dtype=dtype)
    return X, Y, bounds


def _mll(model) -> float:
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with torch.no_grad():
        value = mll(model(*model.train_inputs), model.train_targets).item()
    model.eval()
    return value


def _matern52(A, B, lengthscale):
    """Matérn-5/2 written out: (1 + √5 r + 5r²/3) exp(−√5 r), r the ARD distance."""
    r = ((A[:, None, :] - B[None, :, :]) / lengthscale).pow(2).sum(-1).clamp_min(0).sqrt()
    s = math.sqrt(5.0) * r
    return (1 + s + s**2 / 3) * torch.exp(-s)


def _brute_force_posterior(model, X, Y, bounds, Xs):
    """Dense (N n x N n) Kronecker GP posterior in original units, from the hyperparameters."""
    kern = model.covar_module
    ls = kern.data_covar_module.lengthscale.detach().reshape(-1)
    B = kern.task_covar_matrix.detach()
    eta = model.likelihood.noise.detach().reshape(())
    mu = torch.stack([m.constant.detach().reshape(()) for m in model.mean_module.base_means])
    U, Us = (X - bounds[0]) / (bounds[1] - bounds[0]), (Xs - bounds[0]) / (bounds[1] - bounds[0])
    ym, ys = Y.mean(0), Y.std(0)  # Standardize: unbiased std
    Z = (Y - ym) / ys
    n = Y.shape[-1]
    K = torch.kron(_matern52(U, U, ls), B) + eta * torch.eye(len(X) * n, dtype=X.dtype)
    Ks = torch.kron(_matern52(Us, U, ls), B)
    Kss = torch.kron(_matern52(Us, Us, ls), B)
    resid = (Z - mu).reshape(-1)  # interleaved: point-major
    mean = (mu + (Ks @ torch.linalg.solve(K, resid)).reshape(len(Xs), n)) * ys + ym
    cov = Kss - Ks @ torch.linalg.solve(K, Ks.T)
    scale = ys.repeat(len(Xs))
    return mean, cov * scale[:, None] * scale[None, :]


def test_fit_raises_the_marginal_likelihood():
    X, Y, bounds = _data()
    before = _mll(practical_multitask_gp(X, Y, bounds, fit=False))
    after = _mll(practical_multitask_gp(X, Y, bounds))
    assert after > before + 1.0


def test_posterior_equals_brute_force_and_a_hand_built_model():
    X, Y, bounds = _data()
    model = practical_multitask_gp(X, Y, bounds)
    assert isinstance(model.covar_module, ICMKernel)
    assert model.covar_module.rank == 3 and model.likelihood.noise.item() >= PRACTICAL_NOISE_FLOOR
    Xs = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
        5, 2, generator=torch.Generator().manual_seed(1), dtype=X.dtype
    )
    with torch.no_grad():
        post = model.posterior(Xs)
        mean, cov = _brute_force_posterior(model, X, Y, bounds, Xs)
        torch.testing.assert_close(post.mean, mean, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(post.distribution.covariance_matrix, cov, rtol=1e-5, atol=1e-6)

    # The same hyperparameters set by hand on an ExactMultiTaskGP with a fixed B.
    from botorch.models.transforms import Normalize, Standardize

    data_kernel = MaternKernel(nu=2.5, ard_num_dims=2).to(X)
    data_kernel.lengthscale = model.covar_module.data_covar_module.lengthscale.detach()
    mean_module = MultitaskMean(ConstantMean(), 3).to(X)
    for mine, theirs in zip(mean_module.base_means, model.mean_module.base_means, strict=True):
        mine.constant = theirs.constant.detach()
    hand = ExactMultiTaskGP(
        X, Y,
        covar_module=ICMKernel(data_kernel, 3, task_covar=model.covar_module.task_covar_matrix
                               .detach()),
        noise=model.likelihood.noise.item(), mean_module=mean_module,
        input_transform=Normalize(2, bounds=bounds), outcome_transform=Standardize(m=3),
    ).eval()
    with torch.no_grad():
        ref = hand.posterior(Xs)
        torch.testing.assert_close(post.mean, ref.mean, rtol=1e-7, atol=1e-7)
        torch.testing.assert_close(post.variance, ref.variance, rtol=1e-6, atol=1e-8)


def _per_task_parts(model):
    """(ICM lengthscale, B, [(s_i, lengthscale_i)]) of a ``per_task=True`` model."""
    icm, own = model.covar_module.kernels
    terms = [(k.outputscale.detach(), k.base_kernel.lengthscale.detach().reshape(-1))
             for k in own.data_covar_modules]
    return (icm.data_covar_module.lengthscale.detach().reshape(-1),
            icm.task_covar_matrix.detach(), terms)


def test_per_task_posterior_equals_the_dense_lmc_posterior():
    """``per_task=True``: Γ = k_0 B + diag(s_i k_i), checked against the dense GP posterior
    written out from the fitted hyperparameters; each task has its own lengthscales."""
    X, Y, bounds = _data(N=14)
    fitted = practical_multitask_gp(X, Y, bounds, per_task=True)
    assert all(s >= 0 for s, _ in _per_task_parts(fitted)[2])
    model = practical_multitask_gp(X, Y, bounds, per_task=True, fit=False)
    icm, own = model.covar_module.kernels  # hyperparameters by hand: every term matters
    icm.data_covar_module.lengthscale = torch.tensor([[0.3, 0.5]])
    for k, s, ls in zip(own.data_covar_modules, (0.5, 0.3, 0.2),
                        ([0.2, 0.9], [0.7, 0.1], [0.4, 0.4]), strict=True):
        k.outputscale, k.base_kernel.lengthscale = s, torch.tensor([ls])
    model.likelihood.noise = 0.01
    model.eval()
    ls0, B, terms = _per_task_parts(model)
    eta = model.likelihood.noise.detach().reshape(())
    mu = torch.stack([m.constant.detach().reshape(()) for m in model.mean_module.base_means])
    Xs = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
        4, 2, generator=torch.Generator().manual_seed(3), dtype=X.dtype
    )
    U, Us = (X - bounds[0]) / (bounds[1] - bounds[0]), (Xs - bounds[0]) / (bounds[1] - bounds[0])

    def gamma(A, C):
        out = torch.kron(_matern52(A, C, ls0), B)
        for i, (s, ls) in enumerate(terms):
            E = torch.zeros(3, 3, dtype=X.dtype)
            E[i, i] = 1.0
            out = out + torch.kron(s * _matern52(A, C, ls), E)
        return out

    ym, ys = Y.mean(0), Y.std(0)
    K = gamma(U, U) + eta * torch.eye(len(X) * 3, dtype=X.dtype)
    Ks, Kss = gamma(Us, U), gamma(Us, Us)
    resid = ((Y - ym) / ys - mu).reshape(-1)
    mean = (mu + (Ks @ torch.linalg.solve(K, resid)).reshape(len(Xs), 3)) * ys + ym
    scale = ys.repeat(len(Xs))
    cov = (Kss - Ks @ torch.linalg.solve(K, Ks.T)) * scale[:, None] * scale[None, :]
    with torch.no_grad():
        post = model.posterior(Xs)
        torch.testing.assert_close(post.mean, mean, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(post.distribution.covariance_matrix, cov, rtol=1e-5,
                                   atol=1e-6)


def test_per_task_with_zero_scales_is_the_icm():
    """With every s_i = 0 the per-task model is the ICM model with the same k_0, B, η."""
    X, Y, bounds = _data()
    icm = practical_multitask_gp(X, Y, bounds)
    lmc = practical_multitask_gp(X, Y, bounds, per_task=True, fit=False)
    first, own = lmc.covar_module.kernels
    first.load_state_dict(icm.covar_module.state_dict())
    for k in own.data_covar_modules:
        k.outputscale = 0.0
    lmc.mean_module.load_state_dict(icm.mean_module.state_dict())
    lmc.likelihood.noise = icm.likelihood.noise.detach()
    lmc.eval()
    Xs = X[:5] + 0.3
    with torch.no_grad():
        a, b = icm.posterior(Xs), lmc.posterior(Xs)
        torch.testing.assert_close(a.mean, b.mean, rtol=1e-7, atol=1e-7)
        torch.testing.assert_close(a.variance, b.variance, rtol=1e-6, atol=1e-8)


def test_per_task_options_and_errors():
    from botorch_mtucb.kernels.independent import SumOfSeparableKernel
    from botorch_mtucb.multitask.practical import (
        PER_TASK_SCALE_INIT,
        WarmStartPracticalFactory,
        practical_modules,
    )

    kernel, _ = practical_modules(2, 3, per_task=True)
    assert isinstance(kernel, SumOfSeparableKernel) and len(kernel.separable_components()) == 4
    scales = [float(k.outputscale.detach()) for k in kernel.kernels[1].data_covar_modules]
    assert scales == pytest.approx([PER_TASK_SCALE_INIT] * 3)
    with pytest.raises(ValueError, match="`independent` and `per_task`"):
        practical_modules(2, 3, independent=True, per_task=True)
    X, Y, bounds = _data()
    with pytest.raises(ValueError, match="`independent` and `per_task`"):
        practical_multitask_gp(X, Y, bounds, independent=True, per_task=True)
    with pytest.raises(ValueError, match="`independent` and `per_task`"):
        WarmStartPracticalFactory(bounds, independent=True, per_task=True)
    factory = WarmStartPracticalFactory(bounds, per_task=True)
    first, second = factory(X[:10], Y[:10]), factory(X, Y)  # a cold, then a warm fit
    assert isinstance(second.covar_module, SumOfSeparableKernel)
    assert isinstance(first.covar_module, SumOfSeparableKernel)
    assert torch.equal(X, _data()[0])  # inputs untouched
    sparse = WarmStartPracticalFactory(bounds, per_task=True, sparse_above=8,
                                       fit_subset_size=6, max_dictionary_size=8)(X, Y)
    assert type(sparse).__name__ == "NystromMultiTaskGP"
    assert isinstance(sparse.covar_module, SumOfSeparableKernel)
    with torch.no_grad():
        assert bool(sparse.posterior(X[:3] + 0.1).variance.isfinite().all())


@pytest.mark.filterwarnings("ignore:.*too ill-conditioned for torch.float32")
def test_inputs_untouched_and_dtype_follows_data():
    for dtype in (torch.float64, torch.float32):
        X, Y, bounds = _data(dtype=dtype)
        X0, Y0, b0 = X.clone(), Y.clone(), bounds.clone()
        model = practical_multitask_gp(X, Y, bounds.to(torch.float64))
        assert torch.equal(X, X0) and torch.equal(Y, Y0) and torch.equal(bounds, b0)
        assert model.train_inputs[0].dtype == dtype
        assert all(p.dtype == dtype for p in model.parameters())
        assert model.posterior(X[:2]).mean.dtype == dtype
        model.posterior(X[:2])  # conditioning / posterior do not move the caller's tensors
        assert torch.equal(X, X0)


def test_independent_tasks_share_nothing_without_a_fit():
    X, Y, bounds = _data()
    model = practical_multitask_gp(X, Y, bounds, independent=True, fit=False)
    assert isinstance(model.covar_module, IndependentTasksKernel)
    Y2 = Y.clone()
    Y2[:, 1:] = torch.randn(len(Y), 2, generator=torch.Generator().manual_seed(3), dtype=Y.dtype)
    other = practical_multitask_gp(X, Y2, bounds, independent=True, fit=False)
    with torch.no_grad():
        m1, m2 = model.posterior(X[:4]).mean, other.posterior(X[:4]).mean
    torch.testing.assert_close(m1[:, 0], m2[:, 0])
    assert not torch.allclose(m1[:, 1], m2[:, 1])
    fitted = practical_multitask_gp(X, Y, bounds, independent=True)
    assert _mll(fitted) > _mll(model)


def test_known_noise_pass_through():
    X, Y, bounds = _data()
    Yvar = torch.full_like(Y, 1e-2)
    model = practical_multitask_gp(X, Y, bounds, train_Yvar=Yvar)
    assert model.known_noise and not model.learn_noise
    torch.testing.assert_close(model.likelihood.noise, Yvar / Y.var(0))  # standardised units
    assert torch.equal(Yvar, torch.full_like(Y, 1e-2))


def test_small_data_and_fit_kwargs():
    X, Y, bounds = _data(N=1)
    model = practical_multitask_gp(X, Y, bounds)  # one point: nothing to fit, still a model
    assert model.posterior(X).mean.shape == (1, 3)
    X, Y, bounds = _data(N=8)
    calls = []

    def optimizer(mll, closure=None, **kw):
        calls.append(mll)
        from botorch.optim.core import OptimizationResult, OptimizationStatus

        return OptimizationResult(step=0, fval=0.0, status=OptimizationStatus.SUCCESS)

    practical_multitask_gp(X, Y, bounds, fit_kwargs={"optimizer": optimizer})
    assert len(calls) >= 1


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        (torch.zeros(2, 3), r"`bounds` must be a 2 x d = \(2, 2\)"),
        (torch.tensor([[0.0, 1.0], [1.0, 1.0]]), "lower < upper"),
        (torch.tensor([[0.0, float("nan")], [1.0, 1.0]]), "`bounds` contains NaN"),
        ([[0.0, 0.0], [1.0, 1.0]], "`bounds` must be a 2 x d"),
    ],
)
def test_bounds_validation(bounds, match):
    X, Y, _ = _data()
    with pytest.raises(ValueError, match=match):
        practical_multitask_gp(X, Y, bounds)


def test_data_validation():
    X, Y, bounds = _data()
    with pytest.raises(ValueError, match="`train_X` must be a floating N x d"):
        practical_multitask_gp(X[0], Y, bounds)
    with pytest.raises(ValueError, match="`train_Y` must be an N x n tensor with N = 12"):
        practical_multitask_gp(X, Y[:5], bounds)


def test_noise_prior_helper_and_modules():
    from gpytorch.priors import LogNormalPrior

    from botorch_mtucb.multitask.practical import add_practical_noise_prior, practical_modules

    X, Y, bounds = _data()
    model = practical_multitask_gp(X, Y, bounds, fit=False)
    prior = model.likelihood.noise_prior
    assert isinstance(prior, LogNormalPrior)
    torch.testing.assert_close(prior.loc, torch.tensor(-4.0, dtype=prior.loc.dtype))
    with pytest.raises(ValueError, match="`model` must learn its noise"):
        add_practical_noise_prior(ExactMultiTaskGP(X, Y))  # the paper's fixed η
    kernel, mean = practical_modules(2, 3)
    assert isinstance(kernel, ICMKernel) and kernel.rank == 3 and len(mean.base_means) == 3
    assert isinstance(practical_modules(2, 3, independent=True)[0], IndependentTasksKernel)


def _gamma_log_pdf(x: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """log of the Gamma(shape a, rate b) density, written out."""
    return a * math.log(b) - math.lgamma(a) + (a - 1) * torch.log(x) - b * x


@pytest.mark.parametrize("independent", [False, True])
def test_lengthscale_prior_choices(independent):
    from gpytorch.priors import GammaPrior, LogNormalPrior

    from botorch_mtucb.multitask.practical import practical_modules

    d, n = 4, 3
    kernel, _ = practical_modules(d, n, independent, lengthscale_prior="gamma")
    bases = kernel.data_covar_modules if independent else [kernel.data_covar_module]
    for base in bases:
        assert isinstance(base, MaternKernel) and base.nu == 2.5
        assert base.lengthscale.shape == (1, d)
        prior = base.lengthscale_prior
        assert isinstance(prior, GammaPrior)
        ls = torch.tensor([0.1, 0.3, 1.0, 4.0])
        torch.testing.assert_close(prior.log_prob(ls), _gamma_log_pdf(ls, 3.0, 6.0),
                                   rtol=1e-6, atol=1e-6)
    for kw in ({}, {"lengthscale_prior": "dim-scaled"}):  # the default: BoTorch's
        kernel, _ = practical_modules(d, n, independent, **kw)
        base = kernel.data_covar_modules[0] if independent else kernel.data_covar_module
        prior = base.lengthscale_prior
        assert isinstance(prior, LogNormalPrior)  # LogNormal(√2 + ½ log d, √3)
        assert float(prior.loc) == pytest.approx(math.sqrt(2) + 0.5 * math.log(d))
        assert float(prior.scale) == pytest.approx(math.sqrt(3))
    with pytest.raises(ValueError, match="`lengthscale_prior` must be one of"):
        practical_modules(d, n, lengthscale_prior="lognormal")
    X, Y, bounds = _data()
    with pytest.raises(ValueError, match="`lengthscale_prior` must be one of"):
        practical_multitask_gp(X, Y, bounds, lengthscale_prior="gama")


def test_map_objective_carries_the_gamma_prior():
    """The fitted objective is the likelihood plus log Gamma(3, 6) of every lengthscale (and the
    noise prior): compare the MLL with and without the lengthscale prior term by hand."""
    X, Y, bounds = _data(N=10)
    model = practical_multitask_gp(X, Y, bounds, fit=False, lengthscale_prior="gamma")
    base = model.covar_module.data_covar_module
    base.lengthscale = torch.tensor([[0.25, 0.8]], dtype=X.dtype)
    with_prior = _mll(model)
    base._priors.pop("lengthscale_prior")
    without = _mll(model)
    ls = torch.tensor([0.25, 0.8], dtype=X.dtype)
    expected = float(_gamma_log_pdf(ls, 3.0, 6.0).sum()) / Y.numel()  # GPyTorch: per datum
    assert with_prior - without == pytest.approx(expected, rel=1e-6)



def _log_space_reference(prior_kind: str, theta: torch.Tensor, d: int = 1) -> torch.Tensor:
    """log of BoTorch's prior as a density of log θ, written out (up to a constant):
    Normal(μ, σ) at log θ for a LogNormal(μ, σ), log Gamma(3, 6)(θ) + log θ for the Gamma."""
    if prior_kind == "gamma":
        return _gamma_log_pdf(theta, 3.0, 6.0) + theta.log()
    mu, sigma = (-4.0, 1.0) if prior_kind == "noise" else (math.sqrt(2) + 0.5 * math.log(d),
                                                             math.sqrt(3))
    return -0.5 * ((theta.log() - mu) / sigma) ** 2


@pytest.mark.parametrize("d", [1, 2, 6])
@pytest.mark.parametrize("kind", ["dim-scaled", "gamma"])
def test_log_space_priors_are_the_log_densities(d, kind):
    """log_space_priors: each prior's log density in θ equals its log density of log θ plus a
    constant (differences over a grid of θ agree); the starts stay the default ones."""
    from botorch_mtucb.multitask.practical import add_practical_noise_prior, practical_modules

    theta = torch.tensor([0.003, 0.025, 0.1, 0.4, 2.0, 30.0], dtype=torch.float64)
    kernel, _ = practical_modules(d, 2, lengthscale_prior=kind, log_space_priors=True)
    default, _ = practical_modules(d, 2, lengthscale_prior=kind)
    base, ref_base = kernel.data_covar_module, default.data_covar_module
    got = base.lengthscale_prior.log_prob(theta).double()
    diff = got - _log_space_reference(kind, theta, d)
    torch.testing.assert_close(diff - diff[0], torch.zeros_like(diff), atol=1e-5, rtol=0)
    torch.testing.assert_close(base.lengthscale, ref_base.lengthscale)  # same start
    X, Y, bounds = _data(N=8, d=d if d <= 2 else 2)
    model = practical_multitask_gp(X, Y, bounds, fit=False, log_space_priors=True)
    noise = model.likelihood.noise_prior.log_prob(theta).double()
    diff = noise - _log_space_reference("noise", theta)
    torch.testing.assert_close(diff - diff[0], torch.zeros_like(diff), atol=1e-5, rtol=0)
    plain = practical_multitask_gp(X, Y, bounds, fit=False)
    torch.testing.assert_close(model.likelihood.noise, plain.likelihood.noise)
    assert float(plain.likelihood.noise_prior.loc) == -4.0  # the default is BoTorch's
    with pytest.raises(ValueError, match="`model` must learn its noise"):
        add_practical_noise_prior(ExactMultiTaskGP(X, Y), log_space_priors=True)


def test_log_space_priors_shift_the_fit_objective_by_log_theta():
    """At equal hyperparameters the objective with log-space priors minus the default one is
    (Σ log ℓ + log η)/(Nn) + a constant (closed-form path), and the factory carries the option
    into its exact and sparse models."""
    from botorch_mtucb.multitask.practical import WarmStartPracticalFactory, fit_objective_value

    X, Y, bounds = _data(N=10)
    diffs = []
    for ls, eta in (([0.05, 0.3], 0.01), ([0.7, 2.0], 0.2)):
        values = []
        for log_space in (False, True):
            model = practical_multitask_gp(X, Y, bounds, fit=False, log_space_priors=log_space)
            model.covar_module.data_covar_module.lengthscale = torch.tensor([ls], dtype=X.dtype)
            model.likelihood.noise = torch.tensor([eta], dtype=X.dtype)
            values.append(fit_objective_value(model))
        shift = (math.log(ls[0]) + math.log(ls[1]) + math.log(eta)) / Y.numel()
        diffs.append(values[1] - values[0] - shift)
    assert diffs[0] == pytest.approx(diffs[1], abs=1e-6)
    for sparse_above in (None, 6):
        factory = WarmStartPracticalFactory(
            bounds, sparse_above=sparse_above, fit_subset_size=6, log_space_priors=True
        )
        model = factory(X, Y)
        assert float(model.likelihood.noise_prior.loc) == -3.0
        prior = model.covar_module.data_covar_module.lengthscale_prior
        assert float(prior.loc) == pytest.approx(math.sqrt(2) + 0.5 * math.log(2) + 3.0)
