"""Pathwise sampling of NystromMultiTaskGP (MT-BKB) through BoTorch's ``draw_matheron_paths``.

The paths must sample *the model's own* posterior (the Nyström/DTC posterior of its
dictionary), not the exact GP posterior of its kernel: sample moments of many paths are
compared with ``model.posterior`` by z-scores against the Monte-Carlo error
(:mod:`tests.sampling.helpers`), and a dictionary small enough for the two posteriors to differ
shows that the exact posterior fails the same check.
"""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.acquisition.thompson_sampling import PathwiseThompsonSampling
from botorch.acquisition.utils import get_optimal_samples
from botorch.exceptions.errors import UnsupportedError
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.sampling.pathwise import draw_matheron_paths
from gpytorch.kernels import RBFKernel
from gpytorch.means import ConstantMean

import botorch_mtucb.sampling  # noqa: F401  (registers the dispatchers)
from botorch_mtucb.acquisition import LinearScalarization, ScalarizedThompsonSampling
from botorch_mtucb.kernels import ICMKernel, IndependentTasksKernel, SumOfSeparableKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP
from botorch_mtucb.multitask.solvers.nystrom import NystromSolver
from botorch_mtucb.multitask.solvers.nystrom_icm import ICMNystromSolver
from botorch_mtucb.sampling import draw_nystrom_multitask_paths
from tests.sampling.helpers import D64, Z_MAX, S, posterior_z_scores

XT = torch.tensor([[0.1], [0.5], [0.52], [1.3]], dtype=D64)  # near, between, far from data


def _rbf(lengthscale: float, dtype: torch.dtype = D64) -> RBFKernel:
    k = RBFKernel().to(dtype)
    k.lengthscale = lengthscale
    return k


def _data(N: int = 20, n: int = 2, d: int = 1, dtype: torch.dtype = D64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, d, generator=g, dtype=dtype)
    Y = torch.sin(4 * X.sum(-1, keepdim=True)) * torch.linspace(1, 2, n, dtype=dtype)
    return X, Y + 0.2 * torch.randn(N, n, generator=g, dtype=dtype)


def _kernel(kind: str, dtype: torch.dtype = D64):
    B = torch.tensor([[1.0, 0.6], [0.6, 0.8]], dtype=dtype)
    if kind == "icm":
        return ICMKernel(_rbf(0.3, dtype), 2, task_covar=B)
    if kind == "independent":
        return IndependentTasksKernel([_rbf(0.3, dtype), _rbf(0.6, dtype)])
    return SumOfSeparableKernel([
        ICMKernel(_rbf(0.5, dtype), 2, task_covar=torch.ones(2, 2, dtype=dtype)),
        ICMKernel(_rbf(0.2, dtype), 2, task_covar=0.5 * torch.eye(2, dtype=dtype)),
    ])


def _model(kind: str = "icm", q: float = 0.3, method: str = "auto", dtype=D64, **kwargs):
    X, Y = _data(dtype=dtype)
    return NystromMultiTaskGP(X, Y, covar_module=_kernel(kind, dtype), noise=0.05, q=q,
                              generator=0, pinv_method=method, **kwargs)


def _basis_points(model, k: int = 3):
    """``k`` basis points of the solver (dictionary points spanning the embedding), in the
    model's input scale: there the residual ``Γ − ΨᵀΨ`` vanishes, so the paths' moments are
    exact (no random-feature error), up to the Monte-Carlo error."""
    Xs = model.solver().basis_X[:k].to(model.train_targets.dtype)
    tf = getattr(model, "input_transform", None)
    return Xs if tf is None else tf.untransform(Xs)


