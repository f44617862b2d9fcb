"""The model's Pareto set among the evaluated points: what a run recommends under noise.

Under observation noise the non-dominated set of the raw observations y_i = f(x_i) + ε_i
holds points that are there only because their noise was favourable. The recommendation
replaces each observation by the posterior mean μ(x_i) = E[f(x_i) | data] of the model (the
latent f, observation noise excluded) and keeps the evaluated points whose means are
non-dominated:

    P̂ = {x_i : no j with s ⊙ μ(x_j) ≥ s ⊙ μ(x_i) and s ⊙ μ(x_j) ≠ s ⊙ μ(x_i)},

with s_k = −1 for a minimised objective and +1 otherwise (the scalarizations' sign
convention: every objective is maximised after the sign). This is the rule of Ax's
``get_pareto_frontier(use_model_predictions=True)`` (BoTorch's ``is_non_dominated`` on the
model's predictions at the evaluated arms, after an optional threshold filter), here on any
BoTorch model with ``n ≥ 2`` outputs, with an optional reference point instead of Ax's
inferred thresholds. Only evaluated points are recommended: every recommended point has been
observed at least once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from botorch.models.model import Model, ModelList
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from botorch_mtucb.utils.model_data import original_train_inputs
from botorch_mtucb.utils.validation import (
    as_flag_vector,
    as_float_vector,
    check_test_tensor,
)

__all__ = ["FLAT_FRACTION", "ParetoSetRecommendation", "recommend_pareto_set"]

#: An objective whose posterior means vary over the candidates by less than this fraction of
#: its median posterior standard deviation is flat there: it does not separate them.
FLAT_FRACTION = 0.1


class ParetoSetRecommendation(NamedTuple):
    """A recommended Pareto set with what it was chosen from.

    Attributes:
        X: ``K x d`` recommended points (rows of the candidates, in their order).
        mean: ``K x n`` their posterior means μ(x), original units (signs not applied).
        indices: ``K`` (long) their row indices in the candidates ``X``.

    Example:
        >>> rec = ParetoSetRecommendation(torch.zeros(1, 2), torch.ones(1, 2),
        ...                               torch.tensor([3]))
        >>> rec.X.shape, rec.indices.tolist()
        (torch.Size([1, 2]), [3])
    """

    X: Tensor
    mean: Tensor
    indices: Tensor


def recommend_pareto_set(
    model: Model,
    X: Tensor,
    minimize: Sequence[bool] | Tensor | None = None,
    ref_point: Sequence[float] | Tensor | None = None,
    return_details: bool = False,
) -> Tensor | ParetoSetRecommendation:
    """The points of ``X`` whose posterior means are non-dominated (module docstring).

    Point x_i is kept unless another candidate's mean is at least as good in every objective
    and better in one (after the signs of ``minimize``); with ``ref_point`` z, points whose
    sign-corrected mean is below s ⊙ z in some objective are dropped first (Ax's objective
    thresholds). An objective whose means vary over ``X`` by less than
    :data:`FLAT_FRACTION` of its median posterior standard deviation is flat there and does
    not separate the candidates (an objective constant in the data, whose means differ at the
    model's numerical noise, would otherwise make every point non-dominated). Candidates with
    equal means (a point evaluated more than once) are kept once, at their first row. The
    means are the model's posterior means of the latent outcomes, computed one point at a
    time (``N`` posteriors at ``1 x d``: no ``N x N`` joint covariance), without gradients;
    selecting the rows reads the mask on the host.

    Args:
        model: A BoTorch model with ``n ≥ 2`` outputs and no batch shape (its posterior
            mean at ``N x 1 x d`` inputs is ``N x 1 x n``), in the units of ``X``.
        X: ``N x d`` candidates, usually the evaluated points (inputs as passed to
            ``model.posterior``).
        minimize: Optional ``n`` booleans; ``True`` marks an objective to be minimised.
        ref_point: Optional ``n`` reference point z (original units); points whose mean
            does not weakly dominate it are not recommended.
        return_details: Return a :class:`ParetoSetRecommendation` (points, means, indices)
            instead of the points alone.

    Returns:
        ``K x d`` recommended points (``1 ≤ K ≤ N`` without ``ref_point``; ``0 x d`` for an
        empty ``X``), in the order of ``X``, or a :class:`ParetoSetRecommendation` with
        ``return_details=True``.

    Raises:
        TypeError: If ``X`` is not a float32 / float64 tensor.
        ValueError: If ``X`` is not ``N x d`` with the model's ``d`` or holds NaN, the model
            has fewer than 2 outputs or non-finite means, or ``minimize`` / ``ref_point`` do
            not hold ``n`` entries.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.linspace(0, 1, 6, dtype=torch.float64).unsqueeze(-1)
        >>> Y = torch.cat([X, 1 - X**2], dim=-1)          # a trade-off in x
        >>> model = SingleTaskGP(X, Y)
        >>> recommend_pareto_set(model, X).shape          # K x d
        torch.Size([6, 1])
        >>> rec = recommend_pareto_set(model, X, minimize=[False, True], return_details=True)
        >>> rec.indices.tolist()                          # both objectives favour x = 1
        [5]
    """
    X = check_test_tensor(X, "X")
    n = _num_outputs(model)
    d = _input_dim(model)
    if X.dim() != 2 or (d is not None and X.shape[-1] != d):
        want = "N x d" if d is None else f"N x {d} (d of the model's training inputs)"
        raise ValueError(f"`X` must have shape {want}, got {tuple(X.shape)}.")
    signs = _signs(minimize, n, X)
    if X.shape[0] == 0:
        empty = X.new_zeros(0, n)
        idx = torch.zeros(0, dtype=torch.long, device=X.device)
        return ParetoSetRecommendation(X, empty, idx) if return_details else X
    with torch.no_grad():
        posterior = model.posterior(X.unsqueeze(-2))
        mean, variance = posterior.mean, posterior.variance
    if mean.shape != (X.shape[0], 1, n):
        raise ValueError(
            f"`model` must give one n = {n} posterior mean per point (an N x 1 x n mean at "
            f"N x 1 x d inputs; a batched model: pass one member), got {tuple(mean.shape)}."
        )
    mean = mean.squeeze(-2)
    if not torch.isfinite(mean).all():
        raise ValueError("`model` gives NaN or infinite posterior means at `X`.")
    Y = mean * signs.to(mean)
    keep = is_non_dominated(_flatten_ties(Y, variance.reshape(Y.shape)), deduplicate=True)
    if ref_point is not None:
        z = _vector(ref_point, "ref_point", n).to(mean) * signs.to(mean)
        keep = keep & (Y >= z).all(dim=-1)
    idx = keep.nonzero().squeeze(-1)
    if not return_details:
        return X[idx]
    return ParetoSetRecommendation(X[idx], mean[idx], idx)


def _flatten_ties(Y: Tensor, variance: Tensor) -> Tensor:
    """``Y`` (``N x n``) with every objective whose means vary over the candidates by less
    than :data:`FLAT_FRACTION` of its median posterior standard deviation set to its mean:
    such variation (e.g. an objective constant in the data, whose means differ at the
    model's numerical noise) does not separate the candidates."""
    spread = Y.max(dim=0).values - Y.min(dim=0).values
    sd = variance.clamp_min(0.0).sqrt().median(dim=0).values
    flat = spread < FLAT_FRACTION * sd
    return torch.where(flat, Y.mean(dim=0, keepdim=True), Y)


def _num_outputs(model: Model) -> int:
    """The model's number of outputs n (at least 2)."""
    n = getattr(model, "num_outputs", None)  # BoTorch's Model property
    if not isinstance(n, int) or n < 2:
        raise ValueError(
            f"`model` must have at least 2 outputs (objectives) for a Pareto set, got "
            f"num_outputs = {n!r}."
        )
    return n


def _input_dim(model: Model) -> int | None:
    """d of the model's training inputs in raw units, ``None`` when it has none to read."""
    first = model.models[0] if isinstance(model, ModelList) else model
    try:
        return original_train_inputs(first).shape[-1]
    except TypeError:
        return None


def _vector(value: Sequence[float] | Tensor, name: str, n: int) -> Tensor:
    """``value`` as a finite ``n`` vector: a tensor keeps its floating dtype, anything else
    (a list, NumPy, an integer tensor) is read in float64."""
    return as_float_vector(value, name, n)


def _signs(minimize: Sequence[bool] | Tensor | None, n: int, like: Tensor) -> Tensor:
    """``n`` vector of ±1 (−1 for minimised objectives) on ``like``'s device."""
    if minimize is None:
        return torch.ones(n, dtype=like.dtype, device=like.device)
    m = as_flag_vector(minimize, "minimize", n)
    return (1.0 - 2.0 * m.to(device=like.device, dtype=like.dtype))
