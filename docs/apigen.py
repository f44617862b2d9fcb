"""Writes the API reference sources (``docs/api/*.rst``) from the package's ``__all__`` lists.

Every public module of ``botorch_mtucb`` (no path component starting with ``_``) gets one page:
its docstring, a summary table of its ``__all__``, and the autodoc directives of the names it
*owns*. A name re-exported by several modules (``botorch_mtucb.models.ExactMultiTaskGP`` is the
same class as ``botorch_mtucb.multitask.exact.ExactMultiTaskGP``) is documented once,
under the shallowest public module whose ``__all__`` lists it (the import path users write),
and the other pages link there. New subpackages and modules are picked up by walking the
package, so nothing here lists them by hand.

Run by ``docs/conf.py`` at the start of every build; ``tests/test_docs.py`` calls
:func:`collect` and :func:`write` directly (no Sphinx needed).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from rst_fixes import escape_lines

__all__ = ["ApiModule", "aliases", "collect", "public_module_names", "write"]

PACKAGE = "botorch_mtucb"


@dataclass
class ApiModule:
    """One page of the API reference.

    Attributes:
        name: Dotted module name, e.g. ``botorch_mtucb.models``.
        is_package: Whether the module is a package (it then lists its children).
        exported: The module's ``__all__`` (empty if it has none).
        owned: The names of ``exported`` documented on this page; the others are documented
            under ``canonical[name]``.
        canonical: For every exported name, the module whose page documents it.
        kinds: For every owned name, the autodoc directive: ``autoclass``, ``autofunction``
            or ``autodata``.
        children: Public submodules and subpackages (direct children only).
        summaries: For every exported name, the first paragraph of its docstring on one
            line (empty for data, whose docstring is its type's).
        hide_value: Owned data names whose value is not shown (anything but a short
            ``str``/``int``/``float``/``bool``/tuple of those: a dict of specs or a tensor
            would print pages of repr).
    """

    name: str
    is_package: bool
    exported: list[str] = field(default_factory=list)
    owned: list[str] = field(default_factory=list)
    canonical: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    hide_value: set[str] = field(default_factory=set)
    summaries: dict[str, str] = field(default_factory=dict)


def public_module_names(package: str = PACKAGE) -> list[str]:
    """Every public module of ``package`` (itself included), sorted.

    Found from the files on disk (every ``.py`` file and every folder holding one), so a
    folder that lacks an ``__init__.py`` (an implicit namespace package) is still listed. A
    module is public when no component of its dotted name starts with ``_`` (this leaves
    out ``__main__`` and the private ``_ax_*`` helpers).
    """
    root = importlib.import_module(package)
    base = Path(next(iter(root.__path__)))
    names = {package}
    for path in base.rglob("*.py"):
        parts = list(path.relative_to(base.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(part.startswith("_") for part in parts):
            continue
        names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(names)


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "autoclass"
    if inspect.isroutine(obj):
        return "autofunction"
    return "autodata"


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    first = doc.strip().split("\n\n", 1)[0].splitlines()
    return " ".join(escape_lines([line.strip() for line in first]))


def _short_value(obj: object) -> bool:
    simple = (str, int, float, bool)
    ok = isinstance(obj, simple) or (
        isinstance(obj, tuple) and all(isinstance(v, simple) for v in obj)
    )
    return ok and len(repr(obj)) <= 80


def collect(package: str = PACKAGE) -> dict[str, ApiModule]:
    """Imports every public module and decides which page documents each exported name.

    Returns:
        The pages keyed by module name. Raises ``ImportError`` if a module cannot be
        imported, and ``AttributeError`` if a name in some ``__all__`` does not exist.
    """
    modules: dict[str, ModuleType] = {
        name: importlib.import_module(name) for name in public_module_names(package)
    }
    pages: dict[str, ApiModule] = {}
    # (name, id(object)) -> modules exporting that very object under that name.
    exporters: dict[tuple[str, int], list[str]] = {}
    for modname, module in modules.items():
        exported = list(getattr(module, "__all__", []))
        page = ApiModule(modname, hasattr(module, "__path__"), exported)
        for name in exported:
            if not hasattr(module, name):  # also resolves lazy module __getattr__ exports
                raise AttributeError(f"{modname}.__all__ lists {name!r}, which does not exist")
            obj = getattr(module, name)
            exporters.setdefault((name, id(obj)), []).append(modname)
            page.kinds[name] = _kind(obj)
            page.summaries[name] = _summary(obj) if page.kinds[name] != "autodata" else ""
            if page.kinds[name] == "autodata" and not _short_value(obj):
                page.hide_value.add(name)
        parent = modname.rpartition(".")[0]
        if parent in pages:
            pages[parent].children.append(modname)
        pages[modname] = page
    for (name, _), owners in exporters.items():
        home = min(owners, key=lambda m: (m.count("."), m))
        for modname in owners:
            pages[modname].canonical[name] = home
        pages[home].owned.append(name)
    for page in pages.values():
        page.owned = [n for n in page.exported if n in page.owned]  # keep __all__ order
        page.kinds = {n: page.kinds[n] for n in page.owned}
    return pages


def aliases(pages: dict[str, ApiModule]) -> dict[str, str]:
    """``module.name`` -> the documented full name, for every re-export of a documented name.

    A docstring may refer to an object by the module that defines it
    (``botorch_mtucb.utils.optimum.polish_maxima``) while the reference documents it under the
    shortest path (``botorch_mtucb.utils.polish_maxima``); ``docs/conf.py`` resolves such
    references through this map.
    """
    out = {}
    for page in pages.values():
        for name, home in page.canonical.items():
            if home != page.name:
                out[f"{page.name}.{name}"] = f"{home}.{name}"
    return out


def _title(text: str, char: str = "=") -> str:
    return f"{text}\n{char * len(text)}\n"


def _render(page: ApiModule) -> str:
    lines = [
        f".. This file is generated by docs/apigen.py from {page.name}.__all__; do not edit.",
        "",
        _title(f"``{page.name}``"),
        f".. automodule:: {page.name}",
        "",
    ]
    if page.exported:
        lines += [".. rubric:: Public names", "", ".. list-table::", "   :widths: 35 65", ""]
        for name in page.exported:
            home = page.canonical[name]
            where = "" if home == page.name else f" (documented in :py:mod:`{home}`)"
            lines += [
                f"   * - :py:obj:`~{home}.{name}`",
                f"     - {page.summaries[name]}{where}",
            ]
        lines.append("")
    if page.children:
        kind = "Subpackages and modules" if page.is_package else "Modules"
        lines += [".. rubric:: " + kind, "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {child}" for child in page.children]
        lines.append("")
    for name in page.owned:
        directive = page.kinds[name]
        lines.append(f".. {directive}:: {page.name}.{name}")
        if directive == "autoclass":
            lines += ["   :members:", "   :show-inheritance:"]
        elif name in page.hide_value:
            lines.append("   :no-value:")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _index(package: str) -> str:
    return "\n".join(
        [
            ".. This file is generated by docs/apigen.py; do not edit.",
            "",
            _title("API reference"),
            "Generated from the docstrings. One page per public module; each name of a",
            "module's ``__all__`` is documented once, under the shortest import path that",
            "exports it (``botorch_mtucb.models.ExactMultiTaskGP``, not",
            "``botorch_mtucb.multitask.exact.ExactMultiTaskGP``); the implementation",
            "modules' pages carry their docstrings (often the derivations) and link there.",
            "Everything is a BoTorch / GPyTorch component; shapes follow BoTorch's",
            "conventions (``batch_shape x q x d`` inputs).",
            "",
            ".. toctree::",
            "   :maxdepth: 2",
            "",
            f"   {package}",
            "",
        ]
    )


def write(
    out_dir: Path, package: str = PACKAGE, pages: dict[str, ApiModule] | None = None
) -> list[Path]:
    """Writes ``index.rst`` and one ``<module>.rst`` per public module into ``out_dir``.

    Files whose content is unchanged are not rewritten (keeps incremental builds
    incremental); stale ``.rst`` files of modules that no longer exist are removed.

    Args:
        out_dir: Folder of the reference sources (created if absent).
        package: The package documented.
        pages: The result of :func:`collect`, if already computed.

    Returns:
        The paths of all files the reference now consists of.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = collect(package) if pages is None else pages
    contents = {out_dir / "index.rst": _index(package)}
    contents.update({out_dir / f"{name}.rst": _render(p) for name, p in pages.items()})
    for path in out_dir.glob("*.rst"):
        if path not in contents:
            path.unlink()
    for path, text in contents.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return sorted(contents)
