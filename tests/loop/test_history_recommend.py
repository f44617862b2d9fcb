"""LoopHistory.recommended_pareto_set: the run's model-based Pareto set, and its save/load."""

from __future__ import annotations

import json
import math

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.test_functions.multi_objective import BraninCurrin

from botorch_mtucb.acquisition.recommend import recommend_pareto_set
from botorch_mtucb.loop import LoopHistory, RoundRecord, run_bo_loop

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


@pytest.fixture(scope="module")
def noisy_run() -> LoopHistory:
    """Two rounds of the default loop on BraninCurrin with 10 % noise; round 2 fails."""
    problem = BraninCurrin(negate=True).to(DT)
    g = torch.Generator().manual_seed(0)
    calls = []

    def observe(X):
        calls.append(X)
        if len(calls) == 3:  # the second round's evaluation fails (skipped)
            return torch.full((X.shape[0], 2), float("nan"), dtype=DT)
        Y = problem(X)
        return Y + torch.tensor([30.0, 1.0], dtype=DT) * torch.randn(Y.shape, generator=g,
                                                                      dtype=DT)

    return run_bo_loop(observe, num_rounds=3, bounds=problem.bounds, on_failure="skip",
                       generator=torch.Generator().manual_seed(1))


def _mask(minimize, n=2):
    m = torch.zeros(n, dtype=torch.bool)
    m[list(minimize)] = True
    return m


def test_history_recommends_with_its_final_model(noisy_run: LoopHistory) -> None:
    h = noisy_run
    assert h.failed.tolist() == [False, True, False]
    X = h.observed_X
    assert X.shape[0] == h.initial_X.shape[0] + 2  # the failed point is not a candidate
    rec = h.recommended_pareto_set(return_details=True)
    expected = recommend_pareto_set(h.model, X, return_details=True)
    assert torch.equal(rec.indices, expected.indices)
    assert torch.equal(rec.X, X[rec.indices])
    assert torch.equal(h.recommended_pareto_set(), rec.X)
    assert rec.X.shape == (rec.indices.numel(), 2) and rec.indices.numel() >= 1
    # the posterior means of the recommendation, not the observations
    with torch.no_grad():
        mean = h.model.posterior(X).mean
    torch.testing.assert_close(rec.mean, mean[rec.indices])


def test_minimize_from_the_history_or_the_call(noisy_run: LoopHistory) -> None:
    h = noisy_run
    X = h.observed_X
    for minimize in [(0,), (1,), (0, 1)]:
        expected = recommend_pareto_set(h.model, X, minimize=_mask(minimize))
        assert torch.equal(h.recommended_pareto_set(minimize=list(minimize)), expected)
        stored = LoopHistory(h.initial_X, h.initial_Y, list(h.rounds), model=h.model,
                             minimize=minimize)
        assert torch.equal(stored.recommended_pareto_set(), expected)
    # an explicit argument overrides the stored one
    stored = LoopHistory(h.initial_X, h.initial_Y, list(h.rounds), model=h.model, minimize=(0,))
    assert torch.equal(stored.recommended_pareto_set(minimize=[1]),
                       recommend_pareto_set(h.model, X, minimize=_mask((1,))))


def test_another_model_and_errors(noisy_run: LoopHistory) -> None:
    h = noisy_run
    other = SingleTaskGP(h.observed_X, h.observed_Y)
    assert torch.equal(h.recommended_pareto_set(model=other),
                       recommend_pareto_set(other, h.observed_X))
    bare = LoopHistory(h.initial_X, h.initial_Y, list(h.rounds))
    with pytest.raises(ValueError, match="`model` is needed"):
        bare.recommended_pareto_set()
    for bad in ([2], [-1], [True], [0.5]):
        with pytest.raises(ValueError, match=r"`minimize` must hold objective indices in \[0, 2\)"):
            h.recommended_pareto_set(minimize=bad)


def test_minimize_survives_save_and_load(tmp_path, noisy_run: LoopHistory) -> None:
    h = noisy_run
    stored = LoopHistory(h.initial_X, h.initial_Y, list(h.rounds), seed=h.seed,
                         rng_seed=h.rng_seed, generator_state=h.generator_state, minimize=(1,))
    path = tmp_path / "run.json"
    stored.save(path)
    back = LoopHistory.load(path)
    assert back.minimize == (1,)
    assert back.model is None
    assert torch.equal(back.observed_X, stored.observed_X)
    assert torch.equal(back.recommended_pareto_set(model=h.model),
                       recommend_pareto_set(h.model, h.observed_X, minimize=_mask((1,))))
    assert LoopHistory.load(path).to_json_dict() == stored.to_json_dict()


