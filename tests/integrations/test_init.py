"""``botorch_mtucb.integrations``: the Ax helpers are lazy names; the package imports without Ax.

Reference: a fresh interpreter in which ``import ax`` fails (``sys.modules['ax'] = None``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_import_without_ax_and_lazy_names() -> None:
    code = (
        "import sys; sys.modules['ax'] = None\n"
        "import botorch_mtucb, botorch_mtucb.integrations as I\n"
        "print('ax loaded:', 'botorch_mtucb.integrations.ax' in sys.modules)\n"
        "try:\n    I.mtucb_generation_strategy\nexcept ImportError as e:\n"
        "    print('hint:', 'botorch-mtucb[ax]' in str(e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "ax loaded: False" in out and "hint: True" in out
    pytest.importorskip("ax")
    import botorch_mtucb.integrations as integrations
    import botorch_mtucb.integrations.ax as ax_face

    for name in integrations.__all__:
        assert getattr(integrations, name) is getattr(ax_face, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        integrations.nothing  # noqa: B018


def test_import_of_the_package_does_not_import_ax() -> None:
    code = (
        "import sys, botorch_mtucb, botorch_mtucb.integrations\n"
        "print(sorted(m for m in sys.modules if m == 'ax' or m.startswith('ax.')"
        " or m.startswith('botorch_mtucb.integrations.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
