"""What :func:`botorch_mtucb.loop.run_bo_loop` records: one :class:`RoundRecord` per
evaluation and the run's :class:`LoopHistory`, with the regret summaries of paper 000, §2:
the cumulative scalarized regret R_C(T) = Σ_{t≤T} r_t and its time average R_C(T)/T."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.models.model import Model
from torch import Tensor

__all__ = ["LoopHistory", "RoundRecord"]


@dataclass
class RoundRecord:
    """What happened in one evaluation (one point of a round).

    Attributes:
        t: Evaluation index, 1-based (the round index when ``q = 1``).
        x: ``d`` query point x_t.
        y: ``n`` noisy observation y_t.
        weights: ``n`` scalarization weights λ_t (``None`` for single-objective runs).
        regret: Instantaneous scalarized regret r_t (``None`` when f is unknown).
        beta: β used by the acquisition, when it exposes one.
        wall_time: Seconds spent on the round's algorithm steps (not the regret metric).
        dictionary_size: Size m_t of a Nyström dictionary after the update, when the model
            exposes one (``dictionary_size``: MT-BKB; ``None`` otherwise).
        batch: Round (batch) index, 1-based; equal to ``t`` when ``q = 1``.

    Example:
        >>> r = RoundRecord(t=1, x=torch.tensor([0.5]), y=torch.tensor([1.0, 2.0]),
        ...                 weights=torch.tensor([0.3, 0.7]), regret=0.1, beta=1.0,
        ...                 wall_time=0.02, batch=1)
        >>> r.to_dict()["y"]
        [1.0, 2.0]
    """

    t: int
    x: Tensor
    y: Tensor
    weights: Tensor | None
    regret: float | None
    beta: float | None
    wall_time: float
    dictionary_size: int | None = None
    batch: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (tensors become lists), keys in field order."""
        out = dict(self.__dict__)
        for key in ("x", "y", "weights"):
            out[key] = None if out[key] is None else out[key].tolist()
        return out


@dataclass
class LoopHistory:
    """Initial data and the per-round records of one run.

    Attributes:
        initial_X: ``N0 x d`` initial inputs.
        initial_Y: ``N0 x n`` their observations.
        rounds: One :class:`RoundRecord` per round.
        model: The final model (not exported).

    Example:
        >>> h = LoopHistory(initial_X=torch.zeros(2, 1), initial_Y=torch.zeros(2, 2))
        >>> for t, regret in enumerate([0.4, 0.2], start=1):
        ...     h.rounds.append(RoundRecord(t=t, x=torch.full((1,), t / 4), y=torch.ones(2),
        ...                                 weights=None, regret=regret, beta=None,
        ...                                 wall_time=0.0, batch=t))
        >>> h.X.shape, h.Y.shape   # T x d, T x n
        (torch.Size([2, 1]), torch.Size([2, 2]))
        >>> h.time_average_regret()   # R_C(t) / t
        tensor([0.4000, 0.3000], dtype=torch.float64)
    """

    initial_X: Tensor
    initial_Y: Tensor
    rounds: list[RoundRecord] = field(default_factory=list)
    model: Model | None = None

    @property
    def X(self) -> Tensor:
        """``T x d`` query points x_1, …, x_T (``0 x d`` until the first round)."""
        return torch.stack([r.x for r in self.rounds]) if self.rounds else self.initial_X[:0]

    @property
    def Y(self) -> Tensor:
        """``T x n`` observations y_1, …, y_T (``0 x n`` until the first round)."""
        return torch.stack([r.y for r in self.rounds]) if self.rounds else self.initial_Y[:0]

    @property
    def regrets(self) -> Tensor:
        """``T`` instantaneous regrets (float64); raises if f was not known."""
        if any(r.regret is None for r in self.rounds):
            raise ValueError("Regret was not recorded (pass `true_f` to run_bo_loop).")
        return torch.tensor([r.regret for r in self.rounds], dtype=torch.float64)

    def cumulative_regret(self) -> Tensor:
        """``T`` cumulative scalarized regret R_C(t) = Σ_{s≤t} r_s."""
        return self.regrets.cumsum(0)

    def time_average_regret(self) -> Tensor:
        """``T`` time-average regret R_C(t)/t (what paper 000 Fig. 1 plots)."""
        r = self.cumulative_regret()
        return r / torch.arange(1, r.numel() + 1, dtype=r.dtype)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The rounds as JSON-able dicts."""
        return [r.to_dict() for r in self.rounds]

    def to_json_dict(self) -> dict[str, Any]:
        """Everything (initial data and rounds) as one JSON-able dict."""
        return {
            "initial_X": self.initial_X.tolist(),
            "initial_Y": self.initial_Y.tolist(),
            "rounds": self.to_dicts(),
        }
