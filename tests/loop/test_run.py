"""Tests for the one BO loop (paper 000, Algorithm 1); batches (q > 1): ``test_loop_batch.py``."""

from __future__ import annotations

import json

import pytest
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.model import Model

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    LinearScalarization,
    ScalarizationSampler,
    TheoremTwoBeta,
    sample_scalarization_weights,
)
from botorch_mtucb.loop import (
    BoxOptimizer,
    FiniteArmOptimizer,
    RoundRecord,
    gaussian_observer,
    run_bo_loop,
    scalarized_ucb_factory,
)
from botorch_mtucb.loop.callbacks import ProgressBar
from botorch_mtucb.loop.rounds import dictionary_size
from tests.acquisition.test_multi_task_ucb import icm_grid_model, make_rkhs_problem

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


def _rkhs_run(prob, seed: int, T: int, method: str, kind: str = "chebyshev", update="condition",
              q: int = 1, **extra):
    """MT-KB (Theorem-2 radius, paper's b) or uniform random search on the same problem."""
    n = prob.B.shape[0]
    grid = prob.grid
    X0 = grid[torch.randint(0, 101, (1,), generator=torch.Generator().manual_seed(seed))]
    sampler = ScalarizationSampler(n, kind, ref_point=prob.F.min(0).values)
    observe = gaussian_observer(prob.f, 0.1, torch.Generator().manual_seed(seed + 1))
    if method == "random":
        g = torch.Generator().manual_seed(seed + 2)

        def optimizer(acqf):
            return grid[torch.randint(0, 101, (1,), generator=g)]

        def acquisition_factory(model, s):
            return None

        def model_factory(X, Y):  # random search needs no model
            return None

        update = lambda model, x, y: None  # noqa: E731
    else:
        optimizer = FiniteArmOptimizer(grid)
        beta = TheoremTwoBeta(b=prob.b_paper, sigma=0.1, delta=0.1)
        acquisition_factory = scalarized_ucb_factory(beta, bound=method)

        def model_factory(X, Y):
            return icm_grid_model(prob, X, Y)

    return run_bo_loop(
        observe=observe,
        initial_X=X0,
        num_rounds=T,
        model_factory=model_factory,
        acquisition_factory=acquisition_factory,
        optimizer=optimizer,
        scalarization_sampler=sampler,
        true_f=prob.f,
        regret_X=grid,
        update=update,
        generator=torch.Generator().manual_seed(seed + 3),
        q=q,
        **extra,
    )


def test_mtkb_beats_random_search_on_rkhs_problem():
    T = 20
    wins, mt_avg, rs_avg = 0, 0.0, 0.0
    for seed in range(3):
        prob = make_rkhs_problem(2, seed=100 + seed)
        mt = float(_rkhs_run(prob, seed, T, "spectral").time_average_regret()[-1])
        rs = float(_rkhs_run(prob, seed, T, "random").time_average_regret()[-1])
        wins += mt < rs
        mt_avg += mt / 3
        rs_avg += rs / 3
    assert mt_avg < 0.6 * rs_avg
    assert wins >= 2


def test_history_records_and_regret_by_hand():
    prob = make_rkhs_problem(2, seed=7)
    T = 6
    h = _rkhs_run(prob, 0, T, "directional", kind="linear")
    assert [r.t for r in h.rounds] == list(range(1, T + 1))
    assert h.X.shape == (T, 1) and h.Y.shape == (T, 2)
    assert h.initial_X.shape == (1, 1) and h.initial_Y.shape == (1, 2)
    # λ_t: the sequence drawn from the loop's generator
    W = torch.stack([r.weights for r in h.rounds])
    g = torch.Generator().manual_seed(3)
    expected_W = torch.cat([sample_scalarization_weights(2, 1, "linear", g) for _ in range(T)])
    torch.testing.assert_close(W, expected_W)
    for r in h.rounds:
        s = LinearScalarization(r.weights)
        best = s(prob.F).max()
        assert abs(r.regret - float(best - s(prob.f(r.x.unsqueeze(0)))[0])) < 1e-12
        assert r.regret >= 0 and r.wall_time > 0 and r.beta > 0
    cum = h.cumulative_regret()
    torch.testing.assert_close(h.time_average_regret(), cum / torch.arange(1, T + 1))
    # the final model holds all data
    assert h.model.train_inputs[0].shape[0] == T + 1
    # JSON export round-trips
    blob = json.loads(json.dumps(h.to_json_dict()))
    assert len(blob["rounds"]) == T and blob["rounds"][2]["x"] == h.rounds[2].x.tolist()


