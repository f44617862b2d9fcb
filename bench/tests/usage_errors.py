"""Shared check of the suites' command lines: a bad option is a one-line usage error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def assert_usage_error(main: Callable[[list[str]], object], argv: list[str], option: str,
                       out: Path, capsys: pytest.CaptureFixture) -> None:
    """``main(argv + ["--out", out])`` exits 2 with one line ``error: argument <option>: ...``
    on stderr, and creates nothing under ``out``."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: argument {option}:") and err.count("\n") == 1
    assert not out.exists()
