"""The README's MT-UCB examples run as written (for fewer rounds) with the practical defaults."""

import re
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
    "ignore:Optimization failed:RuntimeWarning",
)


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_loop_example_runs():
    from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
    from botorch_mtucb.models import ExactMultiTaskGP
    from botorch_mtucb.utils import initial_design_size, sobol_initial_design

    code = next(b for b in _blocks() if "ScalarizedMultiTaskUCB" in b)
    assert "for t in range(10):" in code
    ns: dict = {}
    exec(compile(code.replace("range(10)", "range(2)"), "README.md", "exec"), ns)
    X, Y, bounds = ns["X"], ns["Y"], ns["bounds"]
    N0 = initial_design_size(2)
    assert X.shape == (N0 + 2, 2) and Y.shape == (N0 + 2, 2)
    assert ((X >= 0) & (X <= 1)).all()  # BraninCurrin's domain is the unit square
    torch.testing.assert_close(X[:N0], sobol_initial_design(bounds, seed=0))
    torch.testing.assert_close(Y, ns["problem"](X))
    model, acqf = ns["model"], ns["acqf"]
    assert isinstance(model, ExactMultiTaskGP) and model.learn_noise  # the practical model
    assert isinstance(acqf, ScalarizedMultiTaskUCB)
    s = acqf.scalarization
    assert isinstance(s, ChebyshevScalarization) and s.augmentation == 0.05  # scale-free
    assert acqf.beta == ScalarizedMultiTaskUCB.__init__.__defaults__[0]  # default width


def test_readme_run_bo_loop_example_runs():
    code = next(b for b in _blocks() if "run_bo_loop(" in b)
    loop = next(b for b in _blocks() if "ScalarizedMultiTaskUCB" in b)
    setup = loop.split("for t in range")[0]  # imports and the problem
    assert "num_rounds=30" in code
    ns: dict = {}
    exec(compile(setup + code.replace("num_rounds=30", "num_rounds=2"), "README.md", "exec"), ns)
    h = ns["history"]
    assert ns["X"].shape == (2, 2) and ns["Y"].shape == (2, 2)
    assert h.initial_X.shape == (5, 2) and len(h.rounds) == 2
    assert ns["X_front"].dim() == 2 and ns["X_front"].shape[-1] == 2


def test_readme_commands_are_the_ones_ci_runs():
    """The quickstart, test and docs commands as the README states them; CI runs the latter two."""
    text = README.read_text()
    quickstart = (
        'pip install torch==2.13.0 && pip install -e ".[examples]" && python examples/quickstart.py'
    )
    tests = (
        'pip install torch==2.13.0 && pip install -e ".[dev,ax,tutorials]" -e "./bench[dask]" '
        "&& python -m pytest -q"
    )
    docs = (
        'pip install -e ".[docs]" -e ./bench && '
        "sphinx-build -W --keep-going -b html docs docs/_build/html"
    )
    for command in (quickstart, tests, docs):
        assert f"\n{command}\n" in text, command
    ci = README.parent / ".ci" / "run"
    if ci.is_file():
        assert f"\n{tests}\n" in ci.read_text()
    # The harness is its own command; the README names no removed path.
    assert "mtucb-bench run" in text and "docs/benchmarks.md" in text
    for old in ("python -m botorch_mtucb.benchmarks", "benchmarks/README.md", "models.protocols"):
        assert old not in text
