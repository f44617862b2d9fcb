"""The ``Example:`` blocks of the loop, utils, kernels, linalg and settings modules run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import botorch_mtucb.kernels
import botorch_mtucb.linalg
import botorch_mtucb.loop
import botorch_mtucb.utils

MODULES = sorted(
    {"botorch_mtucb", "botorch_mtucb.settings"}
    | {
        info.name
        for package in (botorch_mtucb.kernels, botorch_mtucb.linalg, botorch_mtucb.loop,
                        botorch_mtucb.utils)
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + ".")
    }
)


@pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
    "ignore:Optimization failed:RuntimeWarning",
)
@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
