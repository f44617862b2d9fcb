"""Working precision: float32 that is accurate or refuses loudly.

A posterior computed from a factorisation of ``K + ηI`` loses about ``κ · eps`` of relative
accuracy, ``κ = (λ_max(K) + η)/η`` its condition number and ``eps`` the machine epsilon of the
dtype. float64 (eps ≈ 2.2e-16) has room for any regulariser these models accept; float32
(eps ≈ 1.2e-7) does not once ``κ`` passes ~10⁴ (near-duplicate inputs, a small η): there the
mean can be off by orders of magnitude. :func:`working_dtype` is the one policy every model
applies: keep the data's dtype while ``κ · eps ≤`` :data:`PRECISION_BUDGET`, else factor and
predict in float64 (with a ``NumericalWarning``) and return results in the data's dtype.
"""

from __future__ import annotations

import math
import warnings

import torch
from linear_operator.utils.warnings import NumericalWarning

__all__ = ["PRECISION_BUDGET", "working_dtype"]

#: Largest tolerated relative error ``κ · eps`` of a factorisation in the data's dtype.
PRECISION_BUDGET = 1e-3


def working_dtype(dtype: torch.dtype, condition: float, what: str = "the posterior") -> torch.dtype:
    """The dtype to factor a system of condition number ``condition`` in.

    Args:
        dtype: The data's (model's) floating-point dtype.
        condition: An upper bound on the condition number κ of the regularised system (e.g.
            ``(tr Γ(X, X) + η)/η``, which bounds ``(λ_max + η)/η``); ``math.inf`` for a
            computation that always needs float64 (a rank-revealing pseudo-inverse).
        what: What is being computed (for the warning).

    Returns:
        ``dtype`` when ``κ · eps(dtype) ≤ PRECISION_BUDGET`` (or ``dtype`` is float64), else
        ``torch.float64`` — after a ``NumericalWarning`` saying so.
    """
    if dtype == torch.float64:
        return dtype
    eps = torch.finfo(dtype).eps
    if condition * eps <= PRECISION_BUDGET:
        return dtype
    if not math.isfinite(condition):
        warnings.warn(
            f"{what} needs more precision than {dtype} offers: computing it in float64 and "
            f"returning {dtype} results. Use float64 data to avoid this.",
            NumericalWarning,
            stacklevel=3,
        )
        return torch.float64
    warnings.warn(
        f"{what} is too ill-conditioned for {dtype} (condition number ≈ {condition:.3g}, "
        f"relative error up to {condition * eps:.2g}): computing it in float64 and returning "
        f"{dtype} results. Use float64 data, or a larger noise/regulariser, to avoid this.",
        NumericalWarning,
        stacklevel=3,
    )
    return torch.float64
