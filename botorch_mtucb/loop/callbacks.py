"""Callbacks of :func:`botorch_mtucb.loop.run_bo_loop`: called with each new
:class:`~botorch_mtucb.loop.history.RoundRecord`, once per evaluation, in order.

A callback is any ``callable(record) -> None`` (logging, live plots, early bookkeeping);
:class:`ProgressBar` is the one behind ``progress=True``.
"""

from __future__ import annotations

from collections.abc import Callable

from tqdm.auto import tqdm

from botorch_mtucb.loop.history import RoundRecord

__all__ = ["LoopCallback", "ProgressBar"]

#: ``callback(record)``, called after each evaluation's record is appended to the history.
LoopCallback = Callable[[RoundRecord], None]


class ProgressBar:
    """A tqdm bar over the rounds showing the running time-average regret R_C(t)/t.

    The bar advances to ``record.batch`` and, when the record carries a regret, shows
    Σ_{s≤t} r_s / t over the evaluations seen so far.

    Example:
        >>> import torch
        >>> from botorch_mtucb.loop import RoundRecord
        >>> bar = ProgressBar(num_rounds=2, disable=True)
        >>> bar(RoundRecord(t=1, x=torch.zeros(1), y=torch.zeros(2), weights=None,
        ...                 regret=0.5, beta=None, wall_time=0.0, batch=1))
        >>> bar.round, bar.average_regret
        (1, 0.5)
        >>> bar.close()
    """

    def __init__(self, num_rounds: int, desc: str = "BO loop", disable: bool = False) -> None:
        """
        Args:
            num_rounds: Number of rounds T (the bar's total).
            desc: The bar's label.
            disable: Create a silent bar (for tests and non-interactive runs).
        """
        self.bar = tqdm(total=num_rounds, desc=desc, disable=disable)
        self.cum_regret = 0.0
        self.evaluations = 0
        self.round = 0

    @property
    def average_regret(self) -> float | None:
        """R_C(t)/t over the evaluations seen so far (``None`` until the first)."""
        return self.cum_regret / self.evaluations if self.evaluations else None

    def __call__(self, record: RoundRecord) -> None:
        """Count ``record`` and move the bar to its round."""
        self.evaluations += 1
        if record.regret is not None:
            self.cum_regret += record.regret
            self.bar.set_postfix(avg_regret=f"{self.average_regret:.4g}", refresh=False)
        batch = record.t if record.batch is None else record.batch
        if batch > self.round:
            self.bar.update(batch - self.round)
            self.round = batch

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()
