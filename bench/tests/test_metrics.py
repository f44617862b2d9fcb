"""Regret / hypervolume metrics against hand-computed values."""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.acquisition import ChebyshevScalarization, LinearScalarization
from mtucb_bench.metrics import (
    bayes_regret,
    cumulative_regret,
    hypervolume_curve,
    instantaneous_regret,
    make_scalarization,
    scalarized_optima,
    scalarized_values,
    time_average_regret,
)

DT = torch.float64
F_REF = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.4, 0.4]], dtype=DT)
Z = torch.tensor([-1.0, -1.0], dtype=DT)


def test_scalarized_values_by_hand():
    W = torch.tensor([[0.5, 0.5], [0.25, 0.75]], dtype=DT)
    lin = scalarized_values(F_REF, W, "linear")
    expected_lin = torch.tensor([[0.5, 0.5, 0.4], [0.25, 0.75, 0.4]], dtype=DT)
    torch.testing.assert_close(lin, expected_lin)
    cheb = scalarized_values(F_REF, W, "chebyshev", Z)
    # min_i λ_i (y_i + 1): row 1: (1.0, 0.5)->0.5, (0.5, 1.0)->0.5, (0.7, 0.7)->0.7
    # row 2: (0.5, 0.75)->0.5, (0.25, 1.5)->0.25, (0.35, 1.05)->0.35
    expected_cheb = torch.tensor([[0.5, 0.5, 0.7], [0.5, 0.25, 0.35]], dtype=DT)
    torch.testing.assert_close(cheb, expected_cheb)
    # agrees with the package's scalarization objects
    for w in W:
        torch.testing.assert_close(LinearScalarization(w)(F_REF), w @ F_REF.T)
        torch.testing.assert_close(
            make_scalarization("chebyshev", w, Z)(F_REF), ChebyshevScalarization(w, Z)(F_REF)
        )


def test_instantaneous_regret_by_hand():
    W = torch.tensor([[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]], dtype=DT)
    F_q = torch.tensor([[0.4, 0.4], [1.0, 0.0], [2.0, 2.0]], dtype=DT)
    r_lin = instantaneous_regret(F_REF, F_q, W, "linear")
    # best linear: 0.5, 0.75, 0.5 ; query values 0.4, 0.25, 2.0 (better than the set: r = 0)
    torch.testing.assert_close(r_lin, torch.tensor([0.1, 0.5, 0.0], dtype=DT))
    r_ch = instantaneous_regret(F_REF, F_q, W, "chebyshev", Z)
    # best Chebyshev: 0.7, 0.5, 0.7 ; query values 0.7, min(0.5, 0.75)=0.5, 1.5
    torch.testing.assert_close(r_ch, torch.tensor([0.0, 0.0, 0.0], dtype=DT))
    W2 = torch.tensor([[0.9, 0.1]], dtype=DT)
    r = instantaneous_regret(F_REF, torch.tensor([[0.0, 1.0]], dtype=DT), W2, "chebyshev", Z)
    # best: max(min(1.8, 0.1), min(0.9, 0.2), min(1.26, 0.14)) = 0.2; query: min(0.9, 0.2) = 0.2
    torch.testing.assert_close(r, torch.tensor([0.0], dtype=DT))
    r = instantaneous_regret(F_REF, torch.tensor([[0.4, 0.4]], dtype=DT), W2, "chebyshev", Z)
    torch.testing.assert_close(r, torch.tensor([0.2 - 0.14], dtype=DT))
    # single objective
    r1 = instantaneous_regret(torch.tensor([[1.0], [3.0]], dtype=DT),
                              torch.tensor([[1.0], [3.0], [2.5]], dtype=DT))
    torch.testing.assert_close(r1, torch.tensor([2.0, 0.0, 0.5], dtype=DT))


def test_cumulative_and_time_average():
    r = torch.tensor([1.0, 2.0, 3.0, 0.0], dtype=DT)
    torch.testing.assert_close(cumulative_regret(r), torch.tensor([1.0, 3.0, 6.0, 6.0], dtype=DT))
    torch.testing.assert_close(
        time_average_regret(r), torch.tensor([1.0, 1.5, 2.0, 1.5], dtype=DT)
    )
    batch = torch.stack([r, 2 * r])
    torch.testing.assert_close(time_average_regret(batch)[1], 2 * time_average_regret(r))


