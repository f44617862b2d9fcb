"""run_bo_loop's practical defaults: Sobol design, practical model, refit schedule (issue 16)."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.multi_objective import BraninCurrin
from gpytorch.kernels import MaternKernel
from gpytorch.means import MultitaskMean

import botorch_mtucb.loop.run as loop_module
from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.kernels.icm import ICMKernel
from botorch_mtucb.loop import (
    BoxOptimizer,
    FiniteArmOptimizer,
    RefitSchedule,
    TrustRegionOptimizer,
    hypervolume_ucb_factory,
    log_ehvi_factory,
    run_bo_loop,
    scalarized_ucb_factory,
)
from botorch_mtucb.loop.defaults import default_sampler, practical_model_factory
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.utils import initial_design_size, sobol_initial_design

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
    "ignore:Optimization failed:RuntimeWarning",
)


@pytest.fixture(scope="module")
def problem():
    return BraninCurrin(negate=True).to(DT)


def _seed(seed: int) -> int:
    return int(torch.randint(2**31 - 1, (1,), generator=torch.Generator().manual_seed(seed)))


class _Spy:
    """A model factory recording the sizes of the data it was called on."""

    def __init__(self, factory):
        self.factory, self.sizes = factory, []

    def __call__(self, X, Y):
        self.sizes.append(X.shape[0])
        return self.factory(X, Y)


def test_defaults_run_mtucb_from_a_sobol_design(problem):
    bounds = problem.bounds.clone()
    h = run_bo_loop(problem, num_rounds=3, bounds=bounds,
                    generator=torch.Generator().manual_seed(0))
    assert torch.equal(bounds, problem.bounds)
    N0 = initial_design_size(2)
    assert h.initial_X.shape == (N0, 2) and h.X.shape == (3, 2)
    torch.testing.assert_close(h.initial_X, sobol_initial_design(bounds, seed=_seed(0)))
    torch.testing.assert_close(h.initial_Y, problem(h.initial_X))
    assert bool((h.X >= bounds[0]).all() and (h.X <= bounds[1]).all())
    model = h.model
    assert isinstance(model, ExactMultiTaskGP) and isinstance(model.mean_module, MultitaskMean)
    assert isinstance(model.covar_module, ICMKernel)
    assert isinstance(model.covar_module.data_covar_module, MaternKernel)
    assert model.learn_noise
    default_beta = ScalarizedMultiTaskUCB.__init__.__defaults__[0]
    assert all(r.beta == default_beta for r in h.rounds)
    assert all(r.weights.shape == (2,) and abs(r.weights.sum().item() - 1) < 1e-12
               for r in h.rounds)
    other = run_bo_loop(problem, num_rounds=0, bounds=bounds,
                        generator=torch.Generator().manual_seed(1))
    assert not torch.equal(other.initial_X, h.initial_X)


def test_rounds_equal_a_by_hand_build_and_are_seeded(problem):
    """With paper 000's rule (the scalarized UCB) and the default sampler, each round equals a
    by-hand build: practical model (refitted every round while N <= 20),
    scale-free augmented Chebyshev with λ_t from ``generator`` and z / ranges from the observed
    and the model-predicted front (its payoff table, seeded ``seed + 2 + t``), the default
    width. Finite arms
    make the argmax exact (``optimize_acqf``'s L-BFGS-B is not bitwise reproducible run to run,
    even for BoTorch's own UCB with a fixed seed)."""
    from botorch_mtucb.acquisition import sample_scalarization_weights
    from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors

    arms = sobol_initial_design(problem.bounds, n=256, seed=9)
    opt = FiniteArmOptimizer(arms)
    paper_rule = {"acquisition_factory": scalarized_ucb_factory(),
                  "scalarization_sampler": default_sampler(2)}
    h = run_bo_loop(problem, num_rounds=3, bounds=problem.bounds, optimizer=opt,
                    generator=torch.Generator().manual_seed(5), **paper_rule)
    g = torch.Generator().manual_seed(5)
    seed = int(torch.randint(2**31 - 1, (1,), generator=g))  # the design's seed draw
    X = sobol_initial_design(problem.bounds, seed=seed)
    torch.testing.assert_close(h.initial_X, X)
    Y = problem(X)
    factory = practical_model_factory(problem.bounds)  # one per run: later fits warm-start
    for t, r in enumerate(h.rounds, start=1):
        model = factory(X, Y)
        lam = sample_scalarization_weights(2, 1, generator=g)[0]
        P = predicted_anchors(model, problem.bounds, Y, seed=seed + 2 + t)
        scal = ChebyshevScalarization.from_data(lam, Y, predicted=P, span="front")
        torch.testing.assert_close(r.weights, scal.weights)  # λ_i / r_i, renormalised
        x = opt(ScalarizedMultiTaskUCB(model, scal))
        torch.testing.assert_close(r.x, x[0])
        X, Y = torch.cat([X, x]), torch.cat([Y, problem(x)])
    again = run_bo_loop(problem, num_rounds=3, bounds=problem.bounds, optimizer=opt,
                        generator=torch.Generator().manual_seed(5), **paper_rule)
    assert torch.equal(again.X, h.X)


@pytest.mark.parametrize("expected", [False, True])
def test_front_factories_with_a_known_reference_point(problem, expected):
    """With ``ref_point=z`` each round maximises the acquisition at that z (not the round's
    scale-free one) over the model's front at the evaluated inputs."""
    from botorch_mtucb.acquisition import (
        HypervolumeImprovementUCB,
        LogExpectedHypervolumeImprovement,
    )

    z = [-160.0, -14.0]  # below BraninCurrin's negated outcomes (maximised)
    cls = LogExpectedHypervolumeImprovement if expected else HypervolumeImprovementUCB
    make = log_ehvi_factory if expected else hypervolume_ucb_factory
    arms = sobol_initial_design(problem.bounds, n=256, seed=9)
    opt = FiniteArmOptimizer(arms)
    h = run_bo_loop(problem, num_rounds=3, bounds=problem.bounds, optimizer=opt,
                    acquisition_factory=make(ref_point=z),
                    generator=torch.Generator().manual_seed(5))
    seed = int(torch.randint(2**31 - 1, (1,), generator=torch.Generator().manual_seed(5)))
    X = sobol_initial_design(problem.bounds, seed=seed)
    Y = problem(X)
    factory = practical_model_factory(problem.bounds)
    for r in h.rounds:
        model = factory(X, Y)
        acqf = cls(model, z, X)
        x = opt(acqf)
        torch.testing.assert_close(r.x, x[0])
        X, Y = torch.cat([X, x]), torch.cat([Y, problem(x)])
    assert not torch.equal(h.X, run_bo_loop(
        problem, num_rounds=3, bounds=problem.bounds, optimizer=opt,
        acquisition_factory=make(), generator=torch.Generator().manual_seed(5)).X)


@pytest.mark.parametrize("expected", [False, True])
def test_known_reference_point_skips_the_predicted_front(problem, expected, monkeypatch):
    """A factory with a known z exposes it, and the loop's default sampler then reads the
    observed front only: no payoff table is computed, and the proposals equal those of the
    same run with the predicted-front sampler (whose z and ranges the acquisition ignores).
    Without z the default sampler computes the payoff table every round."""
    from botorch_mtucb.acquisition import ScalarizationSampler

    calls = []
    original = ScalarizationSampler.anchors

    def spy(self, model, bounds, Y, seed=None):
        calls.append(Y.shape[0])
        return original(self, model, bounds, Y, seed)

    monkeypatch.setattr(ScalarizationSampler, "anchors", spy)
    z = [-160.0, -14.0]
    make = log_ehvi_factory if expected else hypervolume_ucb_factory
    assert make().ref_point is None
    torch.testing.assert_close(make(ref_point=z).ref_point, torch.tensor(z, dtype=DT))
    opt = FiniteArmOptimizer(sobol_initial_design(problem.bounds, n=128, seed=2))
    runs, anchor_calls = {}, {}
    for label, sampler, ref in (
        ("default", None, z),
        ("predicted", ScalarizationSampler(2, "chebyshev", ref_point="data", front="predicted"), z),
        ("no z", None, None),
    ):
        calls.clear()
        runs[label] = run_bo_loop(problem, num_rounds=2, bounds=problem.bounds, optimizer=opt,
                                  acquisition_factory=make(ref_point=ref),
                                  scalarization_sampler=sampler,
                                  generator=torch.Generator().manual_seed(4))
        anchor_calls[label] = list(calls)
    assert anchor_calls["default"] == []
    assert len(anchor_calls["predicted"]) == 2 and len(anchor_calls["no z"]) == 2
    assert torch.equal(runs["default"].X, runs["predicted"].X)


@pytest.mark.parametrize("expected", [False, True])
def test_front_factories_known_reference_point_units_and_errors(expected):
    """``ref_point`` is in the objectives' own units (a minimised objective's z lies above
    its range), takes the model's dtype, and bad values are refused naming it."""
    make = log_ehvi_factory if expected else hypervolume_ucb_factory
    X = torch.rand(8, 2, dtype=torch.float32)
    model = ExactMultiTaskGP(X, torch.stack([X[:, 0], 1 - X[:, 0] * X[:, 1]], -1))
    s = ChebyshevScalarization([0.5, 0.5], ref_point=[-0.1, 2.0], minimize=[False, True])
    acqf = make(ref_point=torch.tensor([-0.5, 3.0]))(model, s)
    assert acqf.ref_point.dtype == torch.float32
    torch.testing.assert_close(acqf.ref_point, torch.tensor([-0.5, -3.0]))  # maximisation form
    assert torch.equal(make()(model, s).ref_point, torch.tensor([-0.1, -2.0]))
    for bad in ("far", [0.0, float("nan")], [[0.0, 1.0]], []):
        with pytest.raises(ValueError, match="`ref_point`"):
            make(ref_point=bad)
    with pytest.raises(ValueError, match="`ref_point` must be 2 finite numbers"):
        make(ref_point=[0.0, 0.0, 0.0])(model, s)
    with pytest.raises(ValueError, match="`scalarization_sampler`"):
        make(ref_point=[0.0, 0.0])(model, None)


@pytest.mark.parametrize("explicit", [False, True])
def test_default_rounds_maximise_the_hypervolume_ucb(problem, explicit):
    """By default (n = 2 ≤ 4), or with ``hypervolume_ucb_factory``, each round maximises
    HypervolumeImprovementUCB with the round's scale-free reference point z and the model's
    front at the evaluated inputs."""
    from botorch_mtucb.acquisition import HypervolumeImprovementUCB, sample_scalarization_weights
    from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors

    arms = sobol_initial_design(problem.bounds, n=256, seed=9)
    opt = FiniteArmOptimizer(arms)
    given = {"acquisition_factory": hypervolume_ucb_factory()} if explicit else {}
    h = run_bo_loop(problem, num_rounds=3, bounds=problem.bounds, optimizer=opt,
                    generator=torch.Generator().manual_seed(5), **given)
    g = torch.Generator().manual_seed(5)
    seed = int(torch.randint(2**31 - 1, (1,), generator=g))
    X = sobol_initial_design(problem.bounds, seed=seed)
    Y = problem(X)
    factory = practical_model_factory(problem.bounds)
    for t, r in enumerate(h.rounds, start=1):
        model = factory(X, Y)
        lam = sample_scalarization_weights(2, 1, generator=g)[0]
        P = predicted_anchors(model, problem.bounds, Y, seed=seed + 2 + t)
        scal = ChebyshevScalarization.from_data(lam, Y, predicted=P, span="front")
        x = opt(HypervolumeImprovementUCB(model, scal.ref_point, X))
        torch.testing.assert_close(r.x, x[0])
        X, Y = torch.cat([X, x]), torch.cat([Y, problem(x)])
    with pytest.raises(ValueError, match="reference point from the round's scalarization"):
        hypervolume_ucb_factory()(h.model, None)


def test_practical_acquisition_factory_dispatches_on_n_and_the_scalarization():
    from botorch_mtucb.acquisition import HypervolumeImprovementUCB, LinearScalarization
    from botorch_mtucb.loop.defaults import (
        HYPERVOLUME_UCB_MAX_OBJECTIVES,
        practical_acquisition_factory,
    )

    factory = practical_acquisition_factory()
    for n in (2, HYPERVOLUME_UCB_MAX_OBJECTIVES, HYPERVOLUME_UCB_MAX_OBJECTIVES + 1):
        X = torch.rand(8, 2, dtype=DT)
        model = ExactMultiTaskGP(X, torch.rand(8, n, dtype=DT))
        s = ChebyshevScalarization(torch.full((n,), 1.0 / n, dtype=DT), ref_point=[0.0] * n)
        acqf = factory(model, s)
        want = HypervolumeImprovementUCB if n <= HYPERVOLUME_UCB_MAX_OBJECTIVES else (
            ScalarizedMultiTaskUCB)
        assert type(acqf) is want and float(acqf.beta) == 1.0
        linear = factory(model, LinearScalarization(torch.full((n,), 1.0 / n, dtype=DT)))
        assert type(linear) is ScalarizedMultiTaskUCB
    assert float(practical_acquisition_factory(beta=2.0)(model, s).beta) == 2.0
    with pytest.raises(ValueError, match="needs a `scalarization_sampler`"):
        factory(model, None)


def test_default_refit_schedule_with_the_default_model(problem, monkeypatch):
    spies = []

    def spy_factory(bounds):
        spies.append(_Spy(practical_model_factory(bounds)))
        return spies[-1]

    monkeypatch.setattr(loop_module, "practical_model_factory", spy_factory)
    X0 = sobol_initial_design(problem.bounds, n=18, seed=0)
    h = run_bo_loop(problem, X0, 6, bounds=problem.bounds,
                    generator=torch.Generator().manual_seed(0))
    assert h.X.shape == (6, 2)
    # every round up to N = 20, then when N >= 1.1 * N_fit (N_fit = 20: at N = 22; then 24.2)
    assert spies[0].sizes == [18, 19, 20, 22]


def test_a_given_practical_factory_keeps_the_refit_schedule(problem):
    """``model_factory=practical_model_factory(bounds, per_task=...)`` without ``refit_every``:
    refitted on ``RefitSchedule()`` like the default model (its own fit, not the caller's
    hyperparameters); ``per_task=True`` adds the per-objective term."""
    from botorch_mtucb.kernels.independent import SumOfSeparableKernel
    from botorch_mtucb.loop import practical_model_factory as public_factory

    assert public_factory is practical_model_factory
    X0 = sobol_initial_design(problem.bounds, n=18, seed=0)
    fits = {}
    for per_task in (False, True):
        factory = practical_model_factory(problem.bounds, per_task=per_task)
        h = run_bo_loop(problem, X0, 4, model_factory=factory, bounds=problem.bounds,
                        generator=torch.Generator().manual_seed(0))
        fits[per_task] = factory.num_fits
        is_sum = isinstance(h.model.covar_module, SumOfSeparableKernel)
        assert is_sum == per_task and factory.per_task == per_task
    assert fits == {False: 4, True: 4}  # N = 18, 19, 20, then 22: refits every round to 20
    once = practical_model_factory(problem.bounds)
    run_bo_loop(problem, X0, 2, model_factory=once, bounds=problem.bounds, refit_every=0,
                generator=torch.Generator().manual_seed(0))
    assert once.num_fits == 1
    with pytest.raises(TypeError, match="`per_task` must be a bool"):
        practical_model_factory(problem.bounds, per_task="yes")


def test_refit_schedule_by_hand():
    s = RefitSchedule()
    N_fit, fits = 5, []
    for t in range(1, 400):
        N = 5 + t
        if s(t, N, N_fit):
            fits.append(N)
            N_fit = N
    assert fits[:16] == list(range(6, 21)) + [22]
    for a, b in zip(fits[14:], fits[15:], strict=False):  # after N = 20: gap ceil(N_fit / 10)
        assert b - a == -(-a // 10), (a, b)
    for N_fit, gap in ((50, 5), (100, 10), (30, 3), (200, 20)):  # 1.1 * 50 = 55.000...01
        assert s(1, N_fit + gap, N_fit) and not s(1, N_fit + gap - 1, N_fit)
    assert len(fits) < 60  # log-many fits: 399 rounds, 15 + ~10 ln(404 / 20) fits
    assert RefitSchedule(every_round_until=0, growth=1.0)(1, 10, 5)
    assert not RefitSchedule(every_round_until=0, growth=1.0)(1, 9, 5)
    for bad in ({"growth": 0.0}, {"growth": -1}, {"every_round_until": -1},
                {"every_round_until": 2.5}):
        with pytest.raises(ValueError, match="growth|every_round_until"):
            RefitSchedule(**bad)


def test_explicit_calls_keep_their_behaviour(problem):
    """A given model_factory without update/refit_every: fitted once, then conditioned."""
    spy = _Spy(lambda X, Y: ExactMultiTaskGP(X, Y))
    X0 = sobol_initial_design(problem.bounds, n=4, seed=1)
    opt = BoxOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=0)
    from botorch_mtucb.acquisition import ScalarizationSampler

    sampler = ScalarizationSampler(2, "chebyshev", ref_point="data")
    g = torch.Generator().manual_seed(0)
    state = g.get_state()
    h = run_bo_loop(problem, X0, 4, spy, scalarized_ucb_factory(2.0), opt, sampler, generator=g)
    assert spy.sizes == [4] and h.model.train_inputs[0].shape[0] == 8
    assert all(r.beta == 2.0 for r in h.rounds)
    g.set_state(state)
    spy2 = _Spy(lambda X, Y: ExactMultiTaskGP(X, Y))
    opt2 = BoxOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=0)
    run_bo_loop(problem, X0, 4, spy2, scalarized_ucb_factory(2.0), opt2, sampler,
                refit_every=2, generator=g)
    assert spy2.sizes == [4, 6, 8]


