"""The README quickstart runs: a sensible posterior, then a short MT-KB loop with a plot."""

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_runs(capsys, tmp_path):
    ns = runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="quickstart")
    out_png = tmp_path / "loop.png"
    ns["main"](rounds=3, out=str(out_png))
    out = capsys.readouterr().out
    assert "learned task covariance" in out
    corr = float(out.split("task correlation = ")[1].split()[0])
    assert corr > 0.9  # the toy tasks are strongly correlated
    assert "MT-KB: 3 rounds" in out and "time-average scalarized regret" in out
    assert out_png.stat().st_size > 0
