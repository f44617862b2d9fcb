"""The benchmark scripts' shared measurement helpers."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import binomtest

from mtucb_bench import measure
from mtucb_bench.measure import best_time, sign_test_p


@pytest.mark.parametrize("wins, losses", [(0, 0), (1, 0), (9, 1), (5, 5), (0, 10), (3, 17)])
def test_sign_test_against_scipy(wins: int, losses: int) -> None:
    expected = 1.0 if wins + losses == 0 else binomtest(wins, wins + losses, 0.5).pvalue
    assert sign_test_p(wins, losses) == pytest.approx(expected, rel=1e-12)
    assert sign_test_p(losses, wins) == sign_test_p(wins, losses)
    with pytest.raises(ValueError, match="`wins`"):
        sign_test_p(-1, 3)


def test_best_time_is_the_fastest_call(monkeypatch) -> None:
    clock = itertools.chain([0.0, 0.5, 1.0, 1.2, 2.0, 2.7])  # calls of 0.5, 0.2, 0.7 s
    monkeypatch.setattr(measure.time, "perf_counter", lambda: next(clock))
    calls = []
    assert best_time(lambda: calls.append(1), repeats=3) == pytest.approx(0.2)
    assert len(calls) == 3
    with pytest.raises(ValueError, match="`repeats`"):
        best_time(lambda: None, repeats=0)
