"""Confidence levels, horizons and numbers as a user may pass them to the theory functions."""

from __future__ import annotations

import numpy as np
import pytest

from botorch_mtucb import theory

OPEN_INTERVAL = r"`delta` must lie in the open interval \(0, 1\)"


@pytest.mark.parametrize("delta", [1.0, 1, 0.0, -0.1, 1.5, "0.1", True, None])
def test_every_function_taking_delta_refuses_one_and_values_outside_0_1(delta) -> None:
    calls = [
        lambda: theory.check_delta(delta),
        lambda: theory.check_heavy_tailed_params(1.0, 2.0, 1.0, delta, 1.0),
        lambda: theory.tgp_beta(16, 1.0, 4.0, 1.0, delta, 1.0, log_det=2.0),
        lambda: theory.ata_log_term(64, 100, delta, "qff"),
        lambda: theory.ata_log_term(64, 100, delta, "nystrom"),
        lambda: theory.nystrom_q(100, delta, 0.5),
        lambda: theory.check_epsilon_delta(0.5, delta),
        lambda: theory.theorem3_q(0.5, delta, 100),
        lambda: theory.theorem2_beta(1.0, 0.5, 0.25, delta, 2.0),
        lambda: theory.theorem3_beta(1.0, 0.5, 0.25, delta, 0.5, 2.0),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=OPEN_INTERVAL):
            call()


def test_delta_in_the_open_interval_and_numpy_numbers_are_accepted() -> None:
    assert theory.check_delta(np.float64(0.1)) == 0.1
    assert theory.check_heavy_tailed_params(np.int64(1), 4, 1, np.float32(0.5), 1)[3] == 0.5
    assert theory.tgp_beta(16, 1.0, 4.0, 1.0, 0.1, 1.0, 2.0) > 1.0


@pytest.mark.parametrize("name", ["alpha", "v", "lam", "B"])
def test_numeric_strings_are_not_numbers(name: str) -> None:
    args = dict(alpha=1.0, v=2.0, lam=1.0, delta=0.1, B=1.0)
    args[name] = "1"
    with pytest.raises(ValueError, match=f"`{name}` must be"):
        theory.check_heavy_tailed_params(**args)


def test_numpy_integer_horizons() -> None:
    assert theory.theorem3_q(0.5, 0.1, np.int64(100)) == theory.theorem3_q(0.5, 0.1, 100)
    assert theory.effective_horizon(np.int64(100), 7) == 100
    assert type(theory.check_horizon(np.int32(5))) is int


@pytest.mark.parametrize("horizon", [2.5, 0, True, "10"])
def test_a_horizon_that_is_not_a_positive_integer_is_refused(horizon) -> None:
    for call in (
        lambda: theory.check_horizon(horizon),
        lambda: theory.theorem3_q(0.5, 0.1, horizon),
        lambda: theory.effective_horizon(horizon, 7),
    ):
        with pytest.raises(ValueError, match="`horizon` must be a positive integer"):
            call()


def test_radii_read_integer_log_dets_as_floats_and_refuse_bad_constants() -> None:
    """An integer log det is a float64 value (not a truncated η: β was inf); η ≤ 0, σ < 0,
    b < 0 and a negative log det are refused by name."""
    import torch

    torch.testing.assert_close(theory.theorem2_beta(1.0, 0.5, 0.25, 0.1, torch.tensor(2)),
                               theory.theorem2_beta(1.0, 0.5, 0.25, 0.1, 2.0))
    torch.testing.assert_close(theory.theorem3_beta(1.0, 0.5, 0.25, 0.1, 0.5, torch.tensor(2)),
                               theory.theorem3_beta(1.0, 0.5, 0.25, 0.1, 0.5, 2.0))
    good = dict(b=1.0, sigma=0.5, eta=0.25, delta=0.1, log_det=2.0)
    for name, bad in (("eta", 0.0), ("eta", -1.0), ("sigma", -0.5), ("b", float("nan")),
                      ("log_det", -1.0)):
        with pytest.raises(ValueError, match=f"`{name}` must be"):
            theory.theorem2_beta(**{**good, name: bad})
    with pytest.raises(ValueError, match="`log_det_sum` must be"):
        theory.theorem3_beta(1.0, 0.5, 0.25, 0.1, 0.5, -3.0)


def test_heavy_tailed_schedules_refuse_values_outside_their_domains() -> None:
    """An unknown feature kind, a negative round or moment bound (complex levels before), a
    horizon of 0 or an ε outside (0, 1) raise ValueErrors naming the argument."""
    cases = [
        (lambda: theory.ata_log_term(4, 10, 0.1, "QFF"), "`kind` must be 'qff' or 'nystrom'"),
        (lambda: theory.ata_beta(4, 1.0, 1.0, 1.0, 1.0, 8, 2.0, "bogus"), "`kind`"),
        (lambda: theory.tgp_truncation_level(-1, 1.0, 4.0), "`t` must be non-negative"),
        (lambda: theory.tgp_truncation_level(4, 1.0, -4.0), "`v` must be non-negative"),
        (lambda: theory.tgp_truncation_level(4, 1.5, 4.0), "`alpha` must lie in"),
        (lambda: theory.ata_log_term(0, 10, 0.1, "qff"), "`m` must be an integer >= 1"),
        (lambda: theory.ata_log_term(4, 0, 0.1, "qff"), "`horizon` must be a positive"),
        (lambda: theory.nystrom_q(0, 0.1, 0.5), "`horizon` must be a positive"),
        (lambda: theory.nystrom_q(10, 0.1, 0.0, "authors"), "`epsilon` must lie in"),
        (lambda: theory.ata_beta(4, 1.0, 1.0, 1.0, 1.0, -1, 2.0, "qff"), "`m` must be"),
        (lambda: theory.ata_beta(4, 1.0, 1.0, 1.0, 1.0, 8, 2.0, "nystrom", epsilon=1.0),
         "`epsilon` must lie in"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
    assert theory.ata_log_term(0, 10, 0.1, "nystrom") > 0  # an empty dictionary: max(m, 1)


def test_heavy_tailed_levels_and_widths_refuse_out_of_range_inputs() -> None:
    """No complex numbers, ZeroDivisionError or 'math domain error': a ValueError naming the
    argument, as tgp_truncation_level gives."""
    from botorch_mtucb.theory.heavy_tailed import ata_truncation_level, tgp_beta

    for kwargs, name in (({"t": -1}, "`t`"), ({"v": -4.0}, "`v`"), ({"alpha": 2.0}, "`alpha`"),
                         ({"log_term": float("nan")}, "`log_term`"),
                         ({"log_term": "x"}, "`log_term`")):
        args = {"t": 3, "alpha": 0.5, "v": 4.0, "log_term": 2.0, **kwargs}
        with pytest.raises(ValueError, match=name):
            ata_truncation_level(**args)
    for kwargs, name in (({"lam": 0.0}, "`lam`"), ({"lam": -1.0}, "`lam`"),
                         ({"log_det": -5.0}, "`log_det`"), ({"B": -1.0}, "`B`")):
        args = {"t": 3, "alpha": 1.0, "v": 4.0, "lam": 1.0, "delta": 0.1, "B": 1.0,
                "log_det": 1.0, **kwargs}
        with pytest.raises(ValueError, match=name):
            tgp_beta(**args)
    assert ata_truncation_level(16, 1.0, 4.0, 0.0) == float("inf")  # L <= 0: no truncation
