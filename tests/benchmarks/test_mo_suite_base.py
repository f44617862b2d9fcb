"""The suite's container helpers: the max-HV estimate and finite-difference gradients."""

from __future__ import annotations

import torch
from botorch.test_functions.multi_objective import BraninCurrin
from torch.quasirandom import SobolEngine

from botorch_mtucb.benchmarks.mo_suite_base import _estimate_max_hv, _FiniteDifferenceF

DT = torch.float64


def test_max_hv_estimate_is_a_tight_lower_bound():
    bt = BraninCurrin(negate=True).to(DT)
    X = SobolEngine(2, scramble=True, seed=0).draw(1024).to(DT)

    def f(Z):
        return bt(Z, noise=False)

    est = _estimate_max_hv(f, X, f(X), bt.ref_point.to(DT), bt.bounds.to(DT), seed=0)
    assert 0.97 * bt.max_hv < est <= bt.max_hv * (1 + 1e-9)


def test_finite_difference_gradient():
    bt = BraninCurrin(negate=True).to(DT)
    X = torch.rand(3, 2, dtype=DT, requires_grad=True)
    w = torch.tensor([0.3, -1.2], dtype=DT)
    (bt.evaluate_true(X) @ w).sum().backward()
    g_ref = X.grad.clone()
    X.grad = None
    h = torch.full((2,), 1e-6, dtype=DT)
    (_FiniteDifferenceF.apply(X, bt.evaluate_true, h) @ w).sum().backward()
    torch.testing.assert_close(X.grad, g_ref, rtol=1e-5, atol=1e-5)
