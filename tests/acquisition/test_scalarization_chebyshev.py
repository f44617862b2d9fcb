"""The Chebyshev scalarization's own module: the re-export and s_λ against its definition."""

import pytest
import torch

from botorch_mtucb.acquisition import scalarization
from botorch_mtucb.acquisition.scalarization_chebyshev import ChebyshevScalarization

DT = torch.float64


def test_reexported_from_scalarization():
    assert scalarization.ChebyshevScalarization is ChebyshevScalarization


def test_value_and_directional_bound_by_hand():
    g = torch.Generator().manual_seed(0)
    lam = torch.tensor([0.2, 0.5, 0.3], dtype=DT)
    z = torch.randn(3, generator=g, dtype=DT)
    s = ChebyshevScalarization(lam, z, minimize=[False, True, False], augmentation=0.05)
    Y = torch.randn(6, 3, generator=g, dtype=DT)
    sign = torch.tensor([1.0, -1.0, 1.0], dtype=DT)
    pieces = lam * (Y * sign - z * sign)
    torch.testing.assert_close(s(Y), pieces.min(-1).values + 0.05 * pieces.sum(-1))
    var = torch.rand(6, 3, generator=g, dtype=DT)
    upper = lam * (Y * sign + 2.0 * var.sqrt() - z * sign)
    torch.testing.assert_close(s.directional_ucb_from_variances(Y, var, 2.0),
                               upper.min(-1).values + 0.05 * upper.sum(-1))


def _nondominated_by_loops(Y):
    """Rows of Y no other row weakly dominates with one strict improvement (brute force)."""
    keep = []
    for i in range(Y.shape[0]):
        dominated = any(
            all(Y[j, k] >= Y[i, k] for k in range(Y.shape[1]))
            and any(Y[j, k] > Y[i, k] for k in range(Y.shape[1]))
            for j in range(Y.shape[0])
        )
        if not dominated:
            keep.append(Y[i])
    return torch.stack(keep)


def _reference_from_data(lam, Y, predicted, span, margin=0.1):
    """Weights and z of from_data written out per objective with Python loops."""
    fronts = [_nondominated_by_loops(Y)]
    if predicted is not None:
        fronts.append(_nondominated_by_loops(predicted))
    front = torch.cat(fronts)
    n = Y.shape[1]
    r = []
    for i in range(n):
        r_all = float(Y[:, i].max() - Y[:, i].min())
        r_i = r_all
        if span == "front" and float(front[:, i].max() - front[:, i].min()) > 0:
            r_i = float(front[:, i].max() - front[:, i].min())
        r.append(r_i if r_i > 0 else 1.0)
    z = torch.tensor([float(front[:, i].min()) - margin * r[i] for i in range(n)], dtype=DT)
    w = torch.tensor([float(lam[i]) / r[i] for i in range(n)], dtype=DT)
    return w / w.sum(), z


def test_from_data_predicted_and_span_against_loops():
    g = torch.Generator().manual_seed(3)
    lam = torch.tensor([0.3, 0.5, 0.2], dtype=DT)
    Y = torch.randn(15, 3, generator=g, dtype=DT)
    P = torch.randn(40, 3, generator=g, dtype=DT) * 1.5
    Y0, P0 = Y.clone(), P.clone()
    for predicted in (None, P):
        for span in ("all", "front"):
            s = ChebyshevScalarization.from_data(lam, Y, predicted=predicted, span=span)
            w, z = _reference_from_data(lam, Y, predicted, span)
            torch.testing.assert_close(s.weights, w)
            torch.testing.assert_close(s.ref_point, z)
    assert torch.equal(Y, Y0) and torch.equal(P, P0)  # the caller's tensors are untouched
    default = ChebyshevScalarization.from_data(lam, Y)
    with_p = ChebyshevScalarization.from_data(lam, Y, predicted=P)
    assert (with_p.ref_point <= default.ref_point).all()  # never above the default
    assert (with_p.ref_point < default.ref_point).any()  # this sample lowers it
    torch.testing.assert_close(with_p.weights, default.weights)  # span "all" unchanged


def test_from_data_predicted_opens_a_single_dominating_point():
    # One observed point dominates all others (ZDT2's stall): z sits just below it, so a
    # trade-off point p is below z in objective 0 and s(p) < s(corner); the predicted front
    # puts z below p and p becomes the better point for a lambda favouring objective 1.
    Y = torch.tensor([[1.0, 1.0], [0.5, 0.2], [0.0, 0.8]], dtype=DT)
    p = torch.tensor([[0.6, 1.3]], dtype=DT)
    lam = torch.tensor([0.2, 0.8], dtype=DT)
    s = ChebyshevScalarization.from_data(lam, Y)
    assert float(s(p)) < float(s(Y[:1]))
    q = torch.tensor([[0.2, 1.35]], dtype=DT)  # the predicted front reaches further
    s2 = ChebyshevScalarization.from_data(lam, Y, predicted=torch.cat([Y[:1], p, q]))
    assert float(s2(p)) > float(s2(Y[:1]))


def test_from_data_minimize_with_predicted_matches_negated_problem():
    g = torch.Generator().manual_seed(5)
    lam = torch.tensor([0.6, 0.4], dtype=DT)
    Y, P = torch.randn(10, 2, generator=g, dtype=DT), torch.randn(20, 2, generator=g, dtype=DT)
    s_min = ChebyshevScalarization.from_data(lam, -Y, minimize=[True, True], predicted=-P,
                                             span="front")
    s_max = ChebyshevScalarization.from_data(lam, Y, predicted=P, span="front")
    torch.testing.assert_close(s_min(-Y), s_max(Y))


def test_from_data_bad_predicted_and_span():
    Y = torch.rand(5, 2, dtype=DT)
    lam = torch.tensor([0.5, 0.5], dtype=DT)
    for bad in (torch.rand(4, 3, dtype=DT), torch.rand(0, 2, dtype=DT), torch.rand(4, dtype=DT)):
        with pytest.raises(ValueError, match="`predicted` must be an M x n tensor"):
            ChebyshevScalarization.from_data(lam, Y, predicted=bad)
    with pytest.raises(ValueError, match="`predicted`"):
        ChebyshevScalarization.from_data(lam, Y, predicted=torch.full((2, 2), float("nan")))
    with pytest.raises(ValueError, match="`span` must be 'all' or 'front'"):
        ChebyshevScalarization.from_data(lam, Y, span="nondominated")
