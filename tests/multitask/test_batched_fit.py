"""``fit_gpytorch_mll`` on batched training data (one set of hyperparameters per member, as
BoTorch's batched models), and batch-mode queries (BoTorch's ``test_multitask.py`` batch-mode
patterns: shapes, per-member equality, shape errors)."""

import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms import Normalize, Standardize
from botorch.sampling.normal import SobolQMCNormalSampler
from gpytorch.kernels import RBFKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.kernels import ICMKernel
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


def _fit(model):
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


@pytest.mark.filterwarnings("ignore::linear_operator.utils.warnings.NumericalWarning")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fit_gpytorch_mll_on_batched_training_data(dtype):
    X, Y = _data(dtype=dtype)
    model = ExactMultiTaskGP(X, Y, learn_noise=True)
    # one set of hyperparameters per member: BoTorch's batched fit path (``_aug_batch_shape``)
    assert model._aug_batch_shape == torch.Size([3])
    for name, p in model.named_parameters():
        assert p.shape[:1] == (3,), name
    assert model.covar_module.task_covar_matrix.shape == (3, 2, 2)
    assert model.noise.shape == (3, 1, 1)
    start = _mll_value(model)
    assert start.shape == (3,)
    _fit(model)
    fitted = _mll_value(model)
    assert bool((fitted > start).all())  # each member's MLL rises
    assert not torch.allclose(model.noise[0], model.noise[1])  # the members differ
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([4]))
    fantasy = model.fantasize(torch.rand(3, 2, 2, dtype=dtype), sampler=sampler)
    assert fantasy.posterior(torch.rand(3, 1, 2, dtype=dtype)).mean.shape == (4, 3, 1, 2)


@pytest.mark.filterwarnings("ignore::linear_operator.utils.warnings.NumericalWarning")
@pytest.mark.parametrize("transforms", [False, True])
def test_batched_fit_equals_fitting_each_member_alone(transforms):
    """Fitting a batch jointly gives each member the hyperparameters and posterior of fitting
    that member alone (same initialisation, same L-BFGS-B settings)."""
    batch = torch.Size([3])
    X, Y = _data(batch=tuple(batch), t=12)

    def tf(b):
        if not transforms:
            return {}
        return {"input_transform": Normalize(d=2, batch_shape=b),
                "outcome_transform": Standardize(m=2, batch_shape=b)}

    model = _fit(ExactMultiTaskGP(X, Y, learn_noise=True, **tf(batch)))
    Xs = torch.rand(5, 2, dtype=DT)
    post = model.posterior(Xs.expand(3, 5, 2))
    mean, blocks = model.task_posterior(Xs)
    gains = model.information_gain()
    g = torch.Generator().manual_seed(2)
    Xn, Yn = torch.rand(3, 2, 2, generator=g, dtype=DT), torch.randn(3, 2, 2, generator=g, dtype=DT)
    cond = model.condition_on_observations(Xn, Yn).posterior(Xs.expand(3, 5, 2))
    for i in range(3):
        alone = _fit(ExactMultiTaskGP(X[i], Y[i], learn_noise=True, **tf(torch.Size())))
        params = dict(alone.named_parameters())
        for name, p in model.named_parameters():
            torch.testing.assert_close(p[i], params[name], rtol=1e-6, atol=1e-6)
        ref = alone.posterior(Xs)
        torch.testing.assert_close(post.mean[i], ref.mean, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(post.mvn.covariance_matrix[i], ref.mvn.covariance_matrix,
                                   rtol=1e-6, atol=1e-6)
        rm, rb = alone.task_posterior(Xs)
        torch.testing.assert_close(mean[i], rm, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(blocks[i], rb, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(gains[i], alone.information_gain(), rtol=1e-6, atol=1e-6)
        noisy = model.posterior(Xs.expand(3, 5, 2), observation_noise=True).variance[i]
        torch.testing.assert_close(noisy, alone.posterior(Xs, observation_noise=True).variance,
                                   rtol=1e-6, atol=1e-6)
        alone_cond = alone.condition_on_observations(Xn[i], Yn[i]).posterior(Xs)
        torch.testing.assert_close(cond.mean[i], alone_cond.mean, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(cond.variance[i], alone_cond.variance, rtol=1e-6, atol=1e-6)


def test_batched_known_noise_gives_each_member_its_own_variances():
    X, Y = _data(batch=(2,), t=8)
    Yvar = 0.01 + 0.1 * torch.rand(Y.shape, generator=torch.Generator().manual_seed(1),
                                   dtype=DT)
    model = ExactMultiTaskGP(X, Y, train_Yvar=Yvar)
    Xs = torch.rand(3, 2, dtype=DT)
    post = model.posterior(Xs)
    noisy = model.posterior(Xs, observation_noise=True)
    for i in range(2):
        alone = ExactMultiTaskGP(X[i], Y[i], train_Yvar=Yvar[i])
        state = {k: v[i] for k, v in model.named_parameters() if "covar_module" in k}
        alone.load_state_dict(state, strict=False)
        torch.testing.assert_close(post.mean[i], alone.posterior(Xs).mean)
        torch.testing.assert_close(post.variance[i], alone.posterior(Xs).variance)
        torch.testing.assert_close(
            noisy.variance[i], alone.posterior(Xs, observation_noise=True).variance
        )


def test_a_shared_kernel_keeps_shared_hyperparameters():
    """A user kernel without the data's batch shape is shared by the members (and so is η):
    ``fit_gpytorch_mll`` maximises the members' summed marginal likelihood."""
    X, Y = _data()
    kernel = ICMKernel(RBFKernel(ard_num_dims=2), num_tasks=2, rank=2)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, learn_noise=True)
    assert model._aug_batch_shape == torch.Size()
    assert model.noise.shape == () and model.covar_module.task_covar_matrix.shape == (2, 2)
    start = _mll_value(model)
    _fit(model)
    assert bool(_mll_value(model).sum() > start.sum())
    # a kernel with the data's batch shape: per-member hyperparameters
    kernel = ICMKernel(RBFKernel(ard_num_dims=2, batch_shape=torch.Size([3])), num_tasks=2,
                       rank=2, batch_shape=torch.Size([3]))
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, learn_noise=True)
    assert model._aug_batch_shape == torch.Size([3]) and model.noise.shape == (3, 1, 1)


@pytest.mark.filterwarnings("ignore::linear_operator.utils.warnings.NumericalWarning")
def test_batched_fit_with_transforms_and_a_second_batch_dimension():
    X, Y = _data(batch=(2, 2))
    model = ExactMultiTaskGP(X, Y, learn_noise=True, input_transform=Normalize(d=2),
                             outcome_transform=Standardize(m=2, batch_shape=torch.Size([2, 2])))
    assert model._aug_batch_shape == torch.Size([2, 2])
    start = _mll_value(model)
    _fit(model)
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
