"""Smoke test of the small-N floor benchmark (tiny sizes, one repetition)."""

from __future__ import annotations

from mtucb_bench.perf import small_n_floor


def test_small_n_floor_runs_and_reports(capsys) -> None:
    result = small_n_floor.main(["--sizes", "12", "--acq-size", "25", "--reps", "1"])
    (row,) = result["fit"]
    assert row["N"] == 12 and row["new_evals"] >= 1 and row["old_evals"] >= 1
    assert row["floor_ms"] > 0 and row["new_ratio"] > 0
    assert abs(row["new_mll"] - row["old_mll"]) < 1e-5  # same objective, same optimum
    acq = result["acquisition"]
    assert acq["max_abs_diff"] < 1e-8
    for label in ("raw256", "restart4_grad"):
        assert acq[label]["acqf_us"] > 0 and acq[label]["plain_us"] > 0
    out = capsys.readouterr().out
    assert "fit N=  12" in out and "acqf N=25" in out
    assert small_n_floor.fit_closure.ICMFitObjective.__call__.__name__ == "__call__"
