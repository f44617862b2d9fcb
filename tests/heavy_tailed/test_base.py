"""Shared pieces of the heavy-tailed models (``heavy_tailed/base.py``, ``heavy_tailed/arms.py``).

The BoTorch contract (batches, fantasies, state_dict, ``.to``) is tested in ``test_contract.py``,
batched training data in ``test_batched_data.py``; ``spectral_ridge`` in
``tests/linalg/test_ridge.py``.
"""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.features import QuadratureFourierFeatures
from botorch_mtucb.heavy_tailed.arms import check_training_data
from botorch_mtucb.models import AdaptiveTruncationGP, HeavyTailedBatch, TruncatedGP

DT = torch.float64


def test_a_move_that_changes_nothing_keeps_the_state_objects() -> None:
    """``acqf.to(X)`` (every BoTorch analytic acquisition calls it) must not rebuild the model."""
    X, Y = torch.rand(6, 1, dtype=DT), torch.randn(6, 1, dtype=DT)
    qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=8, dim=1)
    for model in (TruncatedGP(X, Y, alpha=1.0, v=4.0), AdaptiveTruncationGP(X, Y, 1.0, 4.0, qff)):
        before = dict(model.__dict__)
        assert model.to(DT) is model
        assert all(model.__dict__[k] is v for k, v in before.items() if torch.is_tensor(v))


def test_training_data_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="train_X"):
        check_training_data(torch.rand(2, 3, 1, dtype=DT), torch.rand(2, 3, 1, dtype=DT))
    with pytest.raises(ValueError, match="train_Y"):
        check_training_data(torch.rand(4, 1, dtype=DT), torch.rand(3, 1, dtype=DT))


def test_the_constructor_dispatches_on_the_data_batch() -> None:
    """``__new__``: plain data gives an instance, batched data a batch, no arguments (the
    pickle / copy path) a bare instance."""
    X, Y = torch.rand(2, 6, 1, dtype=DT), torch.randn(2, 6, 1, dtype=DT)
    qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=8, dim=1)
    for cls, extra in ((TruncatedGP, {}), (AdaptiveTruncationGP, {"features": qff})):
        one = cls(X[0], Y[0], 1.0, 4.0, **extra)
        assert type(one) is cls and one.batch_shape == torch.Size([])
        batch = cls(train_X=X, train_Y=Y, alpha=1.0, v=4.0, **extra)
        assert type(batch) is HeavyTailedBatch and batch.batch_shape == torch.Size([2])
        assert all(type(m) is cls for m in batch.members)
        bare = cls.__new__(cls)
        assert type(bare) is cls and "_t" not in bare.__dict__
