"""Theory constants of MT-KB and MT-BKB (paper 000) as pure functions.

Every schedule and model of the multi-task half reads its constants from here, so each
formula has one place:

* :func:`rho` — ρ = (1+ε)/(1−ε), the Nyström accuracy factor (Theorem 3, Lemma 6);
* :func:`c_epsilon` — c_ε = 1 + 1/√(1−ε), the RKHS-norm inflation of β̃_t (Theorem 3);
* :func:`theorem3_q` — the oversampling q = 6ρ log(4T/δ)/ε² of the dictionary (Theorem 3);
* :func:`theorem2_beta` — β_t of MT-KB (Theorem 2, via Lemma 4);
* :func:`theorem3_beta` — β̃_t of MT-BKB (Theorem 3, Appendix D.1).

The heavy-tailed constants (paper 001) live in :mod:`botorch_mtucb.theory.heavy_tailed`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import torch
from torch import Tensor

__all__ = ["c_epsilon", "check_delta", "check_epsilon_delta", "check_horizon", "rho",
           "theorem2_beta", "theorem3_beta", "theorem3_q"]


def check_delta(delta: float) -> float:
    """Validate a confidence level δ ∈ (0, 1) (the bounds hold with probability ≥ 1 − δ).

    δ = 1 is refused: the guarantee would hold with probability 0 and ``log(1/δ) = 0``.

    Returns:
        ``delta`` as a float.

    Example:
        >>> check_delta(0.1)
        0.1
        >>> check_delta(1.0)
        Traceback (most recent call last):
            ...
        ValueError: `delta` must lie in the open interval (0, 1) (confidence 1 - delta), got 1.0.
    """
    message = f"`delta` must lie in the open interval (0, 1) (confidence 1 - delta), got {delta!r}."
    if isinstance(delta, str | bytes | bool):
        raise ValueError(message)
    try:
        value = float(delta)
    except (TypeError, ValueError) as err:
        raise ValueError(message) from err
    if not 0.0 < value < 1.0:
        raise ValueError(message)
    return value


def check_horizon(horizon: int) -> int:
    """Validate a horizon ``T``: a positive integer (Python or NumPy, not ``bool``).

    Returns:
        ``horizon`` as an ``int``.

    Example:
        >>> import numpy as np
        >>> check_horizon(np.int64(100))
        100
    """
    if isinstance(horizon, bool) or not isinstance(horizon, Integral) or horizon < 1:
        raise ValueError(f"`horizon` must be a positive integer, got {horizon!r}.")
    return int(horizon)


def check_epsilon_delta(epsilon: float, delta: float) -> None:
    """Validate a Nyström accuracy ε ∈ (0, 1) and a confidence δ ∈ (0, 1).

    Example:
        >>> check_epsilon_delta(0.5, 0.1)  # valid: returns None
        >>> check_epsilon_delta(1.0, 0.1)
        Traceback (most recent call last):
            ...
        ValueError: `epsilon` must lie in (0, 1), got 1.0.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not (
        0.0 < float(epsilon) < 1.0
    ):
        raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon!r}.")
    check_delta(delta)


def rho(epsilon: float) -> float:
    """ρ = (1+ε)/(1−ε): the factor between Nyström and exact variances (paper 000, Thm. 3).

    Args:
        epsilon: Accuracy ε ∈ (0, 1).

    Example:
        >>> rho(0.5)
        3.0
    """
    if not 0.0 < float(epsilon) < 1.0:
        raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon!r}.")
    return (1.0 + epsilon) / (1.0 - epsilon)


def c_epsilon(epsilon: float) -> float:
    """c_ε = 1 + 1/√(1−ε): the RKHS-norm factor of β̃_t (paper 000, Theorem 3).

    Args:
        epsilon: Accuracy ε ∈ (0, 1).

    Example:
        >>> c_epsilon(0.75)  # 1 + 1/√0.25
        3.0
    """
    if not 0.0 < float(epsilon) < 1.0:
        raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon!r}.")
    return 1.0 + 1.0 / math.sqrt(1.0 - epsilon)


def theorem3_q(epsilon: float, delta: float, horizon: int) -> float:
    """Theorem 3's oversampling parameter q = 6ρ log(4T/δ)/ε² (paper 000).

    Args:
        epsilon: Accuracy ε ∈ (0, 1).
        delta: Confidence δ ∈ (0, 1).
        horizon: Time horizon T ≥ 1 (a Python or NumPy integer).

    Example:
        >>> round(theorem3_q(0.5, 0.1, 100), 2)  # 6 · 3 · log(4000) / 0.25
        597.17
    """
    check_epsilon_delta(epsilon, delta)
    horizon = check_horizon(horizon)
    return 6.0 * rho(epsilon) * math.log(4.0 * horizon / delta) / epsilon**2


