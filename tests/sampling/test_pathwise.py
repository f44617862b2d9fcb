"""Pathwise (Matheron) sampling of the package's models through BoTorch's dispatchers.

Sample moments of many paths are compared with the exact posterior (z-scores against the
Monte-Carlo standard errors, plus the random-feature error where the features draw their
frequencies at random: another task matrix or a missing noise draw ε fails these checks),
and with BoTorch's own paths of a ``SingleTaskGP`` with the same hyperparameters.
"""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.joint_entropy_search import qJointEntropySearch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.acquisition.predictive_entropy_search import qPredictiveEntropySearch
from botorch.acquisition.thompson_sampling import PathwiseThompsonSampling
from botorch.acquisition.utils import get_optimal_samples
from botorch.exceptions.errors import UnsupportedError
from botorch.models import SingleTaskGP
from botorch.sampling.pathwise import draw_kernel_feature_paths, draw_matheron_paths
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from torch import Tensor

import botorch_mtucb.sampling  # noqa: F401  (registers the dispatchers)
from botorch_mtucb.features import QuadratureFourierFeatures
from botorch_mtucb.kernels import (
    ICMKernel,
    IndependentTasksKernel,
    PrecomputedKernel,
    SumOfSeparableKernel,
)
from botorch_mtucb.models import (
    AdaptiveTruncationGP,
    ExactMultiTaskGP,
    NystromMultiTaskGP,
    TruncatedGP,
    practical_multitask_gp,
)
from botorch_mtucb.sampling import DEFAULT_NUM_FEATURES, draw_exact_multitask_paths, psd_sqrt

S = 4000  # paths per moment check
Z_MAX = 5.0  # largest allowed |z| of a sample moment
D64 = torch.float64


def _rbf(lengthscale: float, dtype: torch.dtype = D64) -> RBFKernel:
    k = RBFKernel().to(dtype)
    k.lengthscale = lengthscale
    return k


def _flat(samples: Tensor, n: int) -> Tensor:
    """``S x n x q`` (or ``S x q``) path values as ``S x (q·n)`` in interleaved order."""
    if n == 1:
        return samples
    return samples.transpose(-1, -2).reshape(samples.shape[0], -1)


def _z_scores(
    samples: Tensor, mean: Tensor, cov: Tensor, feature_se: float = 0.0
) -> tuple[float, float]:
    """Largest |z| of the sample mean and the sample covariance of ``samples: S x m``.

    The covariance's standard error adds ``feature_se``, that of the random-feature prior
    (its mean is exact whatever the features).
    """
    samples, mean, cov = samples.detach().double(), mean.detach().double(), cov.detach().double()
    num = samples.shape[0]
    var = cov.diagonal()
    z_mean = (samples.mean(0) - mean) / (var / num).sqrt()
    se_cov = ((var[:, None] * var[None, :] + cov**2) / num + feature_se**2).sqrt()
    z_cov = (torch.cov(samples.T) - cov) / se_cov
    return float(z_mean.abs().max()), float(z_cov.abs().max())


def _feature_se(model, Xt: Tensor, num_features: int = DEFAULT_NUM_FEATURES) -> float:
    """``√(2/F) · max prior variance``: the standard error of a random-feature covariance
    with ``F`` random frequencies (BoTorch's Matern features); 0 for the RBF kernel, whose
    frequencies are quasi-random (Sobol), with a much smaller error."""
    kernel = getattr(model, "covar_module", None)  # AdaptiveTruncationGP: exact paths
    if kernel is None or not any(isinstance(k, MaternKernel) for k in kernel.modules()):
        return 0.0
    if isinstance(model, TruncatedGP):
        var = model.covar_module(Xt, diag=True).max()
    else:
        var = model.covar_module(model.transform_inputs(Xt), diag=True).max()
    tf = getattr(model, "outcome_transform", None)
    scale = 1.0 if tf is None else tf.stdvs.max() ** 2
    return (2 / num_features) ** 0.5 * float((var * scale).detach())


def _check_against_posterior(
    model, paths, Xt: Tensor, n: int, feature_se: float | None = None
) -> None:
    post = model.posterior(Xt)
    mean = post.mean.reshape(-1)
    cov = post.distribution.covariance_matrix
    if feature_se is None:
        feature_se = _feature_se(model, Xt)
    z_mean, z_cov = _z_scores(_flat(paths(Xt), n), mean, cov, feature_se)
    assert z_mean < Z_MAX, z_mean
    assert z_cov < Z_MAX, z_cov


