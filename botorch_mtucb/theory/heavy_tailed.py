"""Theory constants of heavy-tailed BO (paper 001) as pure functions: ``b_t``, ``β_t``, ``q``.

One place per formula; :class:`~botorch_mtucb.models.TruncatedGP` (TGP-UCB, Algorithm 1) and
:class:`~botorch_mtucb.models.AdaptiveTruncationGP` (ATA-GP-UCB, Algorithm 2) read every
schedule from here. ρ = (1+ε)/(1−ε) is :func:`botorch_mtucb.theory.multi_task.rho` (the same
ρ as paper 000).

Two sets of constants:

``"theory"`` (default of the models)
    TGP-UCB, Theorem 1:   ``b_t = v^{1/(1+α)} t^{1/(2(1+α))}``,
    ``β_{t+1} = B + (3/√λ) b_t √(ln det(I_t + λ⁻¹K_t) + 2 ln(1/δ))``.
    ATA-GP-UCB + QFF, Lemma 1 / Theorem 3 (``m`` = feature dimension = number of directions):
    ``b_t = (v / ln(2mT/δ))^{1/(1+α)} t^{(1−α)/(2(1+α))}``,
    ``β_{t+1} = B + 4 √(m/λ) v^{1/(1+α)} (ln(2mT/δ))^{α/(1+α)} t^{(1−α)/(2(1+α))}``.
    ATA-GP-UCB + Nyström, Theorem 4 (``ρ = (1+ε)/(1−ε)``): ``q = 6ρ ln(4T/δ)/ε²``,
    ``b_t = (v / ln(4 m_t T/δ))^{1/(1+α)} t^{(1−α)/(2(1+α))}``,
    ``β_{t+1} = B(1 + 1/√(1−ε))``
    ``+ 4 √(m_t/λ) v^{1/(1+α)} (ln(4 m_t T/δ))^{α/(1+α)} t^{(1−α)/(2(1+α))}``.
    (``m_t`` is replaced by ``max(m_t, 1)`` inside the logarithm so an empty dictionary works.)

``"authors"`` (the authors' public MATLAB code; δ dropped, ``t`` = index of the next round)
    TGP-UCB: same ``b_t``; ``β_{t+1} = B√λ + b_{t+1} √(ln(t+1))``.
    ATA-GP-UCB: ``b_t = t^{(1−α)/(2(1+α))} (v / ln(m'T))^{1/(1+α)}``,
    ``β_{t+1} = B√λ + √m v^{1/(1+α)} (ln(m'T))^{α/(1+α)} (t+1)^{(1−α)/(2(1+α))}``, with
    ``m' = m`` for QFF and ``m' = m + 1`` for Nyström; Nyström ``q = ln(T)/ε²``.

Here ``t`` is the number of observations so far; ``β_{t+1}`` is the width used to choose the
next point. When no horizon ``T`` is given, ``T = max(t, 1)`` (an anytime surrogate).
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Literal

from torch import Tensor

from botorch_mtucb.theory.multi_task import check_delta, check_horizon, rho
from botorch_mtucb.utils.validation import as_real as _real

__all__ = [
    "Constants",
    "FeatureKind",
    "ata_beta",
    "ata_log_term",
    "ata_truncation_level",
    "check_constants",
    "check_feature_kind",
    "check_heavy_tailed_params",
    "effective_horizon",
    "nystrom_q",
    "tgp_beta",
    "tgp_truncation_level",
    "tgp_truncation_levels",
]

Constants = Literal["theory", "authors"]
FeatureKind = Literal["qff", "nystrom"]


def check_constants(constants: str) -> str:
    """Validate the ``constants`` option (``"theory"`` or ``"authors"``).

    Example:
        >>> check_constants("authors")
        'authors'
    """
    return _choice(constants, "constants", ("theory", "authors"))


def _choice(value: str, name: str, options: tuple[str, ...]) -> str:
    """``value`` if it is one of ``options``, else a ``ValueError`` naming ``name``."""
    if value not in options:
        allowed = " or ".join(repr(o) for o in options)
        raise ValueError(f"`{name}` must be {allowed}, got {value!r}.")
    return value


def _positive_finite(value: float, name: str) -> float:
    value = _real(value, name, "a positive finite real number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}.")
    return value


def _non_negative(value: float, name: str) -> float:
    value = _real(value, name, "a non-negative finite real number")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"`{name}` must be non-negative and finite, got {value!r}.")
    return value


def _alpha(alpha: float) -> float:
    alpha = _real(alpha, "alpha", "a number in (0, 1]")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"`alpha` must lie in (0, 1], got {alpha!r}.")
    return alpha


def check_feature_kind(kind: str) -> str:
    """Validate a feature kind (``"qff"`` or ``"nystrom"``).

    Example:
        >>> check_feature_kind("qff")
        'qff'
    """
    return _choice(kind, "kind", ("qff", "nystrom"))


def _count(value: int, name: str, minimum: int) -> int:
    """An integer ``>= minimum`` (Python or NumPy), refused by name otherwise."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_heavy_tailed_params(
    alpha: float, v: float, lam: float, delta: float, B: float
) -> tuple[float, float, float, float, float]:
    """Validate the moment and regularisation parameters shared by TGP-UCB and ATA-GP-UCB.

    Args:
        alpha: Moment order, ``E|y|^{1+α} ≤ v`` with ``α ∈ (0, 1]``.
        v: Moment bound ``v > 0``.
        lam: Regulariser ``λ > 0``.
        delta: Confidence level ``δ ∈ (0, 1)`` (``δ = 1`` would make ``ln(1/δ) = 0``).
        B: RKHS-norm bound ``B ≥ 0``.

    Returns:
        The five values as floats.

    Example:
        >>> check_heavy_tailed_params(1, 4, 1, 0.1, 1)
        (1.0, 4.0, 1.0, 0.1, 1.0)
    """
    alpha = _real(alpha, "alpha", "a real number in (0, 1]")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"`alpha` must lie in (0, 1], got {alpha!r}.")
    v = _positive_finite(v, "v")
    lam = _positive_finite(lam, "lam")
    delta = check_delta(delta)
    B = _real(B, "B", "a non-negative finite real number")
    if not (math.isfinite(B) and B >= 0):
        raise ValueError(f"`B` must be non-negative and finite, got {B!r}.")
    return alpha, v, lam, delta, B


