"""A loop a user can trust with expensive evaluations: reproducible from its generator, failed
evaluations recorded (never lost), resumable from a saved history, ``minimize=``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from botorch.test_functions.multi_objective import BraninCurrin

from botorch_mtucb.acquisition import ScalarizationSampler
from botorch_mtucb.loop import (
    FiniteArmOptimizer,
    LoopHistory,
    LoopInterrupted,
    TrustRegionOptimizer,
    run_bo_loop,
    scalarized_ucb_factory,
)
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.utils import sobol_initial_design
from tests.acquisition.test_multi_task_ucb import icm_grid_model, make_rkhs_problem

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
    "ignore:Optimization failed:RuntimeWarning",
)


@pytest.fixture(scope="module")
def problem():
    return BraninCurrin(negate=True).to(DT)


@pytest.fixture(scope="module")
def rkhs():
    return make_rkhs_problem(2, seed=3)


def _noisy(f):
    """``observe`` adding noise from torch's global RNG (as BoTorch's test functions do)."""
    return lambda X: f(X) + 0.1 * torch.randn(X.shape[0], 2, dtype=DT)


class _Failing:
    """``observe`` that fails at the given calls (0: the initial design) by ``how``."""

    def __init__(self, f, fail_at, how="raise"):
        self.f, self.fail_at, self.how, self.calls = f, set(fail_at), how, 0

    def __call__(self, X):
        call, self.calls = self.calls, self.calls + 1
        Y = self.f(X)
        if call not in self.fail_at:
            return Y
        if self.how == "raise":
            raise OSError(f"simulator crashed at call {call}")
        if self.how == "interrupt":
            raise KeyboardInterrupt
        Y = Y.clone()
        Y[-1, 0] = float("nan")  # the batch's last point
        return Y


def _rkhs_loop(prob, observe, num_rounds, **kw):
    """A cheap, deterministic loop: fixed-hyperparameter ICM model, exhaustive arms."""
    kw.setdefault("initial_X", prob.grid[[10, 50, 90]])
    return run_bo_loop(
        observe=observe, num_rounds=num_rounds,
        model_factory=lambda X, Y: icm_grid_model(prob, X, Y),
        acquisition_factory=scalarized_ucb_factory(1.0),
        optimizer=FiniteArmOptimizer(prob.grid),
        scalarization_sampler=ScalarizationSampler(2, ref_point="data", front="observed"),
        true_f=prob.f, **kw,
    )


# -- reproducible from its own generator ------------------------------------------------------


def test_seeded_default_run_is_reproducible_and_leaves_the_global_rng(problem):
    """The default loop (practical model, BoxOptimizer, predicted front) and an ``observe``
    whose noise comes from torch's global RNG: two runs from one seed are identical, and the
    caller's global RNG state is what it was."""
    noisy = BraninCurrin(negate=True, noise_std=0.5).to(DT)
    runs = []
    for _ in range(2):
        state = torch.get_rng_state()
        runs.append(run_bo_loop(noisy, num_rounds=4, bounds=problem.bounds,
                                generator=torch.Generator().manual_seed(5)))
        assert torch.equal(torch.get_rng_state(), state)
    a, b = runs
    assert torch.equal(a.initial_Y, b.initial_Y)
    assert torch.equal(a.X, b.X) and torch.equal(a.Y, b.Y)
    other = run_bo_loop(noisy, num_rounds=1, bounds=problem.bounds,
                        generator=torch.Generator().manual_seed(6))
    assert not torch.equal(other.X, a.X[:1])


def test_unseeded_run_draws_from_the_global_rng_as_any_botorch_code(rkhs):
    torch.manual_seed(0)
    a = _rkhs_loop(rkhs, _noisy(rkhs.f), 3)
    after = torch.get_rng_state()
    torch.manual_seed(0)
    b = _rkhs_loop(rkhs, _noisy(rkhs.f), 3)
    assert torch.equal(a.Y, b.Y) and torch.equal(torch.get_rng_state(), after)
    torch.manual_seed(0)
    assert not torch.equal(torch.get_rng_state(), after)  # the run drew from it
    assert a.generator_state is None and a.rng_seed is None


