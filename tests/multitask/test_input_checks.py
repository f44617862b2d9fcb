"""No silent failure: clear errors (naming the argument) or correct results for bad inputs."""

import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.exceptions.warnings import InputDataWarning
from botorch.models.transforms import Standardize
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.models import (
    ExactMultiTaskGP,
    NystromMultiTaskGP,
    practical_multitask_gp,
)
from botorch_mtucb.settings import check_test_inputs

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _data(t=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, 2, generator=g, dtype=DT)
    S = torch.stack([torch.sin(6 * X[:, 0]), torch.cos(5 * X[:, 1])], -1)
    return X, S


def _models():
    X, Y = _data()
    Xb, Yb = X.expand(2, -1, -1), Y.expand(2, -1, -1)
    return [ExactMultiTaskGP(X, Y), NystromMultiTaskGP(X, Y, generator=0),
            practical_multitask_gp(X, Y, BOUNDS, fit=False), NystromMultiTaskGP(Xb, Yb)]


@pytest.mark.parametrize("k", range(4))
def test_test_inputs_are_checked_on_every_public_query(k):
    model = _models()[k]
    X = torch.rand(3, 2, dtype=DT)
    W = torch.eye(2, dtype=DT)
    calls = [model.posterior, model.task_posterior,
             lambda x: model.projected_task_posterior(x, W)]
    for call in calls:
        with pytest.raises(TypeError, match="`X` must be a torch.Tensor, got ndarray"):
            call(X.numpy())
        with pytest.raises(TypeError, match="`X` must be a float32 or float64.*bfloat16"):
            call(X.bfloat16())
        with pytest.raises(TypeError, match="`X` must be a float32 or float64.*int64"):
            call(X.long())
        bad = X.clone()
        bad[1, 0] = float("nan")
        with pytest.raises(ValueError, match="`X` contains NaN"):  # no settings flag needed
            call(bad)
        with check_test_inputs(False), pytest.raises(ValueError, match="`X` contains NaN"):
            call(bad)  # the flag is kept for old code and has no effect


@pytest.mark.parametrize("k", range(4))
def test_empty_test_batches(k):
    model = _models()[k]
    lead = model.batch_shape
    for shape in [(0, 2), (*(lead or (3,)), 0, 2)]:
        X = torch.rand(shape, dtype=DT)
        batch = torch.broadcast_shapes(X.shape[:-2], lead)
        post = model.posterior(X)
        assert post.mean.shape == (*batch, 0, 2)
        mean, blocks = model.task_posterior(X)
        assert mean.shape == (*batch, 0, 2) and blocks.shape == (*batch, 0, 2, 2)
        mean, quad = model.projected_task_posterior(X, torch.ones(2, 3, dtype=DT))
        assert mean.shape == (*batch, 0, 2) and quad.shape == (*batch, 0, 3)
    if not lead:  # (a batched model refuses an empty batch as a shape mismatch)
        mean, blocks = model.task_posterior(torch.rand(0, 1, 2, dtype=DT))
        assert mean.shape == (0, 1, 2) and blocks.shape == (0, 1, 2, 2)
        with pytest.raises(ValueError, match="empty batch_shape"):
            model.posterior(torch.rand(0, 1, 2, dtype=DT))


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_training_data_errors_name_the_argument(cls):
    X, Y = _data()
    for args, pattern in [
        ((X.tolist(), Y), "`train_X` must be a torch.Tensor, got list"),
        ((X, Y.tolist()), "`train_Y` must be a torch.Tensor, got list"),
        ((X.numpy(), Y), "`train_X` must be a torch.Tensor, got ndarray"),
        ((X.bfloat16(), Y.bfloat16()), "float32 or float64.*bfloat16"),
        ((X.half(), Y.half()), "float32 or float64.*float16"),
    ]:
        with pytest.raises(ValueError, match=pattern):
            cls(*args)
    with pytest.raises(InputDataError, match="same dtype.*float32.*train_X.*float64.*train_Y"):
        cls(X.float(), Y)
    with pytest.raises(InputDataError, match="same dtype"):
        cls(X, Y.float())


def test_known_noise_of_another_dtype_is_refused():
    X, Y = _data()
    with pytest.raises(InputDataError, match="train_Yvar"):
        ExactMultiTaskGP(X, Y, train_Yvar=torch.full_like(Y, 0.01).float())