def test_bounds_from_a_box_optimizer_and_errors(problem):
    opt = BoxOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=0)
    h = run_bo_loop(problem, num_rounds=1, optimizer=opt,
                    generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(h.initial_X, sobol_initial_design(problem.bounds, seed=_seed(2)))
    with pytest.raises(ValueError, match="differ from the BoxOptimizer"):
        run_bo_loop(problem, num_rounds=1, optimizer=opt, bounds=problem.bounds * 2)
    with pytest.raises(ValueError, match="`initial_X` is required unless"):
        run_bo_loop(problem, num_rounds=1)
    tr = TrustRegionOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=0)
    h = run_bo_loop(problem, num_rounds=1, optimizer=tr,
                    generator=torch.Generator().manual_seed(2))  # the box is the region's
    torch.testing.assert_close(h.initial_X, sobol_initial_design(problem.bounds, seed=_seed(2)))
    assert len(tr.regions) == 1
    with pytest.raises(ValueError, match="differ from the TrustRegionOptimizer"):
        run_bo_loop(problem, num_rounds=1, optimizer=tr, bounds=problem.bounds * 2)
    arms = sobol_initial_design(problem.bounds, n=16, seed=0)
    with pytest.raises(ValueError, match="`model_factory=None`"):
        run_bo_loop(problem, arms[:3], 1, optimizer=FiniteArmOptimizer(arms))
    with pytest.raises(ValueError, match="`num_rounds`"):
        run_bo_loop(problem, bounds=problem.bounds)
    with pytest.raises(ValueError, match=r"`bounds` must be a 2 x d = \(2, 2\)"):
        run_bo_loop(problem, arms[:3], 1, bounds=problem.bounds[:, :1])
    with pytest.raises(ValueError, match="`refit_every` must be"):
        run_bo_loop(problem, num_rounds=1, bounds=problem.bounds, refit_every=-1)
    with pytest.raises(ValueError, match="`initial_X` must be a torch.Tensor"):
        run_bo_loop(problem, [[0.0, 0.0]], 1, bounds=problem.bounds)


