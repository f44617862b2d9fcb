"""What the MT-UCB input constructor reads from Ax's objective: the data reference point.

Reference: the nadir of the Pareto front by pairwise comparison, pushed back by 10 % of the
front's range (``nadir_reference``).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ax")

from botorch_mtucb.integrations.ax.objective import (  # noqa: E402
    ObjectiveInfo,
    data_reference_point,
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
