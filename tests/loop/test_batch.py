"""The BO loop in batches: q points per round with GP-BUCB pending points (paper 000, Alg. 1).

Split from ``test_loop.py`` (its helpers). References: the per-evaluation λ_t draws, the UCB
argmax with the round's earlier points pending (MT-UCB on an RKHS problem and TGP-UCB on arms),
the refusals and warnings for acquisitions without pending points, and a replay of MT-BKB's
real conditioning steps (hallucinated pending points draw nothing from the generator).
"""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.models import SingleTaskGP

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    ScalarizationSampler,
    ScalarizedMultiTaskUCB,
    TheoremTwoBeta,
    sample_scalarization_weights,
)
from botorch_mtucb.loop import (
    FiniteArmOptimizer,
    gaussian_observer,
    run_bo_loop,
    scalarized_ucb_factory,
)
from tests.acquisition.test_multi_task_ucb import icm_grid_model, make_rkhs_problem
from tests.loop.test_run import DT, _rkhs_run

pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


@pytest.mark.parametrize("q", [1, 2, 4])
def test_batch_loop_on_rkhs_problem(q):
    """q points per round, one λ per point, GP-BUCB pending points within a round."""
    prob = make_rkhs_problem(2, seed=9)
    T = 3
    h = _rkhs_run(prob, 0, T, "directional", q=q)
    assert [r.t for r in h.rounds] == list(range(1, T * q + 1))
    assert [r.batch for r in h.rounds] == [t for t in range(1, T + 1) for _ in range(q)]
    assert h.model.train_inputs[0].shape[0] == 1 + T * q
    g = torch.Generator().manual_seed(3)  # λ_t: one draw per evaluation, in order
    expected_W = torch.cat(
        [sample_scalarization_weights(2, 1, "chebyshev", g) for _ in range(T * q)]
    )
    torch.testing.assert_close(torch.stack([r.weights for r in h.rounds]), expected_W)
    assert all(r.regret >= 0 and r.beta > 0 for r in h.rounds)
    if q > 1:  # hallucination spreads every batch over distinct arms
        for t in range(T):
            xs = h.X[t * q:(t + 1) * q]
            assert torch.unique(xs, dim=0).shape[0] == q
        # The second point of the first round: argmax of the UCB with the first one pending.
        first = h.rounds[0]
        model = icm_grid_model(prob, h.initial_X, h.initial_Y)
        s = ChebyshevScalarization(h.rounds[1].weights, ref_point=prob.F.min(0).values)
        acqf = ScalarizedMultiTaskUCB(model, s, TheoremTwoBeta(b=prob.b_paper, sigma=0.1),
                                      X_pending=first.x.unsqueeze(0))
        best = prob.grid[acqf(prob.grid.unsqueeze(1)).argmax()]
        torch.testing.assert_close(h.rounds[1].x, best)


def test_batch_loop_refuses_acquisitions_without_pending_points():
    prob = make_rkhs_problem(2, seed=9)
    X0 = prob.grid[:3]

    def factory(model, s):
        return UpperConfidenceBound(model, beta=1.0)

    with pytest.raises(ValueError, match="pending"):
        run_bo_loop(lambda X: prob.f(X)[:, :1], X0, 1, lambda X, Y: SingleTaskGP(X, Y), factory,
                    FiniteArmOptimizer(prob.grid), q=2)
    with pytest.raises(ValueError, match="batch size"):
        run_bo_loop(lambda X: prob.f(X)[:, :1], X0, 1, lambda X, Y: SingleTaskGP(X, Y), factory,
                    FiniteArmOptimizer(prob.grid), q=0)


def test_batch_loop_warns_when_the_acquisition_ignores_pending_points():
    from botorch.acquisition import AcquisitionFunction

    class IgnoresPending(AcquisitionFunction):  # base set_X_pending: stored, never used
        def __init__(self) -> None:
            super().__init__(model=None)

        def forward(self, X):
            return -(X[..., 0, 0] - 0.5) ** 2

    grid = torch.linspace(0, 1, 11, dtype=DT).unsqueeze(-1)
    with pytest.warns(RuntimeWarning, match="repeats an earlier point") as record:
        run_bo_loop(lambda X: X.sin(), grid[:1], 1, lambda X, Y: None,
                    lambda model, s: IgnoresPending(), FiniteArmOptimizer(grid),
                    update=lambda model, X, Y: None, q=2)
    assert record[0].filename == __file__  # the warning points at the caller of run_bo_loop