def test_bayes_regret_by_hand():
    W = torch.tensor([[0.5, 0.5], [0.9, 0.1]], dtype=DT)
    F_q = torch.tensor([[0.0, 1.0], [0.4, 0.4], [1.0, 0.0]], dtype=DT)
    rb = bayes_regret(F_REF, F_q, W, "linear")
    # λ1: best 0.5, running best of (0.5, 0.4, 0.5) = 0.5, 0.5, 0.5 -> regret 0, 0, 0
    # λ2: best 0.9, values (0.1, 0.4, 0.9), running 0.1, 0.4, 0.9 -> regret 0.8, 0.5, 0
    torch.testing.assert_close(rb, torch.tensor([0.4, 0.25, 0.0], dtype=DT))
    assert (rb[1:] <= rb[:-1]).all()


def test_bayes_regret_with_known_optima():
    W = torch.tensor([[0.5, 0.5], [0.9, 0.1]], dtype=DT)
    F_q = torch.tensor([[0.0, 1.0], [0.4, 0.4], [1.0, 0.0]], dtype=DT)
    # optima above the reference set's (0.5, 0.9) shift every regret up; below them are ignored
    rb = bayes_regret(F_REF, F_q, W, "linear", optima=torch.tensor([0.6, 1.0], dtype=DT))
    torch.testing.assert_close(rb, torch.tensor([0.5, 0.35, 0.1], dtype=DT))
    rb0 = bayes_regret(F_REF, F_q, W, "linear", optima=torch.tensor([0.0, 0.0], dtype=DT))
    torch.testing.assert_close(rb0, bayes_regret(F_REF, F_q, W, "linear"))
    with pytest.raises(ValueError, match="optima"):
        bayes_regret(F_REF, F_q, W, "linear", optima=torch.zeros(3, dtype=DT))


def test_scalarized_optima_polish_against_closed_form():
    # f(x) = (x, 1 - x) on [0, 1], z = 0: max_x min(λ1 x, λ2 (1 - x)) = λ1 λ2 / (λ1 + λ2)
    def f(X):
        return torch.cat([X, 1.0 - X], dim=-1)

    W = torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.3, 0.7], [0.62, 0.38]], dtype=DT)
    exact = W[:, 0] * W[:, 1] / W.sum(-1)
    grid = torch.linspace(0, 1, 6, dtype=DT).unsqueeze(-1)
    z = torch.zeros(2, dtype=DT)
    on_grid = scalarized_optima(f, grid, W, "chebyshev", z)
    torch.testing.assert_close(on_grid, scalarized_values(f(grid), W, "chebyshev", z).amax(-1))
    assert (exact - on_grid).max() > 1e-2  # the 6-point grid misses the kinks
    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
    polished = scalarized_optima(f, grid, W, "chebyshev", z, bounds=bounds)
    assert (polished >= on_grid).all() and (polished <= exact + 1e-12).all()
    torch.testing.assert_close(polished, exact, atol=1e-6, rtol=0.0)
    # linear weights on a smooth problem: the maximum of 1 - (x - 0.37)² is 1
    lin = scalarized_optima(
        lambda X: 1.0 - (X - 0.37).square(), grid, torch.ones(1, 1, dtype=DT), "linear",
        bounds=bounds,
    )
    torch.testing.assert_close(lin, torch.ones(1, dtype=DT), atol=1e-10, rtol=0.0)


def test_hypervolume_curve_by_hand():
    F_q = torch.tensor([[1.0, 2.0], [0.5, 0.5], [2.0, 1.0], [-1.0, 5.0]], dtype=DT)
    hv = hypervolume_curve(F_q, torch.zeros(2, dtype=DT))
    # {(1,2)}: 2 ; + dominated (0.5,0.5): 2 ; + (2,1): 2 + 2 - 1 = 3 ; + point below ref: 3
    torch.testing.assert_close(hv, torch.tensor([2.0, 2.0, 3.0, 3.0], dtype=DT))
    with pytest.raises(ValueError, match="n <= 5"):
        hypervolume_curve(torch.zeros(2, 6, dtype=DT), torch.zeros(6, dtype=DT))


def test_bad_inputs_raise():
    W = torch.tensor([[0.5, 0.5]], dtype=DT)
    with pytest.raises(ValueError, match="kind"):
        scalarized_values(F_REF, W, "hypervolume")
    with pytest.raises(ValueError, match="ref_point"):
        scalarized_values(F_REF, W, "chebyshev")
    with pytest.raises(ValueError, match="columns"):
        scalarized_values(F_REF, torch.ones(1, 3, dtype=DT) / 3, "linear")
    with pytest.raises(ValueError, match="weights"):
        instantaneous_regret(F_REF, F_REF[:2], W, "linear")
    with pytest.raises(ValueError, match="weights"):
        instantaneous_regret(F_REF, F_REF[:2])
    with pytest.raises(ValueError, match="NaN"):
        cumulative_regret(torch.tensor([1.0, float("nan")], dtype=DT))
