r"""Many-objective problems (n = 5 … 10) of the many-objective suite (issue 26).

Every problem is a :class:`ManyObjectiveProblem`: a
:class:`~mtucb_bench.mo_suite_base.SuiteProblem` (so the runner, the CLI and the loop take it
as is) with the standard error of its maximum hypervolume where that is a Monte-Carlo
estimate. ``units="normalized"`` (default) maps objective i to (y_i − r_i) / (u_i − r_i) with
r the hypervolume reference point and u the ideal point (DTLZ: −min f, known; correlated
problems: the largest value found, below), so r becomes 0 and u 1 (the suite's rule, the
extent of a Sobol sample inside the reference box, fails where no sample point lies inside,
as for DTLZ7 at these n); ``"raw"`` keeps BoTorch's units. Their
hypervolumes are computed by :func:`mtucb_bench.hypervolume_mc.hypervolume` (exact where
BoTorch's box decomposition finishes in time, a seeded Monte-Carlo estimate otherwise).
All objectives are maximised.

**BoTorch's DTLZ problems** (negated), names ``dtlz{1,2,7}-n{5,6,8,10}``, at BoTorch's
convention d = n + k − 1 with k from the DTLZ paper (Deb et al. 2005): k = 5 for DTLZ1,
k = 10 for DTLZ2 and k = 20 for DTLZ7 (:data:`DTLZ_K`):

=========  ==========================  =================  ===================================
problem    d (n = 5, 6, 8, 10)         reference point     maximum hypervolume
=========  ==========================  =================  ===================================
DTLZ1      9, 10, 12, 14               −400 (BoTorch)      BoTorch's ``max_hv``: 400ⁿ − 2⁻ⁿ
DTLZ2      14, 15, 17, 19              −1.1 (BoTorch)      BoTorch's ``max_hv``: 1.1ⁿ − vol. of
                                                          the positive unit-ball orthant
DTLZ7      24, 25, 27, 29              −15 (BoTorch)       :func:`dtlz7_max_hv` (quadrature)
=========  ==========================  =================  ===================================

Ideal points: 0 (f_i ≥ 0), but DTLZ7's last objective is at least 2n − 2 (n − 1) max_u h(u)
(h in :func:`dtlz7_max_hv`).

**Correlated objectives** ``corr-mix-n6`` and ``corr-mix-n8`` (:func:`mixed_latent_problem`,
d = 6): L = 3 shared latent functions g (random-Fourier-feature draws of an SE-kernel GP,
standardised) mixed by a fixed random matrix A whose rows lie in a cone about a common
direction, f_i(x) = φ_i(a_iᵀ g(x)) + 0.1 h_i(x) with monotone φ_i and small independent RFF
parts h_i (one fixed instance; the trial seed does not change it). Reference point: the 10 %
quantiles of f over 4096 Sobol points (the rule of the suite's correlated problems). Maximum
hypervolume: the Monte-Carlo hypervolume of the non-dominated points of a 2¹³-point Sobol
sample together with 128 SLSQP-polished Chebyshev maximisers (an estimate of a lower bound;
its standard error is :attr:`ManyObjectiveProblem.max_hv_se`). Ideal point: the objectives'
maxima over the sample and the polished points (those include each objective's polished
maximiser).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from botorch.test_functions.multi_objective import DTLZ1, DTLZ2, DTLZ7
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.utils import polish_maxima
from mtucb_bench.hypervolume_mc import mc_hypervolume
from mtucb_bench.mo_correlated_problems import _TRANSFORMS, _rff_function
from mtucb_bench.mo_suite_base import DT, SuiteProblem, finish_problem, sobol_points

__all__ = [
    "DTLZ_K",
    "MANY_SUITE",
    "ManyObjectiveProblem",
    "dtlz7_max_hv",
    "make_many_problem",
    "mixed_latent_problem",
]

#: k of d = n + k − 1 per DTLZ problem (Deb et al. 2005).
DTLZ_K = {"dtlz1": 5, "dtlz2": 10, "dtlz7": 20}
#: Objective counts of the DTLZ problems of the suite.
DTLZ_OBJECTIVES = (5, 6, 8, 10)
#: Points of the dense Sobol sample a problem is finished on (scale, regret set, settings).
_SAMPLE = 2**12
#: Monte-Carlo samples of the maximum-hypervolume estimate of the correlated problems.
_MAX_HV_SAMPLES = 2**18


@dataclass(frozen=True)
class ManyObjectiveProblem(SuiteProblem):
    """A :class:`SuiteProblem` whose maximum hypervolume may carry a Monte-Carlo error.

    Attributes:
        max_hv_se: Standard error of ``max_hv`` (0 where it is known exactly).
    """

    max_hv_se: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.max_hv_se) and self.max_hv_se >= 0):
            raise ValueError(f"`max_hv_se` must be a number >= 0, got {self.max_hv_se!r}.")


def _finish(
    name: str, f_raw: Callable[[Tensor], Tensor], bounds: Tensor, raw_ref: Tensor,
    raw_upper: Tensor, max_hv_raw: float, max_hv_se_raw: float, source: str, units: str,
    noise_std: float, correlated: bool, notes: str,
) -> ManyObjectiveProblem:
    """The problem in ``units``: :func:`finish_problem` in raw units, then (``"normalized"``)
    f ↦ (f − r) / s with s = ``raw_upper`` − r, so the reference point is 0 and the ideal
    point 1; the task matrix B and b follow the unit's f on the regret set."""
    if units not in ("normalized", "raw"):
        raise ValueError(f"`units` must be 'normalized' or 'raw', got {units!r}.")
    base = finish_problem(name, f_raw, bounds, raw_ref, max_hv_raw, "raw", noise_std,
                          correlated, True, notes, sample_size=_SAMPLE)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields["max_hv_source"] = source
    scale = (raw_upper - raw_ref).to(DT)
    if not bool((scale > 0).all()):
        raise ValueError(f"{name}: the upper point must exceed the reference point.")
    se = max_hv_se_raw
    if units == "normalized":
        def f(X: Tensor) -> Tensor:
            return (f_raw(X) - raw_ref.to(X)) / scale.to(X)

        se = max_hv_se_raw / float(scale.prod())
        fields.update(f=f, ref_point=torch.zeros_like(raw_ref), scale=scale,
                      max_hv=max_hv_raw / float(scale.prod()), units="normalized")
    with torch.no_grad():
        F = fields["f"](base.regret_X)
    C = torch.cov(((F - fields["ref_point"]) / (scale if units == "raw" else 1.0)).T)
    B = C / torch.diagonal(C).mean()
    fields.update(task_covar=B, b=float(F.norm(dim=-1).max()) / float(torch.linalg.eigvalsh(B)[-1]))
    return ManyObjectiveProblem(**fields, max_hv_se=float(se))


