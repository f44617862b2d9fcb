"""Hypervolume metrics of the benchmarks, and the input checks the metrics share.

Private module behind :mod:`mtucb_bench.metrics`, which re-exports its public
names: the hypervolume dominated by the outcomes ``{f(x_t)}_{t ≤ T}`` above a reference point
(BoTorch's exact box decompositions, all objectives maximised, so only for a few objectives),
as a curve over the rounds and as % of a problem's maximum (the multi-objective suite of
issue 16, :mod:`~mtucb_bench.mo_suite_problems`).
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.utils.multi_objective.box_decompositions.dominated import DominatedPartitioning
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from botorch_mtucb.utils import check_finite

__all__: list[str] = []

#: Above this many objectives exact hypervolumes are not computed (exponential cost).
MAX_HYPERVOLUME_OBJECTIVES = 5
DT = torch.float64


def hypervolume_curve(F_query: Tensor, ref_point: Tensor) -> Tensor:
    """Hypervolume dominated by {f(x_s)}_{s ≤ t} above ``ref_point``, for t = 1, …, T.

    Uses BoTorch's exact :class:`~botorch.utils.multi_objective.hypervolume.Hypervolume`
    (all objectives maximised); recomputed only when a new non-dominated point arrives.

    Args:
        F_query: ``T x n`` true values at the queries, ``n ≤ 5``.
        ref_point: ``n`` reference point.

    Returns:
        ``T`` non-decreasing hypervolumes.
    """
    check_matrix(F_query, "F_query")
    n = F_query.shape[-1]
    if n > MAX_HYPERVOLUME_OBJECTIVES:
        raise ValueError(
            f"Exact hypervolume is only computed for n <= {MAX_HYPERVOLUME_OBJECTIVES} "
            f"objectives, got n = {n}."
        )
    ref = torch.as_tensor(ref_point).to(F_query).reshape(-1)
    if ref.numel() != n:
        raise ValueError(f"`ref_point` must have {n} entries, got {ref.numel()}.")
    hv = Hypervolume(ref)
    out = torch.zeros(F_query.shape[0], dtype=torch.float64)
    current = 0.0
    for t in range(F_query.shape[0]):
        y = F_query[t]
        prev = F_query[:t]
        dominated = bool(((prev >= y).all(dim=-1)).any()) if t else False
        if not dominated and bool((y > ref).all()):
            pts = F_query[: t + 1]
            pts = pts[(pts > ref).all(dim=-1)]
            pareto = pts[is_non_dominated(pts)]
            current = float(hv.compute(pareto))
        out[t] = current
    return out


def dominated_hypervolume(Y: Tensor, ref: Tensor) -> float:
    """Hypervolume dominated by the rows of ``Y`` above ``ref`` (BoTorch's
    ``DominatedPartitioning`` on the non-dominated rows inside the reference box)."""
    Y = Y[(Y > ref).all(dim=-1)]
    if Y.shape[0] == 0:
        return 0.0
    Y = Y[is_non_dominated(Y)]
    return float(DominatedPartitioning(ref_point=ref, Y=Y).compute_hypervolume())


def hypervolume_percent(problem: Any, Y: Tensor) -> float:
    """100 × HV(Y above ``problem.ref_point``) / ``problem.max_hv`` (BoTorch's
    ``DominatedPartitioning``); ``Y``: ``N x n`` true values in the problem's units."""
    _check_values(problem, Y, "Y")
    return 100.0 * dominated_hypervolume(Y.to(DT), problem.ref_point.to(DT)) / problem.max_hv


def hypervolume_percent_curve(problem: Any, Y: Tensor) -> Tensor:
    """``N`` values: :func:`hypervolume_percent` of the first t rows, t = 1, …, N
    (recomputed only when row t is non-dominated and inside the reference box)."""
    _check_values(problem, Y, "Y")
    Y, ref = Y.to(DT), problem.ref_point.to(DT)
    out = torch.zeros(Y.shape[0], dtype=DT)
    current = 0.0
    for t in range(Y.shape[0]):
        new = bool((Y[t] > ref).all()) and not bool((Y[:t] >= Y[t]).all(dim=-1).any())
        if new:
            current = 100.0 * dominated_hypervolume(Y[: t + 1], ref) / problem.max_hv
        out[t] = current
    return out


def _check_values(problem: Any, Y: Tensor, name: str) -> None:
    if not torch.is_tensor(Y) or Y.dim() != 2 or Y.shape[-1] != problem.num_objectives:
        raise ValueError(
            f"`{name}` must be an N x n tensor with n = {problem.num_objectives}, got "
            f"{getattr(Y, 'shape', type(Y))}."
        )


def check_matrix(M: Tensor, name: str) -> None:
    """Raise a ValueError unless ``M`` is a finite 2-d tensor (named ``name`` in the message)."""
    if not torch.is_tensor(M) or M.dim() != 2:
        raise ValueError(f"`{name}` must be a 2-d tensor, got {getattr(M, 'shape', type(M))}.")
    check_finite(M, name)
