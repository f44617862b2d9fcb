"""Device-agnostic models: everything runs where the training data live (cuda when present)."""

import pytest
import torch
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_multi_task_models_follow_the_data_device(cls, device):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 2, generator=g, dtype=torch.float64).to(device)
    Y = torch.randn(12, 2, generator=g, dtype=torch.float64).to(device)
    model = cls(X, Y)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    model.train()
    loss = -mll(model(*model.train_inputs), model.train_targets)
    loss.backward()
    model.eval()
    Xs = torch.rand(5, 1, 2, dtype=torch.float64, device=device, requires_grad=True)
    w = torch.tensor([0.5, 0.5], dtype=torch.float64, device=device)
    s = ChebyshevScalarization(w, ref_point=torch.zeros_like(w))
    val = ScalarizedMultiTaskUCB(model, s, beta=1.0)(Xs)
    val.sum().backward()
    assert val.device.type == device and Xs.grad.device.type == device
    assert torch.isfinite(Xs.grad).all()
    post = model.posterior(Xs.detach())
    assert post.mean.device.type == device
    acqf = qLogNoisyExpectedHypervolumeImprovement(model, ref_point=[-3.0, -3.0], X_baseline=X)
    assert acqf(Xs.detach()).device.type == device


def test_cuda_is_exercised_when_available():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine: the cuda cases above are not collected")
    assert "cuda" in DEVICES
