"""The ``Example:`` blocks of the product's docstrings run as written (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest
import torch

#: Packages whose every module's examples are run (with the package itself).
PACKAGES = (
    "botorch_mtucb.acquisition",
    "botorch_mtucb.acquisition.scalarization",
    "botorch_mtucb.features",
    "botorch_mtucb.heavy_tailed",
    "botorch_mtucb.kernels",
    "botorch_mtucb.linalg",
    "botorch_mtucb.loop",
    "botorch_mtucb.sampling",
    "botorch_mtucb.theory",
    "botorch_mtucb.utils",
)
#: Single modules whose examples are run.
SINGLE = ("botorch_mtucb", "botorch_mtucb.protocols", "botorch_mtucb.settings")


def _modules() -> list[str]:
    names = set(SINGLE)
    for package in PACKAGES:
        names.add(package)
        path = importlib.import_module(package).__path__
        names.update(m.name for m in pkgutil.iter_modules(path, package + ".") if not m.ispkg)
    return sorted(names)


#: Modules every public object of which is documented with an example.
MUST_HAVE_EXAMPLES = {
    name for name in _modules()
    if name.startswith("botorch_mtucb.acquisition.") and not name.endswith("__init__")
    and name not in PACKAGES
} | {"botorch_mtucb.protocols"}


@pytest.mark.parametrize("name", _modules())
def test_examples_run(name: str) -> None:
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
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, "".join(report)