def test_float32_targets_far_from_zero_are_accurate_or_warned():
    X, S = _data(t=30)
    Xs = torch.rand(50, 1, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    # offset 1e3: float32 still resolves the signal; the posterior must be as accurate
    Y32 = (S + 1e3).float()
    ref = ExactMultiTaskGP(X.float().double(), Y32.double(), noise=0.01)  # same data, float64
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputDataWarning)  # no data warning needed here
        warnings.simplefilter("ignore", NumericalWarning)
        model = ExactMultiTaskGP(X.float(), Y32, noise=0.01)
        mean = model.posterior(Xs.float()).mean
    torch.testing.assert_close(mean.double(), ref.posterior(Xs).mean, atol=5e-4 * S.std(), rtol=0)
    # offset 1e5 and 1e7: float32 data keep little of the signal: a data warning
    for offset in (1e5, 1e7):
        with pytest.warns(InputDataWarning, match="train_Y.*far from standardised"):
            model = ExactMultiTaskGP(X.float(), (S + offset).float(), noise=0.01)
        ref = ExactMultiTaskGP(X.float().double(), (S + offset).float().double(), noise=0.01)
        with pytest.warns(NumericalWarning, match="spread"):
            mean = model.posterior(Xs.float()).mean
        # accurate for the data it was given: the error is float32 rounding of the output
        ulp = torch.finfo(torch.float32).eps * offset
        torch.testing.assert_close(mean.double(), ref.posterior(Xs).mean, atol=2 * ulp, rtol=0)
    # standardised outcomes (or float64 data) need no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputDataWarning)
        ExactMultiTaskGP(X.float(), (S + 1e5).float(), outcome_transform=Standardize(m=2))
        ExactMultiTaskGP(X, S + 1e7)


def test_practical_model_argument_checks():
    X, Y = _data()
    for fit in (True, False):
        with pytest.raises(ValueError, match="`fit_kwargs`.*bogus"):
            practical_multitask_gp(X, Y, BOUNDS, fit=fit, fit_kwargs={"bogus": 1})
    with pytest.raises(TypeError, match="`fit_kwargs` must be a dict"):
        practical_multitask_gp(X, Y, BOUNDS, fit_kwargs=[("max_attempts", 1)])
    model = practical_multitask_gp(X, Y, BOUNDS, fit_kwargs={"max_attempts": 1})
    assert model.posterior(X[:2]).mean.shape == (2, 2)
    with pytest.raises(InputDataError, match="same dtype"):
        practical_multitask_gp(X.float(), Y, BOUNDS, fit=False)
    with pytest.warns(InputDataWarning, match="3 of the 12 rows of `train_X`.*`bounds`"):
        practical_multitask_gp(torch.cat([X[:9], X[9:] + 2.0]), Y, BOUNDS, fit=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputDataWarning)
        practical_multitask_gp(X, Y, BOUNDS, fit=False)  # inside: silent


def _mean_only_models():
    """Every posterior path: ICM (exact, Standardize), per-task sum (dense), independent
    tasks, Nyström, a batched Nyström model."""
    X, Y = _data()
    per_task = practical_multitask_gp(X, Y, BOUNDS, fit=False, per_task=True)
    return [*_models(), per_task, practical_multitask_gp(X, Y, BOUNDS, fit=False,
                                                         independent=True)]


@pytest.mark.parametrize("k", range(6))
def test_projected_posterior_without_directions_is_the_posterior_mean(k):
    """``projected_task_posterior(X, W)`` with ``W`` of ``k = 0`` columns (what the payoff
    table asks for) returns ``posterior(X).mean`` and its input gradient, and no variances."""
    model = _mean_only_models()[k].eval()
    g = torch.Generator().manual_seed(3)
    Xs = torch.rand(5, 1, 2, generator=g, dtype=DT)
    if k == 3:  # the batched Nyström model: batch_shape 2
        Xs = Xs.unsqueeze(1).expand(5, 2, 1, 2)
    X1, X2 = Xs.clone().requires_grad_(True), Xs.clone().requires_grad_(True)
    mean, quad = model.projected_task_posterior(X1, torch.zeros(2, 0, dtype=DT))
    ref = model.posterior(X2).mean
    assert quad.shape == (*mean.shape[:-1], 0)
    torch.testing.assert_close(mean, ref, atol=1e-11, rtol=1e-10)
    (g1,) = torch.autograd.grad(mean.sum(), X1)
    (g2,) = torch.autograd.grad(ref.sum(), X2)
    torch.testing.assert_close(g1, g2, atol=1e-10, rtol=1e-9)
