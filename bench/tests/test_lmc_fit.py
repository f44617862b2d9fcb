"""Smoke test of the per-task / independent model fit benchmark (tiny size, one repetition)."""

from __future__ import annotations

from mtucb_bench.perf import lmc_fit


def test_lmc_fit_runs_and_reports(capsys, tmp_path) -> None:
    out = tmp_path / "lmc_fit.json"
    result = lmc_fit.main(["--sizes", "10", "--problems", "branin-currin", "--reps", "1",
                           "--out", str(out)])
    rows = result["rows"]
    assert [r["kind"] for r in rows] == ["per_task", "independent"]
    for row in rows:
        assert row["N"] == 10 and row["n"] == 2
        assert row["new_evals"] >= 1 and row["old_evals"] >= 1  # the closed form was used
        assert row["new_ms"] > 0 and row["old_ms"] > 0 and row["icm_ms"] > 0
        assert abs(row["new_mll"] - row["old_mll"]) < 1e-2  # same objective
    assert out.exists()
    assert "branin-currin" in capsys.readouterr().out
    assert lmc_fit.fit_closure_lmc.LMCFitObjective.__call__.__name__ == "__call__"
