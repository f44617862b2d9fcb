"""Fast reST check of every public docstring, without a Sphinx build (about 10 s).

Each docstring goes through what the build does to it, napoleon (Google style, the
settings of ``docs/conf.py``) and :mod:`rst_fixes`, and is then parsed by docutils; every
warning or error is reported with the object's name. Sphinx's roles and the few Sphinx
directives napoleon emits are registered as plain placeholders, so what is checked is the
reST structure (tables, indentation, lists, inline markup), which is what ``sphinx-build -W``
fails on in docstrings; cross-references are left to the build (``nitpicky``).

Run ``python docs/rst_check.py`` (exit status 1 on problems); ``tests/test_docs.py`` runs
:func:`problems`.
"""

from __future__ import annotations

import importlib
import inspect
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import apigen  # noqa: E402
import rst_fixes  # noqa: E402

__all__ = ["docstrings", "problems"]

_ROLES = ("class", "func", "meth", "mod", "data", "attr", "obj", "exc", "any", "ref", "doc")


def _register_sphinx_markup() -> None:
    from docutils import nodes
    from docutils.parsers.rst import directives, roles
    from docutils.parsers.rst.directives.admonitions import Note
    from docutils.parsers.rst.directives.body import CodeBlock

    for role in _ROLES:
        roles.register_generic_role(role, nodes.literal)
        roles.register_generic_role(f"py:{role}", nodes.literal)
    directives.register_directive("code-block", CodeBlock)
    for name in ("seealso", "versionadded", "versionchanged", "deprecated"):
        directives.register_directive(name, Note)


def docstrings(package: str = apigen.PACKAGE) -> Iterator[tuple[str, str, Any]]:
    """(full name, napoleon ``what``, object) of every public docstring, each object once.

    Modules, the classes and functions of every ``__all__``, and the public methods and
    properties (and ``__init__``) a listed class defines itself.
    """
    seen: set[int] = set()

    def new(obj: Any) -> bool:
        if id(obj) in seen:
            return False
        seen.add(id(obj))
        return True

    for modname in apigen.public_module_names(package):
        module = importlib.import_module(modname)
        if new(module):
            yield modname, "module", module
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            full = f"{modname}.{name}"
            if inspect.isroutine(obj) and new(obj):
                yield full, "function", obj
            if not inspect.isclass(obj) or not new(obj):
                continue
            yield full, "class", obj
            for key, value in vars(obj).items():
                if key.startswith("_") and key != "__init__":
                    continue
                if isinstance(value, property):
                    value, what = value.fget, "attribute"
                else:
                    value, what = getattr(value, "__func__", value), "method"
                if inspect.isroutine(value) and new(value):
                    yield f"{full}.{key}", what, value


def problems(package: str = apigen.PACKAGE) -> list[tuple[str, str]]:
    """(full name, docutils messages) of every public docstring that is not clean reST."""
    from docutils.core import publish_doctree
    from sphinx.ext.napoleon import Config, GoogleDocstring

    _register_sphinx_markup()
    config = Config(napoleon_use_ivar=True, napoleon_use_rtype=False)
    out = []
    for full, what, obj in docstrings(package):
        doc = inspect.cleandoc(obj.__doc__ or "")  # own docstring only (as autodoc here)
        if not doc:
            continue
        lines = GoogleDocstring(doc, config, what=what, name=full, obj=obj).lines()
        stream = io.StringIO()
        settings = {"report_level": 2, "halt_level": 5, "warning_stream": stream}
        publish_doctree("\n".join(rst_fixes.escape_lines(lines)), settings_overrides=settings)
        if stream.getvalue():
            out.append((full, stream.getvalue().replace("<string>", f"docstring of {full}")))
    return out


if __name__ == "__main__":
    found = problems()
    for _, messages in found:
        print(messages)
    print(f"{len(found)} docstring(s) with reST problems")
    sys.exit(1 if found else 0)