def _check(model, Xt, n: int = 2, num: int = S) -> None:
    """Exact moments at the basis points; elsewhere an exact mean and a covariance within the
    Monte-Carlo error plus the random-feature allowance ``RFF_ALLOWANCE · max prior variance``
    of the residual (the prior path's features enter it through the noiseless projection on
    the dictionary, which amplifies their error where the dictionary Gram is ill conditioned)."""
    Xb = _basis_points(model)
    paths = draw_matheron_paths(model, torch.Size([num]))
    if Xb.shape[0]:
        z_mean, z_cov = posterior_z_scores(model.posterior(Xb), paths(Xb), n)
        assert z_mean < Z_MAX, z_mean
        assert z_cov < Z_MAX, z_cov
    post = model.posterior(Xt)
    prior_var = post.variance.new_tensor(1.0) * _prior_variance(model, Xt)
    z_mean, z_cov = posterior_z_scores(post, paths(Xt), n, RFF_ALLOWANCE * prior_var)
    assert z_mean < Z_MAX, z_mean
    assert z_cov < Z_MAX, z_cov


RFF_ALLOWANCE = 0.02


def _prior_variance(model, Xt) -> float:
    """Largest prior variance ``Γ(x, x)`` at ``Xt`` in the outcome units."""
    Xt = model.transform_inputs(Xt)
    var = model.covar_module(Xt, diag=True).max()
    tf = getattr(model, "outcome_transform", None)
    scale = 1.0 if tf is None else tf.stdvs.max() ** 2
    return float((var * scale).detach())


@pytest.mark.parametrize("kind", ["icm", "independent", "sum"])
@pytest.mark.parametrize("method", ["eigh", "pivoted_cholesky"])
def test_moments_match_nystrom_posterior(kind, method):
    """Partial dictionaries (0 < m_t < t), both factorisations, ICM and generic solvers."""
    torch.manual_seed(1)
    model = _model(kind, q=0.5 if kind == "independent" else 0.3, method=method)
    assert 0 < model.dictionary_size < 20
    solver = model.solver()
    assert isinstance(solver, ICMNystromSolver if kind == "icm" else NystromSolver)
    assert solver.method == method
    _check(model, XT)


def test_paths_sample_the_nystrom_not_the_exact_posterior():
    """With a small dictionary the two posteriors differ: the paths pass against the model's
    posterior and fail against the exact GP posterior of the same kernel (the check's power)."""
    torch.manual_seed(2)
    model = _model("icm", q=0.05)
    assert model.dictionary_size == 2
    X, Y = _data()
    exact = ExactMultiTaskGP(X, Y, covar_module=_kernel("icm"), noise=0.05)
    Xt = XT[:3]
    samples = draw_matheron_paths(model, torch.Size([S]))(Xt)
    assert max(posterior_z_scores(model.posterior(Xt), samples, 2)) < Z_MAX
    assert max(posterior_z_scores(exact.posterior(Xt), samples, 2)) > 4 * Z_MAX


def test_empty_dictionary_gives_the_prior():
    torch.manual_seed(3)
    model = _model("icm", q=1e-9)
    assert model.dictionary_size == 0
    paths = draw_matheron_paths(model, torch.Size([S]))
    _check(model, XT)
    prior_var = model.covar_module(XT, diag=True).reshape(-1)  # interleaved diagonal
    var = paths(XT).transpose(-1, -2).reshape(S, -1).var(0)
    var, prior_var = var.detach(), prior_var.detach()
    assert float(((var - prior_var) / (prior_var * (2 / S) ** 0.5)).abs().max()) < Z_MAX