def _data(N: int = 8, n: int = 2, d: int = 1, dtype: torch.dtype = D64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, d, generator=g, dtype=dtype)
    Y = torch.sin(4 * X.sum(-1, keepdim=True)) * torch.linspace(1, 2, n, dtype=dtype)
    Y = Y + 0.2 * torch.randn(N, n, generator=g, dtype=dtype)
    return X, Y


XT = torch.tensor([[0.1], [0.5], [0.52], [1.3]], dtype=D64)  # near, between, far from data


def _kernel(kind: str):
    B = torch.tensor([[1.0, 0.6], [0.6, 0.8]], dtype=D64)
    if kind == "icm":
        return ICMKernel(_rbf(0.3), 2, task_covar=B)
    if kind == "matern":
        return ICMKernel(MaternKernel(nu=2.5).to(D64), 2, task_covar=B)
    if kind == "independent":
        return IndependentTasksKernel([_rbf(0.3), _rbf(0.6)])
    return SumOfSeparableKernel([
        ICMKernel(_rbf(0.5), 2, task_covar=torch.ones(2, 2, dtype=D64)),
        ICMKernel(_rbf(0.2), 2, task_covar=0.5 * torch.eye(2, dtype=D64)),
    ])


@pytest.mark.parametrize("kind", ["icm", "matern", "independent", "sum"])
@pytest.mark.parametrize("noise", [0.05, 0.5])
def test_moments_match_exact_posterior(kind, noise):
    torch.manual_seed(1)
    X, Y = _data()
    model = ExactMultiTaskGP(X, Y, covar_module=_kernel(kind), noise=noise)
    paths = draw_matheron_paths(model, torch.Size([S]))
    _check_against_posterior(model, paths, XT, 2)


def test_moments_known_heteroscedastic_noise():
    torch.manual_seed(2)
    X, Y = _data()
    Yvar = torch.linspace(0.01, 0.3, 16, dtype=D64).reshape(8, 2)
    model = ExactMultiTaskGP(X, Y, covar_module=_kernel("icm"), train_Yvar=Yvar)
    _check_against_posterior(model, draw_matheron_paths(model, torch.Size([S])), XT, 2)


def test_practical_model_with_transforms_and_mean():
    """Normalize, Standardize and a constant mean: paths in the original units."""
    torch.manual_seed(3)
    X, Y = _data(N=10, n=3, d=2)
    bounds = torch.tensor([[0.0, 0.0], [4.0, 4.0]], dtype=D64)
    model = practical_multitask_gp(4 * X, 30 + 5 * Y, bounds, fit=False)
    assert hasattr(model, "input_transform") and hasattr(model, "outcome_transform")
    Xt = torch.tensor([[0.4, 1.0], [2.0, 2.0], [3.9, 0.1]], dtype=D64)
    _check_against_posterior(model, draw_matheron_paths(model, torch.Size([S])), Xt, 3)


def test_wrong_task_matrix_is_detected():
    """The moment check has power: paths of another B fail it."""
    torch.manual_seed(4)
    X, Y = _data()
    model = ExactMultiTaskGP(X, Y, covar_module=_kernel("icm"), noise=0.05)
    other = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(
        _rbf(0.3), 2, task_covar=torch.tensor([[1.0, 0.2], [0.2, 0.8]], dtype=D64)), noise=0.05)
    post = model.posterior(XT)
    samples = _flat(draw_matheron_paths(other, torch.Size([S]))(XT), 2)
    z_mean, z_cov = _z_scores(samples, post.mean.reshape(-1), post.distribution.covariance_matrix,
                              _feature_se(model, XT))
    assert max(z_mean, z_cov) > 2 * Z_MAX


def _single_task_pair(dtype: torch.dtype = D64):
    X, Y = _data(n=1, dtype=dtype)
    ours = ExactMultiTaskGP(
        X, Y, covar_module=ICMKernel(_rbf(0.3, dtype), 1, task_covar=torch.ones(1, 1)),
        noise=0.05,
    )
    theirs = SingleTaskGP(X, Y, covar_module=_rbf(0.3, dtype), outcome_transform=None)
    theirs.likelihood.noise = 0.05
    theirs.eval()
    return ours, theirs


