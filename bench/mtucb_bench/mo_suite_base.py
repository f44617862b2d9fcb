r"""The container of the multi-objective suite (issue 16) and how a problem is finished.

:class:`SuiteProblem` is a :class:`~mtucb_bench.problems.MultiTaskProblem` with
a hypervolume reference point, the maximum hypervolume and its provenance; ``finish_problem``
samples a raw objective once on a scrambled-Sobol set and derives from it the units, the
paper settings and, when BoTorch does not know it, an estimate of the maximum hypervolume.
The problems themselves are in :mod:`~mtucb_bench.mo_suite_problems` (BoTorch
test functions, the registry) and :mod:`~mtucb_bench.mo_correlated_problems`.

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

import torch
from gpytorch.kernels import Kernel, RBFKernel
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.utils import polish_maxima
from mtucb_bench.metrics import dominated_hypervolume as _hv
from mtucb_bench.problems import MultiTaskProblem

__all__ = [
    "SAMPLE_SIZE",
    "FiniteDifferenceF",
    "SuiteProblem",
    "estimate_max_hv",
    "finish_problem",
    "sobol_points",
]

DT = torch.float64
#: Sobol points of the dense set a problem is finished on (regret set and max-HV estimate).
SAMPLE_SIZE = 2**14
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


def sobol_points(n: int, bounds: Tensor, seed: int) -> Tensor:
    """``n`` scrambled Sobol points (seed ``seed``) in the box ``bounds`` (``2 x d``)."""
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


class FiniteDifferenceF(torch.autograd.Function):
    """f(X) with finite-difference input gradients (for simulators without autograd).

    ``X`` is ``N x d``, ``h`` the ``d`` steps. With ``bounds`` (``2 x d``) the two points of
    each difference are clamped into the box, so a point on a face gets a one-sided difference
    instead of an evaluation outside the simulator's domain (BoTorch's test problems refuse
    one); inside the box it is the central difference.
    """

    @staticmethod
    def forward(
        ctx, X: Tensor, f: Callable[[Tensor], Tensor], h: Tensor, bounds: Tensor | None = None
    ) -> Tensor:
        ctx.f, ctx.h, ctx.bounds = f, h, bounds
        ctx.save_for_backward(X)
        with torch.no_grad():
            return f(X.detach())

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        (X,) = ctx.saved_tensors
        N, d = X.shape
        E = torch.diag_embed(ctx.h.to(X)).expand(N, d, d)
        Xp, Xm = X[:, None, :] + E, X[:, None, :] - E  # N x d x d
        if ctx.bounds is not None:
            lo, hi = ctx.bounds.to(X)
            Xp, Xm = torch.minimum(Xp, hi), torch.maximum(Xm, lo)
        step = torch.diagonal(Xp - Xm, dim1=-2, dim2=-1)  # N x d
        P = torch.cat([Xp, Xm], dim=1).reshape(-1, d)
        with torch.no_grad():
            F = ctx.f(P).reshape(N, 2, d, -1)
        J = (F[:, 0] - F[:, 1]) / step.clamp_min(torch.finfo(X.dtype).tiny)[..., None]
        return (J @ grad_out.unsqueeze(-1)).squeeze(-1), None, None, None


def _affine(f_raw: Callable[[Tensor], Tensor], ref: Tensor, scale: Tensor):
    def f(X: Tensor) -> Tensor:
        return (f_raw(X) - ref.to(X)) / scale.to(X)

    return f


def estimate_max_hv(
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


def finish_problem(
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
    sample_size: int = SAMPLE_SIZE,
) -> SuiteProblem:
    """Sample f once, derive the scale, the paper settings and (if needed) the max HV."""
    if units not in ("normalized", "raw"):
        raise ValueError(f"`units` must be 'normalized' or 'raw', got {units!r}.")
    if not (isinstance(noise_std, (int, float)) and noise_std >= 0):
        raise ValueError(f"`noise_std` must be a number >= 0, got {noise_std!r}.")
    X = sobol_points(sample_size, bounds, 1234)
    with torch.no_grad():
        F = f_raw(X)
    inside = (F > raw_ref).all(dim=-1)
    if int(inside.sum()) >= 10:
        scale = (F[inside].max(dim=0).values - raw_ref).clamp_min(1e-12)
    else:
        scale = (F.max(dim=0).values - raw_ref).clamp_min(1e-12)
    source = "botorch"
    if max_hv_raw is None:
        max_hv_raw = estimate_max_hv(f_raw, X, F, raw_ref, bounds, seed)
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
