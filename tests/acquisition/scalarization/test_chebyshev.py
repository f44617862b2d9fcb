"""The Chebyshev scalarization's own module: s_λ, from_data and the payoff table by hand."""

import pytest
import torch
from botorch.acquisition import PosteriorMean
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models import ModelListGP, SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.test_functions.multi_objective import ZDT2, VehicleSafety
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import scalarization
from botorch_mtucb.acquisition.scalarization.chebyshev import (
    ChebyshevScalarization,
    predicted_anchors,
)
from botorch_mtucb.models import practical_multitask_gp

DT = torch.float64


def test_exported_by_the_scalarization_face():
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
    var = torch.rand(6, 4, generator=g, dtype=DT)  # Γ_ii and, last, λ̃ᵀΓλ̃
    gaps = lam * (Y * sign - z * sign)
    upper = gaps + 2.0 * lam * var[:, :3].sqrt()
    augmented = upper.min(-1).values + 0.05 * (gaps.sum(-1) + 2.0 * var[:, 3].sqrt())
    torch.testing.assert_close(s.directional_ucb_from_variances(Y, var, 2.0), augmented)
    torch.testing.assert_close(s.directions(Y), torch.cat([torch.eye(3, dtype=DT),
                                                           (lam * sign).unsqueeze(-1)], -1))
    plain = ChebyshevScalarization(lam, z, minimize=[False, True, False])
    assert plain.directions(Y) is None
    torch.testing.assert_close(plain.directional_ucb_from_variances(Y, var[:, :3], 2.0),
                               upper.min(-1).values)


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
        fronts.append(_nondominated_by_loops(torch.cat([Y, predicted])))
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


def _two_output_model(lengthscales):
    g = torch.Generator().manual_seed(11)
    X = torch.rand(12, 2, generator=g, dtype=DT)
    fs = (lambda Z: torch.sin(4 * Z[:, :1]), lambda Z: torch.cos(3 * Z[:, 1:]) + Z[:, :1])
    models = []
    for f, ls in zip(fs, lengthscales, strict=True):
        m = SingleTaskGP(X, f(X), train_Yvar=torch.full((12, 1), 1e-6, dtype=DT))
        m.covar_module.lengthscale = torch.tensor([ls], dtype=DT)
        m.eval()
        models.append(m)
    return ModelListGP(*models), torch.cat([f(X) for f in fs], -1)


def test_predicted_anchors_against_grid_search():
    model, Y = _two_output_model([[0.3, 1e4], [0.4, 0.4]])
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    Y0 = Y.clone()
    A = predicted_anchors(model, bounds, Y, eps=1e-3, num_restarts=8, raw_samples=512, seed=0)
    assert torch.equal(Y, Y0) and A.shape == (2, 2)
    u = torch.linspace(0, 1, 201, dtype=DT)
    G = torch.cartesian_prod(u, u)
    with torch.no_grad():
        M = model.posterior(G.unsqueeze(-2)).mean.squeeze(-2)  # marginals, not 40k x 40k
    r = Y.max(0).values - Y.min(0).values
    for i in range(2):
        w = 1e-3 / r
        w[i] += 1.0 / r[i]
        grid_best = float((M * w).sum(-1).max())
        # the L-BFGS-B optimum is at least the grid's (up to the grid's resolution)
        assert float((A[i] * w).sum()) >= grid_best - 1e-4
        assert float((A[i] * w).sum()) <= float((M * w).sum(-1).max()) + 5e-3
    # objective 0 does not depend on x_2: the tie-break picks the x_2 best for objective 1
    # (with eps = 0 this fails: x_2 stays where the start was)
    cols = M[:, 0] >= M[:, 0].max() - 1e-6 * r[0]
    assert float(A[0, 1]) >= float(M[cols, 1].max()) - 1e-3


def test_predicted_anchors_bad_input():
    model, Y = _two_output_model([[0.3, 0.3], [0.4, 0.4]])
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    with pytest.raises(ValueError, match="`Y` must be an N x n tensor"):
        predicted_anchors(model, bounds, Y[:, :1])
    with pytest.raises(ValueError, match="`eps` must be a finite number >= 0"):
        predicted_anchors(model, bounds, Y, eps=-1.0)


