"""The ``MomentEstimator`` seam of the data-driven heavy-tailed models."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.features import QuadratureFourierFeatures
from botorch_mtucb.heavy_tailed.moments import (
    MedianOfMeans,
    MomentEstimator,
    data_driven_moments,
    robust_location_and_moment,
)
from botorch_mtucb.models import AdaptiveTruncationGP, HeavyTailedBatch, TruncatedGP

DT = torch.float64


def _data(t: int = 20, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, 1, dtype=DT, generator=g)
    Y = 3.0 + torch.sin(6 * X) + 0.1 * torch.randn(t, 1, dtype=DT, generator=g)
    Y[[2, 11]] += torch.tensor([[80.0], [-50.0]], dtype=DT)
    return X, Y


class _Fixed:
    """Returns fixed values and records its calls."""

    def __init__(self, loc: float = 2.0, v: float = 5.0) -> None:
        self.loc, self.v, self.calls = loc, v, []

    def location_and_moment(self, y, alpha, centre):
        self.calls.append((y.clone(), alpha, centre))
        return torch.tensor(self.loc if centre else 0.0, dtype=y.dtype), self.v


def test_protocol_is_runtime_checkable() -> None:
    assert isinstance(MedianOfMeans(), MomentEstimator)
    assert isinstance(_Fixed(), MomentEstimator)
    assert not isinstance(object(), MomentEstimator)
    with pytest.raises(ValueError, match="delta"):
        MedianOfMeans(delta=0.0)


@pytest.mark.parametrize("centre", [None, False])
def test_default_estimator_equals_robust_location_and_moment(centre) -> None:
    X, Y = _data()
    y = Y.squeeze(-1)
    loc, v = robust_location_and_moment(y, 1.0, 0.1, centre is None)
    expected = (1.0, float(v), float(loc))
    assert data_driven_moments(y, None, None, centre) == expected
    assert data_driven_moments(y, None, None, centre, MedianOfMeans()) == expected
    for model in (
        TruncatedGP(X, Y, covar_module=RBFKernel(), centre=centre),
        TruncatedGP(X, Y, covar_module=RBFKernel(), centre=centre,
                    moment_estimator=MedianOfMeans()),
    ):
        assert (model.alpha, model.v, model.location) == expected
    qff = QuadratureFourierFeatures(0.2, 8, 1)
    ata = AdaptiveTruncationGP(X, Y, features=qff, centre=centre)
    assert (ata.alpha, ata.v, ata.location) == expected


def test_default_estimator_keeps_the_posterior() -> None:
    X, Y = _data()
    a = TruncatedGP(X, Y, covar_module=RBFKernel())
    b = TruncatedGP(X, Y, covar_module=RBFKernel(), moment_estimator=MedianOfMeans())
    Xt = torch.linspace(0, 1, 7, dtype=DT).unsqueeze(-1)
    for u, w in zip(a.mean_and_variance(Xt), b.mean_and_variance(Xt), strict=True):
        assert torch.equal(u, w)


def test_custom_estimator_is_used_by_both_models() -> None:
    X, Y = _data()
    est = _Fixed(loc=2.0, v=5.0)
    model = TruncatedGP(X, Y, alpha=0.5, covar_module=RBFKernel(), moment_estimator=est)
    assert (model.location, model.v, model.alpha) == (2.0, 5.0, 0.5)
    (y, alpha, centre), = est.calls
    assert torch.equal(y, Y.squeeze(-1)) and alpha == 0.5 and centre is True
    assert torch.equal(model.train_Y, Y)  # the location is added back
    b = model.truncation_level()  # b_t of the estimator's v; rewards clipped about its centre
    assert torch.equal(model.train_targets, (Y.squeeze(-1) - 2.0).clamp(-b, b))

    est = _Fixed(loc=2.0, v=7.0)
    ata = AdaptiveTruncationGP(X, Y, features=QuadratureFourierFeatures(0.2, 8, 1),
                               moment_estimator=est)
    assert (ata.location, ata.v) == (2.0, 7.0) and len(est.calls) == 1


def test_custom_estimator_without_centring_and_declared_v() -> None:
    X, Y = _data()
    est = _Fixed(v=3.0)
    model = TruncatedGP(X, Y, covar_module=RBFKernel(), centre=False, moment_estimator=est)
    assert (model.location, model.v) == (0.0, 3.0)
    assert [c[2] for c in est.calls] == [False]
    est = _Fixed()
    declared = TruncatedGP(X, Y, v=9.0, moment_estimator=est)  # nothing to estimate
    assert declared.v == 9.0 and declared.location == 0.0 and est.calls == []


def test_custom_estimator_reaches_every_batch_member() -> None:
    X, Y = _data()
    est = _Fixed(v=4.0)
    batch = TruncatedGP(torch.stack([X, X]), torch.stack([Y, Y + 1]),
                        covar_module=RBFKernel(), moment_estimator=est)
    assert isinstance(batch, HeavyTailedBatch) and len(est.calls) == 2
    assert all(m.v == 4.0 and m.location == 2.0 for m in batch.members)


def test_bad_estimator_and_bad_estimate_are_refused() -> None:
    X, Y = _data()
    with pytest.raises(ValueError, match="location_and_moment"):
        TruncatedGP(X, Y, covar_module=RBFKernel(), moment_estimator=lambda y: y)
    with pytest.raises(ValueError, match="`v` must be positive"):
        TruncatedGP(X, Y, covar_module=RBFKernel(), moment_estimator=_Fixed(v=0.0))