def effective_horizon(horizon: int | None, t: int) -> int:
    """The horizon ``T`` entering the schedules: ``horizon``, or ``max(t, 1)`` if ``None``.

    Example:
        >>> effective_horizon(None, 0), effective_horizon(None, 7), effective_horizon(100, 7)
        (1, 7, 100)
    """
    return max(int(t), 1) if horizon is None else check_horizon(horizon)


# ----------------------------------------------------------------------------- TGP-UCB
def tgp_truncation_level(t: int, alpha: float, v: float) -> float:
    """TGP-UCB's truncation level ``b_t = v^{1/(1+α)} t^{1/(2(1+α))}`` (paper 001, Theorem 1).

    The reward of round ``t`` is kept iff ``|y_t| ≤ b_t`` (Algorithm 1); ``b_0 = 0``.

    Args:
        t: Round index ``t ≥ 0``.
        alpha: Moment order ``α ∈ (0, 1]``.
        v: Moment bound ``v > 0``.

    Example:
        >>> tgp_truncation_level(16, alpha=1.0, v=4.0)  # 4^{1/2} · 16^{1/4}
        4.0
    """
    t, alpha, v = _non_negative(t, "t"), _alpha(alpha), _non_negative(v, "v")
    return v ** (1.0 / (1.0 + alpha)) * t ** (1.0 / (2.0 * (1.0 + alpha)))


def tgp_truncation_levels(rounds: Tensor, alpha: float, v: float) -> Tensor:
    """:func:`tgp_truncation_level` at a tensor of rounds: ``b_s = v^{1/(1+α)} s^{1/(2(1+α))}``.

    Args:
        rounds: ``n`` round indices ``s ≥ 0`` (floating point).
        alpha: Moment order ``α ∈ (0, 1]``.
        v: Moment bound ``v > 0``.

    Returns:
        ``n`` levels ``b_s`` (dtype and device of ``rounds``).

    Example:
        >>> import torch
        >>> tgp_truncation_levels(torch.tensor([1.0, 16.0]), alpha=1.0, v=4.0)
        tensor([2., 4.])
    """
    alpha, v = _alpha(alpha), _non_negative(v, "v")  # rounds: not read (no host sync)
    return v ** (1.0 / (1.0 + alpha)) * rounds.pow(1.0 / (2.0 * (1.0 + alpha)))


