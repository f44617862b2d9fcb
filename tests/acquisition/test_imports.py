"""The acquisition layer imports no model class: importing it loads no model or loop module.

Imports go one way: the models, the loop and the integrations import the acquisitions, never
the reverse (the acquisitions ask a model for what they need through
:mod:`botorch_mtucb.protocols`). Checked in a fresh interpreter, so that modules the test
session has already imported do not hide a stray import.
"""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = (
    "botorch_mtucb.multitask",
    "botorch_mtucb.heavy_tailed",
    "botorch_mtucb.models",
    "botorch_mtucb.loop",
    "botorch_mtucb.integrations",
)

SCRIPT = """
import json, sys
import botorch_mtucb.acquisition
import botorch_mtucb.acquisition.dedup
import botorch_mtucb.acquisition.optimizers
import botorch_mtucb.acquisition.trust_region
print(json.dumps(sorted(m for m in sys.modules if m.startswith("botorch_mtucb."))))
"""


def _loaded_modules() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_acquisition_imports_no_model_loop_or_integration_module():
    loaded = _loaded_modules()
    assert "botorch_mtucb.acquisition.multi_task_ucb" in loaded  # the check saw the package
    stray = [m for m in loaded if m.startswith(FORBIDDEN)]
    assert stray == [], f"botorch_mtucb.acquisition imports {stray}"
