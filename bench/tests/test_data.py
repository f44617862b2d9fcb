"""Data loaders: Intel-lab format on generated files, data-dir resolution, real files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mtucb_bench import data as data_mod
from mtucb_bench.data import (
    load_intel_lab,
    load_light_sensor,
    load_stock_prices,
    resolve_data_file,
)
from mtucb_bench.multi_task_problems import intel_lab_problem

DT = torch.float64


def _write_intel(tmp_path, seed: int = 0, motes: int = 6, per_mote: int = 40):
    """A small data.txt / mote_locs.txt in the published Intel-lab format, with bad rows."""
    rng = np.random.default_rng(seed)
    locs = rng.uniform(0, 40, size=(motes, 2))
    lines, truth = [], {m: [] for m in range(1, motes + 1)}
    epoch = 0
    for _ in range(per_mote):
        for m in range(1, motes + 1):
            epoch += 1
            temp = 18 + 0.1 * locs[m - 1, 0] + rng.normal(0, 0.5)
            hum = 40 - 0.2 * locs[m - 1, 1] + rng.normal(0, 1)
            light = 100 + 5 * m + rng.normal(0, 10)
            lines.append(
                f"2004-02-28 00:59:16.02785 {epoch} {m} {temp:.4f} {hum:.4f} {light:.2f} 2.68"
            )
            truth[m].append((round(temp, 4), round(hum, 4), round(light, 2)))
    lines += [
        "2004-02-28 01:03:16.33393 11 1 19.3024 38.4629",  # missing fields
        "2004-02-28 01:06:16.01353 13 99 19.1652 38.8039 45.08 2.68742",  # mote without location
        "2004-02-28 01:06:16.01353 14 2 122.153 -3.91901 11.04 2.03397",  # dead-battery outlier
        "2004-02-28 01:06:16.01353 15 2 nan 38.0 45.0 2.6",  # non-finite
        "garbage line",
    ]
    (tmp_path / "data.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "mote_locs.txt").write_text(
        "\n".join(f"{m} {x:.2f} {y:.2f}" for m, (x, y) in enumerate(locs, start=1)) + "\n"
    )
    return tmp_path / "data.txt", tmp_path / "mote_locs.txt", truth, locs


def test_intel_loader_on_generated_file(tmp_path):
    data_path, locs_path, truth, locs = _write_intel(tmp_path)
    d = load_intel_lab(data_path, locs_path)
    assert d.mote_ids == [1, 2, 3, 4, 5, 6]
    assert d.readings.shape == (6 * 40, 3) and d.readings.dtype == DT
    torch.testing.assert_close(d.locations, torch.tensor(np.round(locs, 2), dtype=DT))
    for i, m in enumerate(d.mote_ids):
        got = d.readings[d.mote_index == i]
        torch.testing.assert_close(got, torch.tensor(truth[m], dtype=DT))
    # the outlier row is kept when filtering is off
    raw = load_intel_lab(data_path, locs_path, filter_outliers=False)
    assert raw.readings.shape[0] == 6 * 40 + 1


def test_intel_problem_on_generated_file(tmp_path):
    data_path, locs_path, _, _ = _write_intel(tmp_path, motes=8)
    p = intel_lab_problem(data_path, locs_path, seed=0, lengthscale=0.3)
    assert p.num_objectives == 3 and p.arms.shape == (8, 2)
    assert float(p.arms.min()) == 0.0 and float(p.arms.max()) == 1.0
    F = p.f(p.arms)
    torch.testing.assert_close(F.mean(dim=0), torch.zeros(3, dtype=DT), atol=1e-12, rtol=0)
    torch.testing.assert_close(F.std(dim=0), torch.ones(3, dtype=DT))
    B = p.task_covar
    torch.testing.assert_close(B, B.T)
    assert float(torch.linalg.eigvalsh(B).min()) > -1e-10
    assert p.noise_std > 0 and p.b > 0
    # the split is random but reproducible
    torch.testing.assert_close(intel_lab_problem(data_path, locs_path, seed=0,
                                                 lengthscale=0.3).task_covar, B)
    fitted = intel_lab_problem(data_path, locs_path, seed=0)
    assert "SE l =" in fitted.notes


def test_data_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv(data_mod.DATA_ENV_VAR, str(tmp_path))
    assert data_mod.default_data_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match="BOTORCH_MTUCB_DATA"):
        resolve_data_file("fin.csv")
    (tmp_path / "fin.csv").write_text("Date,AAA,BBB\n2020-01-01,1.0,2.0\n2020-01-02,3.0,4.5\n")
    s = load_stock_prices()
    assert s.symbols == ["AAA", "BBB"] and s.dates == ["2020-01-01", "2020-01-02"]
    torch.testing.assert_close(s.prices, torch.tensor([[1.0, 2.0], [3.0, 4.5]], dtype=DT))
    (tmp_path / "bad.csv").write_text("Date,AAA\n2020-01-01,1.0,3.0\n")
    with pytest.raises(ValueError, match="fields"):
        load_stock_prices(path=tmp_path / "bad.csv")
    monkeypatch.delenv(data_mod.DATA_ENV_VAR)
    assert data_mod.default_data_dir().name == "data"


def test_light_sensor_loader_casts_uint16(tmp_path):
    import scipy.io

    rng = np.random.default_rng(0)
    train = rng.integers(60000, 65535, size=(5, 3)).astype(np.uint16)
    test = rng.integers(0, 100, size=(2, 3)).astype(np.uint16)
    scipy.io.savemat(tmp_path / "iw_data_all.mat", {
        "data": {"train": {"sensordata": train}, "test": {"sensordata": test},
                 "coords": rng.uniform(size=(3, 2)), "note": "generated"}
    })
    d = load_light_sensor(tmp_path)
    assert d.train.dtype == DT and d.train.shape == (5, 3) and d.coords.shape == (3, 2)
    # squares of uint16 values overflow unless cast first
    assert float(d.train.square().max()) == float(train.astype(np.float64).max() ** 2)
