"""What a user may hand the heavy-tailed models, and the clear errors for what they may not.

Confidence ``δ = 1`` (``ln(1/δ) = 0``), mixed or unsupported training dtypes, NumPy integers for
integer arguments, test inputs that are not float tensors or hold NaN, and empty test batches.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch
from botorch.exceptions import InputDataError

from botorch_mtucb.features import QuadratureFourierFeatures
from botorch_mtucb.models import AdaptiveTruncationGP, HeavyTailedBatch, TruncatedGP

DT = torch.float64


def _data(t: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.rand(t, 1, generator=g, dtype=DT), torch.randn(t, 1, generator=g, dtype=DT)


def _qff() -> QuadratureFourierFeatures:
    return QuadratureFourierFeatures(lengthscale=0.2, num_nodes=8, dim=1)


ARMS = torch.linspace(0, 1, 11, dtype=DT).unsqueeze(-1)


@functools.cache
def _models() -> dict[str, object]:
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "tgp": TruncatedGP(X, Y, v=1.0),
            "tgp-arms": TruncatedGP(ARMS[:6], Y[:6], v=1.0, arms=ARMS),
            "ata-qff": AdaptiveTruncationGP(X, Y, v=1.0, features=_qff()),
            "ata-arms": AdaptiveTruncationGP(ARMS[:6], Y[:6], v=1.0, features=_qff(), arms=ARMS),
            "ata-nystrom": AdaptiveTruncationGP(X, Y, generator=0),
            "batch": TruncatedGP(X.expand(2, 10, 1), Y.expand(2, 10, 1), v=1.0),
        }


NAMES = pytest.mark.parametrize(
    "name", ["tgp", "tgp-arms", "ata-qff", "ata-arms", "ata-nystrom", "batch"]
)


# ----------------------------------------------------------------------------- δ
@pytest.mark.parametrize("delta", [1.0, 0.0, 1.5, "0.1"])
def test_confidence_one_or_outside_the_open_interval_is_refused(delta) -> None:
    X, Y = _data()
    for build in (
        lambda: TruncatedGP(X, Y, v=1.0, delta=delta),
        lambda: AdaptiveTruncationGP(X, Y, v=1.0, features=_qff(), delta=delta),
        lambda: TruncatedGP(X.expand(2, 10, 1), Y.expand(2, 10, 1), v=1.0, delta=delta),
    ):
        with pytest.raises(ValueError, match=r"`delta` must lie in the open interval \(0, 1\)"):
            build()


# ----------------------------------------------------------------------------- integers
def test_numpy_integers_are_integers() -> None:
    X, Y = _data()
    a = AdaptiveTruncationGP(X, Y, v=1.0, features=_qff(), horizon=np.int64(50))
    b = AdaptiveTruncationGP(X, Y, v=1.0, features=_qff(), horizon=50)
    assert a.horizon == 50 and type(a.horizon) is int and a.beta() == b.beta()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m1 = AdaptiveTruncationGP(X, Y, generator=np.int64(3))
        m2 = AdaptiveTruncationGP(X, Y, generator=3)
    Xt = torch.rand(4, 1, 1, dtype=DT)
    torch.testing.assert_close(m1.mean_and_variance(Xt), m2.mean_and_variance(Xt))
    assert isinstance(m1.features.generator, torch.Generator)


@pytest.mark.parametrize("horizon", [2.5, True, 0, "10"])
def test_a_horizon_that_is_not_a_positive_integer_is_refused(horizon) -> None:
    X, Y = _data()
    with pytest.raises(ValueError, match="`horizon` must be a positive integer"):
        AdaptiveTruncationGP(X, Y, v=1.0, features=_qff(), horizon=horizon)


def test_a_generator_that_is_neither_a_generator_nor_a_seed_is_refused() -> None:
    X, Y = _data()
    with pytest.raises(ValueError, match="`generator` must be a torch.Generator, an integer"):
        AdaptiveTruncationGP(X, Y, generator=True)


# ----------------------------------------------------------------------------- training dtypes
@pytest.mark.parametrize("model_cls", [TruncatedGP, AdaptiveTruncationGP])
def test_mixed_training_dtypes_are_refused_as_botorch_does(model_cls) -> None:
    X, Y = _data()
    for Xa, Ya in ((X.float(), Y), (X, Y.float())):
        with pytest.raises(InputDataError, match="must have the same dtype"):
            model_cls(Xa, Ya)
    with pytest.raises(InputDataError, match="must have the same dtype"):  # batched data
        model_cls(X.expand(2, 10, 1), Y.float().expand(2, 10, 1))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_training_data_is_refused(dtype) -> None:
    X, Y = _data()
    with pytest.raises(TypeError, match="`train_X` must be a float32 or float64 tensor"):
        TruncatedGP(X.to(dtype), Y.to(dtype), v=1.0)


# ----------------------------------------------------------------------------- test inputs
@NAMES
def test_test_inputs_must_be_finite_float_tensors(name: str) -> None:
    model = _models()[name]
    for call in (model.posterior, model.mean_and_variance):
        with pytest.raises(TypeError, match="`X` must be a torch.Tensor, got ndarray"):
            call(np.zeros((2, 1, 1)))
        with pytest.raises(TypeError, match="`X` must be a float32 or float64 tensor"):
            call(torch.zeros(2, 1, 1, dtype=torch.bfloat16))
        with pytest.raises(ValueError, match="`X` contains NaN or infinite values"):
            call(torch.full((2, 1, 1), float("nan"), dtype=DT))


def test_an_in_place_write_after_a_check_is_seen() -> None:
    model = _models()["tgp-arms"]
    X = ARMS.unsqueeze(-2).clone()
    model.mean_and_variance(X)  # checked once ...
    X[3, 0, 0] = float("inf")  # ... then written to: checked again
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.mean_and_variance(X)


@NAMES
@pytest.mark.parametrize("shape", [(0, 1, 1), (3, 0, 1), (0, 1)])
def test_empty_test_batches_give_empty_results(name: str, shape: tuple[int, ...]) -> None:
    model = _models()[name]
    batched = isinstance(model, HeavyTailedBatch)  # batch shape (2,): X must broadcast with it
    X_shape, out = {
        (0, 1, 1): ((0, 2, 1, 1), (0, 2, 1)) if batched else ((0, 1, 1), (0, 1)),
        (3, 0, 1): ((2, 0, 1), (2, 0)) if batched else ((3, 0, 1), (3, 0)),
        (0, 1): ((0, 1), (2, 0)) if batched else ((0, 1), (0,)),
    }[shape]
    X = torch.rand(*X_shape, dtype=DT)
    assert model.posterior(X).mean.shape == (*out, 1)
    mean, var = model.mean_and_variance(X)
    assert mean.shape == var.shape == out
