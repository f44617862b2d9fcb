"""Heavy-tailed and corrupted reward-noise models with a spec syntax (issue 16).

A noise model draws i.i.d. additive, symmetric, mean-zero (where the mean exists) noise
``ε`` for ``y = f(x) + ε`` from a ``torch.Generator`` and knows its exact moments
``E|ε|^{1+α}`` in closed form, so a run can declare the true moment bound v ("honest") or a
wrong one ("dishonest").

Spec syntax (``parse_noise``), ``@SCALE`` is an optional positive multiplier of ``ε``:

===============================  ===============================================================
``gaussian:SIGMA``               ``ε ~ N(0, SIGMA²)``.
``gaussian-range:FRACTION``      multi-objective problems only: objective i's noise is
                                 ``N(0, (FRACTION · r_i)²)``, ``r_i`` the range (max − min) of
                                 ``f_i`` over the problem's domain
                                 (:func:`mtucb_bench.experiments.objective_ranges`).
``student-t:NU[@S]``             ``ε = S·T_ν``, Student-t with any real ``ν > 0`` (Bailey's polar
                                 method, exact for every ν; ``E|ε|^p`` finite iff ``p < ν``).
``pareto:SHAPE[@S]``             symmetrised Lomax: ``ε = S·R·(P − 1)``, ``P ~ Pareto(SHAPE, 1)``
                                 (``P ≥ 1``), ``R = ±1`` with probability ½ each, so
                                 ``P(|ε| > x) = (1 + x/S)^{−SHAPE}``; mean 0 for SHAPE > 1;
                                 ``E|ε|^p`` finite iff ``p < SHAPE``.
``contaminated:RATExMULT[@S]``   Tukey's contaminated normal: ``ε ~ N(0, S²)`` (``S`` default 0.1)
                                 and, independently with probability RATE, the noise of the
                                 reward is multiplied by MULT, i.e. ``ε ~ N(0, (MULT·S)²)``: a
                                 fraction RATE of gross outliers of size ≈ MULT·S.
``gross:RATExLO-HI[@S]``         symmetric gross outliers: ``ε = S·Z + O·R·U``, ``Z ~ N(0, 1)``,
                                 ``O ~ Bernoulli(RATE)``, ``R = ±1`` with probability ½ each,
                                 ``U ~ Uniform(LO, HI)``, all independent; ``S`` default 0.1.
                                 LO and HI are absolute (the units of ``f``, not multiples of
                                 ``S``): the outlier *offsets* the reading ``f + S·Z`` by
                                 ``±U``. Robust suite: ``gross:0.04x5-20@0.1``.
``failure:RATE+OFFSET[@S]``      one-sided sensor failures: the reading is ``f(x) + S·Z``, but
                                 with probability RATE it is replaced by the constant
                                 ``f* + OFFSET`` (``f*`` = the problem's maximum; not noise
                                 around ``f``). Not additive, so only
                                 :meth:`NoiseModel.readings` with ``optimum = f*`` draws it;
                                 :meth:`NoiseModel.sample` and the moments raise.
                                 Robust suite: ``failure:0.05+10@0.1``.
===============================  ===============================================================

:meth:`NoiseModel.readings` ``(F, generator, optimum)`` returns the readings ``y`` for the
noise-free values ``F``; for every additive model it is ``F + sample(F.shape)``, which
:class:`SensorFailureNoise` overrides. Every model draws a fixed number of random numbers per
reading (whether or not it is an outlier), so two runs with the same generator see the same
noise stream as long as they observe the same number of points.

Closed-form absolute moments (``p = 1 + α``; ``m_p = E|Z|^p = 2^{p/2} Γ((p+1)/2)/√π`` for
``Z ~ N(0, 1)``):

* Gaussian: ``σ^p m_p``.
* Student-t: ``S^p ν^{p/2} Γ((p+1)/2) Γ((ν−p)/2) / (√π Γ(ν/2))`` for ``p < ν``, else ``∞``.
* Lomax: ``S^p Γ(p+1) Γ(a−p) / Γ(a)`` for ``p < a``, else ``∞``.
* Contaminated: ``S^p m_p ((1 − r) + r M^p)``.
* Gross: ``(1 − r) S^p m_p + r E_U E|S·Z + U|^p`` (the inner expectation by adaptive
  quadrature, the outer one by 32-node Gauss–Legendre on ``[LO, HI]``: not closed form, but
  accurate to ~1e-8 relative).

:meth:`NoiseModel.natural_alpha` is the α a run declares by default: ``min(1, θ − 1.1)``
for a tail parameter θ (ν or SHAPE; the largest α ≤ 1 whose moment order stays 0.1 below
the moment boundary: ν = 1.5 → 0.4, ν = 2 → 0.9, ν = 3 → 1; SHAPE 1.6 → 0.5, SHAPE 2 → 0.9)
and 1 for the Gaussian, contaminated, gross and failure models.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = [
    "ContaminatedNoise",
    "GaussianNoise",
    "GrossOutlierNoise",
    "NoiseModel",
    "ParetoNoise",
    "RangeGaussianNoise",
    "SensorFailureNoise",
    "StudentTNoise",
    "gaussian_abs_moment",
    "parse_noise",
    "reward_moment_bound",
]

DT = torch.float64
_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
#: Margin kept between the moment order 1 + α and the tail parameter (see natural_alpha).
ALPHA_MARGIN = 0.1


def gaussian_abs_moment(p: float) -> float:
    """``E|Z|^p = 2^{p/2} Γ((p+1)/2) / √π`` for ``Z ~ N(0, 1)``, ``p > −1``."""
    return 2.0 ** (p / 2.0) * math.exp(math.lgamma((p + 1.0) / 2.0)) / math.sqrt(math.pi)


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"`alpha` must lie in (0, 1], got {alpha!r}.")
    return alpha


def _rademacher(shape: tuple[int, ...], generator: torch.Generator | None) -> Tensor:
    return torch.randint(0, 2, shape, generator=generator).to(DT).mul_(2.0).sub_(1.0)


@dataclass(frozen=True)
class NoiseModel:
    """Base class: additive noise ``ε`` with a multiplier ``scale`` (see the module docstring).

    Attributes:
        scale: Positive multiplier of the unit-scale noise.
    """

    scale: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"`scale` must be positive and finite, got {self.scale!r}.")

    @property
    def spec(self) -> str:
        """The spec string that :func:`parse_noise` maps back to this model."""
        raise NotImplementedError  # pragma: no cover

    def _unit_sample(self, shape: tuple[int, ...], generator: torch.Generator | None) -> Tensor:
        raise NotImplementedError  # pragma: no cover

    def _unit_abs_moment(self, p: float) -> float:
        raise NotImplementedError  # pragma: no cover

    def sample(self, shape: tuple[int, ...], generator: torch.Generator | None = None) -> Tensor:
        """``shape`` i.i.d. float64 draws of ``ε``, driven only by ``generator``."""
        return self.scale * self._unit_sample(tuple(shape), generator)

    def readings(
        self, F: Tensor, generator: torch.Generator | None = None, optimum: float | None = None
    ) -> Tensor:
        """Readings ``y`` (shape of ``F``) of the noise-free values ``F``.

        Additive models: ``F + ε``. ``optimum`` (the problem's ``f*``) is used only by models
        whose readings depend on it (:class:`SensorFailureNoise`).
        """
        return F + self.sample(tuple(F.shape), generator).to(F)

    def abs_moment(self, alpha: float) -> float:
        """``E|ε|^{1+α}`` in closed form (``math.inf`` when the moment does not exist)."""
        p = 1.0 + _check_alpha(alpha)
        return self.scale**p * self._unit_abs_moment(p)

    def natural_alpha(self) -> float:
        """The moment order α a run declares by default (module docstring)."""
        return 1.0

    def _suffix(self, default: float = 1.0) -> str:
        return "" if self.scale == default else f"@{self.scale:g}"


@dataclass(frozen=True)
class GaussianNoise(NoiseModel):
    """``ε ~ N(0, scale²)`` (spec ``gaussian:SIGMA``)."""

    @property
    def spec(self) -> str:
        return f"gaussian:{self.scale:g}"

    def _unit_sample(self, shape, generator):
        return torch.randn(shape, generator=generator, dtype=DT)

    def _unit_abs_moment(self, p):
        return gaussian_abs_moment(p)


@dataclass(frozen=True)
class RangeGaussianNoise(GaussianNoise):
    """Gaussian noise with a per-objective σ_i = ``scale`` · r_i, ``r_i`` objective i's range
    over the domain (spec ``gaussian-range:FRACTION``; resolved against a multi-objective
    problem by the experiment registry, which knows the ranges)."""

    @property
    def spec(self) -> str:
        return f"gaussian-range:{self.scale:g}"


@dataclass(frozen=True)
class StudentTNoise(NoiseModel):
    """``ε = scale · T_ν`` for any real ``ν > 0`` (spec ``student-t:NU[@S]``).

    Attributes:
        df: Degrees of freedom ``ν > 0``.
    """

    df: float = 3.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.df) and self.df > 0):
            raise ValueError(f"Student-t `df` must be positive and finite, got {self.df!r}.")

    @property
    def spec(self) -> str:
        return f"student-t:{self.df:g}{self._suffix()}"

    def _unit_sample(self, shape, generator):
        # Bailey (1994), polar method: (U, V) uniform on the unit disc, W = U² + V²;
        # T = U √(ν (W^{−2/ν} − 1) / W) is exactly t_ν. Batches of candidates, accepted with
        # probability π/4; a Python loop over rejection batches only (not over draws).
        n = math.prod(shape)
        out, have = [torch.zeros(0, dtype=DT)], 0
        while have < n:
            m = max(16, int(1.35 * (n - have)) + 16)
            uv = 2.0 * torch.rand(m, 2, generator=generator, dtype=DT) - 1.0
            w = uv.square().sum(-1)
            ok = (w < 1.0) & (w > 0.0)
            u, w = uv[ok, 0], w[ok]
            out.append(u * (self.df * (w.pow(-2.0 / self.df) - 1.0) / w).sqrt())
            have += u.shape[0]
        return torch.cat(out)[:n].reshape(shape)

    def _unit_abs_moment(self, p):
        nu = self.df
        if p >= nu:
            return math.inf
        log_m = (
            0.5 * p * math.log(nu)
            + math.lgamma((p + 1.0) / 2.0)
            + math.lgamma((nu - p) / 2.0)
            - 0.5 * math.log(math.pi)
            - math.lgamma(nu / 2.0)
        )
        return math.exp(log_m)

    def natural_alpha(self) -> float:
        return _natural(self.df, "Student-t df")


@dataclass(frozen=True)
class ParetoNoise(NoiseModel):
    """Symmetrised Lomax noise ``ε = scale · R (P − 1)`` (spec ``pareto:SHAPE[@S]``).

    Attributes:
        shape: Pareto tail index ``a > 0`` (mean exists for ``a > 1``).
    """

    shape: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.shape) and self.shape > 0):
            raise ValueError(f"Pareto `shape` must be positive and finite, got {self.shape!r}.")

    @property
    def spec(self) -> str:
        return f"pareto:{self.shape:g}{self._suffix()}"

    def _unit_sample(self, shape, generator):
        u = 1.0 - torch.rand(shape, generator=generator, dtype=DT)  # (0, 1]
        lomax = u.pow(-1.0 / self.shape) - 1.0
        return _rademacher(shape, generator) * lomax

    def _unit_abs_moment(self, p):
        a = self.shape
        if p >= a:
            return math.inf
        return math.exp(math.lgamma(p + 1.0) + math.lgamma(a - p) - math.lgamma(a))

    def natural_alpha(self) -> float:
        return _natural(self.shape, "Pareto shape")


@dataclass(frozen=True)
class ContaminatedNoise(NoiseModel):
    """Tukey's contaminated normal (spec ``contaminated:RATExMULT[@S]``, S default 0.1).

    Attributes:
        rate: Probability ``r ∈ [0, 1]`` that a reward is an outlier.
        mult: Factor ``M > 0`` on the noise standard deviation of an outlier.
    """

    scale: float = 0.1
    rate: float = 0.02
    mult: float = 1000.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"Contamination `rate` must lie in [0, 1], got {self.rate!r}.")
        if not (math.isfinite(self.mult) and self.mult > 0):
            raise ValueError(f"Contamination `mult` must be positive, got {self.mult!r}.")

    @property
    def spec(self) -> str:
        return f"contaminated:{self.rate:g}x{self.mult:g}{self._suffix(0.1)}"

    def _unit_sample(self, shape, generator):
        z = torch.randn(shape, generator=generator, dtype=DT)
        out = torch.rand(shape, generator=generator, dtype=DT) < self.rate
        return torch.where(out, self.mult * z, z)

    def _unit_abs_moment(self, p):
        return gaussian_abs_moment(p) * ((1.0 - self.rate) + self.rate * self.mult**p)


@dataclass(frozen=True)
class GrossOutlierNoise(NoiseModel):
    """Symmetric gross outliers on Gaussian noise (spec ``gross:RATExLO-HI[@S]``, S default 0.1).

    ``ε = S·Z + O·R·U`` with ``Z ~ N(0, 1)``, ``O ~ Bernoulli(rate)``, ``R = ±1`` (½ each) and
    ``U ~ Uniform(low, high)``, independent; ``low`` and ``high`` are absolute offsets (the
    units of ``f``), not multiples of ``scale``. Symmetric, mean zero, all moments finite.
    Every reading consumes one normal and three uniform-type draws, outlier or not.

    Attributes:
        rate: Probability ``r ∈ [0, 1]`` that a reading is offset by an outlier.
        low: Smallest outlier size ``LO ≥ 0``.
        high: Largest outlier size ``HI ≥ LO``.
    """

    scale: float = 0.1
    rate: float = 0.04
    low: float = 5.0
    high: float = 20.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"Gross-outlier `rate` must lie in [0, 1], got {self.rate!r}.")
        if not (math.isfinite(self.high) and 0.0 <= self.low <= self.high):
            raise ValueError(
                f"Gross-outlier sizes need 0 <= `low` <= `high` < inf, got {self.low!r}, "
                f"{self.high!r}."
            )

    @property
    def spec(self) -> str:
        return f"gross:{self.rate:g}x{self.low:g}-{self.high:g}{self._suffix(0.1)}"

    def sample(self, shape: tuple[int, ...], generator: torch.Generator | None = None) -> Tensor:
        shape = tuple(shape)
        z = torch.randn(shape, generator=generator, dtype=DT)
        out = torch.rand(shape, generator=generator, dtype=DT) < self.rate
        size = self.low + (self.high - self.low) * torch.rand(shape, generator=generator, dtype=DT)
        offset = torch.where(out, _rademacher(shape, generator) * size, 0.0)
        return self.scale * z + offset

    def abs_moment(self, alpha: float) -> float:
        p = 1.0 + _check_alpha(alpha)
        base = self.scale**p * gaussian_abs_moment(p)
        if self.rate == 0.0:
            return base
        return (1.0 - self.rate) * base + self.rate * _uniform_offset_abs_moment(
            p, self.scale, self.low, self.high
        )


def _uniform_offset_abs_moment(p: float, sigma: float, low: float, high: float) -> float:
    """``E_U E|σZ + U|^p``, ``U ~ Uniform(low, high)``: adaptive quadrature in ``z`` (break at
    the kink ``z = −u/σ``), 32-node Gauss–Legendre in ``u`` (the inner value is smooth in u)."""
    import numpy as np
    from scipy import integrate

    def inner(u: float) -> float:
        def g(z: float) -> float:
            return abs(sigma * z + u) ** p * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)

        kink = -u / sigma
        pieces = [(-40.0, min(kink, 40.0)), (max(kink, -40.0), 40.0)]
        return sum(integrate.quad(g, a, b, epsabs=0.0, epsrel=1e-11)[0]
                   for a, b in pieces if b > a)

    if high == low:
        return inner(low)
    nodes, weights = np.polynomial.legendre.leggauss(32)
    us = 0.5 * (high - low) * nodes + 0.5 * (high + low)
    return float(sum(w * inner(float(u)) for u, w in zip(us, weights, strict=True)) / 2.0)


@dataclass(frozen=True)
class SensorFailureNoise(NoiseModel):
    """One-sided sensor failures (spec ``failure:RATE+OFFSET[@S]``, S default 0.1).

    The reading of ``f(x)`` is ``f(x) + S·Z`` (``Z ~ N(0, 1)``), except that with probability
    ``rate`` it is the constant ``f* + offset`` (``f*`` the problem's maximum): a failed
    sensor that reports an impossible, better-than-optimal value, the same every time. The
    corruption depends on ``f`` and ``f*``, so it is not additive noise: only
    :meth:`readings` (with ``optimum``) draws it. Each reading consumes one normal and one
    uniform draw.

    Attributes:
        rate: Failure probability ``r ∈ [0, 1]``.
        offset: ``OFFSET > 0``, the failed reading's height above ``f*``.
    """

    scale: float = 0.1
    rate: float = 0.05
    offset: float = 10.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"Failure `rate` must lie in [0, 1], got {self.rate!r}.")
        if not (math.isfinite(self.offset) and self.offset > 0):
            raise ValueError(f"Failure `offset` must be positive and finite, got {self.offset!r}.")

    @property
    def spec(self) -> str:
        return f"failure:{self.rate:g}+{self.offset:g}{self._suffix(0.1)}"

    def readings(
        self, F: Tensor, generator: torch.Generator | None = None, optimum: float | None = None
    ) -> Tensor:
        """``f + S·Z``, or ``f* + offset`` with probability ``rate`` (shape of ``F``).

        Raises:
            ValueError: if ``optimum`` (the problem's ``f*``) is not given.
        """
        if optimum is None or not math.isfinite(float(optimum)):
            raise ValueError(
                f"`optimum` (the problem's f*) must be a finite float, got {optimum!r}."
            )
        shape = tuple(F.shape)
        z = torch.randn(shape, generator=generator, dtype=DT).to(F)
        failed = (torch.rand(shape, generator=generator, dtype=DT) < self.rate).to(F.device)
        return torch.where(failed, float(optimum) + self.offset, F + self.scale * z)

    def sample(self, shape: tuple[int, ...], generator: torch.Generator | None = None) -> Tensor:
        raise ValueError(
            f"{self.spec}: failed readings depend on f*, they are not additive noise; use "
            "`readings(F, generator, optimum)`."
        )

    def abs_moment(self, alpha: float) -> float:
        raise ValueError(f"{self.spec}: the reading's moments depend on f and f*; none declared.")


def _natural(theta: float, what: str) -> float:
    alpha = min(1.0, theta - 1.0 - ALPHA_MARGIN)
    if alpha <= 0.0:
        raise ValueError(
            f"{what} {theta:g} <= {1 + ALPHA_MARGIN:g}: no (1+α)-th moment with α > 0 is "
            "safely finite (the mean-zero heavy-tailed model does not apply)."
        )
    return alpha


def reward_moment_bound(noise: NoiseModel, alpha: float, B: float) -> float:
    """Honest ``v`` with ``E|f(x) + ε|^{1+α} ≤ v`` for ``|f| ≤ B``: ``2^α (B^{1+α} + E|ε|^{1+α})``.

    From ``|a + b|^p ≤ 2^{p−1}(|a|^p + |b|^p)`` for ``p = 1 + α ≥ 1`` (convexity). Paper 001
    bounds the raw reward's moment, not the noise's.
    """
    if not (math.isfinite(B) and B >= 0):
        raise ValueError(f"`B` must be non-negative and finite, got {B!r}.")
    p = 1.0 + _check_alpha(alpha)
    return 2.0 ** (p - 1.0) * (B**p + noise.abs_moment(alpha))


_PATTERNS = {
    "gaussian": re.compile(rf"^gaussian:{_NUM}$"),
    "gaussian-range": re.compile(rf"^gaussian-range:{_NUM}$"),
    "student-t": re.compile(rf"^student-t:{_NUM}(?:@{_NUM})?$"),
    "pareto": re.compile(rf"^pareto:{_NUM}(?:@{_NUM})?$"),
    "contaminated": re.compile(rf"^contaminated:{_NUM}x{_NUM}(?:@{_NUM})?$"),
    "gross": re.compile(rf"^gross:{_NUM}x{_NUM}-{_NUM}(?:@{_NUM})?$"),
    "failure": re.compile(rf"^failure:{_NUM}\+{_NUM}(?:@{_NUM})?$"),
}
_SYNTAX = (
    "'gaussian:SIGMA', 'gaussian-range:FRACTION', 'student-t:NU[@SCALE]', 'pareto:SHAPE[@SCALE]', "
    "'contaminated:RATExMULT[@SIGMA]', 'gross:RATExLO-HI[@SIGMA]' or "
    "'failure:RATE+OFFSET[@SIGMA]' (e.g. 'student-t:1.5', 'pareto:1.6', "
    "'contaminated:0.02x1000', 'gross:0.04x5-20@0.1', 'failure:0.05+10@0.1')"
)


def parse_noise(spec: str) -> NoiseModel:
    """Noise model from a spec string (module docstring).

    Args:
        spec: e.g. ``"student-t:1.5"``, ``"pareto:1.6@0.5"``, ``"contaminated:0.02x1000"``,
            ``"gaussian:0.1"``, ``"gross:0.04x5-20@0.1"``, ``"failure:0.05+10@0.1"``.

    Raises:
        ValueError: naming the spec and the expected syntax, or the invalid parameter.
    """
    if not isinstance(spec, str):
        raise ValueError(f"`noise` spec must be a string, got {type(spec).__name__}.")
    s = spec.strip().lower()
    kind = s.split(":", 1)[0]
    if kind not in _PATTERNS:
        raise ValueError(f"Unknown noise kind {kind!r} in {spec!r}; expected {_SYNTAX}.")
    m = _PATTERNS[kind].match(s)
    if m is None:
        raise ValueError(f"Malformed noise spec {spec!r}; expected {_SYNTAX}.")
    vals = [None if g is None else float(g) for g in m.groups()]
    if kind == "gaussian":
        return GaussianNoise(scale=vals[0])
    if kind == "gaussian-range":
        return RangeGaussianNoise(scale=vals[0])
    if kind == "student-t":
        return StudentTNoise(df=vals[0], scale=1.0 if vals[1] is None else vals[1])
    if kind == "pareto":
        return ParetoNoise(shape=vals[0], scale=1.0 if vals[1] is None else vals[1])
    if kind == "gross":
        return GrossOutlierNoise(
            rate=vals[0], low=vals[1], high=vals[2], scale=0.1 if vals[3] is None else vals[3]
        )
    if kind == "failure":
        return SensorFailureNoise(
            rate=vals[0], offset=vals[1], scale=0.1 if vals[2] is None else vals[2]
        )
    return ContaminatedNoise(rate=vals[0], mult=vals[1], scale=0.1 if vals[2] is None else vals[2])
