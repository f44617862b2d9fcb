"""The README quickstart runs and prints a sensible posterior."""

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_runs(capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "learned task covariance" in out
    corr = float(out.split("task correlation = ")[1].split()[0])
    assert corr > 0.9  # the toy tasks are strongly correlated
