"""initial_design_size (Ax's rule) and sobol_initial_design (scrambled Sobol in a box)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.quasirandom import SobolEngine

from botorch_mtucb.utils import check_bounds, initial_design_size, sobol_initial_design


@pytest.mark.parametrize("d", [1, 2, 3, 5, 6, 20])
@pytest.mark.parametrize("budget", [None, 10, 30, 100, 1000])
def test_size_is_axs_rule(d, budget):
    from ax.generation_strategy.dispatch_utils import calculate_num_initialization_trials

    assert initial_design_size(d, budget) == calculate_num_initialization_trials(d, budget)


def test_size_by_hand_and_validation():
    assert [initial_design_size(d) for d in (1, 2, 3, 4, 7)] == [5, 5, 6, 8, 14]
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="`d`"):
            initial_design_size(bad)
    with pytest.raises(ValueError, match="`budget`"):
        initial_design_size(3, budget=-1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_sobol_design_in_the_box(dtype):
    bounds = torch.tensor([[-5.0, 0.0, 1.0], [10.0, 15.0, 1.5]], dtype=dtype)
    b0 = bounds.clone()
    X = sobol_initial_design(bounds, seed=3)
    assert X.shape == (6, 3) and X.dtype == dtype and X.device == bounds.device
    assert bool((X >= bounds[0]).all() and (X <= bounds[1]).all())
    assert torch.equal(bounds, b0)
    # The affine image of torch's scrambled Sobol sequence with that seed.
    U = SobolEngine(3, scramble=True, seed=3).draw(6, dtype=torch.float64).to(dtype)
    torch.testing.assert_close(X, bounds[0] + (bounds[1] - bounds[0]) * U)
    assert torch.equal(X, sobol_initial_design(bounds, seed=3))
    assert not torch.equal(X, sobol_initial_design(bounds, seed=4))


def test_sobol_design_is_space_filling():
    """Each of the 8 dyadic intervals of every coordinate holds exactly one of 8 points."""
    bounds = torch.tensor([[0.0, 0.0], [2.0, 4.0]], dtype=torch.float64)
    X = sobol_initial_design(bounds, n=8, seed=0)
    cells = ((X - bounds[0]) / (bounds[1] - bounds[0]) * 8).floor().long()
    for j in range(2):
        assert sorted(cells[:, j].tolist()) == list(range(8))
    torch.manual_seed(0)
    a = sobol_initial_design(bounds, n=4)
    torch.manual_seed(0)
    assert torch.equal(a, sobol_initial_design(bounds, n=4))  # seed=None: global generator
    assert sobol_initial_design(bounds, n=0).shape == (0, 2)


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        (torch.zeros(3, 2), r"`bounds` must be a 2 x d tensor"),
        (torch.tensor([[0.0, 1.0], [1.0, 0.5]]), "lower < upper"),
        (torch.tensor([[0.0, float("inf")], [1.0, 1.0]]), "NaN or infinite"),
        (torch.tensor([[0.0, -1e308], [1.0, 1e308]], dtype=torch.float64),
         r"finite width .* dimensions \[1\]"),
        (torch.tensor([[-3e38], [3e38]]), "overflows torch.float32"),
        (torch.tensor([[0, 0], [1, 1]]), "floating"),
        ([[0.0], [1.0]], "got list"),
    ],
)
def test_bounds_validation(bounds, match):
    with pytest.raises(ValueError, match=match):
        sobol_initial_design(bounds)
    with pytest.raises(ValueError, match=match):
        check_bounds(bounds)


def test_bad_n():
    with pytest.raises(ValueError, match="`n`"):
        sobol_initial_design(torch.tensor([[0.0], [1.0]]), n=-2)
    with pytest.raises(ValueError, match=r"2 x d = \(2, 3\)"):
        check_bounds(torch.zeros(2, 2), d=3)


def test_numpy_integers_are_accepted():
    """NumPy integers (as from ``np.arange`` or a config array) count as integers."""
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    assert initial_design_size(np.int64(3), budget=np.int32(40)) == initial_design_size(3, 40)
    X = sobol_initial_design(bounds, n=np.int64(7), seed=np.int64(2))
    assert X.shape == (7, 2) and torch.equal(X, sobol_initial_design(bounds, n=7, seed=2))
    for bad in (np.float64(3.0), np.bool_(True), True):
        with pytest.raises(ValueError, match="`n`"):
            sobol_initial_design(bounds, n=bad)
    with pytest.raises(ValueError, match="`seed`"):
        sobol_initial_design(bounds, seed=2.5)


def test_warn_outside_bounds_counts_rows_beyond_the_tolerance():
    import warnings

    from botorch.exceptions.warnings import InputDataWarning

    from botorch_mtucb.models import practical_multitask_gp
    from botorch_mtucb.utils.initial_design import warn_outside_bounds

    bounds = torch.tensor([[0.0, -1.0], [2.0, 1.0]], dtype=torch.float64)
    X = torch.tensor([[0.0, -1.0], [2.0, 1.0], [1.0, 1.0 + 1e-7]], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputDataWarning)
        warn_outside_bounds(X, bounds)  # the faces and a rounding error are inside
    X[0, 0], X[2, 1] = -0.01, 1.01
    with pytest.warns(InputDataWarning, match="2 of the 3 rows of `train_X` lie outside"):
        warn_outside_bounds(X, bounds)
    Y = torch.stack([X.sum(-1), X.prod(-1)], -1)
    with pytest.warns(InputDataWarning, match="lie outside `bounds`"):
        practical_multitask_gp(X, Y, bounds, fit=False)
