"""TrialResult's JSON round trip and ExperimentResult's completeness flag."""

from __future__ import annotations

import json

import pytest
import torch

from mtucb_bench.results import ExperimentResult, TrialResult

DT = torch.float64


def _trial(**kw):
    r = torch.tensor([0.3, 0.1, 0.2], dtype=DT)
    base = dict(algorithm="MT-KB", trial=2, seed=2002, regret=r,
                time_average=r.cumsum(0) / torch.arange(1, 4, dtype=DT),
                wall_time=torch.tensor([0.01, 0.02, 0.03], dtype=DT),
                bayes=torch.tensor([0.5, 0.4, 0.1], dtype=DT))
    return TrialResult(**{**base, **kw})


def test_json_round_trip_is_exact():
    tr = _trial(dictionary_size=torch.tensor([2.0, 3.0, 4.0], dtype=DT))
    blob = json.loads(json.dumps(tr.to_json_dict()))  # through JSON text, as on disk
    back = TrialResult.from_json_dict(blob)
    for name in ("regret", "time_average", "wall_time", "bayes", "dictionary_size"):
        assert torch.equal(getattr(back, name), getattr(tr, name)), name
    assert back.hypervolume is None and (back.algorithm, back.trial, back.seed) == (
        "MT-KB", 2, 2002)
    assert blob["cumulative_regret"] == pytest.approx([0.3, 0.4, 0.6], abs=1e-15)
    partial = {**blob, "bayes_regret": [0.1, None, 0.2]}  # not recorded every round
    assert TrialResult.from_json_dict(partial).bayes is None
    with pytest.raises(ValueError, match="no 'regret'"):
        TrialResult.from_json_dict({**blob, "regret": None})


def test_completeness_flag():
    res = ExperimentResult("rkhs-n2", {"horizon": 3}, [_trial()])
    assert res.complete and res.summary()["MT-KB"]["trials"] == 1
    res.missing = [(3, "MT-KB")]
    assert not res.complete
