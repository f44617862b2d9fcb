"""The suite's BoTorch baselines evaluate their noisy baselines at the observed inputs."""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.acquisition import ChebyshevScalarization
from botorch_mtucb.utils import sobol_initial_design
from mtucb_bench.algorithm_types import RunConfig
from mtucb_bench.algorithms import get_algorithm
from mtucb_bench.mo_suite_problems import make_suite_problem


@pytest.mark.parametrize("name", ["qLogNParEGO", "qLogNEHVI"])
def test_x_baseline_is_in_the_problem_units_on_a_box_that_is_not_the_unit_cube(name):
    """VehicleSafety lives on [1, 3]^5: an eval-mode SingleTaskGP with ``Normalize`` holds
    unit-cube ``train_inputs``; handing those to the acquisition (which normalises
    ``X_baseline`` again) evaluated the baseline at the wrong points."""
    problem = make_suite_problem("vehicle-safety", seed=0)
    X = sobol_initial_design(problem.bounds, n=8, seed=0)
    Y = problem.f(X)
    setup = get_algorithm(name).build(problem, RunConfig(horizon=2, seed=0))
    model = setup.model_factory(X, Y)
    lam = torch.full((Y.shape[-1],), 1.0 / Y.shape[-1], dtype=X.dtype)
    acqf = setup.acquisition_factory(model, ChebyshevScalarization(lam, ref_point=Y.min(0).values))
    base = acqf.X_baseline
    assert base.shape[-1] == X.shape[-1] and base.shape[-2] >= 1
    # every baseline row is an observed input (pruning may drop some), in the problem's units
    dist = torch.cdist(base.reshape(-1, X.shape[-1]), X).min(-1).values
    assert dist.max() < 1e-10