# -- failed evaluations --------------------------------------------------------------------


def test_exception_at_round_k_raises_with_the_completed_history(rkhs):
    seen = []
    observe = _Failing(rkhs.f, fail_at=[3])
    with pytest.raises(LoopInterrupted, match="Round 3: observe\\(x_t\\) raised OSError") as info:
        _rkhs_loop(rkhs, observe, 6, callbacks=[seen.append],
                   generator=torch.Generator().manual_seed(0))
    err = info.value
    assert isinstance(err, RuntimeError) and isinstance(err.__cause__, OSError)
    h = err.history
    assert [r.t for r in h.rounds] == [1, 2, 3] and seen == h.rounds
    assert h.failed.tolist() == [False, False, True]
    assert "simulator crashed at call 3" in h.rounds[2].error
    assert bool(h.Y[2].isnan().all()) and torch.isfinite(h.Y[:2]).all()
    assert h.model.train_inputs[0].shape[0] == 3 + 2  # the failed point never reached it
    torch.testing.assert_close(h.observed_X, torch.cat([h.initial_X, h.X[:2]]))


def test_skip_records_the_failure_and_goes_on(rkhs):
    seen = []
    observe = _Failing(rkhs.f, fail_at=[3], how="nan")
    h = _rkhs_loop(rkhs, observe, 5, on_failure="skip", callbacks=[seen.append],
                   generator=torch.Generator().manual_seed(0))
    assert h.failed.tolist() == [False, False, True, False, False] and seen == h.rounds
    assert h.rounds[2].error.startswith("observe(x_t) returned non-finite values")
    assert h.model.train_inputs[0].shape[0] == 3 + 4
    assert h.observed_Y.shape == (7, 2) and bool(torch.isfinite(h.observed_Y).all())
    assert h.regrets.shape == (5,)  # the regret of a failed evaluation is its choice's


def test_skip_does_not_propose_a_failed_point_again(problem):
    """A region where ``observe`` always fails: the failed points become pending points of
    every later proposal, so no failed point is proposed again (the default loop, which
    without them re-proposed the same failing argmax every round)."""

    def observe(X):
        Y = problem(X)
        Y[X[:, 0] > 0.7] = float("nan")
        return Y

    h = run_bo_loop(observe, num_rounds=6, bounds=problem.bounds, on_failure="skip",
                    generator=torch.Generator().manual_seed(5))
    fx = h.failed_X
    assert fx.shape[0] >= 2 and bool((fx[:, 0] > 0.7).all())
    torch.testing.assert_close(fx, torch.cat([h.initial_X[h.initial_Y.isnan().any(-1)],
                                              h.X[h.failed]]))
    # no proposal repeats (or lands within 1e-3 of) a point that failed before it
    for k, record in enumerate(h.rounds):
        earlier = torch.cat([h.initial_X[h.initial_Y.isnan().any(-1)], h.X[:k][h.failed[:k]]])
        if earlier.shape[0]:
            assert float(torch.cdist(record.x.unsqueeze(0), earlier).min()) > 1e-3
    assert int(h.failed.sum()) < len(h.rounds)  # the loop went elsewhere


def test_failed_points_without_pending_support_warn_once(rkhs):
    from botorch.acquisition import PosteriorMean
    from botorch.acquisition.objective import ScalarizedPosteriorTransform

    def factory(model, scalarization):  # analytic: refuses pending points (UnsupportedError)
        weights = torch.tensor([0.5, 0.5], dtype=DT)
        return PosteriorMean(model, posterior_transform=ScalarizedPosteriorTransform(weights))

    observe = _Failing(rkhs.f, fail_at=[1, 2], how="nan")
    with pytest.warns(RuntimeWarning, match="takes no pending points") as record:
        h = run_bo_loop(
            observe=observe, num_rounds=4, initial_X=rkhs.grid[[10, 50, 90]],
            model_factory=lambda X, Y: icm_grid_model(rkhs, X, Y), acquisition_factory=factory,
            optimizer=FiniteArmOptimizer(rkhs.grid),
            scalarization_sampler=ScalarizationSampler(2, ref_point="data", front="observed"),
            on_failure="skip",
        )
    assert sum("takes no pending points" in str(w.message) for w in record) == 1
    assert h.failed.tolist() == [True, True, False, False]


