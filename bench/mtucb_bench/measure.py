"""Measurement helpers shared by the scripts of :mod:`mtucb_bench.perf` and
:mod:`mtucb_bench.studies`.

* :func:`best_time` — the best wall time of repeated calls (the scripts' timing anchor);
* :func:`sign_test_p` — the two-sided exact sign test of paired wins and losses.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["best_time", "sign_test_p"]


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """The smallest wall time (seconds, ``time.perf_counter``) of ``repeats`` calls of ``fn``.

    Args:
        fn: The call to time (no arguments).
        repeats: Number of calls (≥ 1).
    """
    if repeats < 1:
        raise ValueError(f"`repeats` must be >= 1, got {repeats}.")
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test of paired comparisons, ties dropped.

    ``p = min(1, 2 · P(K ≤ min(wins, losses)))`` with ``K ~ Binomial(wins + losses, 1/2)``;
    ``1`` when there is no untied pair.

    Args:
        wins: Pairs the first method won.
        losses: Pairs it lost.
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"`wins` and `losses` must be >= 0, got {wins} and {losses}.")
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