# --------------------------------------------------------------------------------- DTLZ
def _dtlz7_h(u: Tensor) -> Tensor:
    """h(u) = u (1 + sin 3πu) / 2: DTLZ7's last objective on its front is 2n − 2 Σ h(f_i)."""
    return 0.5 * u * (1.0 + torch.sin(3.0 * math.pi * u))


def _dtlz7_running_max(grid_size: int = 200_001) -> tuple[Tensor, Tensor]:
    """H(w) = max_{0 ≤ u ≤ w} h(u) on a grid of [0, 1] (``w``, ``H``)."""
    w = torch.linspace(0.0, 1.0, grid_size, dtype=DT)
    return w, torch.cummax(_dtlz7_h(w), dim=0).values


def dtlz7_max_hv(num_objectives: int, ref: float = 15.0, num_samples: int = 2**20) -> float:
    r"""Hypervolume of DTLZ7's Pareto front (minimised) below the reference point ``ref``·1.

    On the front (g = 1) f_i = u_i ∈ [0, 1] for i < n and f_n = 2n − 2 Σ_i h(u_i) with
    h(u) = u (1 + sin 3πu) / 2. A point z (z_i ≥ 0) is dominated iff z_n ≥ m(z) with
    m(z) = min_{u ≤ min(z, 1)} f_n = 2n − 2 Σ_i H(min(z_i, 1)), H(w) = max_{u ≤ w} h(u), so

        HV = ∫_{[0, ref]^{n−1}} (ref − 2n + 2 Σ_i H(min(z_i, 1)))₊ dz.

    Where ref ≥ 2n the positive part is inactive and the integral is one-dimensional:
    HV = ref^{n−1} (ref − 2n) + 2 (n − 1) ref^{n−2} (∫₀¹ H + (ref − 1) H(1)) (trapezoidal rule
    on a 200,001-point grid). Otherwise it is ref^{n−1} E[(ref − 2n + 2 Σ_i H(min(z_i, 1)))₊]
    over z uniform on [0, ref]^{n−1}, by scrambled Sobol quasi-Monte Carlo (``num_samples``
    points, seed 0; H interpolated on the grid).

    Args:
        num_objectives: n ≥ 2.
        ref: The reference value of every objective (BoTorch's 15).
        num_samples: Quasi-Monte-Carlo points where ref < 2n.

    Returns:
        The hypervolume, in the minimised units of BoTorch's DTLZ7.
    """
    n = int(num_objectives)
    if n < 2:
        raise ValueError(f"`num_objectives` must be >= 2, got {num_objectives!r}.")
    w, H = _dtlz7_running_max()
    c = ref - 2.0 * n
    if c >= 0:
        integral = float(torch.trapezoid(H, w))
        return ref ** (n - 1) * c + 2.0 * (n - 1) * ref ** (n - 2) * (
            integral + (ref - 1.0) * float(H[-1])
        )
    Z = ref * SobolEngine(n - 1, scramble=True, seed=0).draw(num_samples, dtype=DT)
    pos = Z.clamp(max=1.0) * (w.numel() - 1)
    lo = pos.floor().long().clamp(max=w.numel() - 2)
    frac = pos - lo
    HZ = H[lo] * (1 - frac) + H[lo + 1] * frac
    return ref ** (n - 1) * float((c + 2.0 * HZ.sum(dim=-1)).clamp_min(0.0).mean())


