"""Every multi-task model pickles (no local closures) and moves between dtypes with ``.to``."""

import pickle
import warnings

import pytest
import torch
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP, practical_multitask_gp
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _data(t=10, batch=()):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(*batch, t, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(6 * X[..., 0]) + X[..., 1], torch.cos(5 * X.sum(-1))], -1)
    return X, Y + 0.05 * torch.randn(Y.shape, generator=g, dtype=DT)


def _models():
    X, Y = _data()
    Xb, Yb = _data(batch=(3,))
    return {
        "exact": ExactMultiTaskGP(X, Y),
        "exact-batched": ExactMultiTaskGP(Xb, Yb, learn_noise=True),
        "nystrom": NystromMultiTaskGP(X, Y, generator=0),
        "nystrom-batched": NystromMultiTaskGP(Xb, Yb, generator=0),
        "practical-unfitted": practical_multitask_gp(X, Y, BOUNDS, fit=False),
        "practical-independent": practical_multitask_gp(X, Y, BOUNDS, independent=True,
                                                        fit=False),
        "practical-fitted": practical_multitask_gp(
            X, Y, BOUNDS, fit_kwargs={"optimizer_kwargs": {"options": {"maxiter": 5}}}
        ),
        "practical-warm": WarmStartPracticalFactory(BOUNDS)(X, Y),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_pickle_round_trip_keeps_the_posterior(name):
    model = _models()[name]
    Xs = torch.rand(3, 4, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    before = pickle.loads(pickle.dumps(model)).posterior(Xs)  # pickled before any query
    ref = model.posterior(Xs)
    after = pickle.loads(pickle.dumps(model)).posterior(Xs)  # pickled with warm caches
    for post in (before, after):
        torch.testing.assert_close(post.mean, ref.mean, atol=1e-12, rtol=0)
        torch.testing.assert_close(post.mvn.covariance_matrix, ref.mvn.covariance_matrix,
                                   atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", list(_models()))
def test_to_float32_and_back(name):
    model = _models()[name]
    Xs = torch.rand(3, 4, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    ref = model.posterior(Xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        low = pickle.loads(pickle.dumps(model)).to(torch.float32)
        post = low.posterior(Xs.float())
    assert post.mean.dtype == torch.float32
    torch.testing.assert_close(post.mean.double(), ref.mean, atol=1e-3, rtol=1e-3)
    back = low.to(DT).posterior(Xs)
    assert back.mean.dtype == DT
    torch.testing.assert_close(back.mean, ref.mean, atol=1e-5, rtol=1e-5)