def test_callbacks_and_progress_bar_see_every_record_and_change_no_draw():
    prob = make_rkhs_problem(2, seed=7)
    seen = []
    h = _rkhs_run(prob, 0, 4, "directional", q=2, callbacks=[seen.append], progress=True)
    assert seen == h.rounds and [r.t for r in seen] == list(range(1, 9))
    assert [r.batch for r in seen] == [1, 1, 2, 2, 3, 3, 4, 4]
    plain = _rkhs_run(prob, 0, 4, "directional", q=2)
    assert torch.equal(plain.X, h.X) and torch.equal(plain.Y, h.Y)
    torch.testing.assert_close(plain.regrets, h.regrets)


def test_progress_bar_tracks_rounds_and_average_regret():
    bar = ProgressBar(num_rounds=2, disable=True)
    for t, (batch, regret) in enumerate([(1, 0.5), (1, 0.25), (2, 0.0)], start=1):
        bar(RoundRecord(t=t, x=torch.zeros(1), y=torch.zeros(2), weights=None, regret=regret,
                        beta=None, wall_time=0.0, batch=batch))
    assert bar.round == 2 and bar.evaluations == 3
    assert bar.average_regret == pytest.approx(0.25)
    bar.close()


def test_condition_and_refit_give_the_same_run():
    prob = make_rkhs_problem(2, seed=8)
    a = _rkhs_run(prob, 1, 8, "directional", update="condition")
    b = _rkhs_run(prob, 1, 8, "directional", update="refit")
    assert torch.equal(a.X, b.X)
    torch.testing.assert_close(torch.tensor([r.beta for r in a.rounds]),
                               torch.tensor([r.beta for r in b.rounds]))


def test_box_optimizer_with_model_list():
    bounds = torch.tensor([[0.0, -1.0], [1.0, 1.0]], dtype=DT)

    def f(X):
        return torch.stack([-(X - 0.3).pow(2).sum(-1), -(X + 0.2).pow(2).sum(-1)], dim=-1)

    def model_factory(X, Y):
        models = [SingleTaskGP(X, Y[:, i : i + 1]) for i in range(2)]
        for m in models:
            m.covar_module.lengthscale = 0.5
        return ModelListGP(*models)

    g = torch.Generator().manual_seed(0)
    X0 = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(4, 2, generator=g, dtype=DT)
    dense = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(2000, 2, generator=g, dtype=DT)
    h = run_bo_loop(
        observe=gaussian_observer(f, 0.01, torch.Generator().manual_seed(1)),
        initial_X=X0,
        num_rounds=3,
        model_factory=model_factory,
        acquisition_factory=scalarized_ucb_factory(2.0, bound="spectral"),
        optimizer=BoxOptimizer(bounds, num_restarts=4, raw_samples=64, seed=0),
        scalarization_sampler=ScalarizationSampler(2, "chebyshev", ref_point=[-3.0, -3.0]),
        true_f=f,
        regret_X=dense,
        generator=torch.Generator().manual_seed(2),
    )
    assert ((h.X >= bounds[0]) & (h.X <= bounds[1])).all()
    assert all(r.regret >= 0 for r in h.rounds)
    assert all(m.train_inputs[0].shape == (7, 2) for m in h.model.models)


