"""A fitted model's training data in the problem's units (utils.model_data)."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize

from botorch_mtucb.models import practical_multitask_gp
from botorch_mtucb.utils import original_train_inputs, training_data

DT = torch.float64


def test_training_data_undoes_both_transforms_in_train_and_eval_mode():
    g = torch.Generator().manual_seed(0)
    bounds = torch.tensor([[-2.0, 1.0], [3.0, 5.0]], dtype=DT)
    X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(9, 2, generator=g, dtype=DT)
    Y = 10.0 + 3.0 * torch.randn(9, 2, generator=g, dtype=DT)
    model = practical_multitask_gp(X, Y, bounds, fit=False)  # Normalize + Standardize
    tol = {"atol": 1e-12, "rtol": 1e-12}
    for mode in (True, False):  # eval mode: BoTorch holds transformed train_inputs
        model.train(mode)
        Xm, Ym = training_data(model)
        torch.testing.assert_close(Xm, X, **tol)
        torch.testing.assert_close(Ym, Y, **tol)
        assert Xm.data_ptr() != X.data_ptr() and not Xm.requires_grad
    model.eval()
    x_new = X[:2] + 0.1
    cond = model.condition_on_observations(x_new, Y[:2] + 1.0)
    Xc, Yc = training_data(cond)
    torch.testing.assert_close(Xc, torch.cat([X, x_new]), **tol)
    torch.testing.assert_close(Yc, torch.cat([Y, Y[:2] + 1.0]), **tol)


def test_original_inputs_of_a_single_task_gp_and_errors():
    X = torch.rand(6, 3, dtype=DT) * 4.0
    gp = SingleTaskGP(X, X.sum(-1, keepdim=True), input_transform=Normalize(3)).eval()
    assert not torch.allclose(gp.train_inputs[0], X)  # eval mode holds transformed inputs
    torch.testing.assert_close(original_train_inputs(gp), X)
    with pytest.raises(TypeError, match="N x n `train_targets`"):
        training_data(gp)  # one output: train_targets is N
    with pytest.raises(TypeError, match="exact GP with `train_inputs`"):
        original_train_inputs(torch.nn.Linear(2, 2))
