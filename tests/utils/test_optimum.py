"""Tests for the local polish of x*_λ (botorch_mtucb.utils.optimum)."""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.utils import polish_maxima

DT = torch.float64


def test_polish_reaches_known_maximisers_row_by_row():
    # row m: -(x - c_m)² summed over d = 2, maximiser c_m (the last one outside the box: clipped)
    C = torch.tensor([[0.3137, 0.71], [0.05, 0.52], [1.4, 0.2]], dtype=DT)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)

    def objective(X):  # one smooth piece per row, given as an M-vector
        return -(X - C).square().sum(-1)

    X0 = torch.full((3, 2), 0.5, dtype=DT)
    X, v = polish_maxima(objective, X0, bounds)
    expected = C.clamp(0.0, 1.0)
    torch.testing.assert_close(X, expected, atol=1e-6, rtol=0.0)
    torch.testing.assert_close(v, objective(expected), atol=1e-10, rtol=0.0)
    assert X0.eq(0.5).all()  # the caller's starts are untouched


def test_polish_is_exact_at_a_chebyshev_kink_and_never_worse_than_the_start():
    # min of two linear pieces in x₁ (x₂ irrelevant): maximum 0.5 at the kink x₁ = 0.5
    def pieces(X):
        return torch.stack([X[:, 0], 1.0 - X[:, 0]], dim=-1) + 0.0 * X[:, 1:]

    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    X0 = torch.tensor([[0.5, 0.3], [0.2, 0.9], [0.97, 0.1]], dtype=DT)
    X, v = polish_maxima(pieces, X0, bounds)
    v0 = pieces(X0).min(-1).values
    assert (v >= v0).all()
    assert v[0] == v0[0]  # already at the maximum: kept
    torch.testing.assert_close(v, torch.full((3,), 0.5, dtype=DT), atol=1e-9, rtol=0.0)
    torch.testing.assert_close(v, pieces(X).min(-1).values)
    assert ((X >= 0) & (X <= 1)).all()


def test_polish_keeps_the_start_when_it_cannot_improve():
    # a start at a local maximum of a two-peak function stays there (no global search)
    def pieces(X):
        return (torch.exp(-((X - 0.2) / 0.05) ** 2) + 2 * torch.exp(-((X - 0.8) / 0.05) ** 2))

    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
    X, v = polish_maxima(pieces, torch.tensor([[0.2]], dtype=DT), bounds)
    torch.testing.assert_close(X, torch.tensor([[0.2]], dtype=DT), atol=1e-6, rtol=0.0)
    assert v[0] >= pieces(torch.tensor([[0.2]], dtype=DT))[0, 0]


def test_polish_bad_input_raises():
    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
    with pytest.raises(ValueError, match="X0"):
        polish_maxima(lambda X: X[:, 0], torch.zeros(3, dtype=DT), bounds)
    with pytest.raises(ValueError, match="bounds"):
        polish_maxima(lambda X: X[:, 0], torch.zeros(3, 1, dtype=DT), bounds[:1])
    with pytest.raises(ValueError, match="bounds"):
        polish_maxima(lambda X: X[:, 0], torch.zeros(3, 1, dtype=DT), bounds.flip(0))
    with pytest.raises(ValueError, match="pieces"):
        polish_maxima(lambda X: X.sum(), torch.zeros(3, 1, dtype=DT), bounds)
    with pytest.raises(ValueError, match="differentiable"):
        polish_maxima(lambda X: X.detach()[:, 0] ** 2, torch.zeros(1, 1, dtype=DT), bounds)
    with pytest.raises(ValueError, match="maxiter"):
        polish_maxima(lambda X: X, torch.zeros(3, 1, dtype=DT), bounds, maxiter=0)
    with pytest.raises(ValueError, match="X0"):
        polish_maxima(lambda X: X[:, 0], torch.full((2, 1), float("nan"), dtype=DT), bounds)
