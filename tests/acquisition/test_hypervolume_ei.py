"""LogExpectedHypervolumeImprovement against BoTorch's analytic EHVI and a Monte-Carlo mean."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition.multi_objective.analytic import ExpectedHypervolumeImprovement
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.deterministic import GenericDeterministicModel
from botorch.utils.multi_objective.box_decompositions.non_dominated import (
    FastNondominatedPartitioning,
)
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.testing import MockModel, MockPosterior

from botorch_mtucb.acquisition import (
    LogExpectedHypervolumeImprovement,
)
from botorch_mtucb.loop import log_ehvi_factory
from botorch_mtucb.models import practical_multitask_gp
from tests.acquisition.test_hypervolume_front import DT, _data


def _independent(X, Y):
    return ModelListGP(*[SingleTaskGP(X, Y[:, i : i + 1]) for i in range(Y.shape[-1])]).eval()


def _botorch_ehvi(model, X, z):
    with torch.no_grad():
        front = model.posterior(X).mean
    partitioning = FastNondominatedPartitioning(ref_point=z, Y=front)
    return ExpectedHypervolumeImprovement(model, ref_point=z.tolist(), partitioning=partitioning)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_value_matches_botorch_analytic_ehvi(n):
    X, Y = _data(n, seed=n)
    model = _independent(X, Y)
    z = Y.min(0).values - 0.1
    acqf = LogExpectedHypervolumeImprovement(model, z, X)
    Xc = torch.rand(20, 1, 3, dtype=DT)
    want = _botorch_ehvi(model, X, z)(Xc)
    got = acqf(Xc).exp() * acqf.ranges.prod()
    # BoTorch's plain EHVI loses its digits below ~1e-15 (cancellation); the log form does not
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-15)


def test_value_matches_a_monte_carlo_mean_of_the_hypervolume_improvement():
    X, Y = _data(2, seed=11)
    model = _independent(X, Y)
    z = Y.min(0).values - 0.1
    acqf = LogExpectedHypervolumeImprovement(model, z, X)
    x = torch.rand(1, 1, 3, dtype=DT, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        P = model.posterior(X).mean
        P = P[is_non_dominated(P)]
        post = model.posterior(x)
        mean, sd = post.mean[0, 0], post.variance[0, 0].sqrt()
    g = torch.Generator().manual_seed(4)
    samples = mean + sd * torch.randn(4000, 2, dtype=DT, generator=g)
    hv = Hypervolume(z)
    base = hv.compute(P)
    gains = torch.tensor([hv.compute(torch.cat([P, s[None]])) - base for s in samples])
    mc = gains.mean() / acqf.ranges.prod()
    stderr = gains.std() / math.sqrt(gains.numel()) / acqf.ranges.prod()
    assert abs(float(acqf(x).detach().exp()) - float(mc)) < 4 * float(stderr) + 1e-12


def test_finite_with_a_gradient_far_below_the_front():
    X, Y = _data(2, seed=1)
    z = Y.min(0).values - 0.1
    shift = torch.tensor([40.0, 40.0], dtype=DT)  # every candidate far below the front
    model = GenericDeterministicModel(lambda x: x[..., :2] - shift, num_outputs=2)
    acqf = LogExpectedHypervolumeImprovement(model, z, X)
    # a deterministic model has zero variance: σ is floored, the value is still finite
    Xc = torch.rand(5, 1, 3, dtype=DT, requires_grad=True)
    out = acqf(Xc)
    assert bool(out.isfinite().all())
    stgp = SingleTaskGP(X, Y)
    far = LogExpectedHypervolumeImprovement(stgp, Y.max(0).values + 3.0 * Y.std(0), X)
    Xf = torch.rand(5, 1, 3, dtype=DT, requires_grad=True)
    value = far(Xf)
    value.sum().backward()
    assert bool(value.isfinite().all()) and bool(Xf.grad.isfinite().all())
    assert float(Xf.grad.abs().sum()) > 0.0
    assert bool((value < -10).all())  # the plain EHVI would have underflowed towards zero


def test_more_uncertainty_at_the_same_mean_raises_the_value():
    # the improvement is a convex function of the outcome: at a fixed mean a wider marginal
    # has the larger expectation (the UCB-HVI at β = 0 would not move)
    X, Y = _data(2, seed=2)
    acqf = LogExpectedHypervolumeImprovement(_independent(X, Y), Y.min(0).values - 0.1, X)
    mean = Y.mean(0).reshape(1, 1, 2)
    values = []
    for sd in (0.05, 0.2, 0.8):
        acqf.model = MockModel(MockPosterior(mean=mean, variance=torch.full_like(mean, sd**2)))
        values.append(float(acqf(torch.zeros(1, 1, 3, dtype=DT))))
    assert values[0] < values[1] < values[2]


def test_scale_free_and_minimize_match_the_maximised_problem():
    X, Y = _data(2, seed=4)
    z = Y.min(0).values - 0.1
    Xc = torch.rand(8, 1, 3, dtype=DT)
    base = LogExpectedHypervolumeImprovement(_independent(X, Y), z, X)(Xc)
    scale = torch.tensor([10.0, 0.01], dtype=DT)
    scaled = LogExpectedHypervolumeImprovement(_independent(X, Y * scale), z * scale, X)(Xc)
    torch.testing.assert_close(scaled, base, rtol=1e-6, atol=1e-8)
    flipped = LogExpectedHypervolumeImprovement(
        _independent(X, -Y), -z, X, minimize=[True, True]
    )(Xc)
    torch.testing.assert_close(flipped, base, rtol=1e-6, atol=1e-8)


def test_practical_multitask_gp_through_the_loop_factory():
    from botorch_mtucb.acquisition import ChebyshevScalarization

    X, Y = _data(2, t=15, seed=8)
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=DT)
    model = practical_multitask_gp(X, Y, bounds)
    s = ChebyshevScalarization([0.5, 0.5], ref_point=(Y.min(0).values - 0.1).tolist())
    acqf = log_ehvi_factory()(model, s)
    assert isinstance(acqf, LogExpectedHypervolumeImprovement)
    assert acqf.scalarization is s and log_ehvi_factory().uses_default_sampler
    out = acqf(torch.rand(6, 1, 3, dtype=DT))
    assert out.shape == (6,) and bool(out.isfinite().all())
    with pytest.raises(ValueError, match="reference point from the round's scalarization"):
        log_ehvi_factory()(model, None)


def test_bad_arguments_are_refused():
    X, Y = _data(2)
    model = SingleTaskGP(X, Y)
    with pytest.raises(ValueError, match="`ref_point` must be 2 finite"):
        LogExpectedHypervolumeImprovement(model, [0.0, math.inf], X)
    with pytest.raises(ValueError, match="`X_baseline` must be a non-empty t x d"):
        LogExpectedHypervolumeImprovement(model, [0.0, 0.0], X[:0])
    with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
        LogExpectedHypervolumeImprovement(model, [0.0, 0.0], X, minimize=[True])
    acqf = LogExpectedHypervolumeImprovement(model, [0.0, 0.0], X)
    with pytest.raises(ValueError, match="LogExpectedHypervolumeImprovement supports q = 1"):
        acqf(torch.rand(4, 2, 3, dtype=DT))
    with pytest.raises(ValueError, match="NaN or infinite"):
        acqf(torch.full((1, 1, 3), math.nan, dtype=DT))


@pytest.mark.filterwarnings("ignore::botorch.exceptions.warnings.InputDataWarning")
def test_run_bo_loop_with_the_factory_proposes_inside_the_box_without_repeats():
    from botorch.test_functions.multi_objective import BraninCurrin

    from botorch_mtucb.loop import run_bo_loop

    problem = BraninCurrin(negate=True).to(DT)
    seen = []

    def spy(model, scalarization):
        acqf = log_ehvi_factory()(model, scalarization)
        seen.append(acqf)
        return acqf

    spy.uses_default_sampler = True
    h = run_bo_loop(problem, num_rounds=3, bounds=problem.bounds, acquisition_factory=spy,
                    generator=torch.Generator().manual_seed(0))
    assert len(seen) == 3 and all(isinstance(a, LogExpectedHypervolumeImprovement) for a in seen)
    assert h.X.shape == (3, 2)
    assert bool((h.X >= problem.bounds[0]).all() and (h.X <= problem.bounds[1]).all())
    X = torch.cat([h.initial_X, h.X])
    assert torch.cdist(X, X).add(torch.eye(X.shape[0], dtype=DT)).min() > 0  # no repeats