def test_single_objective_run_without_scalarization():
    grid = torch.linspace(0, 1, 51, dtype=DT).unsqueeze(-1)

    def f(X):
        return torch.sin(6 * X)

    calls = []

    def model_factory(X, Y):
        calls.append(X.shape[0])
        m = SingleTaskGP(X, Y, outcome_transform=None)
        m.covar_module.lengthscale = 0.2
        m.likelihood.noise = 0.01
        return m

    h = run_bo_loop(
        observe=gaussian_observer(f, 0.05, torch.Generator().manual_seed(3)),
        initial_X=grid[:1],
        num_rounds=12,
        model_factory=model_factory,
        acquisition_factory=lambda model, s: UpperConfidenceBound(model, beta=4.0),
        optimizer=FiniteArmOptimizer(grid),
        true_f=f,
        refit_every=5,
    )
    assert calls == [1, 6, 11]  # initial fit, then refits after rounds 5 and 10
    assert h.model.train_inputs[0].shape == (13, 1)
    assert all(r.weights is None for r in h.rounds)
    best = f(grid).max()
    for r in h.rounds:
        assert abs(r.regret - float(best - f(r.x.unsqueeze(0))[0, 0])) < 1e-12
    assert h.rounds[-1].regret < 0.05  # GP-UCB finds the peak of sin(6x) on the grid


def test_known_noise_model_is_refitted_instead_of_conditioned():
    grid = torch.linspace(0, 1, 21, dtype=DT).unsqueeze(-1)
    calls = []

    def model_factory(X, Y):  # the known variances are the factory's: 0.01 per reading
        calls.append(X.shape[0])
        m = SingleTaskGP(X, Y, train_Yvar=torch.full_like(Y, 0.01), outcome_transform=None)
        m.covar_module.lengthscale = 0.2
        return m

    h = run_bo_loop(
        observe=lambda X: torch.sin(6 * X),
        initial_X=grid[:2],
        num_rounds=3,
        model_factory=model_factory,
        acquisition_factory=lambda model, s: UpperConfidenceBound(model, beta=4.0),
        optimizer=FiniteArmOptimizer(grid),
    )
    assert calls == [2, 3, 4, 5]  # update="condition" refits: only the factory knows Yvar
    torch.testing.assert_close(h.model.likelihood.noise, torch.full((5,), 0.01, dtype=DT))


def test_continuous_regret_is_polished_beyond_the_grid():
    c = 0.3137

    def f(X):
        return -(X - c).square()

    def model_factory(X, Y):
        m = SingleTaskGP(X, Y, outcome_transform=None)
        m.covar_module.lengthscale = 0.3
        m.likelihood.noise = 1e-4
        return m

    coarse = torch.tensor([[0.0], [0.5], [1.0]], dtype=DT)
    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)

    def run(regret_bounds):
        return run_bo_loop(
            observe=gaussian_observer(f, 0.01, torch.Generator().manual_seed(5)),
            initial_X=torch.tensor([[0.9]], dtype=DT),
            num_rounds=4,
            model_factory=model_factory,
            acquisition_factory=lambda model, s: UpperConfidenceBound(model, beta=1.0),
            optimizer=BoxOptimizer(bounds, num_restarts=2, raw_samples=32, seed=0),
            true_f=f,
            regret_X=coarse,
            regret_bounds=regret_bounds,
        )

    grid_only, polished = run(None), run(bounds)
    torch.testing.assert_close(grid_only.X, polished.X)  # the metric does not steer the run
    for r_g, r_p in zip(grid_only.rounds, polished.rounds, strict=True):
        f_p, f_g = (float(f(r.x.unsqueeze(0))[0, 0]) for r in (r_p, r_g))
        assert abs(r_p.regret - (0.0 - f_p)) < 1e-9  # the true max of f is 0, at x = c
        assert abs(r_g.regret - (max(float(f(coarse).max()), f_g) - f_g)) < 1e-12
        assert r_p.regret > r_g.regret - 1e-6
    with pytest.raises(ValueError, match="regret_bounds"):
        run(bounds.T)


