"""The suite's container helpers: the max-HV estimate and finite-difference gradients."""

from __future__ import annotations

import torch
from botorch.test_functions.multi_objective import BraninCurrin
from torch.quasirandom import SobolEngine

from mtucb_bench.mo_suite_base import FiniteDifferenceF, estimate_max_hv

DT = torch.float64


def test_max_hv_estimate_is_a_tight_lower_bound():
    bt = BraninCurrin(negate=True).to(DT)
    X = SobolEngine(2, scramble=True, seed=0).draw(1024).to(DT)

    def f(Z):
        return bt(Z, noise=False)

    est = estimate_max_hv(f, X, f(X), bt.ref_point.to(DT), bt.bounds.to(DT), seed=0)
    assert 0.97 * bt.max_hv < est <= bt.max_hv * (1 + 1e-9)


def test_finite_difference_gradient():
    bt = BraninCurrin(negate=True).to(DT)
    X = torch.rand(3, 2, dtype=DT, requires_grad=True)
    w = torch.tensor([0.3, -1.2], dtype=DT)
    (bt.evaluate_true(X) @ w).sum().backward()
    g_ref = X.grad.clone()
    X.grad = None
    h = torch.full((2,), 1e-6, dtype=DT)
    (FiniteDifferenceF.apply(X, bt.evaluate_true, h) @ w).sum().backward()
    torch.testing.assert_close(X.grad, g_ref, rtol=1e-5, atol=1e-5)


def test_finite_difference_gradient_stays_in_the_box_on_its_faces():
    # BraninCurrin refuses points outside [0, 1]^2 (its forward validates inputs): points on
    # the faces need one-sided differences, and they must still match autograd
    bt = BraninCurrin(negate=True).to(DT)
    X = torch.tensor([[0.0, 0.3], [1.0, 1.0], [0.4, 1.0], [0.5, 0.5]], dtype=DT)
    w = torch.tensor([0.7, -0.2], dtype=DT)
    X1 = X.clone().requires_grad_(True)
    (bt(X1, noise=False) @ w).sum().backward()
    h = torch.full((2,), 1e-6, dtype=DT)
    X2 = X.clone().requires_grad_(True)
    (FiniteDifferenceF.apply(X2, lambda Z: bt(Z, noise=False), h, bt.bounds) @ w).sum().backward()
    torch.testing.assert_close(X2.grad, X1.grad, rtol=1e-4, atol=1e-4)
    X3 = X.clone().requires_grad_(True)
    y = FiniteDifferenceF.apply(X3, lambda Z: bt(Z, noise=False), h)  # no bounds: central
    try:
        (y @ w).sum().backward()
    except ValueError as e:  # the unclamped difference leaves the box
        assert "within the bounds" in str(e)
    else:
        raise AssertionError("the unclamped central difference should have left the box")


def test_penicillin_gradient_on_a_face():
    from mtucb_bench.mo_suite_problems import make_suite_problem

    p = make_suite_problem("penicillin")
    X = p.bounds[0].clone()[None].requires_grad_(True)  # a vertex of the box
    p.f(X).sum().backward()
    assert torch.isfinite(X.grad).all()
