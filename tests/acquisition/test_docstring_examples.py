"""The ``Example:`` blocks of the acquisition modules and of the model contracts run as shown."""

from __future__ import annotations

import doctest
import importlib
import warnings

import pytest
import torch

MODULES = [
    "botorch_mtucb.protocols",
    "botorch_mtucb.acquisition.beta",
    "botorch_mtucb.acquisition.dedup",
    "botorch_mtucb.acquisition.heavy_tailed",
    "botorch_mtucb.acquisition.multi_task_ucb",
    "botorch_mtucb.acquisition.optimizers",
    "botorch_mtucb.acquisition.pending",
    "botorch_mtucb.acquisition.protocols",
    "botorch_mtucb.acquisition.thompson",
    "botorch_mtucb.acquisition.trust_region",
    "botorch_mtucb.acquisition.scalarization.base",
    "botorch_mtucb.acquisition.scalarization.chebyshev",
    "botorch_mtucb.acquisition.scalarization.linear",
    "botorch_mtucb.acquisition.scalarization.sampling",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module, name, globs={**vars(module), "torch": torch})
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BoTorch's input-data warnings on tiny examples
        for test in tests:
            runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, "".join(report)
