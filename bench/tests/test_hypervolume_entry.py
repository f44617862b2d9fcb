"""The ``MT-UCB-HV`` registry entry: MT-UCB with the scale-free hypervolume scalarization.

References: ``HypervolumeScalarization.from_data`` with the model's payoff table (the loop's
default sampler with ``kind="hypervolume"``), λ drawn here from the stream the entry documents
(trial seed, number of observations), Zhang & Golovin's s_λ written out with z and the ranges.
"""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    HypervolumeScalarization,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
    predicted_anchors,
    sample_scalarization_weights,
)
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
from mtucb_bench.algorithms import RunConfig, get_algorithm, hypervolume_weights
from mtucb_bench.mo_suite_base import sobol_points
from mtucb_bench.mo_suite_problems import make_suite_problem
from mtucb_bench.multi_task_problems import rkhs_problem
from mtucb_bench.runner import run_trial

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::linear_operator.utils.warnings.NumericalWarning",
)


def test_entry_is_mt_ucb_with_the_scale_free_hypervolume_scalarization() -> None:
    p = make_suite_problem("branin-currin", units="raw")
    cfg = RunConfig(horizon=3, bound="directional", seed=7)
    spec = get_algorithm("mt-ucb-hv")
    assert spec.name == "MT-UCB-HV" and spec.practical and spec.tunable_width
    setup, ref_setup = spec.build(p, cfg), get_algorithm("MT-UCB").build(p, cfg)
    assert isinstance(setup.model_factory, WarmStartPracticalFactory)
    assert (setup.update, setup.refit_every, setup.optimizer) == (
        ref_setup.update, ref_setup.refit_every, ref_setup.optimizer)
    X = sobol_points(6, p.bounds, 0)
    Y = p.f(X)
    model = setup.model_factory(X, Y)
    cheb = ChebyshevScalarization(torch.tensor([0.3, 0.7], dtype=DT), p.ref_point)
    acqf = setup.acquisition_factory(model, cheb)
    assert isinstance(acqf, ScalarizedMultiTaskUCB) and float(acqf.beta) == 1.0
    assert acqf.bound == "directional" and acqf.model is model
    sc = acqf.scalarization
    assert type(sc) is HypervolumeScalarization
    # λ: the entry's own stream (seed 2_000_003 · 7 + N), uniform on the positive sphere
    g = torch.Generator().manual_seed(2_000_003 * 7 + 6)
    lam = sample_scalarization_weights(2, 1, "hypervolume", generator=g)[0]
    torch.testing.assert_close(sc.sphere_weights, lam)
    assert torch.linalg.vector_norm(lam) == pytest.approx(1.0) and (lam > 0).all()
    P = predicted_anchors(model, p.bounds, Y, seed=7 + Y.shape[0])  # the model's payoff table
    ref = HypervolumeScalarization.from_data(lam, Y, predicted=P, span="front")
    torch.testing.assert_close(sc.ref_point, ref.ref_point)
    torch.testing.assert_close(sc.scale, ref.scale)
    # Zhang & Golovin's s_λ of the normalised outcomes, written out
    by_hand = ((Y - ref.ref_point) / (ref.scale * lam)).min(-1).values.clamp_min(0) ** 2
    torch.testing.assert_close(sc(Y), by_hand)
    # the runner's λ (Chebyshev or linear law) does not enter; the round (N) does
    other = setup.acquisition_factory(model, LinearScalarization(torch.tensor([0.9, 0.1])))
    torch.testing.assert_close(other.scalarization.sphere_weights, lam)
    assert not torch.allclose(hypervolume_weights(2, 7, 7), lam)
    assert acqf(X[:3].unsqueeze(-2)).shape == (3,)


def test_mt_ucb_keeps_a_given_hypervolume_scalarization_scale_free() -> None:
    """MT-UCB handed a hypervolume s_λ (a hypervolume run sampler) rebuilds it from the data
    with the same λ, as it does a Chebyshev one."""
    p = make_suite_problem("branin-currin", units="raw")
    setup = get_algorithm("MT-UCB").build(p, RunConfig(horizon=3, bound="directional"))
    X = sobol_points(6, p.bounds, 0)
    Y = p.f(X)
    model = setup.model_factory(X, Y)
    lam = torch.tensor([0.6, 0.8], dtype=DT)
    sc = setup.acquisition_factory(model, HypervolumeScalarization(lam, p.ref_point)).scalarization
    P = predicted_anchors(model, p.bounds, Y, seed=0 + Y.shape[0])
    ref = HypervolumeScalarization.from_data(lam, Y, predicted=P, span="front")
    assert type(sc) is HypervolumeScalarization
    torch.testing.assert_close(sc.ref_point, ref.ref_point)
    torch.testing.assert_close(sc.scale, ref.scale)


def test_entry_runs_two_rounds() -> None:
    p = make_suite_problem("branin-currin")
    torch.manual_seed(0)
    trial = run_trial(p, "MT-UCB-HV", 2, seed=0, initial_design="sobol:6")
    X = trial.history.X
    assert X.shape == (2, 2) and trial.hypervolume is not None
    lo, hi = p.bounds
    assert ((X >= lo) & (X <= hi)).all()
    assert trial.regret.shape == (2,) and (trial.regret >= 0).all()
    arms = run_trial(rkhs_problem(2, 0), "MT-UCB-HV", 2, seed=0)  # finite arms: observed front
    assert arms.history.X.shape[0] == 2 and arms.bayes is not None
