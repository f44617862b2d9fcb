"""Pathwise sampling of the member batches: NystromMultiTaskBatch and HeavyTailedBatch.

Each member's paths must sample that member's posterior: sample moments of member ``i``'s
slice of the paths are compared with the batch posterior's slice ``i`` (z-scores against the
Monte-Carlo error, :mod:`tests.sampling.helpers`); shapes follow BoTorch's batched layout.
"""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.acquisition.thompson_sampling import PathwiseThompsonSampling
from botorch.acquisition.utils import get_optimal_samples
from botorch.sampling import SobolQMCNormalSampler
from botorch.sampling.pathwise import draw_matheron_paths
from gpytorch.kernels import RBFKernel

import botorch_mtucb.sampling  # noqa: F401  (registers the dispatchers)
from botorch_mtucb.features import QuadratureFourierFeatures
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import (
    AdaptiveTruncationGP,
    HeavyTailedBatch,
    NystromMultiTaskBatch,
    NystromMultiTaskGP,
    TruncatedGP,
)
from botorch_mtucb.sampling import BatchMembersPath
from tests.sampling.helpers import D64, Z_MAX, S, posterior_z_scores

XT = torch.tensor([[0.1], [0.5], [0.52]], dtype=D64)


def _member_z(post, values: torch.Tensor, n: int) -> float:
    """Largest z-score of ``values`` (``S x [n x] q``) against an unbatched posterior."""
    return max(posterior_z_scores(post, values, n))


def _nystrom_batch(dtype=D64) -> NystromMultiTaskBatch:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(3, 12, 1, generator=g, dtype=dtype)
    Y = torch.cat([torch.sin(5 * X), torch.cos(5 * X)], -1) + 0.1 * torch.randn(
        3, 12, 2, generator=g, dtype=dtype)
    B = torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=dtype)
    k = RBFKernel().to(dtype)
    k.lengthscale = 0.3
    return NystromMultiTaskGP(X, Y, covar_module=ICMKernel(k, 2, task_covar=B), noise=0.05,
                              q=2.0, generator=0)


