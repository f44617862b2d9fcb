"""Multi-task models in float32 and float64 against a float64 reference.

float32 must be accurate or loud: the models factor in float64 (with a ``NumericalWarning``)
whenever float32 cannot hold the system's condition number (``botorch_mtucb.linalg.precision``).
"""

import copy
import warnings

import pytest
import torch
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.kernels import ICMKernel, SumOfSeparableKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

D64, D32 = torch.float64, torch.float32
TOL = {D64: dict(atol=1e-10, rtol=1e-9), D32: dict(atol=2e-4, rtol=2e-3)}


def _kernel(kind: str, n: int, g: torch.Generator):
    k = ScaleKernel(RBFKernel()).to(D64)
    k.base_kernel.lengthscale = 0.3
    k.outputscale = 1.5
    A = torch.randn(n, n, generator=g, dtype=D64)
    B = A @ A.T / n + 0.05 * torch.eye(n, dtype=D64)
    if kind == "icm":
        return ICMKernel(k, n, task_covar=B)
    m = MaternKernel(nu=2.5).to(D64)
    m.lengthscale = 0.4
    terms = [ICMKernel(k, n, task_covar=B), ICMKernel(m, n, task_covar=B.T @ B)]
    return SumOfSeparableKernel(terms)


def _models(cls, kind, dtype, noise=0.1, t=15, n=3, seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    kernel = _kernel(kind, n, g)
    X = torch.rand(t, 2, generator=g, dtype=D64)
    Y = torch.randn(t, n, generator=g, dtype=D64)
    ref = cls(X, Y, covar_module=kernel, noise=noise, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        model = cls(X.to(dtype), Y.to(dtype), covar_module=copy.deepcopy(kernel).to(dtype),
                    noise=noise, **kw)
    Xs = torch.rand(4, 2, 2, generator=g, dtype=D64)
    return ref, model, Xs, g


def _compare(ref, model, Xs, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        post = model.posterior(Xs.to(dtype))
        tm, tb = model.task_posterior(Xs.to(dtype))
        pm, pq = model.projected_task_posterior(Xs.to(dtype), torch.eye(ref.num_tasks))
    rpost = ref.posterior(Xs)
    rtm, rtb = ref.task_posterior(Xs)
    assert post.mean.dtype == dtype and tb.dtype == dtype
    torch.testing.assert_close(post.mean.double(), rpost.mean, **TOL[dtype])
    torch.testing.assert_close(
        post.mvn.covariance_matrix.double(), rpost.mvn.covariance_matrix, **TOL[dtype]
    )
    torch.testing.assert_close(tm.double(), rtm, **TOL[dtype])
    torch.testing.assert_close(tb.double(), rtb, **TOL[dtype])
    torch.testing.assert_close(pm.double(), rtm, **TOL[dtype])
    torch.testing.assert_close(pq.double(), rtb.diagonal(dim1=-2, dim2=-1), **TOL[dtype])


@pytest.mark.parametrize("dtype", [D64, D32])
@pytest.mark.parametrize("kind", ["icm", "sum"])
def test_exact_model_matches_float64_reference(kind, dtype):
    ref, model, Xs, g = _models(ExactMultiTaskGP, kind, dtype)
    _compare(ref, model, Xs, dtype)
    Xn = torch.rand(2, 2, generator=g, dtype=D64)
    Yn = torch.randn(2, 3, generator=g, dtype=D64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        cond = model.condition_on_observations(Xn.to(dtype), Yn.to(dtype))
    _compare(ref.condition_on_observations(Xn, Yn), cond, Xs, dtype)


@pytest.mark.parametrize("dtype", [D64, D32])
@pytest.mark.parametrize("kind", ["icm", "sum"])
def test_nystrom_model_with_every_point_matches_float64_exact_model(kind, dtype):
    # q so large that p = 1 for every point: the Nyström posterior is the exact one
    ref, model, Xs, _ = _models(NystromMultiTaskGP, kind, dtype, q=1e12, generator=0)
    assert model.dictionary_size == 15
    exact = ExactMultiTaskGP(*ref.train_inputs, ref.train_targets, covar_module=ref.covar_module,
                             noise=0.1)
    _compare(exact, model, Xs, dtype)


def test_float32_near_duplicates_and_tiny_noise_are_accurate_not_silent():
    """Near-duplicate inputs and η = 1e-6 in float32: κ far beyond float32, so the model
    must compute in float64 (with a warning) and match the float64 reference."""
    g = torch.Generator().manual_seed(3)
    X = torch.rand(20, 1, generator=g, dtype=D64)
    X = torch.cat([X, X[:10] + 1e-5])  # near-duplicate inputs
    Y = torch.randn(30, 2, generator=g, dtype=D64) * 0.03
    kernel = _kernel("icm", 2, g)
    ref = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=1e-6)
    model = ExactMultiTaskGP(X.float(), Y.float(), covar_module=copy.deepcopy(kernel).float(),
                             noise=1e-6)
    Xs = torch.rand(8, 1, 1, generator=g, dtype=D64)
    with pytest.warns(NumericalWarning, match="float64"):
        mean, blocks = model.task_posterior(Xs.float())
    rmean, rblocks = ref.task_posterior(Xs)
    torch.testing.assert_close(mean.double(), rmean, atol=1e-4, rtol=1e-3)
    torch.testing.assert_close(blocks.double(), rblocks, atol=1e-5, rtol=1e-3)


def test_float32_model_accepts_float64_inputs():
    ref, model, Xs, _ = _models(ExactMultiTaskGP, "icm", D32)
    post = model.posterior(Xs)  # float64 X into a float32 model: cast, no crash
    assert post.mean.dtype == D32
    torch.testing.assert_close(post.mean.double(), ref.posterior(Xs).mean, **TOL[D32])