def test_finite_arms_with_bounds_and_single_objective_refused(problem):
    arms = sobol_initial_design(problem.bounds, n=32, seed=3)
    h = run_bo_loop(problem, num_rounds=2, bounds=problem.bounds,
                    optimizer=FiniteArmOptimizer(arms), true_f=problem,
                    generator=torch.Generator().manual_seed(0))
    assert all(any(torch.equal(r.x, a) for a in arms) for r in h.rounds)
    assert h.regrets.shape == (2,) and bool((h.regrets >= 0).all())
    with pytest.raises(ValueError, match="for n >= 2 objectives; `observe` returned n = 1"):
        run_bo_loop(lambda X: problem(X)[:, :1], num_rounds=2, bounds=problem.bounds)


def test_factory_default_beta_is_the_acquisitions():
    X = torch.rand(6, 2, dtype=DT)
    model = ExactMultiTaskGP(X, torch.rand(6, 2, dtype=DT))
    s = ChebyshevScalarization([0.5, 0.5], ref_point=[0.0, 0.0])
    acqf = scalarized_ucb_factory()(model, s)
    Xq = torch.rand(3, 1, 2, dtype=DT)
    torch.testing.assert_close(acqf(Xq), ScalarizedMultiTaskUCB(model, s)(Xq))
    assert not torch.allclose(acqf(Xq), scalarized_ucb_factory(3.0)(model, s)(Xq))


