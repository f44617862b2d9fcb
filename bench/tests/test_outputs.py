"""Run-level files: summary, CSV (with its stride) and figure, all without temporary files."""

from __future__ import annotations

import csv
import json

import torch

from mtucb_bench.outputs import CSV_HEADER, write_outputs
from mtucb_bench.results import ExperimentResult, TrialResult

DT = torch.float64


def _result(T=6):
    trials = []
    for k, alg in [(0, "MT-KB"), (0, "IT-KB"), (1, "MT-KB")]:
        r = torch.linspace(0.5, 0.1, T, dtype=DT) * (k + 1)
        trials.append(TrialResult(alg, k, k, r, r.cumsum(0) / torch.arange(1, T + 1),
                                  torch.full((T,), 0.01, dtype=DT)))
    return ExperimentResult("rkhs-n2", {"horizon": T, "paper": "000"}, trials,
                            missing=[(1, "IT-KB")])


def test_outputs_are_complete_and_atomic(tmp_path):
    res = _result()
    write_outputs(res, tmp_path, csv_stride=2)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["results"] == json.loads(json.dumps(res.summary()))
    assert summary["missing"] == [[1, "IT-KB"]]
    with open(tmp_path / "rounds.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == CSV_HEADER and len(rows) == 1 + 3 * 3  # rounds 1, 3, 5 of 3 trials
    assert [int(r[3]) for r in rows[1:4]] == [1, 3, 5]
    assert float(rows[2][4]) == float(res.trials[0].regret[2])
    assert (tmp_path / "time_average_regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    write_outputs(res, tmp_path, plot=False)  # overwrite in place, still no leftovers
    with open(tmp_path / "rounds.csv", newline="") as fh:
        assert len(list(csv.reader(fh))) == 1 + 3 * 6
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
