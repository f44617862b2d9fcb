r"""Strongly correlated multi-objective problems of the suite (issue 16).

:func:`correlated_problem`: f_i = φ_i(a_iᵀ g(x)) + ε h_i(x) with shared latent functions
g = (g_1, …, g_L), loadings a_i on a narrow cone (angles θ_i spread over ``spread`` radians),
random monotone transforms φ_i and small independent parts h_i. ``corr-rff`` draws g and h as
random-Fourier-feature samples of an SE-kernel GP (a new instance per seed);
``corr-hartmann`` uses BoTorch's ``Hartmann`` (d = 6) at two reflected/permuted inputs as
latents. Their maximum hypervolume is an *estimate*: the hypervolume of the non-dominated
points of a 2¹⁴-point Sobol sample together with the SLSQP-polished maximisers of 64
Chebyshev scalarizations (a lower bound, so a run may reach slightly more than 100 %).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from botorch.test_functions.synthetic import Hartmann
from torch import Tensor

from mtucb_bench.mo_suite_base import DT, SuiteProblem, finish_problem, sobol_points

__all__ = ["corr_hartmann", "corr_rff", "correlated_problem"]


def _rff_function(d: int, lengthscale: float, num_features: int, g: torch.Generator):
    """A random-Fourier-feature draw of a unit-variance SE-kernel GP on [0, 1]^d."""
    W = torch.randn(num_features, d, generator=g, dtype=DT) / lengthscale
    b = 2 * math.pi * torch.rand(num_features, generator=g, dtype=DT)
    c = torch.randn(num_features, generator=g, dtype=DT) * math.sqrt(2.0 / num_features)

    def f(X: Tensor) -> Tensor:
        return torch.cos(X @ W.T.to(X) + b.to(X)) @ c.to(X)

    return f


#: Monotone increasing transforms φ applied to the standardised latent mixture.
_TRANSFORMS: dict[str, Callable[[Tensor], Tensor]] = {
    "identity": lambda z: z,
    "exp": lambda z: torch.exp(0.7 * z),
    "softplus": lambda z: torch.nn.functional.softplus(2.0 * z),
    "cubic": lambda z: z + 0.3 * z**3,
    "tanh": lambda z: torch.tanh(z),
}


def correlated_problem(
    latents: list[Callable[[Tensor], Tensor]],
    num_objectives: int,
    bounds: Tensor,
    seed: int = 0,
    spread: float = 0.6,
    independent: float = 0.1,
    lengthscale: float = 0.3,
    name: str = "correlated",
    units: str = "normalized",
    noise_std: float = 0.0,
) -> SuiteProblem:
    r"""Objectives that are monotone transforms of shared latent functions plus small parts.

    f_i(x) = φ_i(a_iᵀ g(x)) + ``independent`` · h_i(x), with g the given latents (each
    standardised over a Sobol sample), a_i = (cos θ_i, sin θ_i, 0, …) rotated into the first
    two latents and the rest of the latents weighted equally and shared by all i, θ_i evenly
    spaced over [0, ``spread``] in random order, φ_i drawn from :data:`_TRANSFORMS`, h_i
    independent RFF draws of a unit-variance SE GP (lengthscale ``lengthscale``). A small
    spread gives strongly correlated objectives that still conflict (their maximisers differ).

    Args:
        latents: ``L ≥ 2`` functions ``N x d -> N`` (maximised), differentiable.
        num_objectives: n ≥ 2.
        bounds: ``2 x d`` box.
        seed: Seed of θ order, φ_i and h_i.
        spread: Angle range of the loadings in radians, in (0, π/2].
        independent: Amplitude of the independent parts (≥ 0).
        lengthscale: SE lengthscale of h_i on the unit cube.
        name: Problem name.
        units: ``"normalized"`` or ``"raw"`` (see the module docstring).
        noise_std: Observation noise σ (problem units).
    """
    if len(latents) < 2:
        raise ValueError(f"`latents` must hold at least 2 functions, got {len(latents)}.")
    if not isinstance(num_objectives, int) or num_objectives < 2:
        raise ValueError(f"`num_objectives` must be an integer >= 2, got {num_objectives!r}.")
    if not 0 < spread <= math.pi / 2:
        raise ValueError(f"`spread` must lie in (0, pi/2], got {spread!r}.")
    if independent < 0:
        raise ValueError(f"`independent` must be >= 0, got {independent!r}.")
    bounds = bounds.to(DT)
    d = bounds.shape[-1]
    g = torch.Generator().manual_seed(seed)
    Xs = sobol_points(4096, bounds, 99)
    with torch.no_grad():
        G = torch.stack([lat(Xs) for lat in latents], dim=-1)
    mu, sd = G.mean(dim=0), G.std(dim=0).clamp_min(1e-12)
    L = len(latents)
    theta = torch.linspace(0, spread, num_objectives, dtype=DT)[
        torch.randperm(num_objectives, generator=g)
    ]
    A = torch.zeros(num_objectives, L, dtype=DT)
    A[:, 0], A[:, 1] = torch.cos(theta), torch.sin(theta)
    if L > 2:
        A[:, 2:] = 1.0 / math.sqrt(L - 2)
    names = list(_TRANSFORMS)
    phis = [names[int(i)] for i in torch.randint(0, len(names), (num_objectives,), generator=g)]
    hs = [_rff_function(d, lengthscale, 256, g) for _ in range(num_objectives)]
    lo, span = bounds[0], bounds[1] - bounds[0]

    def f_raw(X: Tensor) -> Tensor:
        Z = (torch.stack([lat(X) for lat in latents], dim=-1) - mu.to(X)) / sd.to(X)
        M = Z @ A.T.to(X)
        U = (X - lo.to(X)) / span.to(X)
        cols = [_TRANSFORMS[p](M[:, i]) + independent * hs[i](U) for i, p in enumerate(phis)]
        return torch.stack(cols, dim=-1)

    with torch.no_grad():
        F = f_raw(Xs)
    raw_ref = F.quantile(0.1, dim=0)  # hypervolume reference: the sample's 10 % quantiles
    return finish_problem(
        name, f_raw, bounds, raw_ref, None, units, noise_std, True, True,
        notes=(
            f"correlated: L = {L} latents, spread {spread:.2g} rad, transforms {phis}, "
            f"independent parts {independent:g}; HV reference = 10 % quantiles of f"
        ),
        seed=seed,
    )


def corr_rff(seed: int = 0, units: str = "normalized", noise_std: float = 0.0) -> SuiteProblem:
    """``corr-rff``: four objectives from two random-Fourier-feature latents on [0, 1]³ (a new
    instance per ``seed``)."""
    g = torch.Generator().manual_seed(10_000 + seed)
    latents = [_rff_function(3, 0.35, 256, g) for _ in range(2)]
    bounds = torch.stack([torch.zeros(3, dtype=DT), torch.ones(3, dtype=DT)])
    return correlated_problem(latents, 4, bounds, seed=seed, name="corr-rff", units=units,
                              noise_std=noise_std)


def corr_hartmann(
    seed: int = 0, units: str = "normalized", noise_std: float = 0.0
) -> SuiteProblem:
    """``corr-hartmann``: three objectives from two Hartmann-6 latents on [0, 1]⁶ (one fixed
    instance; ``seed`` is ignored)."""
    h = Hartmann(dim=6).to(DT)
    perm = torch.tensor([3, 4, 5, 0, 1, 2])
    latents = [lambda X: -h.evaluate_true(X), lambda X: -h.evaluate_true(1.0 - X[:, perm])]
    bounds = torch.stack([torch.zeros(6, dtype=DT), torch.ones(6, dtype=DT)])
    return correlated_problem(latents, 3, bounds, seed=0, name="corr-hartmann", units=units,
                              noise_std=noise_std)
