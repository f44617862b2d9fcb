"""Writes the API reference sources (``docs/api/*.rst``) from the package's ``__all__`` lists.

Every public module of ``botorch_mtucb`` (no path component starting with ``_``) gets one page:
its docstring, a summary table of its ``__all__``, and the autodoc directives of the names it
*owns*. A name re-exported by several modules (``botorch_mtucb.models.ExactMultiTaskGP`` is the
same class as ``botorch_mtucb.multitask.exact.ExactMultiTaskGP``) is documented once,
under the shallowest public module below the package root whose ``__all__`` lists it (the
face users import it from; the root's few shortcuts, ``botorch_mtucb.ExactMultiTaskGP``,
link there), and the other pages link there. New subpackages and modules are picked up by
walking the package, so nothing here lists them by hand.

The faces come first: the index lists them (the root's children that have an ``__all__``,
and their subpackages that have one), and every page lists its children with an ``__all__``
before the implementation packages without one (``multitask``, ``heavy_tailed``).

Two autodoc hooks live here too, so that the tests can call them without a build: a class
is shown with the signature users call it with (:func:`process_signature`: a class whose
``__new__`` takes ``*args, **kwargs`` to dispatch batched data would otherwise render as
``(*args, **kwargs)``), and "Bases:" names public classes only (:func:`process_bases`: a
private mixin is replaced by its own public bases).

Run by ``docs/conf.py`` at the start of every build; ``tests/test_docs.py`` calls
:func:`collect`, :func:`write` and the hooks directly (no Sphinx needed).
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from rst_fixes import escape_lines

__all__ = [
    "ApiModule",
    "aliases",
    "collect",
    "constructor_signature",
    "documented_classes",
    "faces",
    "inherited_target",
    "is_private_class",
    "process_bases",
    "process_signature",
    "public_bases",
    "public_module_names",
    "write",
]

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
    out ``__main__``).
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


def is_private_class(cls: type) -> bool:
    """Whether ``cls`` is private: its name starts with ``_``, or it is this package's and
    some component of its module path does."""
    module = getattr(cls, "__module__", "") or ""
    private_module = module.split(".")[0] == PACKAGE and any(
        part.startswith("_") for part in module.split(".")
    )
    return cls.__qualname__.split(".")[-1].startswith("_") or private_module


def public_bases(cls: type) -> list[type]:
    """The bases of ``cls`` to show: each private base replaced by its own public bases.

    ``TruncatedGP(_TruncatedArmPath, _TruncatedDensePath, HeavyTailedModel)`` shows
    ``HeavyTailedModel``; a private base whose only base is ``object`` disappears (``object``
    stays only when nothing else is left). Order is kept, duplicates are dropped.
    """
    out: list[type] = []

    def add(base: type) -> None:
        if is_private_class(base):
            for b in base.__bases__:
                add(b)
        elif base not in out:
            out.append(base)

    for base in cls.__bases__:
        add(base)
    if len(out) > 1 and object in out:
        out.remove(object)
    return out or [object]


def process_bases(app, name, obj, options, bases) -> None:  # noqa: ANN001 (Sphinx's hook)
    """``autodoc-process-bases``: shows :func:`public_bases` instead of the private ones."""
    if inspect.isclass(obj):
        bases[:] = public_bases(obj)


_VARARGS = re.compile(r"\(\*args(?:: [^,]*)?, \*\*kwargs(?:: [^)]*)?\)")


def _only_varargs(sig: inspect.Signature) -> bool:
    kinds = [p.kind for p in sig.parameters.values()]
    return kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]


def constructor_signature(cls: type) -> inspect.Signature | None:
    """The signature users call ``cls`` with, ``self`` dropped.

    The first ``__init__`` along the MRO that takes more than ``*args, **kwargs``; ``None``
    if there is none (a ``Protocol``, a ``torch.autograd.Function``: no signature shown).
    """
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if not inspect.isfunction(init):
            continue
        try:
            sig = inspect.signature(init)
        except (TypeError, ValueError):
            continue
        params = list(sig.parameters.values())[1:]  # without self
        sig = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
        if not _only_varargs(sig):
            return sig
    return None


def process_signature(app, what, name, obj, options, signature, return_annotation):  # noqa: ANN001, ANN201
    """``autodoc-process-signature``: a class shown as ``(*args, **kwargs)`` (a ``__new__``
    that dispatches, a ``Protocol``) gets :func:`constructor_signature` instead (or none)."""
    if what != "class" or not signature or not _VARARGS.fullmatch(signature):
        return None
    sig = constructor_signature(obj)
    if sig is None:
        return "", return_annotation
    shown = sig.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    )
    return str(shown), return_annotation


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
        # The shallowest face below the root; the root only for names nothing else exports.
        home = min(owners, key=lambda m: (m == package, m.count("."), m))
        for modname in owners:
            pages[modname].canonical[name] = home
        pages[home].owned.append(name)
    for page in pages.values():
        page.children.sort(key=lambda c: (not pages[c].exported, c))  # faces first
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


def documented_classes(pages: dict[str, ApiModule]) -> dict[int, str]:
    """``id(class)`` -> its documented full name, for every class the reference documents."""
    out = {}
    for page in pages.values():
        module = importlib.import_module(page.name)
        for name in page.owned:
            if page.kinds[name] == "autoclass":
                out[id(getattr(module, name))] = f"{page.name}.{name}"
    return out


def inherited_target(target: str, classes: dict[int, str]) -> str | None:
    """Where ``Class.member`` is documented when ``member`` is inherited.

    ``botorch_mtucb.multitask.base.MultiTaskGPBase.solver`` names a property that the class
    inherits from ``SolverCacheMixin``; autodoc documents it only there. Returns the documented
    ``<base>.member`` of the first class along the MRO that defines ``member`` and is itself
    documented, or ``None``.
    """
    owner, _, member = target.rpartition(".")
    modname, _, clsname = owner.rpartition(".")
    if not modname.startswith(PACKAGE) or member.startswith("_"):
        return None
    try:
        cls = getattr(importlib.import_module(modname), clsname)
    except (ImportError, AttributeError, ValueError):
        return None
    if not inspect.isclass(cls):
        return None
    for klass in cls.__mro__:
        if member in vars(klass):
            home = classes.get(id(klass))
            return f"{home}.{member}" if home else None
    return None


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


def faces(pages: dict[str, ApiModule], package: str = PACKAGE) -> list[str]:
    """The public faces: the root's children with an ``__all__`` and their subpackages with one."""
    out = []
    for child in pages[package].children:
        if pages[child].exported:
            out.append(child)
            out += [c for c in pages[child].children if pages[c].is_package and pages[c].exported]
    return out


