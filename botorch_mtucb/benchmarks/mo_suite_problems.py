r"""Multi-objective benchmark suite (issue 16): BoTorch test functions and correlated problems.

Every problem is a :class:`SuiteProblem`, a
:class:`~botorch_mtucb.benchmarks.problems.MultiTaskProblem` (so the runner and the one BO
loop take it as is) with a hypervolume reference point, the maximum hypervolume and its
provenance. All objectives are maximised.

**Kinds.**

* BoTorch test functions on their continuous domains (native bounds, so an algorithm has to
  normalise inputs itself): ``branin-currin`` (d = 2, n = 2), ``vehicle-safety`` (5, 3),
  ``car-side-impact`` (7, 4), ``zdt1`` / ``zdt2`` / ``zdt3`` (4, 2), ``penicillin`` (7, 3),
  ``dtlz2`` (6, 3). Reference point and maximum hypervolume are BoTorch's (``ref_point``,
  ``max_hv``), negated to the maximisation form.
* Strongly correlated objectives (:func:`correlated_problem`): f_i = φ_i(a_iᵀ g(x)) + ε h_i(x)
  with shared latent functions g = (g_1, …, g_L), loadings a_i on a narrow cone (angles
  θ_i spread over ``spread`` radians), random monotone transforms φ_i and small independent
  parts h_i. ``corr-rff`` draws g and h as random-Fourier-feature samples of an SE-kernel GP
  (a new instance per seed); ``corr-hartmann`` uses BoTorch's ``Hartmann`` (d = 6) at two
  reflected/permuted inputs as latents. Their maximum hypervolume is an *estimate*: the
  hypervolume of the non-dominated points of a 2¹⁴-point Sobol sample together with the
  SLSQP-polished maximisers of 64 Chebyshev scalarizations (a lower bound, so a run may
  reach slightly more than 100 %).

**Units.** ``units="normalized"`` (default) maps objective i to (y_i − r_i) / s_i with r the
hypervolume reference point and s_i the extent (max − r_i) of the sampled points inside the
hypervolume box, so the reference point becomes 0 and the front lies in about [0, 1]ⁿ: the
scalarised regrets (R_C(T)/T, Bayes regret) then weigh all objectives alike, and the
hypervolume *percentage* is unchanged (the map is a positive per-objective rescaling).
``units="raw"`` keeps BoTorch's units (what a user's problem looks like; e.g. VehicleSafety's
objectives differ by four orders of magnitude). In both, ``ref_point`` is the hypervolume
reference and the Chebyshev reference point z.

**Paper settings.** ``scalar_kernel`` (SE, lengthscale 0.2 × the box side, fixed),
``task_covar`` (the covariance of the normalised f over the Sobol sample, scaled to unit mean
diagonal) and ``b`` (paper 000's rule max ‖f‖₂ / λ_max(B) on the regret set) exist only for
the algorithms that run with fixed hyperparameters; the suite's defaults fit them.

Noise: the test functions are noise-free (``noise_std = 0`` by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from botorch.test_functions.multi_objective import (
    DTLZ2,
    ZDT1,
    ZDT2,
    ZDT3,
    BraninCurrin,
    CarSideImpact,
    Penicillin,
    VehicleSafety,
)
from botorch.test_functions.synthetic import Hartmann
from gpytorch.kernels import Kernel, RBFKernel
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.benchmarks.metrics import (
    dominated_hypervolume as _hv,
)
from botorch_mtucb.benchmarks.metrics import (
    hypervolume_percent,
    hypervolume_percent_curve,
    suite_metrics,
)
from botorch_mtucb.benchmarks.problems import MultiTaskProblem
from botorch_mtucb.utils.optimum import polish_maxima

__all__ = [
    "MO_SUITE",
    "SuiteProblem",
    "correlated_problem",
    "hypervolume_percent",
    "hypervolume_percent_curve",
    "make_suite_problem",
    "suite_metrics",
]

DT = torch.float64
_SAMPLE_SIZE = 2**14
_REGRET_SIZE = 2048


@dataclass(frozen=True)
class SuiteProblem(MultiTaskProblem):
    """A :class:`MultiTaskProblem` of the suite, with what the hypervolume metric needs.

    The attributes below come besides :class:`MultiTaskProblem`'s; ``ref_point`` is the
    hypervolume reference, in the problem's units.

    Attributes:
        max_hv: Maximum hypervolume above ``ref_point`` (problem units).
        max_hv_source: ``"botorch"`` or how the estimate was made.
        scale: ``n`` per-objective scale s_i of the normalised units (ones for ``"raw"``).
        raw_ref_point: ``n`` hypervolume reference point in BoTorch's (raw) units, maximised.
        units: ``"normalized"`` or ``"raw"``.
        correlated: Whether the objectives share latent functions (strongly correlated).
        polish_regret: Whether ``f`` is cheap and differentiable enough for the SLSQP polish
            of x*_λ (False for the Penicillin simulator: its regrets then use the dense set).
    """

    max_hv: float = float("nan")
    max_hv_source: str = ""
    scale: Tensor | None = None
    raw_ref_point: Tensor | None = None
    units: str = "normalized"
    correlated: bool = False
    polish_regret: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.max_hv) and self.max_hv > 0):
            raise ValueError(f"`max_hv` must be a positive number, got {self.max_hv!r}.")
        if self.units not in ("normalized", "raw"):
            raise ValueError(f"`units` must be 'normalized' or 'raw', got {self.units!r}.")


def _sobol(n: int, bounds: Tensor, seed: int) -> Tensor:
    U = SobolEngine(bounds.shape[-1], scramble=True, seed=seed).draw(n).to(bounds)
    return bounds[0] + (bounds[1] - bounds[0]) * U


def _box_kernel(bounds: Tensor, fraction: float = 0.2) -> Callable[[], Kernel]:
    """SE kernel with lengthscale ``fraction`` × box side per dimension, fixed."""
    span = (bounds[1] - bounds[0]).to(DT)

    def make() -> Kernel:
        k = RBFKernel(ard_num_dims=span.numel()).to(DT)
        k.lengthscale = fraction * span
        k.raw_lengthscale.requires_grad_(False)
        return k

    return make


class _FiniteDifferenceF(torch.autograd.Function):
    """f(X) with central-difference input gradients (for simulators without autograd)."""

    @staticmethod
    def forward(ctx, X: Tensor, f: Callable[[Tensor], Tensor], h: Tensor) -> Tensor:
        ctx.f, ctx.h = f, h
        ctx.save_for_backward(X)
        with torch.no_grad():
            return f(X.detach())

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        (X,) = ctx.saved_tensors
        N, d = X.shape
        E = torch.diag_embed(ctx.h.to(X)).expand(N, d, d)
        P = torch.cat([X[:, None, :] + E, X[:, None, :] - E], dim=1).reshape(-1, d)
        with torch.no_grad():
            F = ctx.f(P).reshape(N, 2, d, -1)
        J = (F[:, 0] - F[:, 1]) / (2 * ctx.h.to(X))[None, :, None]  # N x d x n
        return (J @ grad_out.unsqueeze(-1)).squeeze(-1), None, None


def _affine(f_raw: Callable[[Tensor], Tensor], ref: Tensor, scale: Tensor):
    def f(X: Tensor) -> Tensor:
        return (f_raw(X) - ref.to(X)) / scale.to(X)

    return f


def _estimate_max_hv(
    f: Callable[[Tensor], Tensor], X: Tensor, F: Tensor, ref: Tensor, bounds: Tensor, seed: int
) -> float:
    """HV of the non-dominated sample points plus 64 polished Chebyshev maximisers."""
    g = torch.Generator().manual_seed(seed)
    n = F.shape[-1]
    u = 1.0 / (1.0 - torch.rand(64, n, generator=g, dtype=DT))
    W = u / u.sum(dim=-1, keepdim=True)
    inside = (F > ref).all(dim=-1)
    span = (F[inside].max(dim=0).values - ref) if bool(inside.any()) else F.std(dim=0)
    Wn = W / span.clamp_min(1e-12)
    V = (Wn[:, None, :] * (F - ref)[None]).min(dim=-1).values  # 64 x M
    starts = X[V.argmax(dim=-1)]
    polished = []
    for k in range(W.shape[0]):
        def pieces(Z: Tensor, w: Tensor = Wn[k]) -> Tensor:
            return w * (f(Z) - ref.to(Z))

        Xk, _ = polish_maxima(pieces, starts[k : k + 1], bounds, maxiter=50)
        polished.append(Xk)
    F_all = torch.cat([F, f(torch.cat(polished)).detach()])
    return _hv(F_all, ref)


def _finish(
    name: str,
    f_raw: Callable[[Tensor], Tensor],
    bounds: Tensor,
    raw_ref: Tensor,
    max_hv_raw: float | None,
    units: str,
    noise_std: float,
    correlated: bool,
    polish: bool,
    notes: str,
    seed: int = 0,
    sample_size: int = _SAMPLE_SIZE,
) -> SuiteProblem:
    """Sample f once, derive the scale, the paper settings and (if needed) the max HV."""
    if units not in ("normalized", "raw"):
        raise ValueError(f"`units` must be 'normalized' or 'raw', got {units!r}.")
    if not (isinstance(noise_std, (int, float)) and noise_std >= 0):
        raise ValueError(f"`noise_std` must be a number >= 0, got {noise_std!r}.")
    X = _sobol(sample_size, bounds, 1234)
    with torch.no_grad():
        F = f_raw(X)
    inside = (F > raw_ref).all(dim=-1)
    if int(inside.sum()) >= 10:
        scale = (F[inside].max(dim=0).values - raw_ref).clamp_min(1e-12)
    else:
        scale = (F.max(dim=0).values - raw_ref).clamp_min(1e-12)
    source = "botorch"
    if max_hv_raw is None:
        max_hv_raw = _estimate_max_hv(f_raw, X, F, raw_ref, bounds, seed)
        source = (
            f"estimate: HV of {sample_size} Sobol points + 64 polished Chebyshev maximisers "
            "(a lower bound)"
        )
    Fn = (F - raw_ref) / scale
    C = torch.cov(Fn.T)
    B = C / torch.diagonal(C).mean()
    if units == "normalized":
        f, ref, max_hv = _affine(f_raw, raw_ref, scale), torch.zeros_like(raw_ref), 0.0
        max_hv = max_hv_raw / float(scale.prod())
    else:
        f, ref, max_hv, scale = f_raw, raw_ref.clone(), max_hv_raw, torch.ones_like(raw_ref)
    regret_X = X[:_REGRET_SIZE]
    with torch.no_grad():
        F_reg = f(regret_X)
    return SuiteProblem(
        name=name,
        f=f,
        noise_std=float(noise_std),
        scalar_kernel=_box_kernel(bounds),
        task_covar=B,
        b=float(F_reg.norm(dim=-1).max()) / float(torch.linalg.eigvalsh(B)[-1]),
        ref_point=ref,
        regret_X=regret_X,
        bounds=bounds,
        notes=notes,
        max_hv=float(max_hv),
        max_hv_source=source,
        scale=scale,
        raw_ref_point=raw_ref.clone(),
        units=units,
        correlated=correlated,
        polish_regret=polish,
    )


def _botorch_problem(name: str, make, polish: bool = True):
    def build(seed: int = 0, units: str = "normalized", noise_std: float = 0.0) -> SuiteProblem:
        p = make().to(DT)  # negate=True: maximised; ref_point is then negated too
        def f_raw(X: Tensor, _p=p) -> Tensor:  # the negated (maximised) noise-free values
            return _p(X, noise=False)

        if not polish:
            h = 1e-6 * (p.bounds[1] - p.bounds[0]).to(DT)

            def f_raw(X: Tensor, _p=p, _h=h) -> Tensor:
                return _FiniteDifferenceF.apply(X, lambda Z: _p(Z, noise=False), _h)

        return _finish(
            name, f_raw, p.bounds.to(DT), p.ref_point.to(DT), float(p.max_hv), units,
            noise_std, False, polish, sample_size=_SAMPLE_SIZE if polish else 2**11,
            notes=f"BoTorch {type(p).__name__} (d = {p.dim}, n = {p.num_objectives}), negated",
        )

    return build


# ----------------------------------------------------------------------- correlated problems
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
    Xs = _sobol(4096, bounds, 99)
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
    return _finish(
        name, f_raw, bounds, raw_ref, None, units, noise_std, True, True,
        notes=(
            f"correlated: L = {L} latents, spread {spread:.2g} rad, transforms {phis}, "
            f"independent parts {independent:g}; HV reference = 10 % quantiles of f"
        ),
        seed=seed,
    )


def _corr_rff(seed: int = 0, units: str = "normalized", noise_std: float = 0.0):
    g = torch.Generator().manual_seed(10_000 + seed)
    latents = [_rff_function(3, 0.35, 256, g) for _ in range(2)]
    bounds = torch.stack([torch.zeros(3, dtype=DT), torch.ones(3, dtype=DT)])
    return correlated_problem(latents, 4, bounds, seed=seed, name="corr-rff", units=units,
                              noise_std=noise_std)


def _corr_hartmann(seed: int = 0, units: str = "normalized", noise_std: float = 0.0):
    h = Hartmann(dim=6).to(DT)
    perm = torch.tensor([3, 4, 5, 0, 1, 2])
    latents = [lambda X: -h.evaluate_true(X), lambda X: -h.evaluate_true(1.0 - X[:, perm])]
    bounds = torch.stack([torch.zeros(6, dtype=DT), torch.ones(6, dtype=DT)])
    return correlated_problem(latents, 3, bounds, seed=0, name="corr-hartmann", units=units,
                              noise_std=noise_std)


#: Suite problems by name: ``(seed, units, noise_std) -> SuiteProblem``. Only ``corr-rff``
#: draws a new instance per seed; the others are fixed functions.
MO_SUITE: dict[str, Callable[..., SuiteProblem]] = {
    "branin-currin": _botorch_problem("branin-currin", lambda: BraninCurrin(negate=True)),
    "vehicle-safety": _botorch_problem("vehicle-safety", lambda: VehicleSafety(negate=True)),
    "car-side-impact": _botorch_problem("car-side-impact", lambda: CarSideImpact(negate=True)),
    "zdt1": _botorch_problem("zdt1", lambda: ZDT1(dim=4, negate=True)),
    "zdt2": _botorch_problem("zdt2", lambda: ZDT2(dim=4, negate=True)),
    "zdt3": _botorch_problem("zdt3", lambda: ZDT3(dim=4, negate=True)),
    "penicillin": _botorch_problem("penicillin", lambda: Penicillin(negate=True), polish=False),
    "dtlz2": _botorch_problem("dtlz2", lambda: DTLZ2(dim=6, num_objectives=3, negate=True)),
    "corr-rff": _corr_rff,
    "corr-hartmann": _corr_hartmann,
}


@lru_cache(maxsize=32)
def _cached(name: str, seed: int, units: str, noise_std: float) -> SuiteProblem:
    return MO_SUITE[name](seed=seed, units=units, noise_std=noise_std)


def make_suite_problem(
    name: str, seed: int = 0, units: str = "normalized", noise_std: float = 0.0
) -> SuiteProblem:
    """The suite problem ``name`` (see :data:`MO_SUITE`), cached per process.

    Args:
        name: One of :data:`MO_SUITE`.
        seed: Instance seed (only ``corr-rff`` depends on it).
        units: ``"normalized"`` (default) or ``"raw"``.
        noise_std: Gaussian observation noise σ in the problem's units.
    """
    if name not in MO_SUITE:
        raise ValueError(f"Unknown suite problem {name!r}; known: {', '.join(MO_SUITE)}.")
    if name != "corr-rff":
        seed = 0
    return _cached(name, int(seed), units, float(noise_std))
