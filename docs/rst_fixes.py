"""Docstring clean-ups applied at build time (``autodoc-process-docstring``, after napoleon).

The package's docstrings write math in plain unicode, and two habits of that style are reST
markup by accident:

* bars for absolute values and norms, ``|y|``, ``|u_{i,τ} y_τ|``: reST reads ``|text|`` as a
  substitution reference and fails (``Undefined substitution referenced``);
* a wildcard after a hyphen, ``MT-* / IT-*``: reST reads ``*`` as the start of emphasis.

Both are escaped (``\\|``, ``\\*``: rendered as the plain character) everywhere except where
reST shows text verbatim or hands it to MathJax: inline literals and roles (backquotes),
literal blocks (after ``::``), the bodies of verbatim directives (``.. math::``,
``.. code-block::``), doctest blocks (``>>>``) and tables / line blocks (lines starting with
``"| "``, ``+-`` or ``+=``). The package defines no reST substitutions, so no real one is lost.

A second hook drops the docstring that module-level *data* inherits from its type (an
``ALGORITHMS`` dict would otherwise show ``dict.__doc__``, which is not ours and not valid
reST).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = [
    "VERBATIM_DIRECTIVES",
    "drop_type_docstring",
    "escape_line",
    "escape_lines",
    "process_docstring",
]

# Backquoted spans: ``literal``, `interpreted`, :role:`text` (the role prefix is plain text).
_SPANS = re.compile(r"``.+?``|`[^`]+`_{0,2}")
_WILDCARD = re.compile(r"(?<=-)\*(?=[\s.,;:)/]|$)")
_DIRECTIVE = re.compile(r"\.\.\s+([\w:-]+)::")
# Directives whose body reST shows verbatim or passes to MathJax / a highlighter.
VERBATIM_DIRECTIVES = frozenset(
    {"math", "code", "code-block", "sourcecode", "literalinclude", "raw", "highlight",
     "parsed-literal", "testcode", "testoutput", "doctest"}
)


def escape_line(line: str) -> str:
    """Escapes ``|`` and hyphen-wildcard ``*`` in one line of reST outside backquoted spans.

    Already escaped characters (``\\|``) are left as they are.
    """
    out, pos = [], 0
    for match in _SPANS.finditer(line):
        out.append(_escape_plain(line[pos : match.start()]))
        out.append(match.group(0))
        pos = match.end()
    out.append(_escape_plain(line[pos:]))
    return "".join(out)


def _escape_plain(text: str) -> str:
    text = re.sub(r"(?<!\\)\|", r"\\|", text)
    return _WILDCARD.sub(r"\\*", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def escape_lines(lines: list[str]) -> list[str]:
    """Applies :func:`escape_line` to the prose lines of a reST docstring.

    Lines inside literal blocks, the bodies of :data:`VERBATIM_DIRECTIVES` and of comments,
    directive lines themselves, doctest blocks, tables and line blocks are returned unchanged
    (see the module docstring).
    """
    out: list[str] = []
    verbatim_above: int | None = None  # indentation of the line that opened a verbatim block
    in_doctest = False
    for line in lines:
        stripped = line.strip()
        if verbatim_above is not None:
            if not stripped or _indent(line) > verbatim_above:
                out.append(line)
                continue
            verbatim_above = None
        if in_doctest:
            if stripped:
                out.append(line)
                continue
            in_doctest = False
        if stripped.startswith(">>>"):
            in_doctest = True
            out.append(line)
        elif stripped.startswith(".. "):  # a directive (arguments verbatim) or a comment
            out.append(line)
            directive = _DIRECTIVE.match(stripped)
            if directive is None or directive.group(1) in VERBATIM_DIRECTIVES:
                verbatim_above = _indent(line)
        elif stripped == "|" or stripped.startswith(("| ", "+-", "+=")):  # line block / table
            out.append(line)
        else:
            out.append(escape_line(line))
            if stripped.endswith("::"):
                verbatim_above = _indent(line)
    return out


def drop_type_docstring(obj: Any, lines: list[str]) -> None:
    """Empties ``lines`` (in place) if they are just the docstring of ``type(obj)``."""
    if inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
        return
    inherited = inspect.getdoc(type(obj))
    if inherited and "\n".join(lines).strip() == inherited.strip():
        lines[:] = []


def process_docstring(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """The ``autodoc-process-docstring`` handler (registered by ``docs/conf.py``)."""
    if what in ("data", "attribute"):
        drop_type_docstring(obj, lines)
    lines[:] = escape_lines(lines)