def _two_bowls(X):
    return torch.stack([-(X - 0.3).pow(2).sum(-1), -(X - 0.7).pow(2).sum(-1)], -1)


_BOX = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def test_a_failing_refit_loses_no_evaluation():
    """The model update after round 2 raises: round 2's observed point is in the history
    attached to the error (so is every earlier one)."""
    from botorch_mtucb.loop import practical_model_factory

    fit, calls, seen = practical_model_factory(_BOX), [0], []

    def factory(X, Y):
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("fit failed")
        return fit(X, Y)

    def observe(X):
        seen.append(X)
        return _two_bowls(X)

    with pytest.raises(RuntimeError, match="fit failed") as info:
        run_bo_loop(observe, num_rounds=4, bounds=_BOX, model_factory=factory, refit_every=1,
                    generator=torch.Generator().manual_seed(0))
    h = info.value.history
    assert h.initial_X.shape[0] + len(h.rounds) == sum(x.shape[0] for x in seen)
    torch.testing.assert_close(h.X, torch.cat(seen[1:]))


def test_trust_region_keeps_updating_after_a_failed_round():
    """A failed first round leaves the failed point pending in every later round; the trust
    region still starts a new round each time (re-centred, L judged), as without it."""
    calls = [0]

    def observe(X):
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("crash")
        return _two_bowls(X)

    tr = TrustRegionOptimizer(_BOX, num_restarts=2, raw_samples=64, seed=0)
    h = run_bo_loop(observe, num_rounds=8, optimizer=tr, on_failure="skip",
                    generator=torch.Generator().manual_seed(0))
    assert h.failed.tolist() == [True] + [False] * 7
    judged = tr.success_count + tr.failure_count + tr.restarts
    assert judged > 0 or tr.length != tr.length_init
    assert len({tuple(r.flatten().tolist()) for r in tr.regions}) > 1  # re-centred


def test_float32_observations_join_float64_data():
    calls = [0]

    def observe(X):
        calls[0] += 1
        return _two_bowls(X) if calls[0] == 1 else _two_bowls(X).float()

    h = run_bo_loop(observe, num_rounds=2, bounds=_BOX, refit_every=0,
                    generator=torch.Generator().manual_seed(0))
    assert h.Y.dtype == DT and h.initial_Y.dtype == DT and len(h.rounds) == 2


