"""Where the benchmark scripts write, and the provenance every summary JSON carries.

Raw per-unit records (trial files, replays, caches) go under :data:`RUNS`, the git-ignored
``benchmark-runs/`` of the repository; the small summaries (JSON, Markdown tables, PNG plots)
that the results page shows go under :data:`RESULTS`, ``docs/results/``. Every summary JSON
starts with a ``provenance`` object (:func:`provenance`): the git commit of the tree that ran,
whether it had uncommitted changes, the date, the machine and its load average, and the
command line.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from mtucb_bench.fileio import write_json

#: The repository root (this file is ``bench/mtucb_bench/perf/provenance.py``).
REPO = Path(__file__).resolve().parents[3]
#: Raw data, git-ignored (``/benchmark-runs/`` in ``.gitignore``).
RUNS = REPO / "benchmark-runs"
#: Committed summaries shown on the results page.
RESULTS = REPO / "docs" / "results"

__all__ = ["REPO", "RESULTS", "RUNS", "provenance", "rows_summary", "write_summary"]


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                             timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip()


def _command() -> str:
    """The command line, as ``python -m <module> ...`` for a module of this package."""
    argv0 = sys.argv[0] if sys.argv else ""
    prog = argv0
    if argv0.endswith(".py"):
        try:
            mod = Path(argv0).resolve().relative_to(REPO / "bench").with_suffix("")
            prog = "python -m " + ".".join(mod.parts)
        except ValueError:
            prog = f"python {argv0}"
    return " ".join([prog, *sys.argv[1:]])


def provenance(**extra: Any) -> dict[str, Any]:
    """The provenance object of a summary written now.

    Args:
        **extra: Further entries (e.g. ``threads=1``), stored as given.

    Returns:
        ``{"commit", "dirty", "date", "load", "machine", "command", **extra}``; ``load`` is
        ``os.getloadavg()`` (1, 5, 15 minutes) or ``"unknown"`` where the OS has none.
    """
    load: Any = list(os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": _git("rev-parse", "--short", "HEAD"),
        "dirty": "unknown" if status == "unknown" else bool(status),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "load": load,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "command": _command(),
        **extra,
    }


def write_summary(path: str | Path, obj: dict[str, Any], indent: int | None = 1) -> Path:
    """Write ``{"provenance": provenance(), **obj}`` atomically to ``path`` (parents created).

    An existing ``provenance`` entry of ``obj`` is replaced by the current one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {k: v for k, v in obj.items() if k != "provenance"}
    return write_json(path, {"provenance": provenance(), **body}, indent=indent)


def rows_summary(module: str, argv: list[str] | None, rows: list[dict],
                 out: str | Path | None) -> dict[str, Any]:
    """``{"command", "rows"}`` of a timing script run as ``python -m <module> <argv>``, written
    with its provenance to ``out`` when given (:func:`write_summary`)."""
    result = {"command": f"python -m {module} " + " ".join(argv or []), "rows": rows}
    if out:
        write_summary(out, result)
    return result
