"""The solver cache: reused while nothing changed, rebuilt after every kind of change."""

import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP

DT = torch.float64


def _fresh(model, X):
    return ExactMultiTaskGP(*model.train_inputs, model.train_targets,
                            covar_module=model.covar_module, noise=float(model.noise)).posterior(X)


def test_cache_reused_and_invalidated():
    g = torch.Generator().manual_seed(0)
    k = RBFKernel().to(DT)
    kernel = ICMKernel(k, 2, task_covar=torch.eye(2, dtype=DT))
    X, Y = torch.rand(8, 2, generator=g, dtype=DT), torch.randn(8, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel)
    Xs = torch.rand(3, 1, 2, generator=g, dtype=DT)
    model.posterior(Xs)
    solver = model.solver()
    assert model.solver() is solver  # nothing changed: reused
    k.lengthscale = 0.7  # a GPyTorch setter (writes through .data, no version bump)
    assert model.solver() is not solver
    torch.testing.assert_close(model.posterior(Xs).mean, _fresh(model, Xs).mean)
    solver = model.solver()
    kernel.fixed_task_covar = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=DT)  # a new buffer
    assert model.solver() is not solver
    torch.testing.assert_close(model.posterior(Xs).mean, _fresh(model, Xs).mean)
    solver = model.solver()
    model.likelihood.noise = 0.3  # noise through its setter
    assert model.solver() is not solver
    low = model.to(torch.float32)  # .to: a new solver in the new dtype
    assert low.solver().dtype == torch.float32
