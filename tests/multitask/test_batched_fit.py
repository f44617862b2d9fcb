"""``fit_gpytorch_mll`` on batched training data, and batch-mode queries (BoTorch's
``test_multitask.py`` batch-mode patterns: shapes, per-member equality, shape errors)."""

import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms import Normalize, Standardize
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DT = torch.float64


def _data(batch=(3,), t=10, dtype=DT, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(*batch, t, 2, generator=g, dtype=dtype)
    f = torch.stack([torch.sin(6 * X[..., 0]) + X[..., 1], torch.cos(5 * X.sum(-1))], -1)
    return X, f + 0.1 * torch.randn(f.shape, generator=g, dtype=dtype)


def _mll_value(model):
    """Each member's normalised MLL (``batch_shape``) at the current hyperparameters."""
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with torch.no_grad():
        value = mll(model(*model.train_inputs), model.train_targets)
    model.eval()
    return value


def _member(model, X, Y, i, **kw):
    """An unbatched model of member ``i`` with ``model``'s (shared) hyperparameters."""
    member = ExactMultiTaskGP(X[i], Y[i], learn_noise=True, **kw)
    state = {k: v for k, v in model.state_dict().items() if "transform" not in k}
    member.load_state_dict(state, strict=False)
    return member


@pytest.mark.filterwarnings("ignore::linear_operator.utils.warnings.NumericalWarning")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fit_gpytorch_mll_on_batched_training_data(dtype):
    X, Y = _data(dtype=dtype)
    model = ExactMultiTaskGP(X, Y, learn_noise=True)
    start = _mll_value(model)
    assert start.shape == (3,)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    fitted = _mll_value(model)
    assert bool((fitted > start).all())  # each member's MLL rises
    # the hyperparameters are shared: each member's MLL is its own model's at those values
    for i in range(3):
        member = _member(model, X, Y, i)
        torch.testing.assert_close(_mll_value(member), fitted[i], rtol=1e-4, atol=1e-4)
        Xs = torch.rand(4, 2, dtype=dtype)
        post = model.posterior(Xs.expand(3, 4, 2))
        torch.testing.assert_close(post.mean[i], member.posterior(Xs).mean, rtol=1e-4, atol=1e-4)


def test_batched_fit_with_transforms_and_a_second_batch_dimension():
    X, Y = _data(batch=(2, 2))
    model = ExactMultiTaskGP(X, Y, learn_noise=True, input_transform=Normalize(d=2),
                             outcome_transform=Standardize(m=2, batch_shape=torch.Size([2, 2])))
    start = _mll_value(model)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    assert bool((_mll_value(model) > start).all())
    post = model.posterior(torch.rand(5, 2, 2, 3, 2, dtype=DT))
    assert post.mean.shape == (5, 2, 2, 3, 2)


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_batch_mode_shapes_and_wrong_batch_shape_errors(cls):
    X, Y = _data()
    kw = {"generator": 0} if cls is NystromMultiTaskGP else {}
    model = cls(X, Y, **kw)
    assert model.batch_shape == torch.Size([3])
    for Xs, shape in [
        (torch.rand(4, 2, dtype=DT), (3, 4, 2)),  # q x d broadcasts over the batch
        (torch.rand(3, 4, 2, dtype=DT), (3, 4, 2)),
        (torch.rand(5, 3, 4, 2, dtype=DT), (5, 3, 4, 2)),
        (torch.rand(5, 1, 4, 2, dtype=DT), (5, 3, 4, 2)),
    ]:
        assert model.posterior(Xs).mean.shape == shape
        mean, blocks = model.task_posterior(Xs)
        assert mean.shape == shape and blocks.shape == (*shape, 2)
    for Xs in (torch.rand(4, 5, 2, dtype=DT), torch.rand(2, 4, 5, 2, dtype=DT)):
        for call in (model.posterior, model.task_posterior):
            with pytest.raises((BotorchTensorDimensionError, ValueError), match=r"3"):
                call(Xs)
    with pytest.raises(BotorchTensorDimensionError, match=r"batch_shape.*\(3,\)"):
        ExactMultiTaskGP(X, Y).posterior(torch.rand(4, 5, 2, dtype=DT))
