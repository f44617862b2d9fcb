"""ExactMultiTaskGP with known per-observation noise (``train_Yvar``) against brute force."""

import pytest
import torch
from botorch.models.transforms import Standardize
from botorch.sampling import SobolQMCNormalSampler
from botorch.utils.datasets import SupervisedDataset
from gpytorch.kernels import RBFKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP

DT = torch.float64


def _problem(t=9, n=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.3
    A = torch.randn(n, n, generator=g, dtype=DT)
    kernel = ICMKernel(k, n, task_covar=A @ A.T + 0.1 * torch.eye(n, dtype=DT))
    X = torch.rand(t, 2, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    Yvar = 0.01 + 0.2 * torch.rand(t, n, generator=g, dtype=DT)
    return kernel, X, Y, Yvar, g


def _brute(kernel, X, Y, Yvar, Xs):
    with torch.no_grad():
        G = kernel(X).to_dense() + torch.diag(Yvar.reshape(-1))
        Gx = kernel(Xs, X).to_dense()
        mean = (Gx @ torch.linalg.solve(G, Y.reshape(-1, 1))).reshape(*Xs.shape[:-1], -1)
        cov = kernel(Xs).to_dense() - Gx @ torch.linalg.solve(G, Gx.transpose(-1, -2))
    return mean, cov, G


def test_posterior_and_likelihood_match_brute_force():
    kernel, X, Y, Yvar, g = _problem()
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, train_Yvar=Yvar)
    assert model.known_noise
    Xs = torch.rand(3, 2, 2, generator=g, dtype=DT)
    mean, cov, G = _brute(kernel, X, Y, Yvar, Xs)
    post = model.posterior(Xs)
    torch.testing.assert_close(post.mean, mean)
    torch.testing.assert_close(post.mvn.covariance_matrix, cov)
    noisy = model.posterior(Xs, observation_noise=True).mvn.covariance_matrix
    added = torch.diag_embed(Yvar.mean(0).repeat(2)).expand(3, -1, -1)
    torch.testing.assert_close(noisy - cov, added)
    ig = 0.5 * torch.logdet(torch.eye(G.shape[0], dtype=DT) + torch.diag(1 / Yvar.reshape(-1))
                            @ (G - torch.diag(Yvar.reshape(-1))))
    torch.testing.assert_close(model.information_gain(), ig)
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    value = mll(model(X), model.train_targets) * Y.numel()
    ref = torch.distributions.MultivariateNormal(torch.zeros(Y.numel(), dtype=DT), G)
    torch.testing.assert_close(value, ref.log_prob(Y.reshape(-1)))


def test_constant_known_noise_keeps_the_fast_path_and_equals_eta():
    kernel, X, Y, _, g = _problem()
    known = ExactMultiTaskGP(X, Y, covar_module=kernel, train_Yvar=torch.full_like(Y, 0.05))
    eta = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=0.05)
    Xs = torch.rand(4, 1, 2, generator=g, dtype=DT)
    from botorch_mtucb.multitask.solvers.exact import ICMSolver

    assert isinstance(known.solver(), ICMSolver)
    torch.testing.assert_close(known.task_posterior(Xs), eta.task_posterior(Xs))


def test_conditioning_with_noise_transforms_and_fantasies():
    kernel, X, Y, Yvar, g = _problem(t=11)
    tf = Standardize(m=2)
    model = ExactMultiTaskGP(X[:8], Y[:8], covar_module=kernel, train_Yvar=Yvar[:8],
                             outcome_transform=tf)
    Xs = torch.rand(4, 1, 2, generator=g, dtype=DT)
    model.posterior(Xs)
    std2 = tf.stdvs.pow(2).reshape(-1)
    with pytest.raises(ValueError, match="needs `noise`"):
        model.condition_on_observations(X[8:], Y[8:])
    cond = model.condition_on_observations(X[8:], Y[8:], noise=Yvar[8:] / std2)
    # scratch build with the same (frozen) transform statistics
    Yt = (Y - tf.means) / tf.stdvs
    mean, cov, _ = _brute(kernel, X, Yt, Yvar / std2, Xs)
    post = cond.posterior(Xs)
    torch.testing.assert_close(post.mean, mean * tf.stdvs + tf.means)
    torch.testing.assert_close(post.variance, (cov.diagonal(dim1=-2, dim2=-1) * std2).unsqueeze(-2))
    fm = model.fantasize(Xs[:2], SobolQMCNormalSampler(sample_shape=torch.Size([3]), seed=0))
    assert fm.posterior(Xs[:2]).mean.shape == (3, 2, 1, 2)


def test_construct_inputs_with_yvar_and_bad_input():
    kernel, X, Y, Yvar, _ = _problem()
    data = SupervisedDataset(X, Y, Yvar=Yvar, feature_names=["a", "b"], outcome_names=["f", "g"])
    inputs = ExactMultiTaskGP.construct_inputs(data)
    assert torch.equal(inputs["train_Yvar"], Yvar)
    model = ExactMultiTaskGP(**inputs, covar_module=kernel)
    assert model.known_noise
    with pytest.raises(ValueError, match="train_Yvar"):
        ExactMultiTaskGP(X, Y, train_Yvar=-Yvar)
    with pytest.raises(ValueError, match="train_Yvar"):
        ExactMultiTaskGP(X, Y, train_Yvar=Yvar[:3])
    with pytest.raises(NotImplementedError, match="train_Yvar"):
        ExactMultiTaskGP(X, Y, covar_module=kernel).condition_on_observations(X[:1], Y[:1],
                                                                              noise=Yvar[:1])
