"""HypervolumeImprovementUCB against BoTorch's Hypervolume and the additive-ε distance."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.deterministic import GenericDeterministicModel
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated

from botorch_mtucb.acquisition import HypervolumeImprovementUCB
from botorch_mtucb.acquisition.hypervolume_ucb import EPSILON_TEMPERATURE
from botorch_mtucb.models import practical_multitask_gp
from tests.acquisition.test_hypervolume_front import DT, _data


def _reference(acqf: HypervolumeImprovementUCB, X: torch.Tensor, beta: float) -> torch.Tensor:
    """a(x) from BoTorch's exact hypervolume (HVI > 0) or a bisection on ε (HVI = 0)."""
    model, z = acqf.model, acqf.ref_point
    with torch.no_grad():
        P = model.posterior(acqf.X_baseline).mean
        P = P[is_non_dominated(P)]
        post = model.posterior(X)
        U = post.mean[..., 0, :] + beta * post.variance[..., 0, :].sqrt()
    r = P.max(0).values - z
    hv = Hypervolume(z)
    base = hv.compute(P)
    out = []
    for u in U:
        gain = hv.compute(torch.cat([P, u.unsqueeze(0)])) - base
        if gain > 1e-12 * r.prod():
            out.append(gain / float(r.prod()))
            continue
        lo, hi = 0.0, 10.0  # smallest t with u + t r adding hypervolume
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            w = (u + mid * r).unsqueeze(0)
            (lo, hi) = (lo, mid) if hv.compute(torch.cat([P, w])) - base > 1e-14 else (mid, hi)
        out.append(-hi)
    return torch.tensor(out, dtype=DT)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_value_matches_exact_hypervolume_improvement_and_epsilon(n, beta):
    X, Y = _data(n, seed=n)
    model = SingleTaskGP(X, Y)
    z = Y.min(0).values - 0.1 * (Y.max(0).values - Y.min(0).values)
    acqf = HypervolumeImprovementUCB(model, z, X, beta=beta)
    Xc = torch.rand(40, 1, 3, generator=torch.Generator().manual_seed(7), dtype=DT)
    got = acqf(Xc).detach()
    want = _reference(acqf, Xc, beta)
    adds = want > 0
    assert adds.any() and (~adds).any()  # both branches are exercised
    torch.testing.assert_close(got[adds], want[adds], atol=1e-8, rtol=1e-6)
    # dominated: −ε_τ, strictly negative and within τ (log max(n, C) + log 2) of −ε
    assert bool((got[~adds] < 0).all())
    cells = acqf.cell_lower.shape[-2]
    slack = EPSILON_TEMPERATURE * (math.log(max(n, cells)) + math.log(2.0))
    assert float((got[~adds] - want[~adds]).abs().max()) <= slack


def test_scale_free_and_minimize_match_the_maximised_problem():
    X, Y = _data(3, seed=1)
    z = Y.min(0).values - 0.2
    Xc = torch.rand(25, 1, 3, dtype=DT)
    base = HypervolumeImprovementUCB(SingleTaskGP(X, Y), z, X)(Xc)
    scale = torch.tensor([10.0, 0.01, 1.0], dtype=DT)
    scaled = HypervolumeImprovementUCB(SingleTaskGP(X, Y * scale), z * scale, X)(Xc)
    torch.testing.assert_close(scaled, base, atol=1e-7, rtol=1e-6)
    flip = torch.tensor([1.0, -1.0, 1.0], dtype=DT)
    minimised = HypervolumeImprovementUCB(
        SingleTaskGP(X, Y * flip), z * flip, X, minimize=[False, True, False]
    )(Xc)
    torch.testing.assert_close(minimised, base, atol=1e-7, rtol=1e-6)


def test_optimistic_never_below_the_mean_improvement():
    X, Y = _data(2, seed=3)
    model = SingleTaskGP(X, Y)
    z = Y.min(0).values - 0.1
    Xc = torch.rand(200, 1, 3, dtype=DT)
    ucb = HypervolumeImprovementUCB(model, z, X, beta=1.0)(Xc)
    mean = HypervolumeImprovementUCB(model, z, X, beta=0.0)(Xc)
    # same front and ranges, u ≥ μ in every coordinate: a(x) is monotone in u
    assert bool((ucb >= mean - 1e-12).all()) and bool((ucb > mean).any())


def test_dominated_candidates_keep_a_gradient():
    X, Y = _data(2, seed=4)
    model = SingleTaskGP(X, Y)
    acqf = HypervolumeImprovementUCB(model, Y.min(0).values - 0.1, X, beta=0.0)
    Xc = torch.rand(100, 1, 3, dtype=DT, requires_grad=True)
    values = acqf(Xc)
    values.sum().backward()
    dominated = values.detach() < 0
    assert bool(dominated.any())
    assert bool((Xc.grad[dominated].abs().sum(-1) > 0).all())


def _identity(X):
    return X


