"""The ``Example:`` blocks of ``botorch_mtucb.heavy_tailed`` run as written (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import botorch_mtucb.heavy_tailed as package

MODULES = sorted(
    ["botorch_mtucb.heavy_tailed"]
    + [f"botorch_mtucb.heavy_tailed.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    torch.manual_seed(0)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
