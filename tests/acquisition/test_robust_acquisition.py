"""robust_acquisition / robust_incumbent against independent references.

* LogEI's incumbent is the best posterior mean at evaluated, unflagged readings (computed
  here from the posterior directly), for a robust model and for plain BoTorch models (with
  and without an input transform);
* the UCB option is ``μ + β σ`` with the model's or the given width;
* ``optimize_acqf`` runs on a non-unit box and stays in it;
* errors for unknown kinds, options and multi-output models.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize
from botorch.optim import optimize_acqf

from botorch_mtucb.acquisition import (
    DEFAULT_ROBUST_ACQUISITION,
    HeavyTailedUCB,
    robust_acquisition,
)
from botorch_mtucb.acquisition.robust import UCB_WIDTH
from botorch_mtucb.models import robust_gp
from botorch_mtucb.utils.incumbent import robust_incumbent

DT = torch.float64
BOUNDS = torch.tensor([[-3.0, 10.0], [2.0, 30.0]], dtype=DT)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _data(n: int = 30, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    U = torch.rand(n, 2, generator=g, dtype=DT)
    X = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * U
    Y = torch.sin(4 * U[:, :1]) + torch.cos(3 * U[:, 1:]) + 0.05 * torch.randn(
        n, 1, generator=g, dtype=DT)
    return X, Y


def _means(model, X):
    with torch.no_grad():
        return model.posterior(X.unsqueeze(-2)).mean.view(-1)


def test_default_is_ucb_with_the_models_width():
    X, Y = _data()
    model = robust_gp(X, Y, BOUNDS)
    acqf = robust_acquisition(model)
    assert DEFAULT_ROBUST_ACQUISITION == "ucb" and isinstance(acqf, HeavyTailedUCB)
    Z = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * torch.rand(7, 1, 2, dtype=DT)
    post = model.posterior(Z)
    ref = post.mean.reshape(-1) + model.beta() * post.variance.reshape(-1).sqrt()
    assert torch.allclose(acqf(Z), ref)


def test_logei_takes_the_robust_incumbent():
    X, Y = _data()
    Y[[4, 9]] = 25.0  # failure readings far above every real value
    model = robust_gp(X, Y, BOUNDS)
    assert model.suspicious[[4, 9]].all()
    acqf = robust_acquisition(model, kind="logei")
    assert isinstance(acqf, LogExpectedImprovement)
    mean = _means(model, X)
    expected = mean[~model.suspicious].max()
    assert math.isclose(float(acqf.best_f), float(expected), rel_tol=1e-12)
    assert float(acqf.best_f) < 5.0  # not set by a failure reading
    # the value is BoTorch's LogEI with that incumbent
    Z = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * torch.rand(7, 1, 2, dtype=DT)
    ref = LogExpectedImprovement(model, best_f=expected)
    assert torch.allclose(acqf(Z), ref(Z))


def test_plain_model_trusts_every_reading():
    X, Y = _data(seed=1)
    model = SingleTaskGP(X, Y).eval()
    acqf = robust_acquisition(model, kind="logei")
    assert math.isclose(float(acqf.best_f), float(_means(model, X).max()), rel_tol=1e-12)


def test_input_transform_uses_the_original_inputs():
    X, Y = _data(seed=2)
    model = SingleTaskGP(X, Y, input_transform=Normalize(d=2, bounds=BOUNDS)).eval()
    _means(model, X[:1])  # eval mode: the stored train inputs are now the normalised ones
    index, best_f = robust_incumbent(model)
    mean = _means(model, X)
    assert index == int(mean.argmax()) and math.isclose(float(best_f), float(mean.max()))


def test_x_baseline_option():
    X, Y = _data(seed=3)
    model = SingleTaskGP(X, Y).eval()
    acqf = robust_acquisition(model, kind="logei", X_baseline=X[:5])
    assert math.isclose(float(acqf.best_f), float(_means(model, X[:5]).max()), rel_tol=1e-12)


def test_incumbent_flag_rules():
    X, Y = _data(12, seed=4)
    X = torch.cat([X, X[:1]])  # row 12 reads the same point as row 0
    Y = torch.cat([Y, Y[:1]])
    Y[0] = 100.0
    model = SingleTaskGP(X, Y).eval()
    mean = _means(model, X)
    assert int(mean.argmax()) in (0, 12)
    flags = torch.zeros(13, dtype=torch.bool)
    flags[0] = True  # row 0's point keeps an unflagged reading (row 12): still a candidate
    assert robust_incumbent(model, suspicious=flags)[0] in (0, 12)
    flags[12] = True  # every reading there flagged: never the incumbent
    index, best_f = robust_incumbent(model, suspicious=flags)
    masked = mean.clone()
    masked[[0, 12]] = -math.inf
    assert index == int(masked.argmax()) and math.isclose(float(best_f), float(masked.max()))
    with pytest.raises(ValueError, match="only suspicious readings"):
        robust_incumbent(model, suspicious=torch.ones(13, dtype=torch.bool))
    with pytest.raises(ValueError, match="`suspicious` must be 13 bools"):
        robust_incumbent(model, suspicious=torch.zeros(5, dtype=torch.bool))
    with pytest.raises(ValueError, match="`X` must be a non-empty"):
        robust_incumbent(model, X[0])


def test_ucb_option():
    X, Y = _data(seed=5)
    model = robust_gp(X, Y, BOUNDS)
    acqf = robust_acquisition(model, kind="ucb")
    assert isinstance(acqf, HeavyTailedUCB)
    Z = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * torch.rand(6, 1, 2, dtype=DT)
    post = model.posterior(Z)
    width = model.beta()
    expected = post.mean.view(-1) + width * post.variance.view(-1).sqrt()
    assert torch.allclose(acqf(Z), expected, rtol=1e-10)
    plain = SingleTaskGP(X, Y).eval()
    assert float(robust_acquisition(plain, kind="ucb").beta) == UCB_WIDTH
    assert float(robust_acquisition(plain, kind="ucb", beta=2.5).beta) == 2.5


@pytest.mark.parametrize("kind", ["logei", "ucb"])
def test_optimize_acqf_on_a_non_unit_box(kind):
    X, Y = _data(seed=6)
    Y[3] = -30.0
    model = robust_gp(X, Y, BOUNDS)
    torch.manual_seed(0)
    cand, value = optimize_acqf(robust_acquisition(model, kind=kind), BOUNDS, q=1,
                                num_restarts=2, raw_samples=32)
    assert cand.shape == (1, 2) and bool(value.isfinite())
    assert ((cand >= BOUNDS[0]) & (cand <= BOUNDS[1])).all()


def test_bad_options():
    X, Y = _data(8)
    model = SingleTaskGP(X, Y).eval()
    with pytest.raises(ValueError, match="`kind` must be one of"):
        robust_acquisition(model, kind="ei")
    with pytest.raises(ValueError, match="unknown \\['beta'\\]"):
        robust_acquisition(model, kind="logei", beta=2.0)
    with pytest.raises(ValueError, match="unknown \\['X_baseline'\\]"):
        robust_acquisition(model, kind="ucb", X_baseline=X)
    two = SingleTaskGP(X, torch.cat([Y, Y], dim=-1)).eval()
    with pytest.raises(ValueError, match="single output"):
        robust_acquisition(two)
