"""Wall time of ``run --workers N`` against a serial run of the same protocol.

The anchor is the serial run (``workers=0``, one torch thread) of the same protocol in the same
invocation; each parallel run is reported as a ratio to it (``--workers N`` wall / serial
wall). Serial and parallel runs alternate (``--repeats``) so that a change in the machine's
load hits both. Every parallel run is checked to give the serial trial records (all fields
but the per-round wall times). The serial run's CPU seconds over its wall seconds show how
much of a core this process got (below 1: the machine is shared), and ``pool_start_s`` is
the wall time of a parallel run of one round per worker (start-up: forkserver, imports).

    python benchmarks/parallel_runner.py                 # rkhs-n20, 10 trials, T = 150
    python benchmarks/parallel_runner.py --quick         # a few seconds, smoke test

Writes ``benchmarks/results/parallel_runner.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

import torch

from botorch_mtucb.benchmarks.fileio import write_json
from botorch_mtucb.benchmarks.runner import run_experiment

RESULTS = Path(__file__).resolve().parent / "results" / "parallel_runner.json"


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def _records(folder: Path) -> dict[str, dict]:
    out = {}
    for p in sorted(folder.glob("trial*.json")):
        blob = json.loads(p.read_text())
        blob.pop("wall_time")
        out[p.name] = blob
    return out


def _timed(folder: Path | None, workers: int, kw: dict) -> tuple[float, float]:
    """Wall and CPU seconds (CPU of this process: meaningful for serial runs only)."""
    cpu, start = _cpu(), time.perf_counter()
    run_experiment(out_dir=folder, workers=workers, threads=1, progress=False, **kw)
    return time.perf_counter() - start, _cpu() - cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--experiment", default="rkhs-n20")
    p.add_argument("--algorithms", nargs="+", default=["MT-KB", "MT-BKB", "IT-KB", "IT-KB-fair"])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--horizon", type=int, default=150)
    p.add_argument("--workers", type=int, nargs="+", default=[2])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="2 trials, T = 10, 1 repeat")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args()
    if args.quick:
        args.trials, args.horizon, args.repeats = 2, 10, 1
    torch.set_num_threads(1)
    kw = dict(experiment=args.experiment, algorithms=args.algorithms, trials=args.trials,
              horizon=args.horizon, seed=0)
    rows: dict[str, list] = {"serial": []} | {f"workers={w}": [] for w in args.workers}
    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        reference = None
        for r in range(args.repeats):
            wall, cpu = _timed(root / f"serial{r}", 0, kw)
            rows["serial"].append({"wall_s": wall, "cpu_s": cpu})
            reference = reference or _records(root / f"serial{r}")
            print(f"repeat {r}: serial {wall:.1f} s (cpu {cpu:.1f} s)", flush=True)
            for w in args.workers:
                wall_w, _ = _timed(root / f"w{w}_{r}", w, kw)
                same = _records(root / f"w{w}_{r}") == reference
                if not same:
                    raise SystemExit(f"--workers {w}: trial records differ from the serial run")
                start_w, _ = _timed(None, w, {**kw, "trials": w, "horizon": 1,
                                              "algorithms": kw["algorithms"][:1]})
                rows[f"workers={w}"].append({"wall_s": wall_w, "pool_start_s": start_w,
                                             "identical_to_serial": same})
                print(f"repeat {r}: --workers {w} {wall_w:.1f} s, ratio to serial "
                      f"{wall_w / wall:.3f} (pool start {start_w:.1f} s)", flush=True)
            load.append(os.getloadavg())
    serial = sum(x["wall_s"] for x in rows["serial"]) / args.repeats
    summary = {}
    for w in args.workers:
        wall = sum(x["wall_s"] for x in rows[f"workers={w}"]) / args.repeats
        summary[f"workers={w}"] = {"mean_wall_s": wall, "ratio_to_serial": wall / serial,
                                   "speedup": serial / wall}
        print(f"--workers {w}: {wall:.1f} s vs serial {serial:.1f} s: ratio {wall / serial:.3f}"
              f" ({serial / wall:.2f}x faster)")
    units = args.trials * len(args.algorithms)
    write_json(Path(args.out), {
        "protocol": {**kw, "units": units, "threads_per_process": 1},
        "serial_mean_wall_s": serial, "summary": summary, "runs": rows,
        "machine": {"cpu_count": os.cpu_count(), "loadavg_1_5_15_between_runs": load,
                    "python": platform.python_version(), "torch": torch.__version__},
    }, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