def _module_summary(name: str) -> str:
    return _summary(importlib.import_module(name))


def _index(pages: dict[str, ApiModule], package: str) -> str:
    lines = [
        ".. This file is generated by docs/apigen.py; do not edit.",
        "",
        _title("API reference"),
        "Generated from the docstrings. One page per public module; each name of a",
        "module's ``__all__`` is documented once, under the face users import it from",
        "(``botorch_mtucb.models.ExactMultiTaskGP``, not",
        "``botorch_mtucb.multitask.exact.ExactMultiTaskGP``); the implementation",
        "modules' pages carry their docstrings (often the derivations) and link there.",
        "Everything is a BoTorch / GPyTorch component; shapes follow BoTorch's",
        "conventions (``batch_shape x q x d`` inputs).",
        "",
        ".. rubric:: Public faces",
        "",
        ".. list-table::",
        "   :widths: 35 65",
        "",
    ]
    for name in faces(pages, package):
        lines += [f"   * - :py:mod:`{name}`", f"     - {_module_summary(name)}"]
    lines += [
        "",
        ".. toctree::",
        "   :maxdepth: 2",
        "",
        f"   {package}",
        "",
    ]
    return "\n".join(lines)


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
    contents = {out_dir / "index.rst": _index(pages, package)}
    contents.update({out_dir / f"{name}.rst": _render(p) for name, p in pages.items()})
    for path in out_dir.glob("*.rst"):
        if path not in contents:
            path.unlink()
    for path, text in contents.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return sorted(contents)
