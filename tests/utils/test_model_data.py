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
    Xm, Ym = training_data(gp)  # one output: train_targets is N, returned N x 1
    torch.testing.assert_close(Xm, X)
    torch.testing.assert_close(Ym, X.sum(-1, keepdim=True))
    batched = SingleTaskGP(X.expand(2, -1, -1), X.sum(-1, keepdim=True).expand(2, -1, -1))
    with pytest.raises(TypeError, match="N x n `train_targets`"):
        training_data(batched)  # batched training data: no single set of evaluated points
    with pytest.raises(TypeError, match="exact GP with `train_inputs`"):
        original_train_inputs(torch.nn.Linear(2, 2))


def test_botorchs_output_batched_model_and_model_list():
    """A multi-output SingleTaskGP (inputs expanded to n x N x d, targets n x N) and a
    ModelListGP of single-output members give N x d inputs and N x n outcomes in the
    problem's units; members trained on different inputs are refused."""
    from botorch.models import ModelListGP
    from botorch.models.transforms import Standardize

    g = torch.Generator().manual_seed(1)
    X = 5.0 * torch.rand(7, 2, generator=g, dtype=DT)
    Y = torch.stack([X.sum(-1), X.prod(-1) - 3.0], -1)
    multi = SingleTaskGP(X, Y, input_transform=Normalize(2), outcome_transform=Standardize(2))
    members = [SingleTaskGP(X, Y[:, i : i + 1], input_transform=Normalize(2),
                            outcome_transform=Standardize(1)) for i in range(2)]
    for model in (multi, ModelListGP(*members)):
        for mode in (True, False):
            model.train(mode)
            Xm, Ym = training_data(model)
            torch.testing.assert_close(Xm, X)
            torch.testing.assert_close(Ym, Y)
            torch.testing.assert_close(original_train_inputs(model), X)
    other = ModelListGP(SingleTaskGP(X, Y[:, :1]), SingleTaskGP(X + 1.0, Y[:, 1:]))
    with pytest.raises(TypeError, match="trained on different inputs"):
        training_data(other)
