"""The replicate study (mtucb_bench.studies.robust_replicates): ratios and counts by hand."""

from __future__ import annotations

import json
import math

import pytest

from mtucb_bench.studies import robust_replicates as study

ORIGINAL = {  # cell -> method -> final regret of seeds 0, 1
    "branin/clean": {"STGP-LogEI": [1.0, 3.0], "RRP-LogEI": [4.0, 4.0],
                     "ROBUST-UCB": [2.0, 2.0]},
    "levy4/gross": {"STGP-LogEI": [8.0, 8.0], "RRP-LogEI": [1.0, 1.0],
                    "ROBUST-UCB": [1.0, 2.0]},
}
REPLICATE = {"branin/clean": {"STGP-LogEI@1": [3.0, 3.0], "ROBUST-UCB@1": [2.0, 4.0]},
             "levy4/gross": {"STGP-LogEI@1": [8.0, 4.0], "ROBUST-UCB@1": [1.0, 1.0]}}


def _write(tmp_path, drop_replicate_of=None):
    summary = {"cells": {c: {m: {"final_by_seed": {str(s): v for s, v in enumerate(vals)}}
                             for m, vals in ms.items()} for c, ms in ORIGINAL.items()}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    for cell, ms in REPLICATE.items():
        folder = tmp_path / "runs" / cell.replace("/", "__")
        folder.mkdir(parents=True)
        for m, vals in ms.items():
            if cell == drop_replicate_of:
                continue
            for s, v in enumerate(vals):
                rec = {"cell": cell, "method": m, "seed": s, "rounds": 2,
                       "simple_regret": [9.0, 5.0, v]}
                (folder / f"{m}_r2_t{s}.json").write_text(json.dumps(rec))
    return ["--out", str(tmp_path / "runs"), "--summary", str(tmp_path / "summary.json"),
            "--results", str(tmp_path / "res"), "--rounds", "2", "--trials", "2"]


def test_ratios_and_counts_by_hand(tmp_path, capsys):
    study.main(_write(tmp_path))
    res = json.loads((tmp_path / "res.json").read_text())
    clean, gross = res["cells"]["branin/clean"], res["cells"]["levy4/gross"]
    # branin/clean: STGP 2, RRP 4, STGP@1 3, ROBUST 2, ROBUST@1 3; best = 2
    assert clean["stgp_replicate_over_stgp"] == pytest.approx(1.5)
    assert clean["stgp_replicate_over_best"] == pytest.approx(1.5)
    assert clean["robust_over_best"] == pytest.approx(1.0)
    assert clean["robust_replicate_over_robust"] == pytest.approx(1.5)
    assert clean["robust_both_over_best_pooled"] == pytest.approx(2.5 / 2.5)
    assert clean["robust_both_over_stgp_pooled"] == pytest.approx(2.5 / 2.5)
    assert clean["paired"]["STGP@1 vs STGP"] == {"n": 2, "wins": 0, "losses": 1,
                                                 "sign_test_p": 1.0}
    # levy4/gross: STGP 8, RRP 1, STGP@1 6, ROBUST 1.5, ROBUST@1 1; best = 1, pooled best 1
    assert gross["stgp_replicate_over_best"] == pytest.approx(6.0)
    assert gross["robust_over_best"] == pytest.approx(1.5)
    assert gross["robust_both_over_best_pooled"] == pytest.approx(1.25)
    assert "robust_both_over_stgp_pooled" not in gross
    counts = res["counts"]
    reg = counts["regret_target"]
    assert reg["STGP-LogEI@1 (a copy of a baseline)"] == {
        "passed": 0, "of": 2, "failing": ["branin/clean", "levy4/gross"]}
    assert reg["ROBUST-UCB (original runs)"]["failing"] == ["levy4/gross"]
    assert reg["ROBUST-UCB@1 (replicate runs)"]["passed"] == 1  # branin 1.5 fails, levy 1.0
    assert counts["clean_target"]["STGP-LogEI@1 over STGP-LogEI"]["passed"] == 0
    twin = counts["stgp_twin_log_ratio"]
    assert twin["sd"] == pytest.approx(abs(math.log(1.5) - math.log(0.75)) / math.sqrt(2))
    assert twin["outside_1.2"] == 2 and twin["cells"] == 2
    assert "| branin/clean |" in (tmp_path / "res.md").read_text()
    assert res["provenance"]["commit"]


def test_a_cell_without_its_replicates_is_left_out(tmp_path):
    study.main(_write(tmp_path, drop_replicate_of="levy4/gross"))
    res = json.loads((tmp_path / "res.json").read_text())
    assert list(res["cells"]) == ["branin/clean"]
