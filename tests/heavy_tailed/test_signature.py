"""The models' class signatures are their constructors' (not the batched ``__new__``'s)."""

from __future__ import annotations

import inspect

import torch

from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP


def test_truncated_gp_signature() -> None:
    params = inspect.signature(TruncatedGP).parameters
    assert list(params) == [
        "train_X", "train_Y", "alpha", "v", "covar_module", "lam", "delta", "B",
        "constants", "truncate", "arms", "centre", "level", "clip", "moment_estimator",
    ]
    assert params["constants"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["delta"].default == 0.1


def test_adaptive_truncation_gp_signature() -> None:
    params = inspect.signature(AdaptiveTruncationGP).parameters
    assert list(params) == [
        "train_X", "train_Y", "alpha", "v", "features", "lam", "delta", "B", "horizon",
        "constants", "truncate", "arms", "sample_dictionary", "dictionary_variances",
        "centre", "generator", "level", "moment_estimator",
    ]
    assert params["horizon"].kind is inspect.Parameter.KEYWORD_ONLY


def test_instances_have_no_constructor_signature() -> None:
    X = torch.rand(3, 1, dtype=torch.float64)
    model = TruncatedGP(X, torch.rand(3, 1, dtype=torch.float64), v=1.0)
    assert not hasattr(model, "__signature__")