def test_resume_keeps_the_historys_minimize():
    h = run_bo_loop(_two_bowls, num_rounds=2, bounds=_BOX, minimize=[1],
                    generator=torch.Generator().manual_seed(0))
    more = run_bo_loop(_two_bowls, num_rounds=1, bounds=_BOX, history=h)
    assert more.minimize == (1,)
    full = run_bo_loop(_two_bowls, num_rounds=3, bounds=_BOX, minimize=[1],
                       generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(more.X, full.X)
    with pytest.raises(ValueError, match="continued `history` minimised \\[1\\]"):
        run_bo_loop(_two_bowls, num_rounds=1, bounds=_BOX, history=h, minimize=[0])


@pytest.mark.parametrize("kind", ["multi-output", "model-list"])
def test_default_loop_runs_on_botorchs_own_models(kind):
    """BoTorch's multi-output SingleTaskGP and a ModelListGP as the loop's model, with the
    default acquisition, optimizer and predicted-front sampler: proposals inside the box,
    none repeated; BoTorch's KroneckerMultiTaskGP is refused with a clear error."""
    from botorch.models import KroneckerMultiTaskGP, ModelListGP, SingleTaskGP
    from botorch.models.transforms import Normalize, Standardize

    def factory(X, Y):
        if kind == "multi-output":
            return SingleTaskGP(X, Y, input_transform=Normalize(2),
                                outcome_transform=Standardize(2))
        return ModelListGP(*[SingleTaskGP(X, Y[:, i : i + 1], outcome_transform=Standardize(1))
                             for i in range(2)])

    h = run_bo_loop(_two_bowls, num_rounds=3, bounds=_BOX, model_factory=factory,
                    update="refit", generator=torch.Generator().manual_seed(0))
    X = torch.cat([h.initial_X, h.X])
    assert bool(((h.X >= 0) & (h.X <= 1)).all())
    assert float(torch.pdist(X).min()) > 1e-6
    with pytest.raises(ValueError, match="does not take BoTorch's KroneckerMultiTaskGP"):
        run_bo_loop(_two_bowls, num_rounds=1, bounds=_BOX, update="refit",
                    model_factory=lambda X, Y: KroneckerMultiTaskGP(X, Y),
                    generator=torch.Generator().manual_seed(0))


def test_batch_with_one_failed_point_keeps_the_other(rkhs):
    observe = _Failing(rkhs.f, fail_at=[2], how="nan")
    with pytest.raises(LoopInterrupted) as info:
        _rkhs_loop(rkhs, observe, 4, q=2, update="refit",
                   generator=torch.Generator().manual_seed(1))
    h = info.value.history
    assert h.failed.tolist() == [False, False, False, True]
    assert h.rounds[3].batch == 2 and h.rounds[3].y[1] == h.rounds[3].y[1]  # partial y kept
    assert h.model.train_inputs[0].shape[0] == 3 + 3


def test_keyboard_interrupt_and_programming_errors_carry_the_history(rkhs):
    with pytest.raises(KeyboardInterrupt) as info:
        _rkhs_loop(rkhs, _Failing(rkhs.f, fail_at=[3], how="interrupt"), 5)
    assert len(info.value.history.rounds) == 2
    calls = []

    def listing(X):  # a list from round 2 on: not an evaluation failure, not skipped
        calls.append(X)
        return rkhs.f(X) if len(calls) < 3 else rkhs.f(X).tolist()

    with pytest.raises(TypeError, match="`observe\\(x_t\\)` must return a torch.Tensor") as info:
        _rkhs_loop(rkhs, listing, 4, on_failure="skip")
    assert len(info.value.history.rounds) == 1
    with pytest.raises(ValueError, match="`on_failure` must be 'raise' or 'skip'"):
        _rkhs_loop(rkhs, rkhs.f, 1, on_failure="ignore")


def test_numpy_observations_are_converted(rkhs):
    g = torch.Generator().manual_seed(2)
    a = _rkhs_loop(rkhs, lambda X: rkhs.f(X).numpy(), 3, generator=g)
    b = _rkhs_loop(rkhs, rkhs.f, 3, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a.X, b.X) and torch.equal(a.Y, b.Y) and a.Y.dtype == DT


def test_failed_initial_design_rows(rkhs):
    observe = _Failing(rkhs.f, fail_at=[0], how="nan")
    with pytest.raises(LoopInterrupted, match="observe\\(initial_X\\) returned non-finite"):
        _rkhs_loop(rkhs, observe, 2)
    h = _rkhs_loop(rkhs, _Failing(rkhs.f, fail_at=[0], how="nan"), 2, on_failure="skip")
    assert bool(h.initial_Y[-1].isnan().any()) and h.observed_X.shape == (2 + 2, 1)
    assert h.model.train_inputs[0].shape[0] == 4


# -- resumable ------------------------------------------------------------------------------


def test_resume_from_a_saved_history_equals_one_run(rkhs, tmp_path):
    """k rounds, save, load, m more = k + m rounds of one seeded run (the noise of ``observe``
    from the global RNG too); the initial design is not observed again."""
    full = _rkhs_loop(rkhs, _noisy(rkhs.f), 5, generator=torch.Generator().manual_seed(4))
    first = _rkhs_loop(rkhs, _noisy(rkhs.f), 2, generator=torch.Generator().manual_seed(4))
    first.save(tmp_path / "h.json")
    loaded = LoopHistory.load(tmp_path / "h.json")
    calls = []

    def observe(X):
        calls.append(X.shape[0])
        return _noisy(rkhs.f)(X)

    seen = []
    rest = _rkhs_loop(rkhs, observe, 3, initial_X=None, history=loaded, callbacks=[seen.append])
    assert calls == [1, 1, 1] and len(loaded.rounds) == 2  # not re-observed, not modified
    assert [r.t for r in rest.rounds] == [1, 2, 3, 4, 5] and [r.t for r in seen] == [3, 4, 5]
    assert torch.equal(rest.X, full.X) and torch.equal(rest.Y, full.Y)
    torch.testing.assert_close(torch.stack([r.weights for r in rest.rounds]),
                               torch.stack([r.weights for r in full.rounds]))
    torch.testing.assert_close(rest.regrets, full.regrets)
    with pytest.raises(ValueError, match="`initial_X` and `history` are exclusive"):
        _rkhs_loop(rkhs, rkhs.f, 1, history=loaded)
    with pytest.raises(ValueError, match="`history` must be a LoopHistory"):
        _rkhs_loop(rkhs, rkhs.f, 1, initial_X=None, history=loaded.to_json_dict())


def test_resume_the_default_loop_continues_its_seeds(problem, tmp_path):
    """With the default optimizer, sampler (predicted front) and seeds, and a model factory
    that refits deterministically: 2 + 2 rounds through a file = 4 rounds."""

    def factory(X, Y):
        return ExactMultiTaskGP(X, Y)

    kw = dict(bounds=problem.bounds, model_factory=factory, update="refit")
    full = run_bo_loop(problem, num_rounds=4, generator=torch.Generator().manual_seed(8), **kw)
    first = run_bo_loop(problem, num_rounds=2, generator=torch.Generator().manual_seed(8), **kw)
    first.save(tmp_path / "h.json")
    rest = run_bo_loop(problem, num_rounds=2, history=LoopHistory.load(tmp_path / "h.json"),
                       **kw)
    torch.testing.assert_close(rest.X, full.X)
    assert [r.batch for r in rest.rounds] == [1, 2, 3, 4]


def test_interrupted_run_resumes_after_the_failure(rkhs, tmp_path):
    with pytest.raises(LoopInterrupted) as info:
        _rkhs_loop(rkhs, _Failing(rkhs.f, fail_at=[2], how="nan"), 4,
                   generator=torch.Generator().manual_seed(3))
    blob = json.loads(json.dumps(info.value.history.to_json_dict(), allow_nan=False))
    back = LoopHistory.from_json_dict(blob)
    assert back.failed.tolist() == [False, True] and bool(back.Y[1, 0].isnan())
    assert back.rounds[1].error == info.value.history.rounds[1].error
    h = _rkhs_loop(rkhs, rkhs.f, 2, initial_X=None, history=back, progress=True)
    assert h.failed.tolist() == [False, True, False, False]
    assert h.model.train_inputs[0].shape[0] == 3 + 3
    skipped = _rkhs_loop(rkhs, _Failing(rkhs.f, fail_at=[2], how="nan"), 4,
                         on_failure="skip", generator=torch.Generator().manual_seed(3))
    assert torch.equal(h.X, skipped.X)  # resuming after "raise" = having skipped


# -- minimize= -----------------------------------------------------------------------------


def test_minimize_gives_the_proposals_of_negated_data(problem):
    """README's advice (``minimize=``, on run_bo_loop or a hand-built sampler) proposes what
    the default loop does on negated data, and records the same regret."""
    minimised = BraninCurrin().to(DT)
    arms = sobol_initial_design(problem.bounds, n=128, seed=2)
    kw = dict(num_rounds=3, bounds=problem.bounds, optimizer=FiniteArmOptimizer(arms))

    def run(observe, **extra):
        return run_bo_loop(observe, generator=torch.Generator().manual_seed(1), **kw, **extra)

    negated = run(problem, true_f=problem)
    by_loop = run(minimised, minimize=[0, 1], true_f=minimised)
    readme = run(minimised, scalarization_sampler=ScalarizationSampler(
        2, ref_point="data", minimize=[True, True]))
    assert torch.equal(by_loop.X, negated.X) and torch.equal(readme.X, negated.X)
    torch.testing.assert_close(by_loop.Y, -negated.Y)
    torch.testing.assert_close(by_loop.regrets, negated.regrets)
    assert by_loop.rounds[0].regret >= 0


def test_minimize_errors(problem, rkhs):
    bounds = problem.bounds
    with pytest.raises(ValueError, match="indices"):
        run_bo_loop(problem, num_rounds=1, bounds=bounds, minimize=[True, False])
    with pytest.raises(ValueError, match="must be < n = 2") as info:
        run_bo_loop(problem, num_rounds=1, bounds=bounds, minimize=[2])
    assert info.value.history.initial_Y.shape == (5, 2)  # the initial design is kept
    with pytest.raises(ValueError, match="minimises \\[\\]"):
        _rkhs_loop(rkhs, rkhs.f, 1, minimize=[1])
    with pytest.raises(ValueError, match="negate `observe`"):
        run_bo_loop(lambda X: X.sum(-1, keepdim=True), rkhs.grid[:3], 1,
                    model_factory=lambda X, Y: None, acquisition_factory=lambda m, s: None,
                    optimizer=FiniteArmOptimizer(rkhs.grid), minimize=[0])


def test_numpy_integers_are_counts(rkhs):
    h = _rkhs_loop(rkhs, rkhs.f, np.int64(2), q=np.int64(1))
    assert h.X.shape == (2, 1)


def test_an_interrupted_regret_metric_loses_no_evaluation(rkhs):
    """The regret metric runs after the round's records are in the history: a metric that
    raises (here ``true_f`` interrupted in round 2) leaves round 2's evaluation recorded,
    its regret NaN (not computed)."""
    calls = {"n": 0}

    def true_f(X):
        calls["n"] += 1
        if calls["n"] == 3:  # the metric of round 2 (after the reference set's call)
            raise KeyboardInterrupt
        return rkhs.f(X)

    evaluated = []

    def observe(X):
        evaluated.append(X)
        return rkhs.f(X)

    with pytest.raises(KeyboardInterrupt) as info:
        run_bo_loop(
            observe=observe, num_rounds=4, initial_X=rkhs.grid[[10, 50, 90]],
            model_factory=lambda X, Y: icm_grid_model(rkhs, X, Y),
            acquisition_factory=scalarized_ucb_factory(1.0),
            optimizer=FiniteArmOptimizer(rkhs.grid),
            scalarization_sampler=ScalarizationSampler(2, ref_point="data", front="observed"),
            true_f=true_f,
        )
    h = info.value.history
    assert len(h.rounds) == len(evaluated) - 1 == 2
    torch.testing.assert_close(h.X, torch.cat(evaluated[1:]))
    assert h.observed_X.shape[0] == 5
    assert h.rounds[0].regret is not None and not np.isnan(h.rounds[0].regret)
    assert np.isnan(h.rounds[1].regret)


def test_history_json_is_strict_with_non_finite_regret_and_beta(rkhs, tmp_path):
    """A regret or β that is not finite is saved as ``null`` (strict JSON), and loads as
    ``None``; ``regrets`` then names the evaluations without one."""
    h = _rkhs_loop(rkhs, rkhs.f, 2)
    h.rounds[0].regret = float("nan")
    h.rounds[1].beta = float("inf")
    path = tmp_path / "h.json"
    h.save(path)
    blob = json.loads(path.read_text())  # strict: no NaN / Infinity tokens
    assert "NaN" not in path.read_text() and "Infinity" not in path.read_text()
    assert blob["rounds"][0]["regret"] is None and blob["rounds"][1]["beta"] is None
    loaded = LoopHistory.load(path)
    with pytest.raises(ValueError, match=r"t = \[1\]"):
        _ = loaded.regrets


def test_arguments_checked_before_any_evaluation(rkhs):
    """Arguments that would fail later are refused before ``observe`` runs: callbacks that
    are not callables, a generator that is not a torch.Generator, a ``regret_X`` of another
    dimension, an optimizer box of another dimension; one callable is one callback."""
    calls = []

    def observe(X):
        calls.append(X)
        return rkhs.f(X)

    with pytest.raises(TypeError, match="`callbacks` must be a sequence of callables"):
        _rkhs_loop(rkhs, observe, 1, callbacks=[1])
    with pytest.raises(TypeError, match="`generator` must be a torch.Generator"):
        _rkhs_loop(rkhs, observe, 1, generator=0)
    with pytest.raises(ValueError, match="`regret_X` must be an M x d = M x 1"):
        _rkhs_loop(rkhs, observe, 1, regret_X=torch.rand(30, 5, dtype=DT))
    from botorch_mtucb.loop import BoxOptimizer

    box3 = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=DT)
    with pytest.raises(ValueError, match="`initial_X` has d = 1 columns but the BoxOptimizer"):
        run_bo_loop(observe, num_rounds=1, initial_X=rkhs.grid[[10, 50, 90]],
                    optimizer=BoxOptimizer(box3, 1, 8, seed=0))
    assert calls == []
    seen = []
    h = _rkhs_loop(rkhs, rkhs.f, 2, callbacks=seen.append)
    assert [r.t for r in seen] == [1, 2] and len(h.rounds) == 2


