"""Smoke test of the joint-posterior benchmark (``mtucb_bench.perf.joint_posterior``)."""

import json

from mtucb_bench.perf import joint_posterior


def test_benchmark_times_lazy_dense_and_kronecker(tmp_path):
    out = tmp_path / "joint_posterior.json"
    result = joint_posterior.main(["--sizes", "40x2", "--t", "8", "--reps", "1",
                                   "--out", str(out)])
    (row,) = result["rows"]
    assert (row["q"], row["n"], row["t"]) == (40, 2, 8)
    assert {"lazy_s", "dense_s", "kronecker_s", "dense_over_lazy"} <= set(row)
    assert row["max_abs_diff_variance_vs_dense"] < 1e-10
    assert row["max_abs_diff_variance_vs_kronecker"] < 1e-8
    saved = json.loads(out.read_text())
    assert saved["rows"] == result["rows"] and "commit" in saved["provenance"]
    (big,) = joint_posterior.main(["--sizes", "40x2", "--t", "8", "--reps", "1",
                                   "--dense-max", "10", "--kronecker-max", "10"])["rows"]
    assert "dense_s" not in big and "kronecker_s" not in big
