"""HeavyTailedBatch's shared-factor fantasies (TruncatedGP, dense path) against the member loop.

Fantasies condition one model on the same inputs under ``m`` reward vectors; the batch then
does one block-Cholesky extension and one kernel call per input instead of one per member.
Every number here is compared, to 1e-12, with the member loop (each member conditioned and
evaluated on its own: the path the batch takes when the fast path is switched off).
"""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import qKnowledgeGradient
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import RBFKernel

from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch
from botorch_mtucb.models import TruncatedGP

DT = torch.float64


def _data(t: int = 14, d: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, d, generator=g, dtype=DT)
    z, w = torch.randn(t, 1, generator=g, dtype=DT), torch.rand(t, 1, generator=g, dtype=DT)
    return X, torch.sin(5 * X).sum(-1, keepdim=True) + 0.3 * z / w.clamp_min(0.05).sqrt()


def _model(kind: str, X, Y):
    if kind == "driven":  # data-driven: centred, winsorised at the current level, fitted
        return TruncatedGP(X, Y)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.3
    if kind == "declared":  # Algorithm 1: zeroing at each round's own level
        return TruncatedGP(X, Y, 1.0, 1.5, k, lam=0.4)
    return TruncatedGP(X, Y, 1.0, 1.5, k, lam=0.4, level="current", clip=True, centre=True)


KINDS = ["driven", "declared", "current-clip"]


@pytest.fixture
def member_loop(monkeypatch):
    """Switch the shared-factor path off: every member is conditioned on its own."""
    def off():
        monkeypatch.setattr(TruncatedGP, "_fantasy_siblings", lambda *a, **k: None)
    return off


def _explicit(model, X, Y, Xt):
    """Mean and covariance of ``model.condition_on_observations(X[i], Y[f, i])`` at
    ``Xt[f, i]``, member by member (X ``b x q x d``, Y ``m x b x q x 1``)."""
    means, covs = [], []
    for f in range(Y.shape[0]):
        for i in range(X.shape[0]):
            post = model.condition_on_observations(X[i], Y[f, i]).posterior(Xt[f, i])
            means.append(post.mean.squeeze(-1))
            covs.append(post.covariance_matrix)
    shape = (Y.shape[0], X.shape[0])
    return (torch.stack(means).reshape(*shape, -1),
            torch.stack(covs).reshape(*shape, *covs[0].shape[-2:]))


@pytest.mark.parametrize("kind", KINDS)
def test_fantasy_batch_equals_each_conditioned_member(kind):
    X0, Y0 = _data()
    model = _model(kind, X0, Y0)
    g = torch.Generator().manual_seed(3)
    X = torch.rand(4, 2, 2, generator=g, dtype=DT)  # b = 4 inputs, q = 2
    Y = 3 * torch.randn(5, 4, 2, 1, generator=g, dtype=DT)  # m = 5 reward vectors each
    Y[0, 0, 0, 0] = 40.0  # an outlier: truncated differently from its siblings
    Xt = torch.rand(5, 4, 3, 2, generator=g, dtype=DT)
    batch = model.condition_on_observations(X, Y)
    assert isinstance(batch, HeavyTailedBatch) and batch.batch_shape == (5, 4)
    assert batch._sibling_groups() == 4  # the shared-factor path was taken
    post = batch.posterior(Xt)
    mean, cov = _explicit(model, X, Y, Xt)
    torch.testing.assert_close(post.mean.squeeze(-1), mean, atol=1e-12, rtol=0)
    torch.testing.assert_close(post.covariance_matrix, cov, atol=1e-12, rtol=0)
    m, v = batch.mean_and_variance(Xt)
    torch.testing.assert_close(v, cov.diagonal(dim1=-2, dim2=-1), atol=1e-12, rtol=0)
    for f, i in [(0, 0), (4, 3)]:  # targets, stored rewards and later conditioning
        ref = model.condition_on_observations(X[i], Y[f, i])
        member = batch.members[f * 4 + i]
        torch.testing.assert_close(member.train_targets, ref.train_targets, atol=1e-12, rtol=0)
        torch.testing.assert_close(member.train_Y, ref.train_Y, atol=1e-12, rtol=0)
        x1, y1 = torch.rand(1, 2, dtype=DT, generator=g), torch.randn(1, 1, dtype=DT)
        a = member.condition_on_observations(x1, y1).posterior(Xt[0, 0]).mean
        b = ref.condition_on_observations(x1, y1).posterior(Xt[0, 0]).mean
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    # The siblings did not write into each other's rewards, nor into the model's.
    torch.testing.assert_close(model.train_Y, Y0, atol=1e-12, rtol=0)
    if kind != "declared":
        assert batch.members[0].train_targets[-2].abs() < 40.0  # clipped at b_t


