"""The sparse-practical benchmark: its rounds, loop and summary work, at tiny sizes."""

from __future__ import annotations

import json
import time

import pytest
import torch

from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP
from mtucb_bench.perf import sparse_practical as sp


def test_data_and_factories() -> None:
    X, Y = sp.make_data(20, seed=0)
    assert X.shape == (20, 6) and Y.shape == (20, 2)
    noise = Y - sp.problem()(X)
    assert 0.002 < float(noise.std()) < 0.03
    assert isinstance(sp.make_factory("exact", 10, 5, 0)(X, Y), ExactMultiTaskGP)
    sparse = sp.make_factory("sparse", 10, 5, 0)(X, Y)
    assert isinstance(sparse, NystromMultiTaskGP) and sparse.dictionary_size <= 5
    with pytest.raises(ValueError):
        sp.make_factory("dense", 10, 5, 0)


@pytest.mark.parametrize("mode", sp.MODES)
def test_timed_round_records_its_phases(mode: str) -> None:
    rec = sp.timed_round(mode, 24, fit_subset_size=12, max_dictionary_size=6)
    assert rec["status"] == "ok" and rec["N"] == 24 and rec["mode"] == mode
    for phase in ("fit", "posterior", "acquisition", "total"):
        assert rec[phase]["cpu_s"] >= 0 and rec[phase]["wall_s"] >= 0
    assert (rec["dictionary_size"] is None) == (mode == "exact")


def test_cap_stops_a_long_round() -> None:
    t0 = time.perf_counter()
    rec = sp.timed_round("exact", 200, cap=0.01)
    assert rec["status"] == "capped" and rec["model"] is None
    assert time.perf_counter() - t0 < 30


def test_hypervolume_of_a_known_front() -> None:
    Y = torch.tensor([[0.0, -1.0], [-1.0, 0.0], [-1.05, -1.05], [-2.0, 0.5]], dtype=torch.float64)
    # two boxes of 1.1 x 0.1 plus their overlap region: 1.1·1.1 − 1.0·1.0 = 0.21
    assert sp.hypervolume(Y) == pytest.approx(0.21)
    assert sp.hypervolume(Y[2:3] - 1.0) == 0.0


def test_loop_runs_both_modes(tmp_path) -> None:
    out = tmp_path / "loop.json"
    result = sp.main(["loop", "--seeds", "0", "--n0", "16", "--rounds", "1",
                      "--fit-subset-size", "10", "--max-dictionary-size", "6",
                      "--out", str(out)])
    recs = result["records"]
    assert [r["mode"] for r in recs] == ["exact", "sparse"]
    assert recs[0]["model"] == "ExactMultiTaskGP" and recs[1]["model"] == "NystromMultiTaskGP"
    for r in recs:
        assert r["hv_final"] >= r["hv_initial"] >= 0 and r["mean_regret"] is not None
    saved = json.loads(out.read_text())
    assert "provenance" in saved and len(saved["records"]) == 2


def test_cap_accuracy_rows() -> None:
    rows = sp.cap_accuracy(N=48, caps=(48, 6), fit_subset_size=24, num_test=16)
    assert [r["cap"] for r in rows] == [48, 6]
    assert rows[1]["dictionary_size"] <= 6 and rows[1]["effective_q"] < rows[1]["q"]
    for r in rows:
        assert r["mean_rmse_rel"] >= 0 and 0 < r["var_ratio_min"] <= r["var_ratio_median"]
