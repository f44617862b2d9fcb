"""The tutorials (jupytext percent-format ``tutorials/*.py``) run top to bottom in FAST mode.

Each tutorial is turned into a notebook in memory with jupytext and executed with nbclient on
a fresh ``python3`` Jupyter kernel, with ``BOTORCH_MTUCB_FAST=1`` and a temporary working
directory (nothing is written into the repository): the same thing Jupyter does when it
opens the ``.py`` file, and what the documentation build does (myst-nb). Skips, each with its
reason: jupytext / nbclient / nbformat / ipykernel missing, no ``python3`` kernelspec
installed (CI creates it with ``python -m ipykernel install``), and Ax missing for tutorial 4.

The tutorials are user documentation: they need only the package and BoTorch, except a part
that says in its prose that it uses the benchmark harness (``mtucb_bench``) and runs only
where the harness and its data are found; they never print a path of the machine that ran
them (the documentation site shows their outputs).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
SOURCES = [
    "01_correlated_objectives.py",
    "02_scaling_up_mtbkb.py",
    "03_heavy_tailed_noise.py",
    "04_ax.py",
    "05_robust_default.py",
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
def test_harness_use_is_optional_and_announced(name):
    """A tutorial imports the harness only inside ``try`` (its part is skipped without it)
    and says in its prose that it uses it and how to install it."""
    _need_jupytext()
    import jupytext

    nb = jupytext.read(TUTORIALS / name)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    imports = re.findall(r"^(\s*)(?:from|import) mtucb_bench\b.*$", code, flags=re.M)
    if not imports:
        return
    assert all(indent for indent in imports), "import the harness inside try/except ImportError"
    assert "except ImportError" in code
    assert "pip install -e ./bench" in prose, "say in the prose that this part needs the harness"


def _executed_output_text(nb) -> str:
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    for o in outputs:
        text += "".join(o.get("data", {}).get("text/plain", ""))
    return text


def _assert_no_machine_paths(text: str, *folders: Path) -> None:
    for folder in (ROOT, ROOT.parent, Path.home(), *folders):
        assert str(folder) not in text, f"an output prints a path of this machine: {folder}"


def _run(nb, tmp_path: Path) -> None:
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError (with the traceback) if a cell fails


def test_stock_part_is_skipped_cleanly_without_the_data(tmp_path, monkeypatch):
    """Tutorial 3's real-data part, with no data set: one plain message, no path, no plot.

    Runs the tutorial without the long Part-1 experiment (the cell that uses
    ``SEEDS_OUTLIER``), with ``BOTORCH_MTUCB_DATA`` pointing at an empty folder.
    """
    _need_jupytext()
    reason = _kernelspec_problem()
    if reason:
        pytest.skip(reason)
    import jupytext

    empty = tmp_path / "no-data"
    empty.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("BOTORCH_MTUCB_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("BOTORCH_MTUCB_DATA", str(empty))
    nb = jupytext.read(TUTORIALS / "03_heavy_tailed_noise.py")
    nb.cells = [c for c in nb.cells if "SEEDS_OUTLIER" not in c.source]
    _run(nb, work)
    text = _executed_output_text(nb)
    assert "Part 2 skipped" in text
    assert "R_T/T" not in text  # no results of the skipped part
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not any("image/png" in o.get("data", {}) for o in outputs)
    _assert_no_machine_paths(text, empty, tmp_path)


@pytest.mark.parametrize("name", SOURCES)
def test_tutorial_runs_in_fast_mode(name, tmp_path, monkeypatch):
    _need_jupytext()
    reason = _kernelspec_problem()
    if reason:
        pytest.skip(reason)
    if name == "04_ax.py" and _missing("ax"):
        pytest.skip("the Ax tutorial needs ax-platform (pip install 'botorch-mtucb[ax]')")
    import jupytext

    # The kernel inherits this environment: FAST mode and few threads (CI has 2 cores).
    monkeypatch.setenv("BOTORCH_MTUCB_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = jupytext.read(TUTORIALS / name)
    _run(nb, tmp_path)

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = _executed_output_text(nb)
    assert "FAST mode" in text  # the tutorial saw the switch
    _assert_no_machine_paths(text, tmp_path)
    assert not any(o.get("output_type") == "error" for o in outputs)
    # Every tutorial shows at least one plot (the docs render them).
    assert any("image/png" in o.get("data", {}) for o in outputs), "no plot was displayed"
    assert list(tmp_path.iterdir()) == [], "the tutorial wrote files into its working directory"