def test_zdt2_stuck_state_opened_by_the_front_anchors():
    # ZDT2 (d = 4): once f(0) is observed it dominates a Sobol design, the default z lies just
    # below it and x_1 = 0 maximises s_λ on the Pareto set x_2..x_4 = 0 for every λ; with the
    # front's anchors f(0) and f(e_1) as `predicted` (and the front's ranges) it does not.
    f = ZDT2(dim=4, negate=True).to(DT)
    X = torch.cat([SobolEngine(4, scramble=True, seed=1).draw(8).to(DT), torch.zeros(1, 4,
                                                                                   dtype=DT)])
    Y = f(X)
    u = torch.linspace(0, 1, 1001, dtype=DT)
    F = f(torch.cat([u[:, None], torch.zeros(1001, 3, dtype=DT)], -1))
    anchors = f(torch.tensor([[0.0, 0, 0, 0], [1.0, 0, 0, 0]], dtype=DT))
    at0_default, at0_front = 0, 0
    for lam1 in torch.linspace(0.05, 0.95, 19, dtype=DT):
        lam = torch.stack([lam1, 1 - lam1])
        s = ChebyshevScalarization.from_data(lam, Y)
        s2 = ChebyshevScalarization.from_data(lam, Y, predicted=anchors, span="front")
        at0_default += int(u[s(F).argmax()] == 0)
        at0_front += int(u[s2(F).argmax()] == 0)
    assert at0_default == 19
    assert at0_front <= 2  # (1 of 19: λ_1 = 0.95, where x_1 = 0 is the right answer)


def test_predicted_anchors_minimize_against_grid_search():
    model, Y = _two_output_model([[0.3, 1e4], [0.4, 0.4]])
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    A = predicted_anchors(model, bounds, Y, eps=1e-3, num_restarts=8, raw_samples=512, seed=0,
                          minimize=[False, True])
    u = torch.linspace(0, 1, 201, dtype=DT)
    G = torch.cartesian_prod(u, u)
    with torch.no_grad():
        M = model.posterior(G.unsqueeze(-2)).mean.squeeze(-2)
    r = Y.max(0).values - Y.min(0).values
    sign = torch.tensor([1.0, -1.0], dtype=DT)
    for i in range(2):
        w = 1e-3 / r
        w[i] += 1.0 / r[i]
        grid = (M * sign * w).sum(-1)
        assert float((A[i] * sign * w).sum()) >= float(grid.max()) - 1e-4
    # anchor 1 minimises objective 1 (rows stay in original units)
    assert float(A[1, 1]) <= float(M[:, 1].min()) + 1e-4
    # objective 0 does not depend on x_2: the tie-break picks the x_2 *minimising* objective 1
    cols = M[:, 0] >= M[:, 0].max() - 1e-6 * r[0]
    assert float(A[0, 1]) <= float(M[cols, 1].min()) + 1e-2  # (range there: 1.9)
    with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
        predicted_anchors(model, bounds, Y, minimize=[True])


def test_predicted_anchors_equal_one_botorch_optimisation_per_objective():
    """The joint L-BFGS-B of the payoff table reaches each objective's own optimum: BoTorch's
    ``optimize_acqf`` of ``PosteriorMean`` with objective i's weights, one call per objective."""
    f = VehicleSafety(negate=True).to(DT)  # d = 5, n = 3, a box that is not the unit cube
    bounds = f.bounds.to(DT)
    X = bounds[0] + (bounds[1] - bounds[0]) * SobolEngine(5, scramble=True, seed=0).draw(15).to(DT)
    Y = f(X)
    model = practical_multitask_gp(X, Y, bounds)
    minimize = [False, True, False]
    P = predicted_anchors(model, bounds, Y, minimize=minimize, seed=0)
    signs = torch.tensor([1.0, -1.0, 1.0], dtype=Y.dtype)
    r = Y.max(0).values - Y.min(0).values
    for i in range(3):
        w = 1e-3 / r
        w[i] += 1.0 / r[i]
        w = w * signs
        acqf = PosteriorMean(model, posterior_transform=ScalarizedPosteriorTransform(w))
        _, best = optimize_acqf(acqf, bounds, q=1, num_restarts=8, raw_samples=512,
                                options={"seed": 1})  # twice the starts of the default
        assert float((P[i] * w).sum()) >= float(best) - 1e-6 * max(1.0, abs(float(best)))
