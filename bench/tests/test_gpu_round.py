"""The GPU round benchmark at tiny sizes on the CPU: data, both rounds, the table and the JSON
written only with ``--out``."""

from __future__ import annotations

import json

import pytest
import torch
from botorch.test_functions.multi_objective import DTLZ2

from mtucb_bench.perf import gpu_round as gr


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny problems: intra-op threads only add contention on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TINY = ["--device", "cpu", "--tasks", "2", "--reps", "2", "--num-restarts", "2",
        "--raw-samples", "16", "--mc-samples", "16", "--threads", "1"]


def test_data_is_noisy_negated_dtlz2_on_the_device() -> None:
    data = gr.make_data(40, 2, torch.device("cpu"))
    F = DTLZ2(dim=6, num_objectives=2, negate=True)(data.X)
    assert data.X.shape == (40, 6) and data.Y.shape == (40, 2) and data.X.dtype == torch.float64
    sd = (data.Y - F).std(0) / (F.max(0).values - F.min(0).values)
    assert bool(((sd > 0.004) & (sd < 0.02)).all())  # 1 % of the range
    assert torch.equal(data.bounds, torch.tensor([[0.0] * 6, [1.0] * 6], dtype=torch.float64))


def test_rounds_return_seeded_points_in_the_box() -> None:
    data = gr.make_data(12, 2, torch.device("cpu"))
    settings = gr.Settings(num_restarts=2, raw_samples=16, mc_samples=16)
    for method in gr.METHODS:
        x = gr.ROUNDS[method](data, seed=3, settings=settings)
        assert x.shape == (1, 6) and bool(((x >= 0) & (x <= 1)).all())
        torch.testing.assert_close(gr.ROUNDS[method](data, seed=3, settings=settings), x)


def test_cuda_request_falls_back_to_the_cpu(capsys) -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert gr.resolve_device("cuda") == torch.device("cpu")
    assert "no CUDA device" in capsys.readouterr().err


def test_smoke_without_and_with_out(tmp_path, capsys, monkeypatch) -> None:
    written = []
    monkeypatch.setattr(gr, "write_summary", lambda path, obj: written.append(path) or path)
    summary = gr.main([*TINY, "--sizes", "12"])
    assert written == []  # no --out: nothing written
    (cell,) = summary["cells"]
    assert (cell["N"], cell["n"], cell["reps"]) == (12, 2, 2)
    a, b = cell["methods"][gr.MTUCB], cell["methods"][gr.PAREGO]
    assert len(a["wall_s"]) == len(b["cpu_s"]) == 2 and a["peak_mb"] == [None, None]
    assert cell["ratio_mtucb_to_parego"]["cpu"] == pytest.approx(
        a["median_cpu_s"] / b["median_cpu_s"])
    out = capsys.readouterr().out
    assert "N=12 n=2 on cpu: MT-UCB / qLogNParEGO =" in out and "| (12, 2) | 2 |" in out
    monkeypatch.undo()
    path = tmp_path / "gpu_round.json"
    gr.main([*TINY, "--sizes", "12", "--reps", "1", "--out", str(path)])
    data = json.loads(path.read_text())
    assert {"commit", "date", "load", "command"} <= set(data["provenance"])
    assert data["device"] == "cpu" and data["cells"][0]["N"] == 12
    assert gr.parse_args(["--out"]).out == str(gr.OUT)  # the default summary path
    assert gr.OUT.parts[-3:] == ("results", "perf", "gpu_round.json")


def test_thread_count_is_restored(monkeypatch) -> None:
    monkeypatch.setattr(gr, "_run", lambda args: {"threads": torch.get_num_threads()})
    before = torch.get_num_threads()
    assert gr.main(["--threads", "1"]) == {"threads": 1}
    assert torch.get_num_threads() == before
