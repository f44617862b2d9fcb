"""Wall time of ``run --workers N`` against a serial run of the same protocol.

The anchor is the serial run (``workers=0``, one torch thread) of the same protocol in the same
invocation; each parallel run is reported as a ratio to it (``--workers N`` wall / serial
wall). Serial and parallel runs alternate (``--repeats``) so that a change in the machine's
load hits both. Every parallel run is checked to give the serial trial records (all fields
but the per-round wall times). CPU seconds over wall seconds ("cores") show how much of
the machine a run got (serial below 1, or parallel below N: the machine is shared; the
workers' CPU is sampled with psutil), and ``pool_start_s`` is the wall time of a parallel run
of one round per worker (start-up: forkserver, imports).

    python -m mtucb_bench.perf.parallel_runner                 # rkhs-n20, 10 trials, T = 150
    python -m mtucb_bench.perf.parallel_runner --quick         # a few seconds, smoke test

Writes ``docs/results/perf/parallel_runner.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import threading
import time
from pathlib import Path

import torch

from mtucb_bench.perf.provenance import RESULTS, write_summary
from mtucb_bench.runner import run_experiment

OUT = RESULTS / "perf" / "parallel_runner.json"


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


class _ChildCPU:
    """CPU seconds of this process's descendants (forkserver workers are grandchildren, so
    ``RUSAGE_CHILDREN`` misses them), sampled every 0.2 s with psutil when it is installed."""

    def __init__(self) -> None:
        try:
            import psutil
        except ImportError:
            self.psutil = None
        else:
            self.psutil = psutil
        self.seen: dict[int, float] = {}
        self.stop = threading.Event()

    def _sample(self) -> None:
        for c in self.psutil.Process().children(recursive=True):
            try:
                t = c.cpu_times()
                self.seen[c.pid] = max(self.seen.get(c.pid, 0.0), t.user + t.system)
            except self.psutil.Error:
                pass

    def __enter__(self) -> _ChildCPU:
        if self.psutil is not None:
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()
        return self

    def _loop(self) -> None:
        while not self.stop.wait(0.2):
            self._sample()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.psutil is not None:
            self.thread.join()

    @property
    def total(self) -> float | None:
        return None if self.psutil is None else sum(self.seen.values())


def _timed(folder: Path | None, workers: int, kw: dict) -> tuple[float, float | None]:
    """Wall seconds and CPU seconds (this process, plus its workers when psutil is there)."""
    cpu, start = _cpu(), time.perf_counter()
    with _ChildCPU() as kids:
        run_experiment(out_dir=folder, workers=workers, threads=1, progress=False, **kw)
    wall, own = time.perf_counter() - start, _cpu() - cpu
    if workers and kids.total is None:
        return wall, None
    return wall, own + (kids.total or 0.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--experiment", default="rkhs-n20")
    p.add_argument("--algorithms", nargs="+", default=["MT-KB", "MT-BKB", "IT-KB", "IT-KB-fair"])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--horizon", type=int, default=150)
    p.add_argument("--workers", type=int, nargs="+", default=[2])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="2 trials, T = 10, 1 repeat")
    p.add_argument("--out", default=str(OUT))
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
            print(f"repeat {r}: serial {wall:.1f} s (cpu {cpu:.1f} s = {cpu / wall:.2f} cores)",
                  flush=True)
            for w in args.workers:
                wall_w, cpu_w = _timed(root / f"w{w}_{r}", w, kw)
                same = _records(root / f"w{w}_{r}") == reference
                if not same:
                    raise SystemExit(f"--workers {w}: trial records differ from the serial run")
                start_w, _ = _timed(None, w, {**kw, "trials": w, "horizon": 1,
                                              "algorithms": kw["algorithms"][:1]})
                rows[f"workers={w}"].append({"wall_s": wall_w, "cpu_s": cpu_w,
                                             "pool_start_s": start_w,
                                             "identical_to_serial": same})
                used = "" if cpu_w is None else f", cpu {cpu_w:.1f} s = {cpu_w / wall_w:.2f} cores"
                print(f"repeat {r}: --workers {w} {wall_w:.1f} s, ratio to serial "
                      f"{wall_w / wall:.3f} (pool start {start_w:.1f} s{used})", flush=True)
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
    write_summary(Path(args.out), {
        "protocol": {**kw, "units": units, "threads_per_process": 1},
        "serial_mean_wall_s": serial, "summary": summary, "runs": rows,
        "machine": {"cpu_count": os.cpu_count(), "loadavg_1_5_15_between_runs": load,
                    "python": platform.python_version(), "torch": torch.__version__},
    }, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