def test_bad_arguments_raise():
    grid = torch.linspace(0, 1, 11, dtype=DT).unsqueeze(-1)
    kwargs = dict(
        observe=lambda X: X,
        initial_X=grid[:2],
        num_rounds=1,
        model_factory=lambda X, Y: None,
        acquisition_factory=lambda m, s: None,
        optimizer=BoxOptimizer(torch.tensor([[0.0], [1.0]], dtype=DT)),
    )
    with pytest.raises(ValueError, match="regret_X"):
        run_bo_loop(**kwargs, true_f=lambda X: X)
    with pytest.raises(ValueError, match="num_rounds"):
        run_bo_loop(**{**kwargs, "num_rounds": -1})
    with pytest.raises(ValueError, match="initial_X"):
        run_bo_loop(**{**kwargs, "initial_X": torch.zeros(3, dtype=DT)})
    with pytest.raises(ValueError, match="update"):
        run_bo_loop(**kwargs, update="fantasize")
    with pytest.raises(ValueError, match="refit_every"):
        run_bo_loop(**kwargs, refit_every=-2)
    with pytest.raises(ValueError, match="true_f"):
        run_bo_loop(**kwargs, regret_bounds=torch.tensor([[0.0], [1.0]], dtype=DT))
    with pytest.raises(ValueError, match="bounds"):
        BoxOptimizer(torch.tensor([[1.0], [0.0]], dtype=DT))
    with pytest.raises(ValueError, match="choices"):
        FiniteArmOptimizer(torch.zeros(0, 1, dtype=DT))
    with pytest.raises(ValueError, match="scalarization_sampler"):
        scalarized_ucb_factory(1.0)(None, None)


def test_data_sampler_gets_the_observations_of_the_round():
    """With ref_point='data' each round's s_λ is from_data(λ_t, all observations so far)."""
    prob = make_rkhs_problem(2, seed=1)
    seen = []

    class Recording(ScalarizationSampler):
        def __call__(self, generator=None, Y=None):
            seen.append(Y.clone())
            return super().__call__(generator, Y)

    sampler = Recording(2, ref_point="data", front="observed")
    h = run_bo_loop(
        observe=prob.f, initial_X=prob.grid[:3], num_rounds=4,
        model_factory=lambda X, Y: icm_grid_model(prob, X, Y),
        acquisition_factory=scalarized_ucb_factory(1.0),
        optimizer=FiniteArmOptimizer(prob.grid),
        scalarization_sampler=sampler, true_f=prob.f, generator=torch.Generator().manual_seed(5),
    )
    assert [y.shape[0] for y in seen] == [3, 4, 5, 6]
    torch.testing.assert_close(seen[-1], torch.cat([h.initial_Y, h.Y[:-1]]))
    g = torch.Generator().manual_seed(5)
    for r, Y in zip(h.rounds, seen, strict=True):
        w = sample_scalarization_weights(2, 1, "chebyshev", g)[0]
        s = ChebyshevScalarization.from_data(w, Y)
        torch.testing.assert_close(r.weights, s.weights)
        best = s(prob.F).max()
        assert abs(r.regret - float(best - s(prob.f(r.x.unsqueeze(0)))[0])) < 1e-12


class _SizedModel(Model):
    """A model from elsewhere that declares only a dictionary size (``DictionaryModel``)."""

    num_outputs = 1

    def posterior(self, X, **kwargs):  # pragma: no cover - not used
        raise NotImplementedError

    @property
    def dictionary_size(self) -> int:
        return 7


def test_dictionary_size_reads_the_protocol_of_any_model():
    assert dictionary_size(_SizedModel()) == 7
    assert dictionary_size(None) is None