def tgp_beta(
    t: int,
    alpha: float,
    v: float,
    lam: float,
    delta: float,
    B: float,
    log_det: float,
    constants: Constants = "theory",
) -> float:
    """Confidence width ``β_{t+1}`` of TGP-UCB after ``t`` observations.

    Theory (paper 001, Theorem 1):
    ``β_{t+1} = B + (3/√λ) b_t √(ln det(I_t + λ⁻¹K_t) + 2 ln(1/δ))``.
    Authors' code: ``β_{t+1} = B√λ + b_{t+1} √(ln(t+1))``.

    Args:
        t: Number of observations so far.
        alpha, v, lam, delta, B: See :func:`check_heavy_tailed_params`.
        log_det: ``ln det(I_t + λ⁻¹ K_t)`` (only used by the theory constants).
        constants: ``"theory"`` (Theorem 1) or ``"authors"`` (public code).

    Returns:
        ``β_{t+1}`` as a float.

    Example:
        >>> round(tgp_beta(16, 1.0, 4.0, lam=1.0, delta=0.1, B=1.0, log_det=2.0), 4)
        31.8406
        >>> round(tgp_beta(16, 1.0, 4.0, 1.0, 0.1, 1.0, log_det=0.0, constants="authors"), 4)
        7.8357
    """
    lam = _positive_finite(lam, "lam")
    B = _non_negative(B, "B")
    if check_constants(constants) == "theory":
        delta = check_delta(delta)
        log_det = _non_negative(log_det, "log_det")
        b_t = tgp_truncation_level(t, alpha, v)
        return B + 3.0 / math.sqrt(lam) * b_t * math.sqrt(log_det + 2.0 * math.log(1.0 / delta))
    b_next = tgp_truncation_level(t + 1, alpha, v)
    return B * math.sqrt(lam) + b_next * math.sqrt(math.log(t + 1))


# ----------------------------------------------------------------------------- ATA-GP-UCB
def ata_log_term(
    m: int, T: int, delta: float, kind: FeatureKind, constants: Constants = "theory"
) -> float:
    """The logarithm ``L`` inside ``b_t`` and ``β_t`` of ATA-GP-UCB.

    ``L = ln(2mT/δ)`` (QFF, paper 001, Lemma 1), ``L = ln(4 max(m,1) T/δ)`` (Nyström,
    Theorem 4); authors' code: ``ln(mT)`` (QFF) and ``ln((m+1)T)`` (Nyström).

    Args:
        m: Feature dimension ``m`` (QFF) or dictionary size ``m_t`` (Nyström).
        T: Horizon ``T ≥ 1`` (see :func:`effective_horizon`).
        delta: Confidence ``δ ∈ (0, 1)``.
        kind: ``"qff"`` or ``"nystrom"``.
        constants: ``"theory"`` or ``"authors"``.

    Example:
        >>> round(ata_log_term(64, 100, 0.1, "qff"), 4)  # ln(2 · 64 · 100 / 0.1)
        11.7598
    """
    check_feature_kind(kind)
    m, T = _count(m, "m", 1 if kind == "qff" else 0), check_horizon(T)
    if check_constants(constants) == "theory":
        delta = check_delta(delta)
        if kind == "qff":
            return math.log(2.0 * m * T / delta)
        return math.log(4.0 * max(m, 1) * T / delta)
    return math.log((m if kind == "qff" else m + 1) * T)


def _time_exponent(alpha: float) -> float:
    return (1.0 - alpha) / (2.0 * (1.0 + alpha))


def ata_truncation_level(t: int, alpha: float, v: float, log_term: float) -> float:
    """ATA-GP-UCB's truncation level ``b_t = (v / L)^{1/(1+α)} t^{(1−α)/(2(1+α))}``.

    ``L`` from :func:`ata_log_term`. Paper 001, Lemma 1 (QFF) and Theorem 4 (Nyström); the
    same form in the authors' code.

    Returns ``inf`` (no truncation) when ``L ≤ 0`` (only possible with the authors' constants
    at ``m'T = 1``).

    Example:
        >>> ata_truncation_level(16, alpha=1.0, v=4.0, log_term=4.0)  # (4/4)^{1/2} · 16^0
        1.0
    """
    t, alpha, v = _non_negative(t, "t"), _alpha(alpha), _non_negative(v, "v")
    log_term = _real(log_term, "log_term", "a real number")
    if math.isnan(log_term):
        raise ValueError(f"`log_term` must be a real number, got {log_term!r}.")
    if log_term <= 0:
        return math.inf
    return (v / log_term) ** (1.0 / (1.0 + alpha)) * float(t) ** _time_exponent(alpha)


