"""Tests of the re-evaluation study (mtucb_bench.studies.dedup_default): 2-round smoke runs."""

from __future__ import annotations

import json
import math
import warnings

import pytest
import torch
from botorch.test_functions.multi_objective import BraninCurrin

from botorch_mtucb.loop import run_bo_loop
from mtucb_bench.studies import dedup_default as study


def _repeats_reference(initial_X, X, bounds, tol):
    """Python-loop reference of the repeat count."""
    side = bounds[1] - bounds[0]
    seen, count = [list(x) for x in initial_X], 0
    for x in X:
        if any(max(abs(float(a - b)) / float(s) for a, b, s in zip(x, y, side, strict=True)) <= tol
               for y in seen):
            count += 1
        seen.append(list(x))
    return count


def test_repeats_matches_loop_reference():
    g = torch.Generator().manual_seed(0)
    bounds = torch.tensor([[0.0, -5.0], [2.0, 5.0]], dtype=torch.float64)
    initial_X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(4, 2, generator=g,
                                                                 dtype=torch.float64)
    X = torch.cat([initial_X[1:2], torch.rand(1, 2, dtype=torch.float64, generator=g),
                   initial_X[3:4] + 1e-9, torch.zeros(2, 2, dtype=torch.float64)])
    for tol in (1e-6, 1e-3):
        expected = _repeats_reference(initial_X, X, bounds, tol)
        assert study.repeats(initial_X, X, bounds, tol) == expected
    assert study.repeats(initial_X, X, bounds, 1e-6) == 3  # two design points + the 2nd zero


def test_sign_test_matches_binomial():
    assert study._sign_p(0, 5) == pytest.approx(2 / 32)
    assert study._sign_p(3, 3) == 1.0
    assert study._sign_p(0, 0) == 1.0
    assert study._sign_p(8, 2) == pytest.approx(2 * sum(math.comb(10, i) for i in range(3))
                                                / 1024)


def test_default_arm_is_the_loop_default():
    """The study's seeding gives run_bo_loop's default proposals (the arms share the design
    and the optimizer seeds)."""
    p = BraninCurrin(negate=True).to(torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = run_bo_loop(lambda X: p(X, noise=False), num_rounds=2, bounds=p.bounds,
                        generator=torch.Generator().manual_seed(3))
    res = study.run_one("bc", "default", 3, 2, 1e-3)
    assert torch.equal(torch.tensor(res["initial_X"], dtype=torch.float64), h.initial_X)
    assert torch.equal(torch.tensor(res["X"], dtype=torch.float64), h.X)
    assert len(res["etas"]) == 2 and len(res["hv_pct_curve"]) == 3
    assert 0.0 <= res["hv_pct"] <= 100.0  # this design has no point beyond ref_point


def test_main_smoke(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(study, "OUT", tmp_path)
    study.main(["--seeds", "1", "--rounds", "2", "--problems", "bc-noisy",
                "--arms", "default", "dedup"])
    run = json.loads((tmp_path / "T2" / "bc-noisy" / "dedup" / "seed0.json").read_text())
    assert run["repeats"]["1e-06"] == 0 and len(run["sources"]) == 2
    assert run["noise_sd"] == pytest.approx(study.noise_sd(
        BraninCurrin(negate=True).to(torch.float64), 0.05).tolist())
    summary = json.loads((tmp_path / "T2" / "summary.json").read_text())
    assert summary["problems"]["bc-noisy"]["dedup"]["vs_default"]["trials"] == 1
    assert "| bc-noisy | dedup |" in capsys.readouterr().out
