"""What the MT-UCB input constructor reads from Ax's objective: the data reference point;
and the per-trial random streams keyed by (seed, t).

Reference: the nadir of the Pareto front by pairwise comparison, pushed back by 10 % of the
front's range (``nadir_reference``); for the streams, a draw from a fresh
``torch.Generator`` and the global state saved before the block.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ax")

from botorch_mtucb.integrations.ax.objective import (  # noqa: E402
    FIT_STREAM,
    OPTIMIZE_STREAM,
    ObjectiveInfo,
    data_reference_point,
    seeded_trial,
    trial_generator,
    trial_seed,
)
from tests.integrations.ax.helpers import DT, nadir_reference  # noqa: E402


def test_data_reference_point_matches_brute_force() -> None:
    g = torch.Generator().manual_seed(1)
    Y = torch.randn(30, 3, generator=g, dtype=DT)
    info = ObjectiveInfo(torch.tensor([False, True, True]), None)
    z = data_reference_point(Y, info)
    torch.testing.assert_close(z, nadir_reference(Y, info.signs(Y)))
    Y[0] = info.signs(Y) * 10.0  # one observation now dominates all others
    z = data_reference_point(Y, info)
    torch.testing.assert_close(z, info.signs(Y) * 9.0)
    torch.testing.assert_close(z, nadir_reference(Y, info.signs(Y)))


def test_seeded_trial_draws_from_seed_and_t_and_restores_the_global_state() -> None:
    torch.manual_seed(123)
    torch.rand(7)
    outer = torch.get_rng_state()
    with seeded_trial(0, 6, OPTIMIZE_STREAM):
        a = torch.rand(4, dtype=DT)
    assert torch.equal(torch.get_rng_state(), outer)  # the caller's stream is untouched
    torch.manual_seed(5)
    with seeded_trial(0, 6, OPTIMIZE_STREAM):
        b = torch.rand(4, dtype=DT)
    expected = torch.rand(4, generator=torch.Generator().manual_seed(
        trial_seed(0, 6, OPTIMIZE_STREAM)), dtype=DT)
    assert torch.equal(a, b) and torch.equal(a, expected)
    with seeded_trial(0, 7, OPTIMIZE_STREAM):
        assert not torch.equal(torch.rand(4, dtype=DT), a)  # another trial, another stream
    seeds = {trial_seed(0, 6, FIT_STREAM), trial_seed(0, 6, OPTIMIZE_STREAM),
             trial_seed(1, 6, OPTIMIZE_STREAM), int(trial_generator(0, 6).initial_seed())}
    assert len(seeds) == 4  # the fit, the optimiser and the λ stream are distinct


def test_seeded_trial_without_seed_uses_the_global_generator() -> None:
    torch.manual_seed(3)
    with seeded_trial(None, 6, FIT_STREAM):
        a = torch.rand(2)
    torch.manual_seed(3)
    assert torch.equal(a, torch.rand(2))
    with pytest.raises(ValueError, match="`seed` must be a non-negative integer"):
        trial_seed(-1, 6, FIT_STREAM)
