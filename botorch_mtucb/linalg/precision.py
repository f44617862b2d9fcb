"""Working precision: one float32 policy for every model — accurate, with a warning.

A posterior computed from a factorisation of ``K + ηI`` loses about ``c · κ · eps`` of relative
accuracy, ``κ = (λ_max(K) + η)/η`` its condition number, ``eps`` the machine epsilon of the
dtype and ``c`` a method constant (≈ 1 for a Cholesky solve, smaller for the TGP mean and
≈ 1e-3 for an SVD-based ridge fit). float64 (eps ≈ 2.2e-16) has room for any regulariser these
models accept; float32 (eps ≈ 1.2e-7) does not once ``κ`` passes ~10⁴ (near-duplicate inputs,
a small η or λ, or simply many observations: ``tr K_t`` grows with ``t``), and the mean can then
be off by orders of magnitude.

**The policy** (:func:`working_dtype`, used by the multi-task *and* the heavy-tailed models):
keep the data's dtype while ``c · κ · eps ≤`` :data:`PRECISION_BUDGET`, else factor and predict
in float64 and return results in the data's dtype, after a ``NumericalWarning``. Why not refuse:
in a BO loop the condition number grows with the number of rounds (TGP-UCB's
``κ̂ = 1 + tr(K_t)/λ`` is linear in ``t``), so a refusal would stop a running loop at an
unpredictable round although an accurate answer costs only a float64 factorisation; a user who
asked for float32 gets float32 results that are right, and the warning says what it cost.
:func:`check_float_conditioning` is the strict alternative for callers that prefer to raise.
"""

from __future__ import annotations

import math
import warnings

import torch
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.utils.validation import as_real

__all__ = [
    "MAX_EPS_KAPPA",
    "PRECISION_BUDGET",
    "check_float_conditioning",
    "check_regulariser",
    "regularised_condition",
    "working_dtype",
]

#: Largest tolerated relative error ``c · κ · eps`` of a factorisation in the data's dtype.
PRECISION_BUDGET = 1e-3

#: Largest ``eps · κ̂`` accepted by the refusing :func:`check_float_conditioning`.
MAX_EPS_KAPPA = 0.1


def regularised_condition(trace: float, lam: float) -> float:
    """``κ̂ = 1 + tr(K)/λ``, an upper bound on ``cond(K + λI)`` for PSD ``K`` (``tr K ≥ λ_max``).

    Raises:
        ValueError: unless ``lam`` is a positive finite number.

    Example:
        >>> regularised_condition(trace=9.0, lam=1.0)
        10.0
    """
    return 1.0 + trace / check_regulariser(lam)


def check_regulariser(lam: float) -> float:
    """``lam`` as a float, or a ``ValueError`` naming it unless it is positive and finite.

    Example:
        >>> check_regulariser(0.5)
        0.5
    """
    expected = "a positive finite number"
    value = as_real(lam, "lam", expected)
    if not 0.0 < value < math.inf:
        raise ValueError(f"`lam` must be {expected}, got {lam!r}.")
    return value


def working_dtype(
    dtype: torch.dtype, condition: float, what: str = "the posterior", error_factor: float = 1.0
) -> torch.dtype:
    """The dtype to factor a system of condition number ``condition`` in.

    Args:
        dtype: The data's (model's) floating-point dtype.
        condition: An upper bound on the condition number κ of the regularised system (e.g.
            ``(tr Γ(X, X) + η)/η``, which bounds ``(λ_max + η)/η``); ``math.inf`` for a
            computation that always needs float64 (a rank-revealing pseudo-inverse).
        what: What is being computed (for the warning).
        error_factor: The method constant ``c`` of the error estimate ``c · κ · eps``
            (per method; 1 for a plain Cholesky solve).

    Returns:
        ``dtype`` when ``c · κ · eps(dtype) ≤ PRECISION_BUDGET`` (or ``dtype`` is float64), else
        ``torch.float64`` — after a ``NumericalWarning`` saying so.

    Example:
        >>> working_dtype(torch.float32, condition=100.0)
        torch.float32
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     working_dtype(torch.float32, condition=1e8, what="the TGP mean")
        torch.float64
    """
    if dtype == torch.float64:
        return dtype
    eps = torch.finfo(dtype).eps
    if error_factor * condition * eps <= PRECISION_BUDGET:
        return dtype
    if not math.isfinite(condition):
        warnings.warn(
            f"{what} needs more precision than {dtype} offers: computing it in float64 and "
            f"returning {dtype} results. Use float64 data to avoid this.",
            NumericalWarning,
            stacklevel=3,
        )
        return torch.float64
    err = error_factor * condition * eps
    warnings.warn(
        f"{what} is too ill-conditioned for {dtype} (condition number ≈ {condition:.3g}, "
        f"relative error up to {err:.2g}): computing it in float64 and returning "
        f"{dtype} results. Use float64 data, or a larger noise/regulariser, to avoid this.",
        NumericalWarning,
        stacklevel=3,
    )
    return torch.float64


def check_float_conditioning(
    trace: float, lam: float, dtype: torch.dtype, what: str, max_eps_kappa: float = MAX_EPS_KAPPA
) -> None:
    """Refuse a regularised system that ``dtype`` cannot solve accurately (strict variant).

    ``κ̂ = 1 + tr(K)/λ ≥ cond(K + λI)``; above ``eps · κ̂ = max_eps_kappa`` this raises. The
    models follow :func:`working_dtype` instead; this is for code that prefers a refusal to a
    float64 fallback.

    Args:
        trace: ``tr(K)`` (a bound on ``λ_max(K)``).
        lam: The regulariser ``λ``.
        dtype: The dtype the system would be solved in.
        what: Name of the computation, for the message.
        max_eps_kappa: Largest accepted ``eps · κ̂``.

    Raises:
        ValueError: when ``eps · κ̂ > max_eps_kappa``.

    Example:
        >>> check_float_conditioning(10.0, 1.0, torch.float32, "M")   # accepted
        >>> check_float_conditioning(1e8, 1e-2, torch.float32, "M")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: M in torch.float32 cannot be accurate here: ...
    """
    eps = torch.finfo(dtype).eps
    kappa = regularised_condition(trace, lam)
    if eps * kappa > max_eps_kappa:
        raise ValueError(
            f"{what} in {dtype} cannot be accurate here: with `lam`={lam:g} and tr(K_t)="
            f"{trace:.3g}, cond(K_t + lam I) may reach {kappa:.2e} and eps·cond = "
            f"{eps * kappa:.2g} > {max_eps_kappa}. Use float64 data or a larger `lam`."
        )