def _corner_failure(X):
    """Both objectives grow with x; the simulator fails at the corner x = 1 (their optimum)."""
    Y = torch.cat([X, 2 * X], -1)
    Y[(X >= 1.0).all(-1)] = float("nan")
    return Y


@pytest.mark.parametrize("avoiding", [True, False])
def test_a_failed_input_is_avoided_or_its_repeat_warned(avoiding):
    """The corner, the acquisition's maximiser, fails. The default optimizer
    (DedupOptimizer, an AvoidingOptimizer) is told the failed inputs and never returns one
    again; a plain BoxOptimizer may (the pending point only takes the width there), and the
    loop warns once that it did."""
    import warnings

    from botorch_mtucb.acquisition.protocols import AvoidingOptimizer
    from botorch_mtucb.loop import BoxOptimizer, DedupOptimizer

    box = torch.tensor([[0.0], [1.0]], dtype=DT)
    cls = DedupOptimizer if avoiding else BoxOptimizer
    optimizer = cls(box, num_restarts=2, raw_samples=32, seed=0)
    assert isinstance(optimizer, AvoidingOptimizer) is avoiding
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = run_bo_loop(
            _corner_failure, num_rounds=5, on_failure="skip",
            initial_X=torch.tensor([[0.0], [0.5], [0.8], [0.9]], dtype=DT),
            model_factory=lambda X, Y: ExactMultiTaskGP(X, Y, noise=1e-3),
            scalarization_sampler=ScalarizationSampler(2, kind="linear"),
            acquisition_factory=scalarized_ucb_factory(), optimizer=optimizer,
            generator=torch.Generator().manual_seed(0),
        )
    repeats = [str(w.message) for w in caught if "whose evaluation failed" in str(w.message)]
    assert bool(h.failed[0])  # the first proposal is the corner
    if avoiding:
        assert int(h.failed.sum()) == 1 and not repeats
    else:
        assert int(h.failed.sum()) > 1 and len(repeats) == 1


def test_dedup_optimizer_avoid_checks_its_input():
    from botorch_mtucb.loop import DedupOptimizer

    optimizer = DedupOptimizer(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT))
    with pytest.raises(ValueError, match="`X` must be an F x d = F x 2 tensor or None"):
        optimizer.avoid(torch.zeros(3, dtype=DT))
    optimizer.avoid(None)