def _dtlz_upper(kind: str, n: int) -> Tensor:
    """The ideal point of the negated DTLZ problem (raw units): −min f (f_i ≥ 0; DTLZ7's
    last objective is at least 2n − 2 (n − 1) max_u h(u))."""
    upper = torch.zeros(n, dtype=DT)
    if kind == "dtlz7":
        upper[-1] = -(2.0 * n - 2.0 * (n - 1) * float(_dtlz7_running_max()[1][-1]))
    return upper


def _dtlz_problem(kind: str, n: int) -> Callable[..., ManyObjectiveProblem]:
    cls = {"dtlz1": DTLZ1, "dtlz2": DTLZ2, "dtlz7": DTLZ7}[kind]
    d = n + DTLZ_K[kind] - 1
    name = f"{kind}-n{n}"

    def build(
        seed: int = 0, units: str = "normalized", noise_std: float = 0.0
    ) -> ManyObjectiveProblem:
        p = cls(dim=d, num_objectives=n, negate=True).to(DT)  # ref_point negated too

        def f_raw(X: Tensor, _p=p) -> Tensor:
            return _p(X, noise=False)

        if kind == "dtlz7":
            max_hv, source = dtlz7_max_hv(n, float(-p.ref_point[0])), "dtlz7_max_hv"
        else:
            max_hv, source = float(p.max_hv), "botorch"
        return _finish(
            name, f_raw, p.bounds.to(DT), p.ref_point.to(DT), _dtlz_upper(kind, n), max_hv,
            0.0, source, units, noise_std, False,
            f"BoTorch {cls.__name__} (d = {d}, n = {n}, k = {DTLZ_K[kind]}), negated; "
            f"max HV: {source}",
        )

    return build