def test_default_and_older_files_load_without_minimize(tmp_path) -> None:
    h = LoopHistory(initial_X=torch.zeros(2, 1, dtype=DT), initial_Y=torch.zeros(2, 2, dtype=DT))
    h.rounds.append(RoundRecord(t=1, x=torch.ones(1, dtype=DT), y=torch.ones(2, dtype=DT),
                                weights=None, regret=None, beta=None, wall_time=0.0, batch=1))
    blob = h.to_json_dict()
    assert blob["minimize"] is None
    assert json.loads(json.dumps(blob)) == blob
    del blob["minimize"]  # a file written without the field
    assert LoopHistory.from_json_dict(blob).minimize is None
    assert LoopHistory.from_json_dict(h.to_json_dict()).minimize is None


def test_run_bo_loop_records_its_minimize_for_the_recommendation() -> None:
    problem = BraninCurrin(negate=True).to(DT)
    h = run_bo_loop(problem, num_rounds=1, bounds=problem.bounds, minimize=[1],
                    generator=torch.Generator().manual_seed(0))
    assert h.minimize == (1,)
    assert torch.equal(h.recommended_pareto_set(),
                       recommend_pareto_set(h.model, h.observed_X, minimize=[False, True]))


# --------------------------------------------------------------- recommended_point (1 objective)


def _trusted_argmax(model, X) -> int:
    """Brute force: the row with the largest mean among rows with an unflagged reading."""
    flags = getattr(model, "suspicious", None)
    T = model.train_X if flags is not None else X
    with torch.no_grad():
        mean = model.posterior(X).mean.reshape(-1)
    best, index = -math.inf, None
    for i in range(X.shape[0]):
        readings = [j for j in range(T.shape[0]) if bool((T[j] == X[i]).all())]
        if flags is not None and readings and all(bool(flags[j]) for j in readings):
            continue
        if float(mean[i]) > best:
            best, index = float(mean[i]), i
    return index


def test_recommended_point_skips_a_failure_reading_and_failed_rounds() -> None:
    from botorch_mtucb.models import robust_gp

    g = torch.Generator().manual_seed(3)
    X0 = torch.rand(14, 2, generator=g, dtype=DT)
    f = lambda X: torch.sin(4 * X[:, :1]) - (X[:, 1:] - 0.4) ** 2  # noqa: E731
    Y0 = f(X0) + 0.01 * torch.randn(14, 1, generator=g, dtype=DT)
    Y0[5] = 30.0  # a failed sensor: the best observation
    h = LoopHistory(initial_X=X0, initial_Y=Y0)
    for t, x in enumerate(torch.rand(3, 2, generator=g, dtype=DT), start=1):
        failed = t == 2
        y = torch.full((1,), float("nan"), dtype=DT) if failed else f(x[None])[0]
        h.rounds.append(RoundRecord(t=t, x=x, y=y, weights=None, regret=None, beta=None,
                                    wall_time=0.0, batch=t, failed=failed))
    X, Y = h.observed_X, h.observed_Y
    assert X.shape == (16, 2)  # the failed round is not a candidate
    h.model = robust_gp(X, Y)
    assert bool(h.model.suspicious[5])
    x = h.recommended_point()
    index = _trusted_argmax(h.model, X)
    assert index != 5 and torch.equal(x, X[index : index + 1])
    # a plain GP trusts every reading: its argmax of the mean
    plain = SingleTaskGP(X, Y)
    assert torch.equal(h.recommended_point(plain), X[_trusted_argmax(plain, X)].unsqueeze(0))


def test_recommended_point_refusals(noisy_run: LoopHistory) -> None:
    with pytest.raises(ValueError, match="recommended_pareto_set"):
        noisy_run.recommended_point()  # two objectives
    X = torch.rand(6, 1, dtype=DT)
    with pytest.raises(ValueError, match="`model` is needed"):
        LoopHistory(initial_X=X, initial_Y=X.sin()).recommended_point()
    with pytest.raises(ValueError, match="negate"):
        LoopHistory(initial_X=X, initial_Y=X.sin(), model=SingleTaskGP(X, X.sin()),
                    minimize=(0,)).recommended_point()


def test_single_objective_run_recommends_with_its_final_model() -> None:
    g = torch.Generator().manual_seed(2)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)

    def observe(X):
        return -(X - 0.3).square().sum(-1, keepdim=True) + 0.01 * torch.randn(
            X.shape[0], 1, generator=g, dtype=DT)

    from botorch_mtucb.acquisition import robust_acquisition
    from botorch_mtucb.models import robust_gp

    h = run_bo_loop(observe, num_rounds=2, bounds=bounds,
                    model_factory=lambda X, Y: robust_gp(X, Y, bounds),
                    acquisition_factory=lambda model, s: robust_acquisition(model),
                    generator=torch.Generator().manual_seed(4))
    X = h.observed_X
    assert h.model.train_X.shape[0] == X.shape[0]  # the final model saw every point
    assert torch.equal(h.recommended_point(), X[_trusted_argmax(h.model, X)].unsqueeze(0))