def theorem2_beta(
    b: float, sigma: float, eta: Tensor | float, delta: float, log_det: Tensor | float
) -> Tensor:
    """β_t of MT-KB (paper 000, Theorem 2 with Lemma 4).

    β_t = b + (σ/√η) √(2 log(1/δ) + log det(I_{nt} + η⁻¹ G_t)), where by Lemma 4
    log det(I_{nt} + η⁻¹ G_t) = Σ_{s≤t} log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)).

    Args:
        b: RKHS-norm bound ‖f‖_Γ ≤ b.
        sigma: Sub-Gaussian noise parameter σ.
        eta: Regulariser η > 0.
        delta: Confidence δ ∈ (0, 1).
        log_det: log det(I_{nt} + η⁻¹ G_t) (a 0-dim tensor or number).

    Returns:
        β_t as a 0-dim tensor (dtype of ``log_det``, float64 for numbers).

    Example:
        >>> theorem2_beta(b=1.0, sigma=0.5, eta=0.25, delta=0.1, log_det=2.0)
        tensor(3.5701, dtype=torch.float64)
    """
    log_det, eta = _radius_inputs(b, sigma, eta, log_det, "log_det")
    delta = check_delta(delta)
    inner = 2.0 * math.log(1.0 / delta) + log_det
    return b + sigma / eta.sqrt() * inner.clamp_min(0.0).sqrt()


def theorem3_beta(
    b: float,
    sigma: float,
    eta: Tensor | float,
    delta: float,
    epsilon: float,
    log_det_sum: Tensor | float,
) -> Tensor:
    """β̃_t of MT-BKB (paper 000, Theorem 3 and Appendix D.1).

    β̃_t = c_ε b + (σ/√η) √(2 log(2/δ) + ρ Σ_{s≤t} log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s))).

    Args:
        b: RKHS-norm bound.
        sigma: Sub-Gaussian noise parameter σ.
        eta: Regulariser η > 0.
        delta: Confidence δ ∈ (0, 1) (shared by the dictionary and the radius).
        epsilon: Nyström accuracy ε ∈ (0, 1).
        log_det_sum: The accumulated Σ_s log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)).

    Returns:
        β̃_t as a 0-dim tensor.

    Example:
        >>> theorem3_beta(1.0, 0.5, eta=0.25, delta=0.1, epsilon=0.5, log_det_sum=2.0)
        tensor(5.8771, dtype=torch.float64)
    """
    s, eta = _radius_inputs(b, sigma, eta, log_det_sum, "log_det_sum")
    check_epsilon_delta(epsilon, delta)
    inner = 2.0 * math.log(2.0 / delta) + rho(epsilon) * s
    return c_epsilon(epsilon) * b + sigma / eta.sqrt() * inner.clamp_min(0.0).sqrt()


def _radius_inputs(
    b: float, sigma: float, eta: Tensor | float, log_det: Tensor | float, name: str
) -> tuple[Tensor, Tensor]:
    """``(log_det, eta)`` as floating tensors (float64 unless ``log_det`` is a floating
    tensor), after a clear ``ValueError`` for ``b`` or ``sigma`` not finite and ``>= 0``,
    ``eta`` not finite and ``> 0``, or a negative ``log_det`` (a log det of ``I + PSD``)."""
    for label, value in (("b", b), ("sigma", sigma)):
        v = torch.as_tensor(value, dtype=torch.float64)
        if v.numel() != 1 or not bool(v.isfinite().all()) or float(v) < 0:
            raise ValueError(f"`{label}` must be a finite number >= 0, got {value!r}.")
    if not torch.is_tensor(log_det) or not log_det.is_floating_point():
        log_det = torch.as_tensor(log_det, dtype=torch.float64)
    eta = torch.as_tensor(eta).to(log_det)
    if not bool(eta.isfinite().all()) or not bool((eta > 0).all()):
        raise ValueError(f"`eta` must be finite and > 0, got {eta!r}.")
    if not bool(log_det.isfinite().all()) or bool((log_det < -1e-8).any()):
        raise ValueError(f"`{name}` must be finite and >= 0 (a log det of I + PSD), got "
                         f"{log_det!r}.")
    return log_det, eta
