"""BoTorch's entropy acquisitions (qJES, qPES) on TruncatedGP, and its noise-conditioning."""

import pickle

import pytest
import torch
from botorch.acquisition.joint_entropy_search import qJointEntropySearch
from botorch.acquisition.predictive_entropy_search import qPredictiveEntropySearch
from botorch.acquisition.utils import get_optimal_samples
from botorch.exceptions.errors import UnsupportedError

import botorch_mtucb.models  # noqa: F401  (registers the pathwise dispatchers)
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP

DT = torch.float64


def _model(**kwargs) -> TruncatedGP:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 2, dtype=DT, generator=g)
    Y = torch.sin(6 * X[:, :1]) + 0.1 * torch.randn(12, 1, dtype=DT, generator=g)
    return TruncatedGP(X, Y, v=1.0, **kwargs)


def _optima(model, num_optima=4):
    torch.manual_seed(1)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    return get_optimal_samples(model, bounds=bounds, num_optima=num_optima)


def test_qjes_default_arguments_finite():
    model = _model()
    xs, fs = _optima(model)
    acqf = qJointEntropySearch(model, xs, fs)  # condition_noiseless=True
    values = acqf(torch.rand(5, 1, 2, dtype=DT))
    assert values.shape == (5,) and torch.isfinite(values).all()
    noisy = qJointEntropySearch(model, xs, fs, condition_noiseless=False)
    assert torch.isfinite(noisy(torch.rand(5, 1, 2, dtype=DT))).all()


def test_qpes_finite():
    model = _model()
    xs, _ = _optima(model)
    assert len(model.train_inputs) == 1 and torch.equal(model.train_inputs[0], model.train_X)
    acqf = qPredictiveEntropySearch(model, xs)
    values = acqf(torch.rand(5, 1, 2, dtype=DT))
    assert values.shape == (5,) and torch.isfinite(values).all()


def test_noise_zero_interpolates_and_noise_lambda_is_default():
    model = _model()
    x = torch.tensor([[0.3, 0.7]], dtype=DT)
    y = torch.tensor([[0.5]], dtype=DT)
    noiseless = model.condition_on_observations(x, y, noise=torch.zeros(1, 1, dtype=DT))
    mean, var = noiseless.mean_and_variance(x)
    assert var.item() < 1e-6 and abs(mean.item() - 0.5) < 1e-4
    assert torch.equal(noiseless.train_noise, torch.cat([torch.ones(12, dtype=DT),
                                                         torch.zeros(1, dtype=DT)]))
    default = model.condition_on_observations(x, y)
    same = model.condition_on_observations(x, y, noise=torch.full((1, 1), model.lam, dtype=DT))
    Xt = torch.rand(6, 2, dtype=DT)
    for a, b in zip(same.mean_and_variance(Xt), default.mean_and_variance(Xt), strict=True):
        torch.testing.assert_close(a, b)
    assert same._obs_noise is None and same.log_det() == default.log_det()
    # the information term stays ln det(I + K_t/λ) of the inputs
    assert noiseless.log_det() == pytest.approx(default.log_det())
    # a plain conditioning after a noiseless one keeps the zero noise, also through rebuilds
    more = noiseless.condition_on_observations(torch.rand(2, 2, dtype=DT), torch.zeros(2, 1,
                                                                                         dtype=DT))
    assert more.train_noise[12] == 0 and more.train_noise[13:].eq(model.lam).all()
    assert more.mean_and_variance(x)[1].item() < 1e-6
    loaded = pickle.loads(pickle.dumps(more))
    torch.testing.assert_close(loaded.mean_and_variance(Xt), more.mean_and_variance(Xt))
    f32 = more.float()
    assert f32.train_noise[12] == 0
    assert f32.mean_and_variance(x.float())[1].item() < 1e-4


def test_noise_batched_conditioning_matches_members():
    model = _model()
    X = torch.rand(3, 1, 2, dtype=DT)
    Y = torch.randn(3, 1, 1, dtype=DT)
    batch = model.condition_on_observations(X, Y, noise=torch.zeros_like(Y))
    assert batch.batch_shape == (3,)
    _, var = batch.mean_and_variance(X)
    assert var.abs().max().item() < 1e-6


def test_noise_invalid_and_unsupported():
    model = _model()
    x, y = torch.rand(1, 2, dtype=DT), torch.zeros(1, 1, dtype=DT)
    with pytest.raises(ValueError, match="noise"):
        model.condition_on_observations(x, y, noise=-torch.ones(1, 1, dtype=DT))
    with pytest.raises(ValueError, match="noise"):
        model.condition_on_observations(x, y, noise=torch.zeros(3, 1, dtype=DT))
    arms = torch.rand(6, 2, dtype=DT)
    on_arms = TruncatedGP(arms[:4], torch.randn(4, 1, dtype=DT), v=1.0, arms=arms)
    with pytest.raises(UnsupportedError, match="condition_noiseless=False"):
        on_arms.condition_on_observations(arms[4:5], y, noise=torch.zeros(1, 1, dtype=DT))
    same = on_arms.condition_on_observations(arms[4:5], y, noise=torch.ones(1, 1, dtype=DT))
    assert same.num_observations == 5
    ata = AdaptiveTruncationGP(torch.rand(8, 1, dtype=DT), torch.randn(8, 1, dtype=DT))
    with pytest.raises(UnsupportedError, match="condition_noiseless=False"):
        ata.condition_on_observations(torch.rand(1, 1, dtype=DT), y, noise=torch.zeros(1, 1,
                                                                                      dtype=DT))


def test_paths_of_a_noiselessly_conditioned_model_pass_through_the_point() -> None:
    """Paths draw their noise with the model's own per-observation variances."""
    from botorch.sampling.pathwise import draw_matheron_paths

    g = torch.Generator().manual_seed(3)
    X = torch.rand(12, 2, dtype=torch.float64, generator=g)
    model = TruncatedGP(X, torch.sin(3 * X[:, :1]))
    x0 = torch.rand(1, 2, dtype=torch.float64, generator=g)
    y0 = torch.full((1, 1), 0.25, dtype=torch.float64)
    cond = model.condition_on_observations(x0, y0, noise=torch.zeros(1, 1, dtype=torch.float64))
    torch.manual_seed(0)
    values = draw_matheron_paths(cond, torch.Size([256]))(x0)
    assert float(values.std()) < 1e-6
    torch.testing.assert_close(values.mean(), cond.posterior(x0).mean.squeeze(), atol=1e-6,
                               rtol=0)