def test_predicted_front_anchors_once_per_round_and_needs_a_box(problem):
    """A front="predicted" sampler gets the model's payoff table once per round, passed to every
    draw of the round (q = 2); without a box the loop refuses it, and the default sampler falls
    back to the observed front."""
    from botorch_mtucb.acquisition import ScalarizationSampler

    class Spy(ScalarizationSampler):
        def __init__(self):
            super().__init__(2, ref_point="data", front="predicted")
            self.anchor_calls, self.given = [], []

        def anchors(self, model, bounds, Y, seed=None):
            self.anchor_calls.append(Y.shape[0])
            return super().anchors(model, bounds, Y, seed)

        def __call__(self, generator=None, Y=None, predicted=None):
            self.given.append(predicted)
            return super().__call__(generator, Y, predicted)

    spy = Spy()
    opt = BoxOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=0)
    h = run_bo_loop(problem, num_rounds=2, scalarization_sampler=spy, optimizer=opt, q=2,
                    generator=torch.Generator().manual_seed(3))
    n0 = initial_design_size(2)
    assert spy.anchor_calls == [n0, n0 + 2] and len(spy.given) == 4
    assert spy.given[0] is spy.given[1] and spy.given[2] is spy.given[3]
    assert spy.given[0].shape == (2, 2) and h.X.shape == (4, 2)
    arms = sobol_initial_design(problem.bounds, n=64, seed=1)
    X0 = arms[:5]
    mf = practical_model_factory(problem.bounds)
    with pytest.raises(ValueError, match="needs the\n?.*search box|search box"):
        run_bo_loop(problem, X0, 1, mf, optimizer=FiniteArmOptimizer(arms),
                    scalarization_sampler=Spy())
    h = run_bo_loop(problem, X0, 1, mf, optimizer=FiniteArmOptimizer(arms))  # observed front
    assert h.X.shape == (1, 2)


def test_refit_schedule_growth_must_be_finite_and_counts_may_be_numpy():
    """``growth=inf`` would overflow at the first round past ``every_round_until``: refused
    up front, as a bool; NumPy integers are counts (as ``num_rounds`` takes them)."""
    import numpy as np

    from botorch_mtucb.loop import RefitSchedule

    for growth in (float("inf"), float("nan"), True, 0.0, "0.1"):
        with pytest.raises(ValueError, match="`growth` must be a positive finite number"):
            RefitSchedule(growth=growth)
    schedule = RefitSchedule(every_round_until=np.int64(5), growth=np.float64(0.5))
    assert schedule.every_round_until == 5 and type(schedule.every_round_until) is int
    assert schedule(t=1, N=7, N_fit=4) and not schedule(t=1, N=7, N_fit=5)
    with pytest.raises(ValueError, match="`every_round_until` must be a non-negative integer"):
        RefitSchedule(every_round_until=True)
