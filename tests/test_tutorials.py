"""The tutorial notebooks run top to bottom in FAST mode, and are committed without outputs.

Each notebook is executed with nbclient on a fresh ``python3`` Jupyter kernel, with
``BOTORCH_MTUCB_FAST=1`` and a temporary working directory (nothing is written into the
repository). Skips, each with its reason: nbclient / nbformat / ipykernel missing, no
``python3`` kernelspec installed (CI can create it with ``python -m ipykernel install
--user``), and Ax missing for notebook 4.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"
NOTEBOOKS = [
    "01_correlated_objectives.ipynb",
    "02_scaling_up_mtbkb.ipynb",
    "03_heavy_tailed_noise.ipynb",
    "04_ax.ipynb",
]
KERNEL = "python3"
CELL_TIMEOUT_S = 300  # generous: the whole notebook takes well under a minute in FAST mode


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _kernelspec_problem() -> str | None:
    """Why a ``python3`` kernel cannot be started, or ``None`` if it can."""
    missing = _missing("nbclient", "nbformat", "ipykernel", "jupyter_client")
    if missing:
        return (
            f"notebook execution needs {', '.join(missing)} "
            "(pip install 'botorch-mtucb[tutorials]')"
        )
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL)
    except NoSuchKernel:
        return (
            f"no Jupyter kernelspec named {KERNEL!r} (create one with "
            "`python -m ipykernel install --user`)"
        )
    return None


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_committed_without_outputs(name):
    nb = json.loads((TUTORIALS / name).read_text())
    assert nb["metadata"]["kernelspec"]["name"] == KERNEL
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code_cells, "a tutorial without code"
    for cell in code_cells:
        assert cell["outputs"] == [], f"{name}: committed with outputs (run tutorials/_build.py)"
        assert cell["execution_count"] is None
    # The FAST switch is the first code cell's job; every notebook must honour it.
    assert "BOTORCH_MTUCB_FAST" in "".join(code_cells[0]["source"])


def test_notebooks_match_generator():
    """The committed notebooks are exactly what ``tutorials/_build.py`` writes."""
    if _missing("nbformat"):
        pytest.skip("nbformat is not installed")
    import runpy
    import tempfile

    build = runpy.run_path(str(TUTORIALS / "_build.py"))["build"]
    with tempfile.TemporaryDirectory() as tmp:
        for path in build(Path(tmp)):
            committed = (TUTORIALS / path.name).read_text()
            assert path.read_text() == committed, f"{path.name} is stale: run tutorials/_build.py"
    assert sorted(build.__globals__["NOTEBOOKS"]) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_fast_mode(name, tmp_path, monkeypatch):
    reason = _kernelspec_problem()
    if reason:
        pytest.skip(reason)
    if name == "04_ax.ipynb" and _missing("ax"):
        pytest.skip("the Ax tutorial needs ax-platform (pip install 'botorch-mtucb[ax]')")
    import nbformat
    from nbclient import NotebookClient

    # The kernel inherits this environment: FAST mode and few threads (CI has 2 cores).
    monkeypatch.setenv("BOTORCH_MTUCB_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = nbformat.read(TUTORIALS / name, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError (with the traceback) if a cell fails

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "FAST mode" in text  # the notebook saw the switch
    assert not any(o.get("output_type") == "error" for o in outputs)
    assert list(tmp_path.iterdir()) == [], "the notebook wrote files into its working directory"
