"""TrustRegionOptimizer: the region (incumbent, clipping, TuRBO's widths), the side-length rule
against a hand-computed sequence, equality with BoxOptimizer on the whole box, dtypes, errors."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from botorch_mtucb.acquisition import LinearScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.acquisition.trust_region import (
    ScalarizedAcquisition,
    TrustRegionOptimizer,
    lengthscale_weights,
    training_data,
)
from botorch_mtucb.multitask.practical import practical_multitask_gp

DT = torch.float64
BOUNDS = torch.tensor([[-1.0, 0.0, 2.0], [1.0, 5.0, 3.0]], dtype=DT)


def _data(dtype=DT, N=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    U = torch.rand(N, 3, generator=g, dtype=DT)
    X = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * U
    Y = torch.stack([torch.sin(3 * U).sum(-1), (U - 0.4).pow(2).sum(-1)], -1)
    return X.to(dtype), Y.to(dtype)


def _acqf(X, Y, w=(0.3, 0.7)):
    model = practical_multitask_gp(X, Y, BOUNDS.to(X))
    return ScalarizedMultiTaskUCB(model, LinearScalarization(list(w)), 1.0)


@pytest.mark.parametrize("shape", ["isotropic", "lengthscale"])
def test_region_is_around_the_incumbent_clipped_and_holds_the_point(shape):
    X, Y = _data()
    X0, Y0 = X.clone(), Y.clone()
    acqf = _acqf(X, Y)
    opt = TrustRegionOptimizer(BOUNDS, num_restarts=2, raw_samples=32, seed=0, shape=shape)
    x = opt(acqf)
    assert torch.equal(X, X0) and torch.equal(Y, Y0)  # the caller's data untouched
    center = X[(Y @ torch.tensor([0.3, 0.7], dtype=DT)).argmax()]  # best λᵀy, by hand
    region = opt.regions[-1]
    assert ((region[0] <= center) & (center <= region[1])).all()
    assert ((BOUNDS[0] <= region[0]) & (region[1] <= BOUNDS[1])).all()
    assert x.shape == (1, 3) and ((region[0] <= x[0]) & (x[0] <= region[1])).all()
    # brute-force region in the unit cube: clip(u* ± w L / 2, 0, 1)
    if shape == "isotropic":
        w = torch.ones(3, dtype=DT)
    else:
        ls = acqf.model.covar_module.data_covar_module.lengthscale.detach().flatten()
        w = ls / torch.prod(ls) ** (1 / 3)
    u = (center - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])
    lo, hi = (u - 0.4 * w).clamp(0, 1), (u + 0.4 * w).clamp(0, 1)
    expect = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * torch.stack([lo, hi])
    torch.testing.assert_close(region, expect)


def test_lengthscale_widths_follow_the_lengthscales():
    X, Y = _data()
    acqf = _acqf(X, Y)
    w = lengthscale_weights(acqf.model, BOUNDS)
    ls = acqf.model.covar_module.data_covar_module.lengthscale.detach().flatten()
    torch.testing.assert_close(w / w[0], ls / ls[0])
    torch.testing.assert_close(torch.prod(w), torch.tensor(1.0, dtype=DT))
    center = BOUNDS.mean(0)  # interior: no clipping at L = 0.1
    opt = TrustRegionOptimizer(BOUNDS, length_init=0.1, length_min=0.01)
    width = (opt.region(center, w).diff(dim=0)[0]) / (BOUNDS[1] - BOUNDS[0])
    torch.testing.assert_close(width, 0.1 * w)


def test_training_data_are_the_original_units():
    X, Y = _data()
    Xm, Ym = training_data(_acqf(X, Y).model)
    torch.testing.assert_close(Xm, X)
    torch.testing.assert_close(Ym, Y)
    model = _acqf(X, Y).model.condition_on_observations(X[:2] + 0.01, Y[:2] + 1.0)
    Xm, Ym = training_data(model)  # the loop's conditioned models too
    torch.testing.assert_close(Xm, torch.cat([X, X[:2] + 0.01]))
    torch.testing.assert_close(Ym, torch.cat([Y, Y[:2] + 1.0]))


def test_side_length_rule_against_a_hand_computed_sequence():
    s = LinearScalarization([1.0])
    opt = TrustRegionOptimizer(BOUNDS)  # d = 3: τ_fail = max(4, 3) = 4, τ_succ = 3
    assert (opt.length, opt.success_tolerance, opt.failure_tolerance) == (0.8, 3, 4)
    ys = [0.0]

    def step(y):
        ys.append(y)
        opt.update(torch.tensor(ys, dtype=DT).unsqueeze(-1), len(ys) - 1, s)
        return opt.length, opt.success_count, opt.failure_count

    assert step(1.0) == (0.8, 1, 0)
    assert step(2.0) == (0.8, 2, 0)
    assert step(2.001) == (0.8, 0, 1)  # improvement below 1e-3 |best|: a failure
    assert [step(v) for v in (3.0, 4.0, 5.0)] == [(0.8, 1, 0), (0.8, 2, 0), (1.6, 0, 0)]
    assert [step(v) for v in (6.0, 7.0, 8.0)] == [(1.6, 1, 0), (1.6, 2, 0), (1.6, 0, 0)]  # L_max
    assert [step(0.0) for _ in range(4)] == [(1.6, 0, 1), (1.6, 0, 2), (1.6, 0, 3), (0.8, 0, 0)]
    expected = [0.4, 0.2, 0.1, 0.05, 0.025, 0.0125]
    for length in expected:
        assert [step(0.0)[0] for _ in range(4)][-1] == pytest.approx(length)
    assert opt.restarts == 0
    assert [step(0.0) for _ in range(4)][-1] == (0.8, 0, 0)  # 0.00625 < 2⁻⁷: restart
    assert opt.restarts == 1
    # No new rows, or a first call: nothing changes.
    opt.update(torch.zeros(3, 1, dtype=DT), 3, s)
    opt.update(torch.zeros(3, 1, dtype=DT), 0, s)
    assert (opt.length, opt.success_count, opt.failure_count) == (0.8, 0, 0)


def test_calls_judge_the_previous_proposal_from_the_model_data():
    X, Y = _data()
    opt = TrustRegionOptimizer(BOUNDS, num_restarts=1, raw_samples=8, seed=0)
    opt(_acqf(X, Y, w=(0.9, 0.1)))
    assert (opt.success_count, opt.failure_count) == (0, 0)
    # better than every earlier point under the proposing λ = (0.9, 0.1), worse under the
    # current λ = (0.1, 0.9): a success, judged under the proposing round's λ
    X1, Y1 = torch.cat([X, X[:1]]), torch.cat([Y, torch.tensor([[10.0, -10.0]], dtype=DT)])
    opt(_acqf(X1, Y1, w=(0.1, 0.9)))
    assert (opt.success_count, opt.failure_count) == (1, 0)
    center = X1[(Y1 @ torch.tensor([0.1, 0.9], dtype=DT)).argmax()]  # the current λ's best
    torch.testing.assert_close(opt.regions[-1], opt.region(center))
    X2, Y2 = torch.cat([X1, X[:1]]), torch.cat([Y1, Y1.min(0, keepdim=True).values])
    opt(_acqf(X2, Y2))
    assert (opt.success_count, opt.failure_count) == (0, 1)


class _Quadratic(AcquisitionFunction):
    """−‖x − c‖² (q = 1) with a model and a scalarization (deterministic for equality tests)."""

    def __init__(self, model, scalarization, c):
        super().__init__(model=model)
        self.scalarization, self.c = scalarization, c

    def forward(self, X):
        return -((X[..., 0, :] - self.c) ** 2).sum(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_whole_box_region_equals_box_optimizer(dtype):
    X, Y = _data(dtype)
    model = _acqf(X, Y).model
    bounds = BOUNDS.to(dtype)
    acqf = _Quadratic(model, LinearScalarization([0.3, 0.7]), bounds[1] + 0.3)  # a corner
    assert isinstance(acqf, ScalarizedAcquisition)
    box = BoxOptimizer(bounds, num_restarts=3, raw_samples=64, seed=5)
    tr = TrustRegionOptimizer(bounds, num_restarts=3, raw_samples=64, seed=5,
                              length_init=2.0, length_max=2.0)
    for _ in range(2):  # the seeds advance alike
        x_box, x_tr = box(acqf), tr(acqf)
        assert torch.equal(tr.regions[-1], bounds)
        assert x_tr.dtype == dtype and torch.equal(x_tr, x_box)
    # TuRBO's L_init = 0.8 around the best point: the region's corner nearest c instead
    acqf.c = bounds[0] - 0.3
    x_box = box(acqf)
    tr = TrustRegionOptimizer(bounds, num_restarts=3, raw_samples=64, seed=5)
    x = tr(acqf)
    assert torch.equal(x_box[0], bounds[0]) and (tr.regions[-1][0] > bounds[0]).any()
    torch.testing.assert_close(x[0], tr.regions[-1][0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_follows_the_data(dtype):
    X, Y = _data(dtype)
    opt = TrustRegionOptimizer(BOUNDS.to(dtype), num_restarts=1, raw_samples=8, seed=0,
                               shape="lengthscale")
    x = opt(_acqf(X, Y))
    assert x.dtype == dtype and opt.regions[-1].dtype == dtype


class _Plain(AcquisitionFunction):
    def __init__(self):
        super().__init__(model=None)

    def forward(self, X):
        return X.sum((-1, -2))


def test_bad_arguments_name_what_was_expected():
    with pytest.raises(ValueError, match="bounds"):
        TrustRegionOptimizer(BOUNDS.flip(0))
    with pytest.raises(ValueError, match="shape"):
        TrustRegionOptimizer(BOUNDS, shape="ball")
    with pytest.raises(ValueError, match="length_min"):
        TrustRegionOptimizer(BOUNDS, length_init=0.001)
    with pytest.raises(ValueError, match="length_max"):
        TrustRegionOptimizer(BOUNDS, length_max=float("inf"))
    with pytest.raises(ValueError, match="failure_tolerance"):
        TrustRegionOptimizer(BOUNDS, failure_tolerance=0)
    with pytest.raises(ValueError, match="success_tolerance"):
        TrustRegionOptimizer(BOUNDS, success_tolerance=2.5)
    with pytest.raises(ValueError, match="num_restarts"):
        TrustRegionOptimizer(BOUNDS, num_restarts=0)
    assert not isinstance(_Plain(), ScalarizedAcquisition)
    with pytest.raises(TypeError, match="scalarization"):
        TrustRegionOptimizer(BOUNDS)(_Plain())
    X, Y = _data()
    with pytest.raises(ValueError, match="d = 3"):
        TrustRegionOptimizer(BOUNDS[:, :2])(_acqf(X, Y))


def test_pending_points_keep_the_round_region_and_counters():
    X, Y = _data()
    acqf = _acqf(X, Y)
    opt = TrustRegionOptimizer(BOUNDS, num_restarts=1, raw_samples=8, seed=0)
    x = opt(acqf)
    acqf.set_X_pending(x)  # the conditioned model holds N + 1 rows: not a new observation
    x2 = opt(acqf)
    assert torch.equal(opt.regions[1], opt.regions[0]) and opt._previous[0] == X.shape[0]
    assert ((opt.regions[0][0] <= x2[0]) & (x2[0] <= opt.regions[0][1])).all()
    assert (opt.success_count, opt.failure_count) == (0, 0)


@pytest.mark.filterwarnings("ignore:Optimization failed:RuntimeWarning")
@pytest.mark.filterwarnings("error:Point 2 of round")  # the pending points are used
@pytest.mark.parametrize("q", [1, 2])
def test_runs_in_the_bo_loop_and_proposes_inside_its_regions(q):
    from botorch.test_functions.multi_objective import BraninCurrin

    from botorch_mtucb.loop import run_bo_loop

    problem = BraninCurrin(negate=True).to(DT)
    opt = TrustRegionOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=1)
    hist = run_bo_loop(problem, num_rounds=2, bounds=problem.bounds, optimizer=opt, q=q,
                       generator=torch.Generator().manual_seed(0))
    assert hist.X.shape == (2 * q, 2) and len(opt.regions) == 2 * q
    regions = torch.stack(opt.regions)
    assert ((regions[:, 0] <= hist.X) & (hist.X <= regions[:, 1])).all()
    if q == 2:  # the round's second point keeps the first point's region
        assert torch.equal(regions[1], regions[0]) and torch.equal(regions[3], regions[2])
