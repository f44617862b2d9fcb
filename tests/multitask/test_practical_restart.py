"""WarmStartPracticalFactory's restarts: never worse than the warm or the cold fit."""

import warnings

import pytest
import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.multitask.practical import (
    WarmStartPracticalFactory,
    fit_objective_value,
    practical_multitask_gp,
)

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _noisy(seed: int, N: int):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, 2, generator=g, dtype=DT)
    F = torch.stack([torch.sin(3 * X[:, 0]) + X[:, 1], torch.cos(3 * X[:, 1]) * X[:, 0]], -1)
    return X, F + 0.3 * torch.randn(N, 2, generator=g, dtype=DT)


def test_fit_objective_value_is_gpytorchs_mll() -> None:
    X, Y = _noisy(0, 12)
    model = practical_multitask_gp(X, Y, BOUNDS)
    mll = ExactMarginalLogLikelihood(model.likelihood, model).train()
    with torch.no_grad():
        ref = float(mll(model(*model.train_inputs), model.train_targets))
    model.eval()
    assert fit_objective_value(model) == pytest.approx(ref, abs=1e-8)
    assert not model.training


@pytest.mark.parametrize("seed", [5, 8, 10])  # seeds where the warm start alone ends worse
def test_restart_is_never_worse_than_warm_or_cold(seed: int) -> None:
    X, Y = _noisy(seed, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = WarmStartPracticalFactory(BOUNDS, restart=False)
        plain(X[:6], Y[:6])
        warm = fit_objective_value(plain(X, Y))
        cold = fit_objective_value(practical_multitask_gp(X, Y, BOUNDS))
        factory = WarmStartPracticalFactory(BOUNDS)
        factory(X[:6], Y[:6])
        best = fit_objective_value(factory(X, Y))
    assert cold > warm + 1e-3  # the case the restarts are for
    assert best >= max(warm, cold) - 1e-9
    assert factory.num_restarts_kept >= 1 and plain.num_restarts_kept == 0
    assert factory._previous is not None and fit_objective_value(factory._previous) == best


def test_restart_schedule_picks_the_cold_repeats() -> None:
    X, Y = _noisy(5, 30)
    calls = []

    def every_other(t: int, N: int, N_cold: int) -> bool:
        calls.append((t, N, N_cold))
        return t % 2 == 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        factory = WarmStartPracticalFactory(BOUNDS, restart=every_other)
        for N in (6, 8, 10, 12, 30):
            model = factory(X[:N], Y[:N])
        always = WarmStartPracticalFactory(BOUNDS)
        for N in (6, 8, 10, 12, 30):
            best = always(X[:N], Y[:N])
    # asked once per warm-started call, with the rows of the last cold fit
    assert calls == [(1, 8, 6), (2, 10, 6), (3, 12, 10), (4, 30, 10)]
    # on the last call (t = 4) the schedule restarts: never worse than its cold fit
    cold = fit_objective_value(practical_multitask_gp(X, Y, BOUNDS))
    assert fit_objective_value(model) >= cold - 1e-9
    assert fit_objective_value(best) >= cold - 1e-9


def test_restart_schedule_sees_the_data_rows_in_sparse_mode() -> None:
    """Above ``sparse_above`` the hyperparameters are fitted on a subset of fixed size; the
    schedule still measures the data's growth (all rows), so a geometric schedule keeps
    restarting as the data grow instead of seeing the subset's constant size."""
    X, Y = _noisy(6, 120)
    calls = []

    def grows_by_half(t: int, N: int, N_cold: int) -> bool:
        calls.append((t, N, N_cold))
        return N >= 1.5 * N_cold

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        factory = WarmStartPracticalFactory(BOUNDS, restart=grows_by_half, sparse_above=10,
                                            fit_subset_size=10,
                                            generator=torch.Generator().manual_seed(0))
        for N in (8, 20, 40, 60, 120):
            factory(X[:N], Y[:N])
    assert calls == [(1, 20, 8), (2, 40, 20), (3, 60, 40), (4, 120, 60)]


def test_restart_must_be_a_bool_or_a_schedule() -> None:
    with pytest.raises(ValueError, match="`restart` must be a bool or a callable"):
        WarmStartPracticalFactory(BOUNDS, restart="sometimes")
