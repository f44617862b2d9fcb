r"""Hypervolume for many objectives: exact where a box decomposition finishes in time, else a
seeded Monte-Carlo estimate with its standard error (the many-objective suite, issue 26).

BoTorch's exact hypervolume (``DominatedPartitioning``) grows exponentially in the number of
objectives n: on P non-dominated points of the unit sphere one decomposition took 0.1 s at
(n, P) = (5, 80), 0.4 s at (6, 80) and (7, 40), 1 s at (8, 40), 7 s at (10, 40) on one core.
The rule :func:`exact_is_feasible` (:data:`EXACT_MAX_POINTS`: under ~0.5 s) says where the
exact value is taken; elsewhere one of two unbiased Monte-Carlo estimators is.

All objectives are maximised; r is the reference point, Y the set (its points inside the
reference box, non-dominated), S the number of samples (seeded ``torch.Generator``).

* **Box** (:func:`box_hypervolume`): z_1, …, z_S uniform in B = [r, u] with u ≥ max Y
  (componentwise; by default u = max Y, the smallest box that holds the dominated region),
  D(z) = 1 if some y ∈ Y has y ≥ z:

      HV ≈ V p̂,  V = Π_j (u_j − r_j),  p̂ = (1/S) Σ_s D(z_s),  se = V √(p̂ (1 − p̂) / S),

  a relative error √((1 − p) / (p S)) with p = HV / V: 0.28 % at S = 2¹⁷ and p = 0.5,
  but poor where the dominated region fills little of B (many objectives, p ≪ 1).
* **Union of boxes** (:func:`union_hypervolume`; Karp, Luby & Madras 1989, the hypervolume
  estimator of Bringmann & Friedrich 2008): the dominated region is the union of the boxes
  [r, y], y ∈ Y, of volumes v_y (W = Σ v_y); draw a box with probability v_y / W and z uniform
  in it, and let c(z) ≥ 1 count the boxes that hold z:

      HV ≈ W · (1/S) Σ_s 1 / c(z_s),  se = W · std_s(1 / c(z_s)) / √S,

  whose relative error does not depend on how much of [r, max Y] the region fills (it is at
  most √((P − 1) / S) for P boxes, and far less where the boxes overlap little).

Both errors fall as S^{-1/2}. ``estimator="auto"`` runs both on a pilot of S / 16 samples
from an independent seed and then the one with the smaller pilot error on S samples of the
given seed (the choice does not depend on the samples of the estimate, which stays
unbiased). A curve over t = 1, …, N (:func:`mc_hypervolume_curve`) uses the box estimator
with one box and one sample for all t: sample s counts from the first t at which a point
y_t ≥ z_s arrives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from mtucb_bench.hypervolume import check_matrix, dominated_hypervolume

__all__ = [
    "DEFAULT_MC_SAMPLES",
    "EXACT_MAX_POINTS",
    "HypervolumeEstimate",
    "box_hypervolume",
    "exact_is_feasible",
    "hypervolume",
    "mc_hypervolume",
    "mc_hypervolume_curve",
    "union_hypervolume",
]

DT = torch.float64
#: Default number of Monte-Carlo samples S.
DEFAULT_MC_SAMPLES = 2**17
#: n → the largest number of non-dominated points for which the exact hypervolume is taken
#: (n ≤ 3: always; n ≥ 8: never).
EXACT_MAX_POINTS: dict[int, int] = {4: 1000, 5: 200, 6: 80, 7: 30}
_CHUNK_ELEMENTS = 2**23  # samples × points × objectives compared at once


@dataclass(frozen=True)
class HypervolumeEstimate:
    """A hypervolume and how it was obtained.

    Attributes:
        value: The hypervolume (exact or estimated).
        se: Its standard error (0 for the exact value).
        method: ``"exact"`` (BoTorch's ``DominatedPartitioning``), ``"box"`` or ``"union"``
            (the Monte-Carlo estimators of the module docstring).
        num_points: Non-dominated points of the set inside the reference box.
        num_samples: Monte-Carlo samples S (0 for the exact value).
    """

    value: float
    se: float
    method: str
    num_points: int
    num_samples: int = 0


def exact_is_feasible(num_objectives: int, num_points: int) -> bool:
    """Whether the exact hypervolume of ``num_points`` non-dominated points in
    ``num_objectives`` objectives is taken (:data:`EXACT_MAX_POINTS`)."""
    if num_objectives <= 3:
        return True
    return num_points <= EXACT_MAX_POINTS.get(num_objectives, -1)


def _front(Y: Tensor, ref_point: Tensor) -> tuple[Tensor, Tensor]:
    """``(ref, front)``: the reference point and the non-dominated rows of ``Y`` above it."""
    check_matrix(Y, "Y")
    Y = Y.to(DT)
    ref = torch.as_tensor(ref_point).to(Y).reshape(-1)
    if ref.numel() != Y.shape[-1]:
        raise ValueError(f"`ref_point` must have {Y.shape[-1]} entries, got {ref.numel()}.")
    Y = Y[(Y > ref).all(dim=-1)]
    return ref, (Y[is_non_dominated(Y)] if Y.shape[0] else Y)


def _check_samples(num_samples: int) -> None:
    if not isinstance(num_samples, int) or num_samples < 2:
        raise ValueError(f"`num_samples` must be an integer >= 2, got {num_samples!r}.")


def _dominators(Y: Tensor, Z: Tensor) -> tuple[Tensor, Tensor]:
    """For each sample z: the index of the first row y of ``Y`` with y ≥ z (N if none) and
    the number of such rows."""
    N, n = Y.shape
    first = torch.full((Z.shape[0],), N, dtype=torch.long)
    count = torch.zeros(Z.shape[0], dtype=torch.long)
    step = max(1, _CHUNK_ELEMENTS // max(N * n, 1))
    idx = torch.arange(N, dtype=torch.long)
    for a in range(0, Z.shape[0], step):
        dom = (Y[None] >= Z[a : a + step, None]).all(dim=-1)  # chunk x N
        first[a : a + step] = torch.where(dom, idx, N).min(dim=-1).values
        count[a : a + step] = dom.sum(dim=-1)
    return first, count


def box_hypervolume(
    Y: Tensor,
    ref_point: Tensor,
    upper: Tensor | None = None,
    num_samples: int = DEFAULT_MC_SAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Box estimator: (V p̂, V √(p̂ (1 − p̂) / S)) with S samples uniform in [r, u].

    Args:
        Y: ``N x n`` outcomes (maximised).
        ref_point: ``n`` reference point r.
        upper: ``n`` upper corner u (raised to max Y where below it), or ``None`` for max Y.
        num_samples: S.
        seed: Seed of the samples.

    Returns:
        ``(estimate, standard_error)``.
    """
    _check_samples(num_samples)
    ref, Y = _front(Y, ref_point)
    if Y.shape[0] == 0:
        return 0.0, 0.0
    u = Y.max(dim=0).values
    if upper is not None:
        u = torch.maximum(u, torch.as_tensor(upper).to(Y).reshape(-1))
    V = float(torch.prod(u - ref))
    g = torch.Generator().manual_seed(seed)
    Z = ref + (u - ref) * torch.rand(num_samples, ref.numel(), generator=g, dtype=DT)
    p = float((_dominators(Y, Z)[0] < Y.shape[0]).to(DT).mean())
    return V * p, V * math.sqrt(p * (1.0 - p) / num_samples)


def union_hypervolume(
    Y: Tensor, ref_point: Tensor, num_samples: int = DEFAULT_MC_SAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Union-of-boxes estimator (Karp–Luby–Madras): (W · mean 1/c, W · std(1/c) / √S).

    Args:
        Y: ``N x n`` outcomes (maximised).
        ref_point: ``n`` reference point r.
        num_samples: S.
        seed: Seed of the samples.

    Returns:
        ``(estimate, standard_error)``.
    """
    _check_samples(num_samples)
    ref, Y = _front(Y, ref_point)
    if Y.shape[0] == 0:
        return 0.0, 0.0
    vol = torch.prod(Y - ref, dim=-1)
    W = float(vol.sum())
    g = torch.Generator().manual_seed(seed)
    pick = torch.multinomial(vol / W, num_samples, replacement=True, generator=g)
    U = torch.rand(num_samples, ref.numel(), generator=g, dtype=DT)
    Z = ref + (Y[pick] - ref) * U
    w = 1.0 / _dominators(Y, Z)[1].clamp_min(1).to(DT)
    return W * float(w.mean()), W * float(w.std()) / math.sqrt(num_samples)


def mc_hypervolume(
    Y: Tensor,
    ref_point: Tensor,
    num_samples: int = DEFAULT_MC_SAMPLES,
    seed: int = 0,
    estimator: str = "auto",
) -> tuple[float, float, str]:
    """Monte-Carlo hypervolume of ``Y`` above ``ref_point`` (module docstring).

    Args:
        Y: ``N x n`` outcomes (maximised).
        ref_point: ``n`` reference point.
        num_samples: S.
        seed: Seed of the samples (the pilot of ``"auto"`` uses ``seed + 1``).
        estimator: ``"box"``, ``"union"`` or ``"auto"`` (the one with the smaller error on a
            pilot of S / 16 samples).

    Returns:
        ``(estimate, standard_error, estimator_used)``.
    """
    if estimator not in ("auto", "box", "union"):
        raise ValueError(f"`estimator` must be 'auto', 'box' or 'union', got {estimator!r}.")
    _check_samples(num_samples)
    if estimator == "auto":
        pilot = max(num_samples // 16, 2)
        se_box = box_hypervolume(Y, ref_point, None, pilot, seed + 1)[1]
        se_union = union_hypervolume(Y, ref_point, pilot, seed + 1)[1]
        estimator = "box" if se_box <= se_union else "union"
    if estimator == "box":
        return (*box_hypervolume(Y, ref_point, None, num_samples, seed), "box")
    return (*union_hypervolume(Y, ref_point, num_samples, seed), "union")


def mc_hypervolume_curve(
    Y: Tensor,
    ref_point: Tensor,
    upper: Tensor | None = None,
    num_samples: int = DEFAULT_MC_SAMPLES,
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    """Box-estimator hypervolume of the first t rows of ``Y``, t = 1, …, N, from one sample.

    Args:
        Y: ``N x n`` outcomes in evaluation order (maximised).
        ref_point: ``n`` reference point r.
        upper: ``n`` upper corner of the one box (raised to max Y), or ``None`` for max Y.
        num_samples: S.
        seed: Seed of the samples.

    Returns:
        ``(curve, se)``: two ``N`` tensors, the non-decreasing estimates and their standard
        errors.
    """
    _check_samples(num_samples)
    check_matrix(Y, "Y")
    Y = Y.to(DT)
    N = Y.shape[0]
    ref = torch.as_tensor(ref_point).to(Y).reshape(-1)
    if ref.numel() != Y.shape[-1]:
        raise ValueError(f"`ref_point` must have {Y.shape[-1]} entries, got {ref.numel()}.")
    inside = (Y > ref).all(dim=-1)
    if not bool(inside.any()):
        return torch.zeros(N, dtype=DT), torch.zeros(N, dtype=DT)
    u = Y[inside].max(dim=0).values
    if upper is not None:
        u = torch.maximum(u, torch.as_tensor(upper).to(Y).reshape(-1))
    V = float(torch.prod(u - ref))
    g = torch.Generator().manual_seed(seed)
    Z = ref + (u - ref) * torch.rand(num_samples, ref.numel(), generator=g, dtype=DT)
    first = _dominators(torch.where(inside[:, None], Y, -math.inf), Z)[0]  # outside: never
    p = torch.bincount(first, minlength=N + 1)[:N].cumsum(0).to(DT) / num_samples
    return V * p, V * torch.sqrt(p * (1.0 - p) / num_samples)


def hypervolume(
    Y: Tensor,
    ref_point: Tensor,
    num_samples: int = DEFAULT_MC_SAMPLES,
    seed: int = 0,
    method: str = "auto",
) -> HypervolumeEstimate:
    """The hypervolume of ``Y`` above ``ref_point``: exact where :func:`exact_is_feasible`
    says so (``method="auto"``) or when asked (``"exact"``), else the Monte-Carlo estimate
    (:func:`mc_hypervolume`, ``"auto"`` estimator; or ``method="box"`` / ``"union"``).

    Args:
        Y: ``N x n`` outcomes (maximised).
        ref_point: ``n`` reference point.
        num_samples: Monte-Carlo samples S.
        seed: Seed of the samples.
        method: ``"auto"``, ``"exact"``, ``"mc"`` (either estimator), ``"box"`` or
            ``"union"``.

    Returns:
        A :class:`HypervolumeEstimate`.
    """
    if method not in ("auto", "exact", "mc", "box", "union"):
        raise ValueError(
            f"`method` must be 'auto', 'exact', 'mc', 'box' or 'union', got {method!r}."
        )
    ref, front = _front(Y, ref_point)
    P = front.shape[0]
    if method == "exact" or (method == "auto" and exact_is_feasible(ref.numel(), P)):
        value = dominated_hypervolume(front, ref) if P else 0.0
        return HypervolumeEstimate(value, 0.0, "exact", P)
    kind = method if method in ("box", "union") else "auto"
    value, se, used = mc_hypervolume(front, ref, num_samples, seed, kind)
    return HypervolumeEstimate(value, se, used, P, num_samples)
