"""The tutorials (jupytext percent-format ``tutorials/*.py``) run top to bottom in FAST mode.

Each tutorial is turned into a notebook in memory with jupytext and executed with nbclient on
a fresh ``python3`` Jupyter kernel, with ``BOTORCH_MTUCB_FAST=1`` and a temporary working
directory (nothing is written into the repository): the same thing Jupyter does when it
opens the ``.py`` file, and what the documentation build does (myst-nb). Skips, each with its
reason: jupytext / nbclient / nbformat / ipykernel missing, no ``python3`` kernelspec
installed (CI creates it with ``python -m ipykernel install``), and Ax missing for tutorial 4.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"
SOURCES = [
    "01_correlated_objectives.py",
    "02_scaling_up_mtbkb.py",
    "03_heavy_tailed_noise.py",
    "04_ax.py",
]
KERNEL = "python3"
CELL_TIMEOUT_S = 300  # generous: a whole tutorial takes seconds in FAST mode


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _need_jupytext() -> None:
    if _missing("jupytext", "nbformat"):
        pytest.skip(
            "reading the tutorials needs jupytext and nbformat "
            "(pip install 'botorch-mtucb[docs]', or pip install jupytext)"
        )


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


def test_the_tutorial_list_is_complete():
    """Every numbered tutorial is executed here (and rendered by the docs)."""
    assert sorted(p.name for p in TUTORIALS.glob("[0-9]*.py")) == SOURCES


def test_no_notebook_is_committed():
    """Tutorials are kept as jupytext ``.py`` files only (a local ``.ipynb`` copy is fine)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--", "*.ipynb"],
            cwd=TUTORIALS, capture_output=True, text=True, check=True, timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout (or no git): cannot list the committed files")
    assert out.split() == [], "commit the jupytext .py file, not the notebook"


@pytest.mark.parametrize("name", SOURCES)
def test_tutorial_source_is_canonical_percent_format(name):
    """Each file is what ``jupytext --to py:percent`` writes, with a python3 kernelspec."""
    _need_jupytext()
    import jupytext

    text = (TUTORIALS / name).read_text()
    nb = jupytext.reads(text, fmt="py:percent")
    assert nb.metadata["kernelspec"]["name"] == KERNEL
    version = re.compile(r"^#\s+jupytext_version: .*\n", flags=re.M)  # differs by install
    rewritten = jupytext.writes(nb, fmt="py:percent")
    assert version.sub("", rewritten) == version.sub("", text), (
        f"{name} is not in jupytext's percent format: run `jupytext --to py:percent` on it"
    )
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    markdown_cells = [c for c in nb.cells if c.cell_type == "markdown"]
    assert code_cells and markdown_cells, "a tutorial needs both prose and code"
    assert markdown_cells[0].source.startswith("# "), "the first cell is the page title"
    # The FAST switch is the first code cell's job; every tutorial must honour it.
    assert "BOTORCH_MTUCB_FAST" in code_cells[0].source


@pytest.mark.parametrize("name", SOURCES)
def test_tutorial_runs_in_fast_mode(name, tmp_path, monkeypatch):
    _need_jupytext()
    reason = _kernelspec_problem()
    if reason:
        pytest.skip(reason)
    if name == "04_ax.py" and _missing("ax"):
        pytest.skip("the Ax tutorial needs ax-platform (pip install 'botorch-mtucb[ax]')")
    import jupytext
    from nbclient import NotebookClient

    # The kernel inherits this environment: FAST mode and few threads (CI has 2 cores).
    monkeypatch.setenv("BOTORCH_MTUCB_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = jupytext.read(TUTORIALS / name)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError (with the traceback) if a cell fails

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "FAST mode" in text  # the tutorial saw the switch
    assert not any(o.get("output_type") == "error" for o in outputs)
    # Every tutorial shows at least one plot (the docs render them).
    assert any("image/png" in o.get("data", {}) for o in outputs), "no plot was displayed"
    assert list(tmp_path.iterdir()) == [], "the tutorial wrote files into its working directory"
