"""Atomic file writes for the benchmark runner, and reads that name the file they fail on.

Every file the benchmarks write (trial JSON, ``manifest.json``, ``summary.json``,
``rounds.csv``, figures) goes through :func:`atomic_open`: the content is written to a
temporary file in the destination's folder (``.<name>.<random>.tmp``), flushed and
``fsync``-ed, then renamed onto the destination with :func:`os.replace` (atomic on POSIX and
Windows within one file system). A failed write (full disk, an exception while serialising,
a kill) therefore leaves either the previous file or no file, never a truncated one; the
temporary file is removed on any error that Python sees.

:func:`create_json` writes a file that must not exist yet (the ``manifest.json`` that claims a
run folder): the content goes to a synced temporary file first, which is then hard-linked to
the destination with :func:`os.link`; the link fails if the destination exists, so of two
processes creating the same file at the same instant exactly one succeeds, and no reader ever
sees a partial file. Where the file system has no hard links, ``os.open`` with
``O_CREAT | O_EXCL`` decides instead. :func:`check_writable` tries a write into a folder
(creating and removing a temporary file) before anything expensive is computed for it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_open",
    "check_writable",
    "create_json",
    "read_json",
    "write_bytes",
    "write_json",
    "write_text",
]

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_open(
    path: str | Path, mode: str = "w", *, newline: str | None = None
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing through a temporary file renamed into place on success.

    Args:
        path: Destination file; its folder must exist.
        mode: ``"w"`` (text, UTF-8) or ``"wb"`` (bytes).
        newline: Passed to :func:`open` in text mode (``""`` for :mod:`csv`).

    Yields:
        The open temporary file. When the ``with`` block exits normally the file is flushed,
        synced and renamed onto ``path``; when it raises, the temporary file is deleted,
        ``path`` is left as it was and the exception propagates.

    Raises:
        ValueError: If ``mode`` is not ``"w"`` or ``"wb"``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"`mode` must be 'w' or 'wb', got {mode!r}.")
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if hasattr(os, "fchmod"):  # mkstemp creates 0600; give the usual umask permissions
            os.fchmod(fd, 0o666 & ~_UMASK)
        kwargs: dict[str, Any] = {} if mode == "wb" else {"encoding": "utf-8", "newline": newline}
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Atomically write ``data`` to ``path`` (see :func:`atomic_open`); returns the path."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write UTF-8 ``text`` to ``path`` (see :func:`atomic_open`)."""
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | Path, obj: Any, indent: int | None = None) -> Path:
    """Atomically write ``obj`` as JSON; it is serialised before the file is opened."""
    return write_text(path, json.dumps(obj, indent=indent))


def create_json(path: str | Path, obj: Any, indent: int | None = None) -> bool:
    """Create ``path`` holding ``obj`` as JSON unless it exists, atomically and exclusively.

    Args:
        path: Destination file; its folder must exist.
        obj: JSON-able content (serialised before anything is written).
        indent: As for :func:`json.dumps`.

    Returns:
        ``True`` if this call created the file; ``False`` if ``path`` existed already (it is
        left untouched). Of several processes creating one path at once, exactly one gets
        ``True``.
    """
    path = Path(path)
    data = json.dumps(obj, indent=indent).encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), 0o666 & ~_UMASK)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: O_EXCL decides
            return _create_exclusive(path, data)
        return True
    finally:
        with suppress(OSError):
            os.unlink(tmp)


def _create_exclusive(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with suppress(OSError):
            os.unlink(path)
        raise
    return True


def check_writable(folder: str | Path) -> None:
    """Check that files can be created in ``folder`` by creating and removing one.

    Raises:
        OSError: Of the type the write raised (e.g. :class:`PermissionError`), with
            ``filename`` set to ``folder``, if a file cannot be created there.
    """
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".write-check.", suffix=".tmp")
    except OSError as err:  # named after the folder, not the temporary file
        raise type(err)(err.errno, err.strerror or str(err), str(folder)) from None
    os.close(fd)
    os.unlink(tmp)


def read_json(path: str | Path) -> Any:
    """Read a JSON file, naming it in the error when it is missing or unreadable.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If it is not valid UTF-8 JSON (e.g. truncated by an interrupted write of
            an older version); the message names the file.
    """
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{str(path)!r} does not exist.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"Cannot read {str(path)!r}: not valid JSON ({err}).") from None
