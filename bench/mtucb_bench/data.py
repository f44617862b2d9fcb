"""Loaders for the real data sets of the papers' experiments (nothing is shipped with the package).

Where the files are looked for (first match): the ``data_dir`` argument, the environment
variable ``BOTORCH_MTUCB_DATA``, and ``../shared/data`` next to the repository checkout.

* ``fin.csv`` — adjusted closing prices of 29 Dow Jones stocks (paper 001 §6).
* ``iw_data_all.mat`` — CMU Intelligent Workplace light sensors, 41 sensors (paper 001 §6).
* Intel Berkeley lab sensor data (paper 000 §5, "sensor measurements"): not distributed any
  more; :func:`load_intel_lab` reads its published format from a user-supplied path:
  ``data.txt`` rows ``date time epoch moteid temperature humidity light voltage`` and
  ``mote_locs.txt`` rows ``moteid x y``.

Every array is returned as float64 tensors (the light readings are stored as ``uint16`` and
overflow if squared before the cast).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
import torch
from torch import Tensor

__all__ = [
    "DATA_ENV_VAR",
    "IntelLabData",
    "LightSensorData",
    "StockData",
    "default_data_dir",
    "load_intel_lab",
    "load_light_sensor",
    "load_stock_prices",
    "resolve_data_file",
]

DATA_ENV_VAR = "BOTORCH_MTUCB_DATA"
STOCK_FILE = "fin.csv"
LIGHT_FILE = "iw_data_all.mat"


def default_data_dir() -> Path:
    """``$BOTORCH_MTUCB_DATA`` if set, else ``<repo>/../shared/data`` (may not exist)."""
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    return (repo / ".." / "shared" / "data").resolve()


def resolve_data_file(name: str, data_dir: str | Path | None = None) -> Path:
    """Path of data file ``name`` in ``data_dir`` (default :func:`default_data_dir`).

    Raises:
        FileNotFoundError: naming the path tried and how to point the package elsewhere.
    """
    base = Path(data_dir) if data_dir is not None else default_data_dir()
    path = base / name
    if not path.is_file():
        raise FileNotFoundError(
            f"Data file {name!r} not found at {path}. Pass `data_dir` (CLI: --data-dir) or set "
            f"the environment variable {DATA_ENV_VAR} to the folder holding it."
        )
    return path


@dataclass(frozen=True)
class StockData:
    """Daily adjusted closing prices.

    Attributes:
        dates: ``D`` date strings.
        symbols: ``S`` ticker symbols.
        prices: ``D x S`` float64 prices.
    """

    dates: list[str]
    symbols: list[str]
    prices: Tensor


def load_stock_prices(
    data_dir: str | Path | None = None, path: str | Path | None = None
) -> StockData:
    """Read ``fin.csv`` (header ``Date,SYM1,...``; one row per trading day, no missing values)."""
    path = Path(path) if path is not None else resolve_data_file(STOCK_FILE, data_dir)
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        if len(header) < 2 or header[0].strip().lower() != "date":
            raise ValueError(f"{path}: expected a header 'Date,SYM1,...', got {header[:3]}.")
        dates, rows = [], []
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(f"{path}:{lineno}: expected {len(header)} fields, got {len(row)}.")
            dates.append(row[0])
            rows.append([float(v) for v in row[1:]])
    prices = torch.tensor(rows, dtype=torch.float64)
    if prices.numel() == 0 or not torch.isfinite(prices).all():
        raise ValueError(f"{path}: no rows, or missing / non-finite prices.")
    return StockData(dates=dates, symbols=header[1:], prices=prices)


@dataclass(frozen=True)
class LightSensorData:
    """CMU Intelligent Workplace light readings.

    Attributes:
        train: ``601 x 41`` float64 readings (rows: time points, columns: sensors).
        test: ``192 x 41`` float64 readings.
        coords: ``41 x 2`` sensor locations.
    """

    train: Tensor
    test: Tensor
    coords: Tensor


def load_light_sensor(
    data_dir: str | Path | None = None, path: str | Path | None = None
) -> LightSensorData:
    """Read ``iw_data_all.mat`` with ``scipy.io.loadmat`` and cast everything to float64."""
    path = Path(path) if path is not None else resolve_data_file(LIGHT_FILE, data_dir)
    mat = scipy.io.loadmat(path, squeeze_me=True, struct_as_record=False)
    if "data" not in mat:
        raise ValueError(f"{path}: expected a MATLAB struct named 'data'.")
    data = mat["data"]

    def readings(part) -> Tensor:
        arr = getattr(part, "sensordata", part)
        return torch.from_numpy(np.asarray(arr).astype(np.float64))

    train, test = readings(data.train), readings(data.test)
    coords = torch.from_numpy(np.asarray(data.coords).astype(np.float64))
    if train.dim() != 2 or test.dim() != 2 or train.shape[1] != test.shape[1]:
        raise ValueError(f"{path}: train/test must be matrices with the same sensor columns.")
    if coords.shape != (train.shape[1], 2):
        raise ValueError(f"{path}: coords must be {train.shape[1]} x 2, got {tuple(coords.shape)}.")
    return LightSensorData(train=train, test=test, coords=coords)


@dataclass(frozen=True)
class IntelLabData:
    """Intel Berkeley lab readings, grouped by mote.

    Attributes:
        mote_ids: ``A`` mote ids that have a location and at least one valid reading.
        locations: ``A x 2`` mote coordinates (metres, as in ``mote_locs.txt``).
        mote_index: ``N`` index into ``mote_ids`` of each reading.
        readings: ``N x 3`` float64 (temperature, humidity, light).
        epochs: ``N`` epoch numbers.
    """

    mote_ids: list[int]
    locations: Tensor
    mote_index: Tensor
    readings: Tensor
    epochs: Tensor


#: Physically plausible ranges; the raw data hold e.g. 122 °C from motes with failing batteries.
INTEL_VALID_RANGES = {"temperature": (-10.0, 60.0), "humidity": (0.0, 100.0), "light": (0.0, 1e5)}


def load_intel_lab(
    data_path: str | Path, locs_path: str | Path, filter_outliers: bool = True
) -> IntelLabData:
    """Read the Intel lab ``data.txt`` and ``mote_locs.txt`` (published whitespace format).

    Rows with fewer than 8 fields, unparsable or non-finite values, motes without a location
    and (with ``filter_outliers``) values outside :data:`INTEL_VALID_RANGES` are skipped — the
    raw file has all of these.

    Args:
        data_path: ``data.txt``: ``date time epoch moteid temperature humidity light voltage``.
        locs_path: ``mote_locs.txt``: ``moteid x y``.
        filter_outliers: Drop readings outside the plausible ranges.
    """
    locs: dict[int, tuple[float, float]] = {}
    with open(locs_path) as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 3:
                raise ValueError(f"{locs_path}:{lineno}: expected 'moteid x y', got {line!r}.")
            locs[int(float(parts[0]))] = (float(parts[1]), float(parts[2]))
    if not locs:
        raise ValueError(f"{locs_path}: no mote locations.")
    ranges = list(INTEL_VALID_RANGES.values())
    ids: list[int] = []
    epochs: list[int] = []
    values: list[tuple[float, float, float]] = []
    with open(data_path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 8:
                continue
            try:
                epoch = int(parts[2])
                mote = int(parts[3])
                vals = (float(parts[4]), float(parts[5]), float(parts[6]))
            except ValueError:
                continue
            if mote not in locs or not all(math.isfinite(v) for v in vals):
                continue
            if filter_outliers and not all(
                lo <= v <= hi for v, (lo, hi) in zip(vals, ranges, strict=True)
            ):
                continue
            ids.append(mote)
            epochs.append(epoch)
            values.append(vals)
    if not values:
        raise ValueError(f"{data_path}: no valid readings for motes listed in {locs_path}.")
    mote_ids = sorted(set(ids))
    pos = {m: i for i, m in enumerate(mote_ids)}
    return IntelLabData(
        mote_ids=mote_ids,
        locations=torch.tensor([locs[m] for m in mote_ids], dtype=torch.float64),
        mote_index=torch.tensor([pos[m] for m in ids], dtype=torch.long),
        readings=torch.tensor(values, dtype=torch.float64),
        epochs=torch.tensor(epochs, dtype=torch.long),
    )
