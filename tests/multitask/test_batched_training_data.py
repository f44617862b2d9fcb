"""ExactMultiTaskGP on batched training data (``b x N x d``) against ``b`` separate models."""

import copy

import pytest
import torch
from botorch.models.transforms import Standardize
from gpytorch.kernels import RBFKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.kernels import ICMKernel, SumOfSeparableKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskBatch, NystromMultiTaskGP

DT = torch.float64


def _kernel(kind, n, g):
    k = RBFKernel().to(DT)
    k.lengthscale = 0.3
    A = torch.randn(n, n, generator=g, dtype=DT)
    icm = ICMKernel(k, n, task_covar=A @ A.T + 0.1 * torch.eye(n, dtype=DT))
    if kind == "icm":
        return icm
    k2 = RBFKernel().to(DT)
    k2.lengthscale = 0.6
    return SumOfSeparableKernel([icm, ICMKernel(k2, n, task_covar=torch.eye(n, dtype=DT))])


@pytest.mark.parametrize("kind", ["icm", "sum"])
def test_batched_model_equals_separate_models(kind):
    g = torch.Generator().manual_seed(0)
    b, t, n = 3, 8, 2
    kernel = _kernel(kind, n, g)
    X = torch.rand(b, t, 2, generator=g, dtype=DT)
    Y = torch.randn(b, t, n, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, outcome_transform=Standardize(m=n,
                             batch_shape=torch.Size([b])))
    assert model.batch_shape == torch.Size([b])
    Xs = torch.rand(b, 4, 2, generator=g, dtype=DT)
    post = model.posterior(Xs)
    tmean, blocks = model.task_posterior(Xs)
    gains = model.information_gain()
    assert gains.shape == (b,)
    Xn, Yn = torch.rand(b, 2, 2, generator=g, dtype=DT), torch.randn(b, 2, n, generator=g, dtype=DT)
    cond = model.condition_on_observations(Xn, Yn).posterior(Xs)
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    values = mll(model(*model.train_inputs), model.train_targets)
    for i in range(b):
        one = ExactMultiTaskGP(X[i], Y[i], covar_module=copy.deepcopy(kernel),
                               outcome_transform=Standardize(m=n))
        ref = one.posterior(Xs[i])
        torch.testing.assert_close(post.mean[i], ref.mean)
        torch.testing.assert_close(post.mvn.covariance_matrix[i], ref.mvn.covariance_matrix)
        rm, rb = one.task_posterior(Xs[i])
        torch.testing.assert_close(tmean[i], rm)
        torch.testing.assert_close(blocks[i], rb)
        torch.testing.assert_close(gains[i], one.information_gain())
        rc = one.condition_on_observations(Xn[i], Yn[i]).posterior(Xs[i])
        torch.testing.assert_close(cond.mean[i], rc.mean)
        torch.testing.assert_close(cond.variance[i], rc.variance)
        one.train()
        ref_mll = ExactMarginalLogLikelihood(one.likelihood, one)
        torch.testing.assert_close(values[i], ref_mll(one(*one.train_inputs), one.train_targets))


def test_batched_training_data_refusals():
    X, Y = torch.rand(2, 5, 2, dtype=DT), torch.randn(2, 5, 2, dtype=DT)
    # NystromMultiTaskGP takes batched data now (tests/multitask/test_nystrom_batch.py)
    assert isinstance(NystromMultiTaskGP(X, Y, generator=0), NystromMultiTaskBatch)
    with pytest.raises(Exception, match="batch shape"):
        ExactMultiTaskGP(X, Y[0].expand(3, 5, 2))