def test_batch_loop_does_not_blame_pending_points_when_the_arms_run_out():
    """q above the number of arms left: a repeat is forced (every arm evaluated or pending),
    so the pending-points warning stays silent; with fresh arms left it still fires."""
    import warnings

    from botorch.acquisition import AcquisitionFunction, qUpperConfidenceBound

    class IgnoresPending(AcquisitionFunction):
        def __init__(self) -> None:
            super().__init__(model=None)

        def forward(self, X):
            return -(X[..., 0, 0] - 0.5) ** 2

    arms = torch.tensor([[0.0], [0.5], [1.0]], dtype=DT)
    model = lambda X, Y: SingleTaskGP(X, Y)  # noqa: E731
    factory = lambda m, s: qUpperConfidenceBound(m, beta=4.0)  # noqa: E731
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*repeats an earlier point")
        history = run_bo_loop(lambda X: (5 * X).sin(), arms[:2], 2, model, factory,
                              FiniteArmOptimizer(arms), q=4)
    assert history.X.shape == (8, 1)
    assert bool((history.X.unsqueeze(-2) == arms).all(-1).any(-1).all())  # arms only
    with pytest.warns(RuntimeWarning, match="repeats an earlier point"):  # fresh arms left
        run_bo_loop(lambda X: X.sin(), arms[:1], 1, lambda X, Y: None,
                    lambda m, s: IgnoresPending(), FiniteArmOptimizer(arms),
                    update=lambda m, X, Y: None, q=2)


def test_batch_loop_with_the_heavy_tailed_ucb():
    """TGP-UCB in batches: one round of q = 3 on arms gives three distinct arms, and the
    second one is the UCB argmax with the first pending (mean kept, variance conditioned)."""
    from botorch_mtucb.acquisition import HeavyTailedUCB
    from botorch_mtucb.models import TruncatedGP

    grid = torch.linspace(0, 1, 31, dtype=DT).unsqueeze(-1)

    def f(X):
        return torch.sin(6 * X)

    def model_factory(X, Y):
        return TruncatedGP(X, Y, alpha=1.0, v=2.0, constants="authors")

    h = run_bo_loop(
        observe=gaussian_observer(f, 0.1, torch.Generator().manual_seed(4)),
        initial_X=grid[:2], num_rounds=2, model_factory=model_factory,
        acquisition_factory=lambda model, s: HeavyTailedUCB(model),
        optimizer=FiniteArmOptimizer(grid), true_f=f, q=3,
    )
    assert [r.batch for r in h.rounds] == [1, 1, 1, 2, 2, 2]
    assert torch.unique(h.X[:3], dim=0).shape[0] == 3
    model = model_factory(h.initial_X, h.initial_Y)
    acqf = HeavyTailedUCB(model, X_pending=h.X[:1])
    torch.testing.assert_close(h.rounds[1].x, grid[acqf(grid.unsqueeze(1)).argmax()])
    assert h.model.train_X.shape[0] == 2 + 6


def test_batch_mtbkb_loop_is_reproducible_and_hallucination_draws_nothing():
    """MT-BKB with q = 2: the dictionary draws of a batch run are those of the real updates only
    (hallucinating pending points restores the shared generator), so the generator ends where a
    replay of the same real conditioning steps ends, and two runs agree exactly."""
    from botorch_mtucb.acquisition import TheoremThreeBeta
    from botorch_mtucb.models import NystromMultiTaskGP

    prob = make_rkhs_problem(2, seed=9)
    kern = icm_grid_model(prob, prob.grid[:2], prob.F[:2]).covar_module

    def run(gen):
        def model_factory(X, Y):
            return NystromMultiTaskGP(X, Y, covar_module=kern, noise=0.1, epsilon=0.5,
                                      horizon=20, generator=gen)

        return run_bo_loop(
            gaussian_observer(prob.f, 0.1, torch.Generator().manual_seed(1)), prob.grid[:1], 3,
            model_factory, scalarized_ucb_factory(TheoremThreeBeta(b=prob.b_paper, sigma=0.1)),
            FiniteArmOptimizer(prob.grid),
            ScalarizationSampler(2, "chebyshev", ref_point=prob.F.min(0).values),
            generator=torch.Generator().manual_seed(2), q=2,
        ), gen

    (a, ga), (b, gb) = run(torch.Generator().manual_seed(7)), run(torch.Generator().manual_seed(7))
    assert torch.equal(a.X, b.X) and torch.equal(ga.get_state(), gb.get_state())
    assert all(torch.unique(a.X[i:i + 2], dim=0).shape[0] == 2 for i in (0, 2, 4))
    g = torch.Generator().manual_seed(7)  # replay: build, then condition on the real rounds only
    m = NystromMultiTaskGP(a.initial_X, a.initial_Y, covar_module=kern, noise=0.1, epsilon=0.5,
                           horizon=20, generator=g)
    for i in (0, 2, 4):
        m = m.condition_on_observations(a.X[i:i + 2], a.Y[i:i + 2])
    assert torch.equal(g.get_state(), ga.get_state())