def test_single_task_matches_botorch_single_task_gp():
    torch.manual_seed(5)
    ours, theirs = _single_task_pair()
    a = draw_matheron_paths(ours, torch.Size([S]))(XT)
    b = draw_matheron_paths(theirs, torch.Size([S]))(XT)
    assert a.shape == b.shape == (S, XT.shape[0])
    post = theirs.posterior(XT)
    mean, cov = post.mean.reshape(-1), post.distribution.covariance_matrix
    for samples in (a, b):  # both sample the same posterior
        assert max(_z_scores(samples, mean, cov, _feature_se(ours, XT))) < Z_MAX
    # and agree with each other (two-sample z-scores)
    var = cov.diagonal().detach()
    z = (a.mean(0) - b.mean(0)).detach() / (2 * var / S).sqrt()
    assert float(z.abs().max()) < Z_MAX


def test_independent_tasks_match_botorch_per_task():
    """A diagonal B: each task's paths are those of a SingleTaskGP on that task alone."""
    torch.manual_seed(6)
    X, Y = _data()
    model = ExactMultiTaskGP(
        X, Y, covar_module=IndependentTasksKernel([_rbf(0.3), _rbf(0.6)]), noise=0.05
    )
    ours = draw_matheron_paths(model, torch.Size([S]))(XT)  # S x 2 x q
    for i, ls in enumerate((0.3, 0.6)):
        gp = SingleTaskGP(X, Y[:, i : i + 1], covar_module=_rbf(ls), outcome_transform=None)
        gp.likelihood.noise = 0.05
        gp.eval()
        theirs = draw_matheron_paths(gp, torch.Size([S]))(XT)
        var = gp.posterior(XT).variance.reshape(-1).detach()
        z_mean = (ours[:, i].mean(0) - theirs.mean(0)).detach() / (2 * var / S).sqrt()
        z_var = (ours[:, i].var(0) - theirs.var(0)).detach() / (var * (4 / S) ** 0.5)
        assert float(z_mean.abs().max()) < Z_MAX
        assert float(z_var.abs().max()) < Z_MAX


@pytest.mark.parametrize("declared", [True, False])
def test_truncated_gp_moments(declared):
    torch.manual_seed(7)
    X, Y = _data(N=12, n=1)
    Y[3] = 25.0  # a heavy-tailed reward: truncated
    model = TruncatedGP(X, Y, v=2.0) if declared else TruncatedGP(X, Y)
    paths = draw_matheron_paths(model, torch.Size([S]))
    assert paths(XT).shape == (S, XT.shape[0])
    _check_against_posterior(model, paths, XT, 1)


def test_truncated_gp_matches_botorch_on_truncated_targets():
    """TGP's posterior is a GP's on ŷ with kernel k and noise λ: BoTorch's paths agree."""
    torch.manual_seed(8)
    X, Y = _data(N=12, n=1)
    Y[3] = 25.0
    model = TruncatedGP(X, Y, v=2.0, lam=0.5)
    gp = SingleTaskGP(X, model.train_targets.unsqueeze(-1), covar_module=model.covar_module,
                      outcome_transform=None)
    gp.likelihood.noise = 0.5
    gp.eval()
    a = draw_matheron_paths(model, torch.Size([S]))(XT)
    b = draw_matheron_paths(gp, torch.Size([S]))(XT)
    var = model.posterior(XT).variance.reshape(-1).detach()
    z = (a.mean(0) - b.mean(0)).detach() / (2 * var / S).sqrt()
    assert float(z.abs().max()) < Z_MAX
    z_var = (a.var(0) - b.var(0)).detach() / (var * (4 / S) ** 0.5)
    assert float(z_var.abs().max()) < Z_MAX


def _adaptive(dtype: torch.dtype = D64) -> AdaptiveTruncationGP:
    X, Y = _data(N=20, n=1, dtype=dtype)
    Y[5] = -30.0
    qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=16, dim=1)
    return AdaptiveTruncationGP(X, Y, alpha=0.5, v=4.0, features=qff, horizon=100)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adaptive_truncation_qff_moments(dtype):
    """ATA-GP-UCB with QFF: exact paths of its Bayesian linear model (no feature error)."""
    torch.manual_seed(13)
    model = _adaptive(dtype)
    paths = draw_matheron_paths(model, torch.Size([S]))
    Xt = XT[:3].to(dtype)  # in [0, 1], the QFF domain
    out = paths(Xt)
    assert out.shape == (S, 3) and out.dtype == dtype
    _check_against_posterior(model, paths, Xt, 1)