# ------------------------------------------------------------------- correlated objectives
def _polished_points(
    f: Callable[[Tensor], Tensor], X: Tensor, F: Tensor, ref: Tensor, bounds: Tensor,
    num_weights: int, seed: int,
) -> Tensor:
    """SLSQP-polished maximisers of ``num_weights`` Chebyshev scalarizations (weights from
    the simplex, scaled by the extent above ``ref``) and of each objective alone."""
    g = torch.Generator().manual_seed(seed)
    n = F.shape[-1]
    u = 1.0 / (1.0 - torch.rand(num_weights, n, generator=g, dtype=DT))
    W = u / u.sum(dim=-1, keepdim=True)
    span = (F.max(dim=0).values - ref).clamp_min(1e-12)
    Wn = W / span
    V = (Wn[:, None, :] * (F - ref)[None]).min(dim=-1).values
    starts = X[V.argmax(dim=-1)]
    points = []
    for k in range(num_weights):
        def pieces(Z: Tensor, w: Tensor = Wn[k]) -> Tensor:
            return w * (f(Z) - ref.to(Z))

        points.append(polish_maxima(pieces, starts[k : k + 1], bounds, maxiter=50)[0])
    for i in range(n):
        def single(Z: Tensor, i: int = i) -> Tensor:
            return f(Z)[:, i : i + 1]

        points.append(polish_maxima(single, X[F[:, i].argmax()][None], bounds, maxiter=50)[0])
    return torch.cat(points)


