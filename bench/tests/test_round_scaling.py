"""The round-scaling benchmark: its MT-UCB round is the loop's, its timing, caps and memory
probe work, at tiny sizes."""

from __future__ import annotations

import json
import multiprocessing as mp
import time

import pytest
import torch
from botorch.test_functions.multi_objective import DTLZ2

from botorch_mtucb.loop import run_bo_loop, scalarized_ucb_factory
from botorch_mtucb.loop.defaults import default_sampler
from mtucb_bench.perf import round_scaling as rs


def test_data_is_noisy_negated_dtlz2() -> None:
    data = rs.make_data(64, 3, seed=0)
    F = DTLZ2(dim=6, num_objectives=3, negate=True)(data.X)
    assert data.X.shape == (64, 6) and data.Y.shape == (64, 3)
    assert bool((data.X >= 0).all() and (data.X <= 1).all())
    sd = (data.Y - F).std(0) / (F.max(0).values - F.min(0).values)
    assert bool(((sd > 0.005) & (sd < 0.02)).all())  # 1 % of the range
    assert torch.equal(data.ref_point, torch.full((3,), -1.1, dtype=torch.float64))


def test_mtucb_round_is_the_loops_first_round() -> None:
    data = rs.make_data(12, 2, seed=0)
    problem = DTLZ2(dim=6, num_objectives=2, negate=True)

    def observe(X: torch.Tensor) -> torch.Tensor:
        return data.Y.clone() if X.shape[0] == 12 else problem(X)

    history = run_bo_loop(observe, initial_X=data.X, num_rounds=1, bounds=data.bounds,
                          generator=torch.Generator().manual_seed(7),
                          acquisition_factory=scalarized_ucb_factory(),
                          scalarization_sampler=default_sampler(2))
    out = rs.mtucb_round(data, seed=7, settings=rs.Settings())
    torch.testing.assert_close(out["x"][0], history.rounds[0].x, rtol=0, atol=1e-12)
    other = rs.mtucb_round(data, seed=8, settings=rs.Settings())
    assert not torch.allclose(other["x"], out["x"])
    assert out["model"] == "ExactMultiTaskGP"


def test_time_cap_stops_a_long_call() -> None:
    t0 = time.perf_counter()
    with pytest.raises(rs.CapExceeded), rs.time_cap(0.05):
        while time.perf_counter() - t0 < 5.0:
            pass
    assert time.perf_counter() - t0 < 1.0
    with rs.time_cap(5.0):  # no alarm left behind
        time.sleep(0.01)


def test_blocked_and_ratios() -> None:
    assert rs._blocked([(100, 2)], 300, 4) == (100, 2)
    assert rs._blocked([(100, 4)], 300, 2) is None
    assert rs._blocked([(300, 2)], 100, 2) is None
    reps = {"A": [{"cpu_s": 1.0}, {"cpu_s": 3.0}], rs.ANCHOR: [{"cpu_s": 4.0}, {"cpu_s": 4.0}]}
    summary = {"A": {"status": "ok", "median_cpu_s": 2.0, "median_wall_s": 1.0},
               rs.ANCHOR: {"status": "ok", "median_cpu_s": 4.0, "median_wall_s": 4.0}}
    assert rs._ratios(summary, reps) == {"A": {"cpu": 0.5, "wall": 0.25,
                                               "paired_cpu_median": 0.5}}


def _allocating_child(conn) -> None:
    """Spawned: the peak RSS growth of allocating (and touching) 64 MB."""
    rs.reset_peak_rss()
    base = rs.peak_rss_bytes()
    buf = torch.ones(64 * 2**20 // 8, dtype=torch.float64)
    conn.send((rs.peak_rss_bytes() - base) / 2**20)
    del buf


def test_peak_rss_sees_an_allocation_in_a_child_of_a_larger_parent() -> None:
    if not rs.reset_peak_rss():
        pytest.skip("no /proc/self/clear_refs")
    base = rs.peak_rss_bytes()
    parent = torch.ones(1024 * 2**20 // 8, dtype=torch.float64)  # the parent outgrows the child
    grown = (rs.peak_rss_bytes() - base) / 2**20
    assert 1000 < grown < 1100
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_allocating_child, args=(send,))
    child.start()
    send.close()
    assert receive.poll(120)
    child_grown = receive.recv()
    child.join()
    del parent
    assert 60 < child_grown < 80


def test_smoke_grid(tmp_path, capsys) -> None:
    out = tmp_path / "round_scaling.json"
    rs.main(["--sizes", "20", "40", "--tasks", "2", "--reps", "1", "--skip-memory",
             "--nehvi-cap", "0.05", "--raw-samples", "64", "--mc-samples", "32",
             "--out", str(out)])
    data = json.loads(out.read_text())
    assert {"commit", "date", "load"} <= set(data["provenance"])
    c20, c40 = data["cells"]
    assert (c20["N"], c20["n"], c40["N"]) == (20, 2, 40)
    for cell in (c20, c40):
        mt, pe = cell["methods"][rs.MTUCB], cell["methods"][rs.PAREGO]
        assert mt["status"] == pe["status"] == "ok" and mt["model"] == "ExactMultiTaskGP"
        ratio = cell["ratios_to_anchor"][rs.MTUCB]["cpu"]
        assert ratio == pytest.approx(mt["median_cpu_s"] / pe["median_cpu_s"])
    nehvi = c20["methods"][rs.NEHVI]
    assert nehvi["status"] == "timeout > 0.05 s" and nehvi["wall_s"][0] < 0.5  # stopped
    assert c40["methods"][rs.NEHVI]["status"].startswith("skipped")
    table = capsys.readouterr().out
    assert "| (20, 2) | ExactMultiTaskGP |" in table and "timeout > 0.05 s" in table


def test_memory_child() -> None:
    settings = rs.Settings(num_restarts=2, raw_samples=32, mc_samples=16)
    mem = rs.measure_memory(rs.MTUCB, 30, 2, 0, settings, threads=1, timeout=120)
    assert mem["status"] == "ok" and mem["model"] == "ExactMultiTaskGP"
    assert mem["peak_mb"] >= 0
    assert mem["nxn_buffers"] == pytest.approx(mem["peak_mb"] * 2**20 / (8 * 30**2))
