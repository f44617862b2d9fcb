"""The atomic writer: content lands whole or not at all, and reads name the bad file."""

from __future__ import annotations

import errno
import json
import os

import pytest

from mtucb_bench import fileio
from mtucb_bench.fileio import (
    atomic_open,
    check_writable,
    create_json,
    read_json,
    write_bytes,
    write_json,
    write_text,
)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_writes_land_whole_with_usual_permissions(tmp_path):
    p = write_json(tmp_path / "a.json", {"x": [1.5, 2]}, indent=2)
    assert json.loads(p.read_text()) == {"x": [1.5, 2]}
    write_text(tmp_path / "b.txt", "héllo\n")
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "héllo\n"
    write_bytes(tmp_path / "c.bin", b"\x00\x01")
    assert (tmp_path / "c.bin").read_bytes() == b"\x00\x01"
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o666 & ~umask
    with atomic_open(tmp_path / "d.csv", "w", newline="") as fh:
        fh.write("a,b\r\n")
    assert (tmp_path / "d.csv").read_bytes() == b"a,b\r\n"
    assert _leftovers(tmp_path) == []


def test_failure_inside_the_block_leaves_the_old_file(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text('{"old": true}')
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_open(target) as fh:
            fh.write('{"new": ')  # half a document, then the writer dies
            raise RuntimeError("boom")
    assert target.read_text() == '{"old": true}'
    assert _leftovers(tmp_path) == []
    with pytest.raises(KeyboardInterrupt):  # also for a Ctrl-C
        with atomic_open(tmp_path / "fresh.json") as fh:
            fh.write("{")
            raise KeyboardInterrupt
    assert not (tmp_path / "fresh.json").exists() and _leftovers(tmp_path) == []


def test_full_disk_leaves_no_partial_file(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        write_json(tmp_path / "trial00_MT-KB.json", {"regret": list(range(1000))})
    assert list(tmp_path.iterdir()) == []
    # a serialisation error happens before any file is opened
    monkeypatch.undo()
    with pytest.raises(TypeError):
        write_json(tmp_path / "x.json", {"bad": object()})
    assert list(tmp_path.iterdir()) == []


def test_bad_mode_and_unreadable_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="`mode` must be"):
        with atomic_open(tmp_path / "x", "a"):
            pass
    bad = tmp_path / "trial03_MT-KB.json"
    bad.write_text('{"regret": [0.1, 0.')
    with pytest.raises(ValueError, match="trial03_MT-KB.json.*not valid JSON"):
        read_json(bad)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        read_json(tmp_path / "nope.json")


@pytest.mark.parametrize("hard_links", [True, False])
def test_create_json_creates_once_and_whole(tmp_path, monkeypatch, hard_links):
    if not hard_links:  # a file system without hard links: O_CREAT | O_EXCL decides

        def no_links(src, dst):
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(fileio.os, "link", no_links)
    target = tmp_path / "manifest.json"
    assert create_json(target, {"seed": 1}, indent=2) is True
    assert target.read_text() == json.dumps({"seed": 1}, indent=2)
    assert create_json(target, {"seed": 2}, indent=2) is False  # the first one stays
    assert json.loads(target.read_text()) == {"seed": 1}
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert _leftovers(tmp_path) == []
    with pytest.raises(TypeError):  # serialised before anything is written
        create_json(tmp_path / "x.json", {"bad": object()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_check_writable_names_the_folder(tmp_path, monkeypatch):
    check_writable(tmp_path)
    assert list(tmp_path.iterdir()) == []
    real = os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(PermissionError, match=rf"Permission denied: '{tmp_path}'$"):
        check_writable(tmp_path)
