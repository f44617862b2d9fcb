"""The one float32 policy (``linalg.precision``): thresholds, warnings, the strict variant."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.linalg.precision import (
    PRECISION_BUDGET,
    check_float_conditioning,
    regularised_condition,
    working_dtype,
)

EPS32 = torch.finfo(torch.float32).eps


def test_threshold_is_error_factor_times_kappa_times_eps() -> None:
    kappa = PRECISION_BUDGET / EPS32  # exactly at the budget with c = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert working_dtype(torch.float32, 0.99 * kappa) == torch.float32
        assert working_dtype(torch.float32, 10 * kappa, error_factor=0.05) == torch.float32
        assert working_dtype(torch.float64, math.inf) == torch.float64
    with pytest.warns(NumericalWarning, match="condition number"):
        assert working_dtype(torch.float32, 1.01 * kappa) == torch.float64
    with pytest.warns(NumericalWarning, match="more precision"):
        assert working_dtype(torch.float32, math.inf, "X") == torch.float64


def test_regularised_condition_bounds_the_condition_number() -> None:
    g = torch.Generator().manual_seed(0)
    A = torch.randn(30, 5, dtype=torch.float64, generator=g)
    K, lam = A @ A.T, 1e-3
    ev = torch.linalg.eigvalsh(K + lam * torch.eye(30, dtype=torch.float64))
    kappa = float(ev.max() / ev.min())
    bound = regularised_condition(float(K.trace()), lam)
    assert kappa <= bound <= 5.0 * kappa  # rank 5: tr K ≤ 5 λ_max


def test_strict_variant_refuses() -> None:
    check_float_conditioning(10.0, 1.0, torch.float32, "M")
    with pytest.raises(ValueError, match="M in torch.float32 cannot be accurate"):
        check_float_conditioning(1e8, 1e-2, torch.float32, "M")