def test_transforms_and_constant_mean():
    """Normalize, Standardize and a constant prior mean: paths in the original units."""
    torch.manual_seed(4)
    X, Y = _data(N=16, n=3, d=2)
    model = NystromMultiTaskGP(
        4 * X, 30 + 5 * Y, covar_module=ICMKernel(_rbf(0.4), 3), noise=0.05, q=0.5,
        generator=0, input_transform=Normalize(2), outcome_transform=Standardize(3),
        mean_module=ConstantMean(),
    )
    with torch.no_grad():
        for m in model.mean_module.base_means:
            m.constant.fill_(0.3)
    assert 0 < model.dictionary_size < 16
    Xt = torch.tensor([[0.4, 1.0], [2.0, 2.0], [3.9, 0.1]], dtype=D64)
    _check(model, Xt, n=3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtypes(dtype):
    """float32 data: the Nyström solver works in float64, the paths return float32."""
    torch.manual_seed(5)
    with pytest.warns(Warning) if dtype == torch.float32 else _nullcontext():
        model = _model("icm", dtype=dtype)
        model.posterior(XT.to(dtype))
    paths = draw_matheron_paths(model, torch.Size([S]))
    out = paths(XT.to(dtype))
    assert out.dtype == dtype and out.shape == (S, 2, 4)
    assert paths["update_paths"].dtype == torch.float64
    assert max(posterior_z_scores(model.posterior(XT.to(dtype)), out, 2)) < Z_MAX


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def test_shapes_sample_shape_and_single_output():
    model = _model("icm")
    paths = draw_matheron_paths(model, torch.Size([2, 3]))
    assert paths(torch.rand(5, 1, dtype=D64)).shape == (2, 3, 2, 5)
    # input batch dimensions broadcast with the sample dimensions (BoTorch's paths)
    assert paths(torch.rand(3, 1, 5, 1, dtype=D64)).shape == (2, 3, 2, 5)
    X, Y = _data(n=1)
    single = NystromMultiTaskGP(X, Y, covar_module=ICMKernel(_rbf(0.3), 1), q=0.5, generator=0)
    assert draw_matheron_paths(single, torch.Size([2, 3]))(torch.rand(5, 1, dtype=D64)).shape \
        == (2, 3, 5)
    assert draw_nystrom_multitask_paths(model, [2], num_features=64)[
        "prior_paths"].feature_maps[0].num_outputs == 64


def test_next_round_model():
    """A model after one round of Algorithm 2 (new dictionary) samples its own posterior."""
    torch.manual_seed(6)
    model = _model("icm")
    new = model.condition_on_observations(XT[1:2], torch.ones(1, 2, dtype=D64))
    _check(new, XT)


def test_old_error_is_gone_and_fantasy_models_are_refused():
    """``draw_matheron_paths`` raised UnsupportedError on every NystromMultiTaskGP; a model
    conditioned on batched observations (a fantasy model) is still refused, by name."""
    model = _model("icm")
    draw_matheron_paths(model, torch.Size([2]))  # no UnsupportedError
    fantasy = model.condition_on_observations(XT[:1], torch.ones(3, 1, 2, dtype=D64))
    with pytest.raises(UnsupportedError, match="batched observations"):
        draw_matheron_paths(fantasy, torch.Size([2]))

    def other_prior(model, sample_shape):  # pragma: no cover - never called
        raise AssertionError

    with pytest.raises(UnsupportedError, match="prior_sampler"):
        draw_matheron_paths(model, torch.Size([2]), prior_sampler=other_prior)


def test_get_optimal_samples_and_thompson_sampling():
    torch.manual_seed(7)
    X, Y = _data(N=16, n=3, d=2)
    model = NystromMultiTaskGP(X, Y, covar_module=ICMKernel(_rbf(0.4), 3), q=0.5, generator=0)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=D64)
    tf = ScalarizedPosteriorTransform(torch.tensor([0.5, 0.3, 0.2], dtype=D64))
    xs, fs = get_optimal_samples(model, bounds, num_optima=4, raw_samples=64, num_restarts=2,
                                 posterior_transform=tf)
    assert xs.shape == (4, 2) and fs.shape == (4, 3) and torch.isfinite(fs).all()
    assert bool(((xs >= 0) & (xs <= 1)).all())
    ts = PathwiseThompsonSampling(model, posterior_transform=tf)
    assert ts(torch.rand(5, 2, 2, dtype=D64)).shape == (5,)
    acqf = ScalarizedThompsonSampling(model, LinearScalarization([0.5, 0.3, 0.2]), seed=0)
    values = acqf(torch.rand(6, 1, 2, dtype=D64))
    assert values.shape == (6,) and torch.isfinite(values).all()
    again = ScalarizedThompsonSampling(model, LinearScalarization([0.5, 0.3, 0.2]), seed=0)
    x = torch.rand(6, 1, 2, dtype=D64)
    torch.testing.assert_close(acqf(x), again(x))
