"""Continuous heavy-tailed problems of the issue-16 suite: BoTorch test functions + noise models.

A :class:`ContinuousHeavyTailedProblem` is a BoTorch test function, negated so that it is
maximised, rescaled to unit standard deviation over its box, observed through a noise model
of :mod:`mtucb_bench.noise_models`:

    f(x) = g(x) / s,   g = −(test function),   s = std of g over 2¹² scrambled-Sobol points
    (seed 0) of the box;   y = f(x) + ε.

``f`` is deliberately *not* centred (Branin's f lies in about [−6, −0.008], Hartmann6's in
[0, 8.6]): a method that needs centred rewards (truncation zeroes large ones) must centre the
data itself. Methods work in the unit cube ``[0, 1]^d`` (inputs are mapped to the box by
:meth:`ContinuousHeavyTailedProblem.f`), regret is ``f* − f(x)`` in these units, ``f*`` from
BoTorch's known optimal value.

The declared moment parameters: ``alpha`` = the noise's :meth:`NoiseModel.natural_alpha`
unless given, ``B = max |f|`` (the larger of ``|f*|`` and the Sobol maximum of ``|f|``), and
the honest ``v = 2^α (B^{1+α} + E|ε|^{1+α})`` (:func:`reward_moment_bound`, a bound on the
raw reward's moment as paper 001 requires). ``v_declared(honest=False)`` under-declares it by
the factor :data:`DISHONEST_FACTOR`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.test_functions import Branin, Hartmann
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor
from torch.quasirandom import SobolEngine

from mtucb_bench.noise_models import NoiseModel, parse_noise, reward_moment_bound

__all__ = [
    "DISHONEST_FACTOR",
    "SUITE_FUNCTIONS",
    "SUITE_NOISES",
    "ContinuousHeavyTailedProblem",
    "ht_suite_problem",
    "sobol_unit_design",
]

DT = torch.float64
#: ``v_declared(honest=False) = v / DISHONEST_FACTOR`` (a user who under-estimates the tails).
DISHONEST_FACTOR = 100.0
#: Noise settings of the suite (issue 16): Student-t ν ∈ {1.5, 2, 3}, Pareto shapes for
#: α ∈ {0.5, 0.9}, and two contamination regimes (rare gross outliers, frequent large ones).
SUITE_NOISES = (
    "student-t:1.5",
    "student-t:2",
    "student-t:3",
    "pareto:1.6",
    "pareto:2",
    "contaminated:0.02x1000",
    "contaminated:0.1x100",
)
SUITE_FUNCTIONS: dict[str, Callable[[], SyntheticTestFunction]] = {
    "branin": lambda: Branin(negate=True),
    "hartmann6": lambda: Hartmann(dim=6, negate=True),
}
_NORMALISATION_POINTS = 2**12


def sobol_unit_design(n: int, dim: int, seed: int) -> Tensor:
    """``n x dim`` scrambled Sobol points in ``[0, 1]^dim`` (float64), seeded."""
    if n < 0 or dim < 1:
        raise ValueError(f"Need n >= 0 and dim >= 1, got n={n}, dim={dim}.")
    return SobolEngine(dim, scramble=True, seed=seed).draw(n, dtype=DT)


@dataclass(frozen=True)
class ContinuousHeavyTailedProblem:
    """One continuous heavy-tailed problem (see the module docstring).

    Attributes:
        name: ``"<function>/<noise spec>"``.
        function: The negated BoTorch test function ``g`` (maximised, float64).
        scale: ``s``, the Sobol standard deviation of ``g``.
        noise: Additive noise model.
        alpha: Declared moment order α ∈ (0, 1].
        B: ``max |f|``.
        optimum: ``f* = max f``.
    """

    name: str
    function: SyntheticTestFunction
    scale: float
    noise: NoiseModel
    alpha: float
    B: float
    optimum: float

    @property
    def dim(self) -> int:
        return self.function.dim

    @property
    def bounds(self) -> Tensor:
        """``2 x d`` box of the original test function."""
        return self.function.bounds.to(DT)

    @property
    def unit_bounds(self) -> Tensor:
        """``2 x d`` unit cube the methods optimise over."""
        return torch.stack([torch.zeros(self.dim, dtype=DT), torch.ones(self.dim, dtype=DT)])

    def to_box(self, X: Tensor) -> Tensor:
        """Map ``... x d`` unit-cube points to the box."""
        lo, hi = self.bounds
        return lo + (hi - lo) * X.to(DT)

    def f(self, X: Tensor) -> Tensor:
        """Noise-free normalised objective at ``N x d`` unit-cube points (``N``, maximised)."""
        if X.dim() != 2 or X.shape[-1] != self.dim:
            raise ValueError(f"`X` must be N x {self.dim} unit-cube points, got {tuple(X.shape)}.")
        return self.function.forward(self.to_box(X), noise=False) / self.scale

    def regret(self, X: Tensor) -> Tensor:
        """``f* − f(x)`` at ``N x d`` unit-cube points (``N``, ≥ 0 up to round-off)."""
        return self.optimum - self.f(X)

    def observe(self, X: Tensor, generator: torch.Generator | None) -> Tensor:
        """``N x 1`` rewards ``f(x) + ε``; the noise is drawn from ``generator`` in call order."""
        F = self.f(X)
        return (F + self.noise.sample(tuple(F.shape), generator)).unsqueeze(-1)

    def v_declared(self, honest: bool = True) -> float:
        """The declared moment bound ``v`` (honest: :func:`reward_moment_bound`)."""
        v = reward_moment_bound(self.noise, self.alpha, self.B)
        if not math.isfinite(v):
            raise ValueError(
                f"{self.name}: E|ε|^(1+α) is infinite for alpha={self.alpha:g}; declare a "
                "smaller alpha."
            )
        return v if honest else v / DISHONEST_FACTOR


def ht_suite_problem(
    function: str, noise: str | NoiseModel, alpha: float | None = None
) -> ContinuousHeavyTailedProblem:
    """A suite problem (module docstring).

    Args:
        function: ``"branin"`` or ``"hartmann6"``.
        noise: Noise model or spec (:func:`parse_noise`).
        alpha: Declared α (default: the noise's natural α).
    """
    if function not in SUITE_FUNCTIONS:
        raise ValueError(
            f"Unknown suite function {function!r}; known: {', '.join(SUITE_FUNCTIONS)}."
        )
    noise_model = parse_noise(noise) if isinstance(noise, str) else noise
    if not isinstance(noise_model, NoiseModel):
        raise ValueError(f"`noise` must be a spec string or a NoiseModel, got {noise!r}.")
    g = SUITE_FUNCTIONS[function]().to(DT)
    lo, hi = g.bounds.to(DT)
    U = sobol_unit_design(_NORMALISATION_POINTS, g.dim, seed=0)
    vals = g.forward(lo + (hi - lo) * U, noise=False)
    scale = float(vals.std())
    optimum = float(g.optimal_value) / scale
    B = max(abs(optimum), float(vals.abs().max()) / scale)
    a = noise_model.natural_alpha() if alpha is None else float(alpha)
    if not 0.0 < a <= 1.0:
        raise ValueError(f"`alpha` must lie in (0, 1], got {alpha!r}.")
    return ContinuousHeavyTailedProblem(
        name=f"{function}/{noise_model.spec}",
        function=g,
        scale=scale,
        noise=noise_model,
        alpha=a,
        B=B,
        optimum=optimum,
    )
