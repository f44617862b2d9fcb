"""What the suites' command lines share: one-line usage errors and run folders of one setting.

A suite's ``--out`` holds units of many cells, methods and seeds, each in a file named after
them; the settings that the file names leave out (iterations, restarts, ...) belong to the
folder: :func:`claim_suite_folder` writes them to ``<out>/suite_settings.json`` on the first
run and refuses a later run with other values, so a folder never mixes settings and a
rerun with the same ones continues it (finished units are kept).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

from mtucb_bench.fileio import create_json, read_json

__all__ = ["SETTINGS_FILE", "check_at_least", "claim_suite_folder", "usage_error"]

SETTINGS_FILE = "suite_settings.json"


def usage_error(message: str) -> NoReturn:
    """Print ``error: <message>`` to stderr and exit with status 2 (a usage error)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_at_least(ns: argparse.Namespace, minimum: float, *names: str) -> None:
    """Refuse (:func:`usage_error`) any option ``--<name>`` of ``ns`` below ``minimum``."""
    for name in names:
        value = getattr(ns, name)
        if not value >= minimum:  # also NaN
            usage_error(f"argument --{name.replace('_', '-')}: must be >= {minimum:g}, "
                        f"got {value!r}.")


def claim_suite_folder(out: Path, settings: dict[str, Any], units: str = "*/*.json") -> None:
    """Make ``out`` the folder of the units run with ``settings``, or refuse it.

    The first run creates ``out/suite_settings.json`` holding ``settings`` (exclusively:
    of two runs starting at once, the second compares with the first's); a later run must
    have the same settings. A folder of units written before the file existed is claimed
    when no unit (files ``units`` under ``out``) records another value of a setting.

    Args:
        out: The suite's ``--out`` (created if missing).
        settings: JSON-able settings that the unit file names do not carry.
        units: Glob pattern of the unit files under ``out``.

    Raises:
        RunFolderError: If ``out`` holds units of other settings (the differences named),
            is not a folder or cannot be created.
    """
    from mtucb_bench.manifest import RunFolderError, manifest_difference

    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {str(out)!r} exists and is not a folder.")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RunFolderError(f"Cannot create --out {str(out)!r}: {err.strerror}.") from None
    path = out / SETTINGS_FILE
    if path.exists():
        diff = manifest_difference(read_json(path), settings)
    else:
        diff = []
        for f in sorted(out.glob(units)):
            rec = read_json(f)
            diff += [f"{f.parent.name}/{f.name} has {k} {rec[k]!r}, {v!r} here"
                     for k, v in settings.items() if isinstance(rec, dict) and k in rec
                     and rec[k] != v]
        if not diff and not create_json(path, settings, indent=1):  # raced: compare
            diff = manifest_difference(read_json(path), settings)
    if diff:
        shown = "; ".join(diff[:4]) + ("; ..." if len(diff) > 4 else "")
        raise RunFolderError(
            f"--out {str(out)!r} holds units made with other settings ({shown}): choose "
            f"another --out, or rerun with the settings recorded there."
        )