def mixed_latent_problem(
    num_objectives: int,
    dim: int = 6,
    num_latents: int = 3,
    seed: int = 0,
    spread: float = 0.3,
    independent: float = 0.1,
    lengthscale: float = 0.35,
    name: str | None = None,
    units: str = "normalized",
    noise_std: float = 0.0,
) -> ManyObjectiveProblem:
    r"""Many correlated objectives: shared latent functions mixed by a fixed random matrix.

    f_i(x) = φ_i(a_iᵀ g(x)) + ``independent`` · h_i(x), with g = (g_1, …, g_L) RFF draws of
    a unit-variance SE GP on [0, 1]^d (lengthscale ``lengthscale``, 256 features), each
    standardised over 4096 Sobol points (seed 99); a_i = (m + ``spread`` ξ_i) / ‖·‖ with
    m = 1/√L and ξ_i ~ N(0, I_L), so the objectives are strongly correlated (a narrow cone
    about m) yet their maximisers differ; φ_i drawn from the suite's monotone transforms
    (identity, exp, softplus, cubic, tanh); h_i independent RFF draws (same kernel).

    Args:
        num_objectives: n ≥ 2.
        dim: d.
        num_latents: L ≥ 2.
        seed: Seed of g, A, φ and h (one instance per seed).
        spread: Width of the cone of the mixing rows (> 0).
        independent: Amplitude of the independent parts (≥ 0).
        lengthscale: SE lengthscale on the unit cube.
        name: Problem name (default ``corr-mix-n<n>``).
        units: ``"normalized"`` or ``"raw"``.
        noise_std: Observation noise σ (problem units).
    """
    if not isinstance(num_objectives, int) or num_objectives < 2:
        raise ValueError(f"`num_objectives` must be an integer >= 2, got {num_objectives!r}.")
    if num_latents < 2 or spread <= 0 or independent < 0:
        raise ValueError(
            f"Need num_latents >= 2, spread > 0 and independent >= 0; got {num_latents}, "
            f"{spread}, {independent}."
        )
    n, L = num_objectives, num_latents
    g = torch.Generator().manual_seed(20_000 + seed)
    latents = [_rff_function(dim, lengthscale, 256, g) for _ in range(L)]
    A = torch.full((n, L), 1.0 / math.sqrt(L), dtype=DT) + spread * torch.randn(
        n, L, generator=g, dtype=DT)
    A = A / A.norm(dim=-1, keepdim=True)
    names = list(_TRANSFORMS)
    phis = [names[int(i)] for i in torch.randint(0, len(names), (n,), generator=g)]
    hs = [_rff_function(dim, lengthscale, 256, g) for _ in range(n)]
    bounds = torch.stack([torch.zeros(dim, dtype=DT), torch.ones(dim, dtype=DT)])
    Xs = sobol_points(4096, bounds, 99)
    G = torch.stack([lat(Xs) for lat in latents], dim=-1)
    mu, sd = G.mean(dim=0), G.std(dim=0).clamp_min(1e-12)

    def f_raw(X: Tensor) -> Tensor:
        M = ((torch.stack([lat(X) for lat in latents], dim=-1) - mu.to(X)) / sd.to(X)) @ A.T.to(X)
        cols = [_TRANSFORMS[p](M[:, i]) + independent * hs[i](X) for i, p in enumerate(phis)]
        return torch.stack(cols, dim=-1)

    with torch.no_grad():
        raw_ref = f_raw(Xs).quantile(0.1, dim=0)
        X = sobol_points(2**13, bounds, 1234)
        F = f_raw(X)
    P = _polished_points(f_raw, X, F, raw_ref, bounds, 128, seed)
    with torch.no_grad():
        F_all = torch.cat([F, f_raw(P)])
    front = F_all[(F_all > raw_ref).all(dim=-1)]
    front = front[is_non_dominated(front)]
    max_hv, se, used = mc_hypervolume(front, raw_ref, num_samples=_MAX_HV_SAMPLES, seed=0)
    name = name or f"corr-mix-n{n}"
    return _finish(
        name, f_raw, bounds, raw_ref, F_all.max(dim=0).values, max_hv, se,
        f"estimate: Monte-Carlo ({used}) HV of the non-dominated points of 2^13 Sobol points "
        f"and {P.shape[0]} polished maximisers (a lower bound)", units, noise_std, True,
        f"correlated: L = {L} RFF latents mixed by a random {n} x {L} matrix (cone spread "
        f"{spread:g}), transforms {phis}, independent parts {independent:g}; HV reference = "
        f"10 % quantiles of f; max HV = Monte-Carlo HV of {front.shape[0]} non-dominated "
        f"sample/polished points (± {se:.2g}, a lower bound)",
    )


#: Many-objective problems by name: ``(seed, units, noise_std) -> ManyObjectiveProblem``;
#: every one is a fixed function (the seed does not change it).
MANY_SUITE: dict[str, Callable[..., ManyObjectiveProblem]] = {
    **{f"{kind}-n{n}": _dtlz_problem(kind, n) for kind in DTLZ_K for n in DTLZ_OBJECTIVES},
    **{
        f"corr-mix-n{n}": (
            lambda seed=0, units="normalized", noise_std=0.0, _n=n: mixed_latent_problem(
                _n, units=units, noise_std=noise_std)
        )
        for n in (6, 8)
    },
}


@lru_cache(maxsize=32)
def _cached(name: str, units: str, noise_std: float) -> ManyObjectiveProblem:
    return MANY_SUITE[name](units=units, noise_std=noise_std)


def make_many_problem(
    name: str, seed: int = 0, units: str = "normalized", noise_std: float = 0.0
) -> ManyObjectiveProblem:
    """The many-objective problem ``name`` (see :data:`MANY_SUITE`), cached per process.

    Args:
        name: One of :data:`MANY_SUITE`.
        seed: Trial seed (ignored: every problem is one fixed instance).
        units: ``"normalized"`` (default) or ``"raw"``.
        noise_std: Gaussian observation noise σ in the problem's units.
    """
    if name not in MANY_SUITE:
        raise ValueError(
            f"Unknown many-objective problem {name!r}; known: {', '.join(MANY_SUITE)}."
        )
    return _cached(name, units, float(noise_std))
