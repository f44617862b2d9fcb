"""Smoke test of the independent-task fit benchmark (``mtucb_bench.perf.independent_fit``)."""

import json

from mtucb_bench.perf import independent_fit


def test_benchmark_times_blocks_dense_and_singletaskgp(tmp_path):
    out = tmp_path / "independent_fit.json"
    result = independent_fit.main(["--sizes", "12x2", "--reps", "1", "--out", str(out)])
    (row,) = result["rows"]
    assert (row["N"], row["n"]) == (12, 2)
    assert {"singletaskgp_s", "blocks_s", "dense_s", "blocks_over_dense"} <= set(row)
    saved = json.loads(out.read_text())
    assert saved["rows"] == result["rows"] and "commit" in saved["provenance"]
    # above --dense-max rows times tasks the dense route is not timed
    (big,) = independent_fit.main(["--sizes", "12x2", "--reps", "1", "--dense-max", "10"])["rows"]
    assert "dense_s" not in big
