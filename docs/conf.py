"""Sphinx configuration of the botorch-mtucb documentation.

Build (warnings are errors, as in CI)::

    pip install -e ".[docs]" -e ./bench
    sphinx-build -W --keep-going -b html docs docs/_build/html

Before Sphinx reads anything this file generates, into ignored folders:

* ``docs/api/``: the API reference, one page per public module (``docs/apigen.py``);
* ``docs/tutorials/``: the tutorials as notebooks without outputs, from the jupytext
  ``tutorials/*.py`` files; myst-nb executes them (FAST mode unless ``BOTORCH_MTUCB_FAST``
  is set otherwise) and renders their outputs and plots. ``-D nb_execution_mode=off``
  skips the execution (pages without outputs) for a quick look at the rest. An incremental
  build re-executes only tutorials whose file changed; ``-E`` (as in CI) re-executes all.

The benchmark plots under ``docs/results/`` are embedded by ``docs/benchmarks.md`` and
``docs/studies.md``; the rest of that folder (summary JSON and tables) is not a page.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))

# The executed tutorials run in FAST mode with one thread (the kernel inherits this
# environment); export BOTORCH_MTUCB_FAST=0 before building to render the full runs.
os.environ.setdefault("BOTORCH_MTUCB_FAST", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import apigen  # noqa: E402
import jupytext  # noqa: E402
import nbformat  # noqa: E402
import rst_fixes  # noqa: E402

import botorch_mtucb  # noqa: E402


def _write_if_changed(path: Path, text: str) -> None:
    """Rewrites only on change, so incremental builds re-read (and re-execute) only that."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _sync_folder(folder: Path, pattern: str, contents: dict[Path, str]) -> None:
    for path in folder.glob(pattern) if folder.exists() else []:
        if path not in contents:
            path.unlink()
    for path, text in contents.items():
        _write_if_changed(path, text)


def _tutorial_notebooks() -> dict[Path, str]:
    out = {}
    for source in sorted((ROOT / "tutorials").glob("[0-9]*.py")):
        nb = jupytext.read(source)
        nb.metadata.pop("jupytext", None)
        for i, cell in enumerate(nb.cells):  # jupytext draws random ids: make them stable,
            cell.id = f"cell-{i}"  # or every build would rewrite (and re-execute) the notebook
        out[DOCS / "tutorials" / f"{source.stem}.ipynb"] = nbformat.writes(nb) + "\n"
    return out


API_PAGES = apigen.collect()
API_ALIASES = apigen.aliases(API_PAGES)
API_CLASSES = apigen.documented_classes(API_PAGES)
apigen.write(DOCS / "api", pages=API_PAGES)
_sync_folder(DOCS / "tutorials", "*.ipynb", _tutorial_notebooks())

# -- Project ---------------------------------------------------------------------------------
project = "botorch-mtucb"
author = "botorch-mtucb contributors"
copyright = "botorch-mtucb contributors"
release = botorch_mtucb.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_nb",
]
# docs/results/ holds the benchmark outputs: its Markdown tables are included by the pages
# that discuss them (or linked), never built as pages of their own.
exclude_patterns = ["_build", "results/**", "**.ipynb_checkpoints"]
templates_path: list[str] = []

# -- Autodoc / napoleon (Google-style docstrings with shapes and unicode math) ------------
autodoc_member_order = "bysource"
autoclass_content = "both"  # the class docstring, then __init__'s (where the Args are)
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_inherit_docstrings = False  # inherited BoTorch/GPyTorch docstrings are not ours
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True
# "Attributes:" sections as :ivar: fields, not ``.. attribute::`` objects: a class that lists
# a property under Attributes would otherwise describe it twice (duplicate object warning).
napoleon_use_ivar = True

# Broken cross-references to this package's own objects are errors (under -W); references
# to torch / BoTorch / GPyTorch objects stay plain text (no intersphinx: no network at build).
nitpicky = True
# Private names (a ``_Base`` class in "Bases:", a ``_module`` helper) are not documented
# either; re-exports named by their defining module resolve through ``_resolve_alias``.
nitpick_ignore_regex = [(r"py:.*", r"(?!botorch_mtucb\.).*"), (r"py:.*", r".*\._[^_].*")]

# -- MyST / myst-nb (Markdown pages and the executed tutorials) --------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_timeout = 300  # seconds per cell; a whole tutorial takes seconds in FAST mode
nb_execution_raise_on_error = True  # a failing cell fails the build
nb_execution_in_temp = True  # tutorials must not write into the repository
nb_merge_streams = True
nb_execution_show_tb = True

# -- HTML --------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"botorch-mtucb {release}"
html_static_path: list[str] = []


def _resolve_alias(app, env, node, contnode):  # noqa: ANN001, ANN202 (Sphinx's hook)
    """``missing-reference``: ``module.name`` of a name documented under a shorter path, or
    ``Class.member`` of a member documented on the base class that defines it."""
    if node.get("refdomain") != "py":
        return None
    reftarget = node.get("reftarget", "")
    target = API_ALIASES.get(reftarget) or apigen.inherited_target(reftarget, API_CLASSES)
    if target is None:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], target, node, contnode
    )


def setup(app):  # noqa: ANN001, ANN201 (Sphinx's hook)
    # After napoleon (priority 500): escape |..| and hyphen wildcards, drop type docstrings.
    app.connect("autodoc-process-docstring", rst_fixes.process_docstring, priority=600)
    app.connect("missing-reference", _resolve_alias)
    # Classes: the signature users call them with, and public bases only (docs/apigen.py).
    app.connect("autodoc-process-signature", apigen.process_signature)
    app.connect("autodoc-process-bases", apigen.process_bases)