@pytest.mark.parametrize("kind", KINDS)
def test_qkg_value_and_gradient_equal_the_member_loop(kind, member_loop):
    X0, Y0 = _data(seed=1)
    model = _model(kind, X0, Y0)
    Xq = torch.rand(3, 1 + 6, 2, dtype=DT, generator=torch.Generator().manual_seed(5))

    def kg(x):
        acqf = qKnowledgeGradient(model, num_fantasies=6,
                                  sampler=SobolQMCNormalSampler(torch.Size([6]), seed=0))
        x = x.clone().requires_grad_(True)
        val = acqf(x)
        val.sum().backward()
        return val.detach(), x.grad

    fast_val, fast_grad = kg(Xq)
    member_loop()
    ref_val, ref_grad = kg(Xq)
    torch.testing.assert_close(fast_val, ref_val, atol=1e-12, rtol=0)
    torch.testing.assert_close(fast_grad, ref_grad, atol=1e-12, rtol=0)


def test_fantasies_of_a_batched_model_and_conversions():
    """Batched training data (2 members, own kernels): siblings per member; a dtype change
    rebuilds every member (the sharing is gone and the member loop answers)."""
    X0, Y0 = _data(t=10)
    Xb, Yb = torch.stack([X0, X0.flip(0)]), torch.stack([Y0, 2 * Y0])
    model = TruncatedGP(Xb, Yb)  # data-driven, one fit per member
    g = torch.Generator().manual_seed(2)
    X, Y = torch.rand(2, 1, 2, generator=g, dtype=DT), torch.randn(3, 2, 1, 1, generator=g,
                                                                   dtype=DT)
    Xt = torch.rand(3, 2, 4, 2, generator=g, dtype=DT)
    batch = model.condition_on_observations(X, Y)
    assert batch._sibling_groups() == 2
    mean, cov = _explicit_batched(model, X, Y, Xt)
    post = batch.posterior(Xt)
    torch.testing.assert_close(post.mean.squeeze(-1), mean, atol=1e-12, rtol=0)
    torch.testing.assert_close(post.covariance_matrix, cov, atol=1e-12, rtol=0)
    assert batch.to(Xt) is batch and batch._sibling_groups() == 2  # a no-op conversion
    b32 = batch.to(torch.float32)
    assert b32._sibling_groups() == 0  # members rebuilt their own factors
    torch.testing.assert_close(b32.posterior(Xt.float()).mean.squeeze(-1).double(), mean,
                               atol=1e-4, rtol=1e-4)


def _explicit_batched(model, X, Y, Xt):
    means, covs = [], []
    for f in range(Y.shape[0]):
        for i, member in enumerate(model.members):
            post = member.condition_on_observations(X[i], Y[f, i]).posterior(Xt[f, i])
            means.append(post.mean.squeeze(-1))
            covs.append(post.covariance_matrix)
    return (torch.stack(means).reshape(Y.shape[0], 2, -1),
            torch.stack(covs).reshape(Y.shape[0], 2, *covs[0].shape[-2:]))


def test_inputs_that_differ_across_fantasies_take_the_member_loop():
    X0, Y0 = _data()
    model = _model("declared", X0, Y0)
    g = torch.Generator().manual_seed(4)
    X, Y = torch.rand(3, 2, 1, 2, generator=g, dtype=DT), torch.randn(3, 2, 1, 1, generator=g,
                                                                      dtype=DT)
    batch = model.condition_on_observations(X, Y)  # a different input for every member
    assert batch._sibling_groups() == 0
    Xt = torch.rand(3, 2, 2, 2, generator=g, dtype=DT)
    ref = model.condition_on_observations(X[1, 0], Y[1, 0]).posterior(Xt[1, 0]).mean
    torch.testing.assert_close(batch.posterior(Xt).mean[1, 0], ref, atol=1e-12, rtol=0)
