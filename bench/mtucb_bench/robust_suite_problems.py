"""Problems of the robust suite (issue 27): continuous BoTorch functions × corruption kinds.

A cell ``"<function>/<kind>"`` is one :class:`RobustSuiteProblem`: the BoTorch test function,
negated (maximised) and rescaled to unit standard deviation over its box exactly as in
:mod:`mtucb_bench.ht_suite_problems` (``f = g / s``, ``s`` = std of ``g`` over 2¹² scrambled
Sobol points, seed 0; inputs in the unit cube; regret ``f* − f(x)`` in these units), read
through one corruption kind of :mod:`mtucb_bench.noise_models`:

=============  ==========================  ===================================================
kind           noise spec                  reading ``y`` of ``f(x)`` (``Z ~ N(0, 1)``)
=============  ==========================  ===================================================
``clean``      ``gaussian:0.1``            ``f + 0.1 Z``
``t3``         ``student-t:3@0.1``         ``f + 0.1 T₃`` (P(|ε| > 1) ≈ 0.2 %)
``t1.5``       ``student-t:1.5@0.1``       ``f + 0.1 T₁.₅`` (P(|ε| > 1) ≈ 2.4 %, > 5: 0.2 %)
``gross``      ``gross:0.04x5-20@0.1``     ``f + 0.1 Z``, plus ``±U(5, 20)`` with prob. 4 %
``failure``    ``failure:0.05+10@0.1``     ``f + 0.1 Z``; with prob. 5 % the constant
                                           ``f* + 10`` (a failed sensor above the optimum)
=============  ==========================  ===================================================

Every kind shares the core width 0.1 (1.5–2 % of each function's range of f), so the kinds
differ only in their tails. The Student-t scale is ``0.1`` here, not the heavy-tailed suite's
``1`` (there the noise's scale equals the signal's whole standard deviation).

Functions (``d`` = dimension; initial design ``max(5, 2d)`` points, :func:`n_init`):
``branin`` (2), ``ackley3`` (3), ``levy4`` (4), ``styblinski_tang4`` (4), ``hartmann6`` (6).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

import torch
from botorch.test_functions import Ackley, Branin, Hartmann, Levy, StyblinskiTang
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from mtucb_bench.ht_suite_problems import ContinuousHeavyTailedProblem, sobol_unit_design
from mtucb_bench.noise_models import parse_noise

__all__ = [
    "CELLS",
    "FUNCTIONS",
    "KINDS",
    "RobustSuiteProblem",
    "n_init",
    "robust_suite_problem",
    "select_cells",
]

DT = torch.float64
_NORMALISATION_POINTS = 2**12

#: name -> negated BoTorch test function (maximised).
FUNCTIONS: dict[str, Callable[[], SyntheticTestFunction]] = {
    "branin": lambda: Branin(negate=True),
    "ackley3": lambda: Ackley(dim=3, negate=True),
    "levy4": lambda: Levy(dim=4, negate=True),
    "styblinski_tang4": lambda: StyblinskiTang(dim=4, negate=True),
    "hartmann6": lambda: Hartmann(dim=6, negate=True),
}
#: corruption kind -> noise spec (module docstring).
KINDS: dict[str, str] = {
    "clean": "gaussian:0.1",
    "t3": "student-t:3@0.1",
    "t1.5": "student-t:1.5@0.1",
    "gross": "gross:0.04x5-20@0.1",
    "failure": "failure:0.05+10@0.1",
}
#: Every cell, ``"<function>/<kind>"``.
CELLS: tuple[str, ...] = tuple(f"{f}/{k}" for f in FUNCTIONS for k in KINDS)


@dataclass(frozen=True)
class RobustSuiteProblem(ContinuousHeavyTailedProblem):
    """A :class:`ContinuousHeavyTailedProblem` whose readings may depend on ``f*``.

    Attributes:
        kind: The corruption kind (a key of :data:`KINDS`).
    """

    kind: str = ""

    def observe(self, X: Tensor, generator: torch.Generator | None) -> Tensor:
        """``N x 1`` readings of ``f`` at ``N x d`` unit-cube points (``noise.readings`` with
        ``optimum = f*``); drawn from ``generator`` in call order."""
        return self.noise.readings(self.f(X), generator, self.optimum).unsqueeze(-1)


def n_init(dim: int) -> int:
    """Initial design size ``max(5, 2d)``."""
    return max(5, 2 * dim)


def robust_suite_problem(cell: str) -> RobustSuiteProblem:
    """The problem of a cell ``"<function>/<kind>"`` (module docstring).

    Raises:
        ValueError: for a malformed cell or an unknown function or kind.
    """
    function, sep, kind = str(cell).partition("/")
    if not sep or function not in FUNCTIONS or kind not in KINDS:
        raise ValueError(
            f"`cell` must be '<function>/<kind>' with function in {list(FUNCTIONS)} and kind "
            f"in {list(KINDS)}, got {cell!r}."
        )
    noise = parse_noise(KINDS[kind])
    g = FUNCTIONS[function]().to(DT)
    lo, hi = g.bounds.to(DT)
    vals = g.forward(lo + (hi - lo) * sobol_unit_design(_NORMALISATION_POINTS, g.dim, 0),
                     noise=False)
    scale = float(vals.std())
    optimum = float(g.optimal_value) / scale
    return RobustSuiteProblem(
        name=f"{function}/{kind}", function=g, scale=scale, noise=noise,
        alpha=noise.natural_alpha(), B=max(abs(optimum), float(vals.abs().max()) / scale),
        optimum=optimum, kind=kind,
    )


def select_cells(patterns: list[str] | None) -> list[str]:
    """The cells matching any of the shell-style ``patterns`` (``"branin/*"``, ``"*/gross"``),
    in :data:`CELLS` order; all cells for ``None`` or ``[]``.

    Raises:
        ValueError: if a pattern matches no cell.
    """
    if not patterns:
        return list(CELLS)
    for p in patterns:
        if not any(fnmatchcase(c, p) for c in CELLS):
            raise ValueError(f"Cell pattern {p!r} matches no cell; cells: {', '.join(CELLS)}.")
    return [c for c in CELLS if any(fnmatchcase(c, p) for p in patterns)]