def test_dominated_value_is_smooth_across_the_exact_distance_ridges():
    """u(x) = x (a deterministic model) under the front {(.2, .8), (.5, .5), (.8, .2)}, z = 0:
    on the diagonal below (.5, .5) two cells tie in ε's minimum, so the exact −ε has a
    kink there (gradient (0, 1.25) on one side, (1.25, 0) on the other), a ridge on which
    L-BFGS-B's line search can fail; −ε_τ's gradient is continuous across it and equals
    the exact one a few τ away."""
    front = torch.tensor([[0.2, 0.8], [0.5, 0.5], [0.8, 0.2]], dtype=DT)
    model = GenericDeterministicModel(_identity, num_outputs=2)
    acqf = HypervolumeImprovementUCB(model, [0.0, 0.0], front, beta=1.0)

    def grad(h: float) -> torch.Tensor:
        x = torch.tensor([[[0.3 + h, 0.3 - h]]], dtype=DT, requires_grad=True)
        (g,) = torch.autograd.grad(acqf(x).sum(), x)
        return g.view(-1)

    torch.testing.assert_close(grad(-1e-7), grad(1e-7), atol=1e-3, rtol=0.0)
    far = 20 * EPSILON_TEMPERATURE * 0.8  # 20 τ in the objectives' units (ranges 0.8)
    exact = torch.tensor([0.0, 1.25], dtype=DT)
    torch.testing.assert_close(grad(-far), exact, atol=1e-6, rtol=0.0)
    torch.testing.assert_close(grad(far), exact.flip(0), atol=1e-6, rtol=0.0)


def test_front_is_the_model_means_not_the_raw_readings():
    X, Y = _data(2, seed=5)
    Y_noisy = Y.clone()
    Y_noisy[0] = Y.max(0).values + 5.0  # one reading far above the rest
    model = SingleTaskGP(X, Y_noisy)
    acqf = HypervolumeImprovementUCB(model, Y.min(0).values - 0.1, X)
    with torch.no_grad():
        means = model.posterior(X).mean
    r = means[is_non_dominated(means)].max(0).values - acqf.ref_point
    torch.testing.assert_close(acqf.ranges, r)
    assert torch.equal(Y_noisy[0], Y.max(0).values + 5.0)  # the caller's data untouched


def test_model_list_and_practical_multitask_gp():
    X, Y = _data(2, t=15, seed=8)
    z = Y.min(0).values - 0.1
    Xc = torch.rand(6, 1, 3, dtype=DT)
    models = [
        ModelListGP(SingleTaskGP(X, Y[:, :1]), SingleTaskGP(X, Y[:, 1:])),
        practical_multitask_gp(X, Y, torch.tensor([[0.0] * 3, [1.0] * 3], dtype=DT)),
    ]
    for model in models:
        out = HypervolumeImprovementUCB(model, z, X)(Xc)
        assert out.shape == (6,) and bool(out.isfinite().all())


def test_no_front_point_above_the_reference_gives_the_box_volume():
    X, Y = _data(2, seed=9)
    model = SingleTaskGP(X, Y)
    z = Y.max(0).values + 1.0  # every mean below z: nothing dominated, HVI = Π (u − z)₊ / r
    acqf = HypervolumeImprovementUCB(model, z, X, beta=0.0)
    Xc = torch.rand(30, 1, 3, dtype=DT)
    with torch.no_grad():
        u = model.posterior(Xc).mean[..., 0, :]
    want = -((z - u) / acqf.ranges).clamp_min(0).max(-1).values  # below z: only ε
    torch.testing.assert_close(acqf(Xc), want)


def test_bad_arguments_are_refused():
    X, Y = _data(2)
    model = SingleTaskGP(X, Y)
    with pytest.raises(ValueError, match="`ref_point` must be 2 finite"):
        HypervolumeImprovementUCB(model, [0.0, 0.0, 0.0], X)
    with pytest.raises(ValueError, match="`ref_point` must be 2 finite"):
        HypervolumeImprovementUCB(model, [0.0, math.nan], X)
    with pytest.raises(ValueError, match="`X_baseline` must be a non-empty t x d"):
        HypervolumeImprovementUCB(model, [0.0, 0.0], X[:0])
    with pytest.raises(ValueError, match="`beta` must be non-negative and finite"):
        HypervolumeImprovementUCB(model, [0.0, 0.0], X, beta=-1.0)
    with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
        HypervolumeImprovementUCB(model, [0.0, 0.0], X, minimize=[True])
    with pytest.raises(ValueError, match="needs a model with n >= 2 outputs"):
        HypervolumeImprovementUCB(SingleTaskGP(X, Y[:, :1]), [0.0], X)
    acqf = HypervolumeImprovementUCB(model, [0.0, 0.0], X)
    with pytest.raises(ValueError, match="q = 1 only"):
        acqf(torch.rand(4, 2, 3, dtype=DT))
    with pytest.raises(ValueError, match="NaN or infinite"):
        acqf(torch.full((1, 1, 3), math.nan, dtype=DT))


def test_trust_region_needs_the_rounds_scalarization():
    from botorch_mtucb.acquisition import ChebyshevScalarization
    from botorch_mtucb.loop import TrustRegionOptimizer

    X, Y = _data(2, seed=10)
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=DT)
    model = practical_multitask_gp(X, Y, bounds)
    z = Y.min(0).values - 0.1
    optimizer = TrustRegionOptimizer(bounds, num_restarts=2, raw_samples=32, seed=0)
    with pytest.raises(TypeError, match="without one"):
        optimizer(HypervolumeImprovementUCB(model, z, X))
    s = ChebyshevScalarization([0.5, 0.5], ref_point=z)
    x = optimizer(HypervolumeImprovementUCB(model, z, X, scalarization=s))
    assert x.shape == (1, 3)
