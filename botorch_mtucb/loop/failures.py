"""Failed evaluations in :func:`botorch_mtucb.loop.run_bo_loop`: what counts as one, the policy
for them, and the exception that carries the completed history.

An evaluation of a round's ``q x d`` points fails when ``observe`` raises an ``Exception`` (the
whole round fails) or returns a non-finite value (the rows holding one fail). A failed point is
recorded in the history (``RoundRecord.failed``, its error, its ``y`` as returned or NaN;
:attr:`~botorch_mtucb.loop.history.LoopHistory.failed_X` lists the inputs) and never given to
the model; every later proposal sees the failed inputs as pending points (GP-BUCB: the
acquisition on the model conditioned on its means there), and an optimizer with ``avoid``
(:class:`~botorch_mtucb.acquisition.protocols.AvoidingOptimizer`: the default
``DedupOptimizer``) never returns them, so a point that failed is not proposed again (with
another optimizer it may be, and the loop warns once). The ``on_failure`` policy then says
what the loop does next:

* ``"raise"`` (default): stop after recording the round and raise :class:`LoopInterrupted`,
  whose ``history`` holds every completed evaluation (resume with ``history=``);
* ``"skip"``: go on with the next round.

What ``observe`` returns must be an ``N x n`` tensor (a NumPy array is converted to ``X``'s
dtype and device); anything else is a programming error, raised as such (``TypeError`` /
``ValueError``) with the history attached as the exception's ``history`` attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from botorch_mtucb.loop.history import LoopHistory

__all__ = [
    "FailurePolicy",
    "LoopInterrupted",
    "RoundEvaluation",
    "as_observations",
    "classify",
    "evaluate",
]

#: ``on_failure`` of :func:`~botorch_mtucb.loop.run_bo_loop`.
FailurePolicy = Literal["raise", "skip"]


class LoopInterrupted(RuntimeError):
    """A loop stopped by a failed evaluation (``on_failure="raise"``); nothing is lost.

    Attributes:
        history: The :class:`~botorch_mtucb.loop.history.LoopHistory` up to and including the
            round that failed (its failed points flagged), with the model of the completed
            evaluations; pass it as ``run_bo_loop(..., history=err.history)`` to go on.

    Example:
        >>> from botorch_mtucb.loop import LoopHistory
        >>> h = LoopHistory(initial_X=torch.zeros(1, 1), initial_Y=torch.zeros(1, 2))
        >>> err = LoopInterrupted("observe failed at round 3", h)
        >>> isinstance(err, RuntimeError), err.history is h
        (True, True)
    """

    def __init__(self, message: str, history: LoopHistory) -> None:
        """
        Args:
            message: What failed, where.
            history: The completed history.
        """
        super().__init__(message)
        self.history = history


def check_failure_policy(on_failure: object) -> None:
    """Raise a clear error unless ``on_failure`` is ``"raise"`` or ``"skip"``."""
    if on_failure not in ("raise", "skip"):
        raise ValueError(f"`on_failure` must be 'raise' or 'skip', got {on_failure!r}.")


@dataclass
class RoundEvaluation:
    """The observations of one round's ``q`` points.

    Attributes:
        Y: ``q x n`` observations (NaN rows where ``observe`` raised).
        ok: ``q`` booleans: the point's observation is finite (given to the model).
        error: Why points failed (``None`` when none did).
        exception: The exception ``observe`` raised, if any.
    """

    Y: Tensor
    ok: Tensor
    error: str | None = None
    exception: Exception | None = None

    @property
    def failed(self) -> bool:
        """Whether any point of the round failed."""
        return self.error is not None


def as_observations(Y: object, X: Tensor, num_outputs: int | None, name: str) -> Tensor:
    """``observe``'s result as a detached ``N x n`` tensor in ``X``'s dtype and device (a
    float32 result for float64 points, an integer or a NumPy array converted), or a
    ``TypeError`` / ``ValueError`` naming ``name``.

    Args:
        Y: What ``observe(X)`` returned.
        X: ``N x d`` points it was called on.
        num_outputs: Expected ``n`` (any when ``None``).
        name: The call, for the error messages (e.g. ``"observe(x_t)"``).

    Returns:
        ``N x n`` tensor (may hold non-finite values).
    """
    if isinstance(Y, np.ndarray):
        if not np.issubdtype(Y.dtype, np.number):
            raise TypeError(
                f"`{name}` returned a NumPy array of dtype {Y.dtype}; expected numbers."
            )
        Y = torch.as_tensor(Y).to(dtype=X.dtype, device=X.device)
    if not isinstance(Y, Tensor):
        raise TypeError(
            f"`{name}` must return a torch.Tensor (or a NumPy array) of shape N x n, got "
            f"{type(Y).__name__}."
        )
    want = "N x n" if num_outputs is None else f"N x n = ({X.shape[0]}, {num_outputs})"
    if Y.dim() != 2 or Y.shape[0] != X.shape[0] or (
        num_outputs is not None and Y.shape[-1] != num_outputs
    ):
        raise ValueError(f"`{name}` must return an {want} tensor, got shape {tuple(Y.shape)}.")
    if Y.dtype != X.dtype or Y.device != X.device:  # the data's dtype: the model's
        Y = Y.to(dtype=X.dtype, device=X.device)
    return Y.detach()


def evaluate(
    observe: Callable[[Tensor], Tensor], X: Tensor, num_outputs: int, name: str
) -> RoundEvaluation:
    """Call ``observe(X)`` and sort the points into observed and failed.

    Args:
        observe: ``N x d -> N x n`` noisy observations.
        X: ``q x d`` points.
        num_outputs: ``n``.
        name: The call, for the messages.

    Returns:
        The :class:`RoundEvaluation`; ``observe`` raising an ``Exception`` fails every point.
    """
    try:
        raw = observe(X)
    except Exception as err:  # an evaluation failure, handled by the policy
        Y = torch.full((X.shape[0], num_outputs), float("nan"), dtype=X.dtype, device=X.device)
        ok = torch.zeros(X.shape[0], dtype=torch.bool, device=X.device)
        return RoundEvaluation(Y, ok, f"{name} raised {type(err).__name__}: {err}", err)
    return classify(raw, X, num_outputs, name)


def classify(Y: object, X: Tensor, num_outputs: int | None, name: str) -> RoundEvaluation:
    """What ``observe(X)`` returned (``Y``), sorted into observed and failed (non-finite)
    points; :func:`as_observations`' errors for a result of the wrong type or shape.

    Args:
        Y: ``observe(X)``.
        X: ``q x d`` points.
        num_outputs: Expected ``n`` (any when ``None``).
        name: The call, for the messages.

    Returns:
        The :class:`RoundEvaluation`.
    """
    Y = as_observations(Y, X, num_outputs, name)
    ok = torch.isfinite(Y).all(dim=-1)
    if bool(ok.all()):
        return RoundEvaluation(Y, ok)
    bad = (~ok).nonzero().flatten().tolist()
    return RoundEvaluation(Y, ok, f"{name} returned non-finite values for points {bad}")