def test_conditioned_model_paths():
    """``condition_on_observations`` copies sample their own (extended) posterior."""
    torch.manual_seed(14)
    X, Y = _data()
    model = ExactMultiTaskGP(X, Y, covar_module=_kernel("icm"), noise=0.3)
    new = model.condition_on_observations(XT[1:3], torch.ones(2, 2, dtype=D64))
    _check_against_posterior(new, draw_matheron_paths(new, torch.Size([S])), XT, 2)


def test_float32_model_with_float64_working_dtype():
    """A float32 model too badly conditioned for float32 solves in float64 (a warning).

    With small noise and many points the random-feature error of the prior shows in float64
    as well: the check allows the plain Monte-Carlo error of ``F`` random features.
    """
    torch.manual_seed(15)
    X, Y = _data(N=30, dtype=torch.float32)
    B = torch.tensor([[1.0, 0.6], [0.6, 0.8]])
    Xt = torch.tensor([[1.2], [1.5], [-0.4]])
    with pytest.warns(Warning):
        model = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(_rbf(0.3, torch.float32), 2,
                                                              task_covar=B), noise=2e-3)
        model.posterior(Xt)
        paths = draw_matheron_paths(model, torch.Size([S]))
        assert paths["update_paths"].dtype == torch.float64
        assert paths(Xt).dtype == torch.float32
        _check_against_posterior(model, paths, Xt, 2, (2 / DEFAULT_NUM_FEATURES) ** 0.5)


def test_get_optimal_samples_multitask_and_truncated():
    torch.manual_seed(9)
    X, Y = _data(N=10, n=3, d=2)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=D64)
    model = ExactMultiTaskGP(X, Y)
    tf = ScalarizedPosteriorTransform(torch.tensor([0.5, 0.3, 0.2], dtype=D64))
    xs, fs = get_optimal_samples(model, bounds, num_optima=4, raw_samples=64,
                                 num_restarts=2, posterior_transform=tf)
    assert xs.shape == (4, 2) and fs.shape == (4, 3)
    assert bool(((xs >= 0) & (xs <= 1)).all())
    practical = practical_multitask_gp(X, Y, bounds, fit=False)
    xs, fs = get_optimal_samples(practical, bounds, num_optima=4, raw_samples=64,
                                 num_restarts=2, posterior_transform=tf)
    assert xs.shape == (4, 2) and torch.isfinite(fs).all()
    tgp = TruncatedGP(X, Y[:, :1], v=2.0)
    xs, fs = get_optimal_samples(tgp, bounds, num_optima=4, raw_samples=64, num_restarts=2)
    assert xs.shape == (4, 2) and fs.shape == (4, 1)
    # the entropy-search and Thompson-sampling acquisitions built on them (TGP conditions
    # without per-observation noise)
    jes = qJointEntropySearch(tgp, optimal_inputs=xs, optimal_outputs=fs,
                              condition_noiseless=False)
    assert jes(torch.rand(5, 1, 2, dtype=D64)).shape == (5,)
    single = ExactMultiTaskGP(X, Y[:, :1])
    xs, fs = get_optimal_samples(single, bounds, num_optima=4, raw_samples=64, num_restarts=2)
    assert qJointEntropySearch(single, xs, fs)(torch.rand(5, 1, 2, dtype=D64)).shape == (5,)
    assert qPredictiveEntropySearch(single, xs)(torch.rand(5, 1, 2, dtype=D64)).shape == (5,)
    ts = PathwiseThompsonSampling(tgp)
    assert ts(torch.rand(5, 1, 2, dtype=D64)).shape == (5,)
    ata = _adaptive()
    xs, fs = get_optimal_samples(ata, bounds[:, :1], num_optima=4, raw_samples=64,
                                 num_restarts=2)
    assert xs.shape == (4, 1) and fs.shape == (4, 1)
    ts = PathwiseThompsonSampling(model, posterior_transform=tf)  # q = 2 (as BoTorch's
    assert ts(torch.rand(5, 2, 2, dtype=D64)).shape == (5,)  # multi-output models)


