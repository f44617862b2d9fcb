"""The README's plain-BoTorch MT-UCB example runs as written (for fewer rounds)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_loop_example_runs():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    code = next(b for b in blocks if "ScalarizedMultiTaskUCB" in b)
    assert "for t in range(10):" in code
    ns: dict = {}
    exec(compile(code.replace("range(10)", "range(2)"), "README.md", "exec"), ns)
    X, Y = ns["X"], ns["Y"]
    assert X.shape == (7, 2) and Y.shape == (7, 2)
    assert ((X >= 0) & (X <= 1)).all()  # BraninCurrin's domain is the unit square
