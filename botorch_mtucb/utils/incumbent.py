"""The incumbent among evaluated points whose readings are trusted (robust recommendations).

With corrupted readings the best *observed* reward may be a corrupted one. The robust
incumbent is the evaluated point with the largest posterior mean among those with at least
one reading that is not flagged as suspicious,

    x̂ = argmax { μ(x_i) : some reading at x_i not flagged },

the rule of :func:`~botorch_mtucb.models.recommend` and of the incumbent of
:func:`~botorch_mtucb.acquisition.robust_acquisition`. Flags are the model's ``suspicious``
attribute (e.g. :class:`~botorch_mtucb.models.RobustGP`'s) or given explicitly; a model
without them trusts every reading.
"""

from __future__ import annotations

import torch
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.utils.model_data import original_train_inputs

__all__ = ["robust_incumbent"]


def _evaluated_inputs(model: Model) -> Tensor:
    """The model's ``t x d`` training inputs on the caller's scale (before input transforms)."""
    try:
        return original_train_inputs(model)
    except TypeError:
        raise ValueError(
            f"{type(model).__name__} has no `train_inputs`: pass the evaluated points "
            "(t x d) explicitly."
        ) from None


def robust_incumbent(
    model: Model, X: Tensor | None = None, suspicious: Tensor | None = None
) -> tuple[int, Tensor]:
    """The evaluated point with the best posterior mean among those with a trusted reading.

    A row ``x`` of ``X`` is excluded iff the model has readings at ``x`` (training inputs
    equal to ``x``, compared in the coarser float type when ``X``'s and the model's differ)
    and all of them are flagged; the incumbent is
    ``argmax_{x not excluded} μ(x)``.

    Args:
        model: Single-output BoTorch model.
        X: ``t x d`` evaluated points; ``None``: the model's training inputs (before input
            transforms).
        suspicious: ``t`` bools over the model's training readings; ``None``:
            ``model.suspicious`` if the model has it, else every reading is trusted.

    Returns:
        ``(index, best_f)``: the row of ``X`` and its posterior mean (0-dim tensor).

    Raises:
        ValueError: if ``X`` is not a non-empty ``t x d`` tensor, ``suspicious`` does not match
            the training readings, or every row of ``X`` is excluded.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> Y = X.sum(dim=-1, keepdim=True)
        >>> Y[0] = 100.0
        >>> model = SingleTaskGP(X, Y).eval()
        >>> flags = torch.zeros(10, dtype=torch.bool)
        >>> flags[0] = True
        >>> index, best_f = robust_incumbent(model, suspicious=flags)
        >>> index != 0
        True
    """
    if X is None:
        X = _evaluated_inputs(model)
    if not torch.is_tensor(X) or X.dim() != 2 or X.shape[0] == 0:
        shape = tuple(X.shape) if torch.is_tensor(X) else type(X).__name__
        raise ValueError(f"`X` must be a non-empty t x d tensor of evaluated points, got {shape}.")
    if suspicious is None:
        suspicious = getattr(model, "suspicious", None)
    with torch.no_grad():
        mean = model.posterior(X.unsqueeze(-2)).mean.reshape(X.shape[0])
        if suspicious is not None:
            mean = mean.masked_fill(_excluded(model, X, suspicious), -torch.inf)
        best_f, index = mean.max(dim=0)
    if not bool(best_f > -torch.inf):
        raise ValueError("Every point of `X` has only suspicious readings: nothing to recommend.")
    return int(index), best_f


def _excluded(model: Model, X: Tensor, suspicious: Tensor) -> Tensor:
    """``t`` bools: rows of ``X`` that have readings, all of them flagged."""
    T = _evaluated_inputs(model)
    if not torch.is_tensor(suspicious) or suspicious.shape != T.shape[:1]:
        raise ValueError(
            f"`suspicious` must be {T.shape[0]} bools, one per training reading, got "
            f"{tuple(suspicious.shape) if torch.is_tensor(suspicious) else suspicious!r}."
        )
    flags = suspicious.to(device=X.device, dtype=torch.bool)
    # compared in the coarser of the two float types: a point rounded to float32 on one side
    # is still the point of its reading on the other
    coarse = X.dtype if torch.finfo(X.dtype).eps >= torch.finfo(T.dtype).eps else T.dtype
    Xc, Tc = X.to(coarse), T.to(device=X.device, dtype=coarse)
    same = (Xc.unsqueeze(-2) == Tc.unsqueeze(-3)).all(dim=-1)  # t_X x t: readings at x
    return same.any(dim=-1) & ~(same & ~flags).any(dim=-1)