def test_batched_training_data_shapes_and_moments():
    torch.manual_seed(10)
    X = torch.rand(3, 8, 1, dtype=D64)
    Y = torch.sin(5 * X) * torch.tensor([1.0, -1.0], dtype=D64) + 0.1 * torch.randn(3, 8, 2,
                                                                                      dtype=D64)
    model = ExactMultiTaskGP(X, Y, covar_module=_kernel("icm"), noise=0.05)
    paths = draw_matheron_paths(model, torch.Size([S]))
    out = paths(XT)  # q x d: every batch member
    assert out.shape == (S, 3, 2, XT.shape[0])
    assert paths(XT.expand(3, 1, -1, -1)).shape == (S, 3, 2, XT.shape[0])
    post = model.posterior(XT.expand(3, -1, -1))
    for b in range(3):
        z = _z_scores(_flat(out[:, b], 2), post.mean[b].reshape(-1),
                      post.distribution.covariance_matrix[b], _feature_se(model, XT))
        assert max(z) < Z_MAX


def test_output_dimension_layout():
    """Input dimension -3 of size n: output i at its own points (BoTorch's batched layout)."""
    torch.manual_seed(11)
    X, Y = _data()
    model = ExactMultiTaskGP(X, Y, covar_module=_kernel("icm"), noise=0.05)
    paths = draw_matheron_paths(model, torch.Size([5]))
    Xa, Xb = torch.rand(3, 1, dtype=D64), torch.rand(3, 1, dtype=D64)
    both = paths(torch.stack([Xa, Xb]))  # n x q x d
    assert both.shape == (5, 2, 3)
    torch.testing.assert_close(both[:, 0], paths(Xa)[:, 0])
    torch.testing.assert_close(both[:, 1], paths(Xb)[:, 1])
    with pytest.raises(ValueError, match="dimension -3"):
        paths(torch.rand(4, 3, 1, dtype=D64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtypes(dtype):
    torch.manual_seed(12)
    X, Y = _data(dtype=dtype)
    B = torch.tensor([[1.0, 0.6], [0.6, 0.8]], dtype=dtype)
    model = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(_rbf(0.3, dtype), 2, task_covar=B),
                             noise=0.05)
    paths = draw_matheron_paths(model, torch.Size([S]))
    out = paths(XT.to(dtype))
    assert out.dtype == dtype
    _check_against_posterior(model, paths, XT.to(dtype), 2)
    tgp = TruncatedGP(X, Y[:, :1], v=2.0)
    tpaths = draw_matheron_paths(tgp, torch.Size([S]))
    assert tpaths(XT.to(dtype)).dtype == dtype
    _check_against_posterior(tgp, tpaths, XT.to(dtype), 1)


def test_single_output_multitask_layout():
    X, Y = _data(n=1, dtype=torch.float32)
    ours = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(_rbf(0.3, torch.float32), 1))
    assert draw_matheron_paths(ours, torch.Size([2, 3]))(torch.rand(4, 1)).shape == (2, 3, 4)


def test_num_features_and_psd_sqrt():
    X, Y = _data()
    kernel = ICMKernel(ScaleKernel(_rbf(0.3)), 2, task_covar=torch.eye(2, dtype=D64))
    model = ExactMultiTaskGP(X, Y, covar_module=kernel)
    paths = draw_exact_multitask_paths(model, [2], num_features=64)
    assert paths["prior_paths"].feature_maps[0].num_outputs == 64
    B = torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=D64)
    torch.testing.assert_close(psd_sqrt(B) @ psd_sqrt(B), B)
    singular = torch.ones(2, 2, dtype=D64)
    torch.testing.assert_close(psd_sqrt(singular) @ psd_sqrt(singular), singular)


def test_unsupported_models_and_kernels_raise_clear_errors():
    X, Y = _data()
    nystrom = NystromMultiTaskGP(X, Y, generator=0)  # supported (test_pathwise_nystrom.py)
    assert draw_matheron_paths(nystrom, torch.Size([2]))(XT).shape == (2, 2, XT.shape[0])
    M = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=D64)
    arms = torch.tensor([[0.0], [1.0], [0.0]], dtype=D64)
    tgp = TruncatedGP(arms, torch.rand(3, 1, dtype=D64), v=1.0, covar_module=PrecomputedKernel(M))
    with pytest.raises(NotImplementedError, match="PrecomputedKernel"):
        draw_matheron_paths(tgp, torch.Size([2]))
    with pytest.raises(NotImplementedError, match="Nyström"):
        draw_matheron_paths(AdaptiveTruncationGP(X, Y[:, :1]), torch.Size([2]))
    model = ExactMultiTaskGP(X, Y)

    def other_prior(model, sample_shape):
        return draw_kernel_feature_paths(model, sample_shape)

    with pytest.raises(UnsupportedError, match="prior_sampler"):
        draw_matheron_paths(model, torch.Size([2]), prior_sampler=other_prior)
