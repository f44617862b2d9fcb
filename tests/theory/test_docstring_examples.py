"""The ``Example:`` blocks of ``botorch_mtucb.theory`` run as written (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import botorch_mtucb.theory as package

MODULES = sorted(
    ["botorch_mtucb.theory"]
    + [f"botorch_mtucb.theory.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    torch.manual_seed(0)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