def _truncated_batch(dtype=D64) -> HeavyTailedBatch:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(3, 12, 1, generator=g, dtype=dtype)
    Y = torch.sin(6 * X) + 0.1 * torch.randn(3, 12, 1, generator=g, dtype=dtype)
    Y[1, 4] = 20.0  # a heavy-tailed reward of member 1: truncated
    return TruncatedGP(X, Y, v=2.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nystrom_batch_members_match_their_posteriors(dtype):
    torch.manual_seed(2)
    with pytest.warns(Warning) if dtype == torch.float32 else _no_warning_check():
        batch = _nystrom_batch(dtype)
        paths = draw_matheron_paths(batch, torch.Size([S]))
        Xt = XT.to(dtype)
        out = paths(Xt)
        assert isinstance(paths, BatchMembersPath)
        assert out.shape == (S, 3, 2, 3) and out.dtype == dtype
        post = batch.posterior(Xt.expand(3, -1, -1))
        for i, m in enumerate(batch.members):  # sampled at dictionary-spanned points
            assert m.dictionary_size > 0
            Xb = m.solver().basis_X[:3].to(dtype)
            assert _member_z(m.posterior(Xb), paths(Xb.expand(3, 1, -1, -1))[:, i], 2) < Z_MAX
            mean = post.mean[i].reshape(-1)
            z = (out[:, i].transpose(-1, -2).reshape(S, -1).mean(0) - mean).detach() / (
                post.variance[i].reshape(-1).detach() / S).sqrt()
            assert float(z.abs().max()) < Z_MAX


class _no_warning_check:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def test_nystrom_batch_layout_and_errors():
    batch = _nystrom_batch()
    paths = draw_matheron_paths(batch, torch.Size([4]))
    Xm = torch.rand(3, 1, 5, 1, dtype=D64)  # one input set per member
    out = paths(Xm)
    assert out.shape == (4, 3, 2, 5)
    for i in range(3):  # member i evaluated at its own slice
        member = paths.paths[i](Xm[i])
        torch.testing.assert_close(out[:, i], member)
    assert paths(torch.rand(4, 3, 1, 5, 1, dtype=D64)).shape == (4, 3, 2, 5)
    with pytest.raises(ValueError, match="batch shape"):
        paths(torch.rand(2, 1, 5, 1, dtype=D64))


def test_heavy_tailed_batch_members_match_their_posteriors():
    torch.manual_seed(3)
    batch = _truncated_batch()
    paths = draw_matheron_paths(batch, torch.Size([S]))
    out = paths(XT)
    assert out.shape == (S, 3, 3)
    post = batch.posterior(XT.expand(3, -1, -1))
    for i, m in enumerate(batch.members):
        assert _member_z(m.posterior(XT), out[:, i], 1) < Z_MAX
        torch.testing.assert_close(post.mean[i].squeeze(-1), m.posterior(XT).mean.squeeze(-1))


def test_heavy_tailed_fantasy_and_adaptive_batches():
    """Fantasy batches (num_fantasies x batch) and AdaptiveTruncationGP (QFF) batches."""
    torch.manual_seed(4)
    model = TruncatedGP(torch.rand(10, 1, dtype=D64), torch.rand(10, 1, dtype=D64), v=1.0)
    fantasy = model.fantasize(torch.rand(2, 1, 1, dtype=D64), SobolQMCNormalSampler(
        torch.Size([3])))
    assert fantasy.batch_shape == (3, 2)
    paths = draw_matheron_paths(fantasy, torch.Size([S]))
    out = paths(XT)
    assert out.shape == (S, 3, 2, 3)
    post = fantasy.posterior(XT)
    for f in range(3):
        for b in range(2):
            m = fantasy.members[f * 2 + b]
            assert _member_z(m.posterior(XT), out[:, f, b], 1) < Z_MAX
            torch.testing.assert_close(post.mean[f, b].squeeze(-1),
                                       m.posterior(XT).mean.squeeze(-1))
    X = torch.rand(2, 20, 1, dtype=D64)
    qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=16, dim=1)
    ata = AdaptiveTruncationGP(X, torch.sin(6 * X), alpha=0.5, v=4.0, features=qff,
                               horizon=100)
    assert isinstance(ata, HeavyTailedBatch)
    out = draw_matheron_paths(ata, torch.Size([S]))(XT)
    assert out.shape == (S, 2, 3)
    for i, m in enumerate(ata.members):
        assert _member_z(m.posterior(XT), out[:, i], 1) < Z_MAX


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_heavy_tailed_batch_dtypes_and_sample_shape(dtype):
    batch = _truncated_batch(dtype)
    out = draw_matheron_paths(batch, torch.Size([2, 4]))(XT.to(dtype))
    assert out.shape == (2, 4, 3, 3) and out.dtype == dtype


def test_old_error_is_gone():
    """``draw_matheron_paths`` had no implementation for either batch class."""
    for model in (_nystrom_batch(), _truncated_batch()):
        assert draw_matheron_paths(model, torch.Size([2]))(XT).shape[:2] == (2, 3)


def test_get_optimal_samples_and_thompson_sampling_on_batches():
    torch.manual_seed(5)
    bounds = torch.tensor([[0.0], [1.0]], dtype=D64)
    batch = _truncated_batch()
    xs, fs = get_optimal_samples(batch, bounds, num_optima=4, raw_samples=64, num_restarts=2)
    assert xs.shape == (4, 3, 1) and fs.shape == (4, 3, 1)
    assert bool(((xs >= 0) & (xs <= 1)).all())
    nb = _nystrom_batch()
    tf = ScalarizedPosteriorTransform(torch.tensor([0.5, 0.5], dtype=D64))
    xs, fs = get_optimal_samples(nb, bounds, num_optima=4, raw_samples=64, num_restarts=2,
                                 posterior_transform=tf)
    assert xs.shape == (4, 3, 1) and fs.shape == (4, 3, 2) and torch.isfinite(fs).all()
    ts = PathwiseThompsonSampling(batch)
    assert ts(torch.rand(5, 3, 1, 1, dtype=D64)).shape == (5, 3)
