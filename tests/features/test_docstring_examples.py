"""The ``Example:`` blocks of ``botorch_mtucb.features`` run as written (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import botorch_mtucb.features as package

MODULES = sorted(
    ["botorch_mtucb.features"]
    + [f"botorch_mtucb.features.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    torch.manual_seed(0)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