def ata_beta(
    t: int,
    alpha: float,
    v: float,
    lam: float,
    B: float,
    m: int,
    log_term: float,
    kind: FeatureKind,
    constants: Constants = "theory",
    epsilon: float = 0.1,
) -> float:
    """Confidence width ``β_{t+1}`` of ATA-GP-UCB after ``t`` observations.

    Theory: ``β_{t+1} = B + 4 √(m/λ) v^{1/(1+α)} L^{α/(1+α)} t^{(1−α)/(2(1+α))}`` (QFF, paper
    001, Lemma 1), with ``B(1 + 1/√(1−ε))`` in place of ``B`` for Nyström (Theorem 4).
    Authors' code: ``β_{t+1} = B√λ + √m v^{1/(1+α)} L^{α/(1+α)} (t+1)^{(1−α)/(2(1+α))}``.

    Args:
        t: Number of observations so far.
        alpha, v, lam, B: See :func:`check_heavy_tailed_params`.
        m: Feature dimension ``m`` (QFF) or dictionary size ``m_t`` (Nyström).
        log_term: From :func:`ata_log_term`.
        kind: ``"qff"`` (Lemma 1) or ``"nystrom"`` (Theorem 4).
        constants: ``"theory"`` or ``"authors"``.
        epsilon: Nyström accuracy ``ε`` (Theorem 4's ``B(1 + 1/√(1−ε))``).

    Returns:
        ``β_{t+1}`` as a float.

    Example:
        >>> ata_beta(16, 1.0, 4.0, lam=1.0, B=1.0, m=64, log_term=4.0, kind="qff")  # 1 + 4·8·2·2
        129.0
    """
    check_feature_kind(kind)
    t, m, alpha = _non_negative(t, "t"), _count(m, "m", 0), _alpha(alpha)
    v, lam = _non_negative(v, "v"), _positive_finite(lam, "lam")
    L = max(_real(log_term, "log_term", "a real number"), 0.0)
    moment = v ** (1.0 / (1.0 + alpha)) * L ** (alpha / (1.0 + alpha))
    if check_constants(constants) == "theory":
        if kind == "nystrom":
            rho(epsilon)  # ε ∈ (0, 1), refused by name otherwise
        head = B if kind == "qff" else B * (1.0 + 1.0 / math.sqrt(1.0 - epsilon))
        return head + 4.0 * math.sqrt(m / lam) * moment * float(t) ** _time_exponent(alpha)
    return B * math.sqrt(lam) + math.sqrt(m) * moment * float(t + 1) ** _time_exponent(alpha)


def nystrom_q(T: int, delta: float, epsilon: float, constants: Constants = "theory") -> float:
    """Nyström oversampling ``q = 6ρ ln(4T/δ)/ε²``, ``ρ = (1+ε)/(1−ε)`` (paper 001, Theorem 4).

    Authors' code: ``q = ln(T)/ε²``, floored at ``1/ε²`` (``T = 1`` would give ``q = 0``).

    Args:
        T: Horizon ``T ≥ 1``.
        delta: Confidence ``δ ∈ (0, 1)``.
        epsilon: Nyström accuracy ``ε ∈ (0, 1)``.
        constants: ``"theory"`` or ``"authors"``.

    Example:
        >>> round(nystrom_q(100, delta=0.1, epsilon=0.5), 2)  # 6 · 3 · ln(4000) / 0.25
        597.17
    """
    T = check_horizon(T)
    r = rho(epsilon)  # ε ∈ (0, 1), refused by name otherwise
    if check_constants(constants) == "theory":
        delta = check_delta(delta)
        return 6.0 * r * math.log(4.0 * T / delta) / epsilon**2
    return max(math.log(T), 1.0) / epsilon**2
