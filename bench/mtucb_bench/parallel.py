"""Execute the (trial, algorithm) units of a run: serially, on local processes, or on Dask.

Common random numbers make every unit independent: unit (k, algorithm) builds trial k's
problem instance from its trial seed and runs :func:`~.runner.run_trial`, whose random streams
are all seeded from that trial seed (see :mod:`.runner`). So the units can run in any order,
on any machine, and give the same trial record as a serial run (the per-round wall times
aside). The engines are :class:`concurrent.futures.ProcessPoolExecutor` with the
``forkserver`` context, or ``spawn`` where there is none (``run --workers N``), and Dask
distributed (``run --scheduler ADDRESS``; install with ``pip install botorch-mtucb[dask]``).
Results come back to the calling process, which writes every file, so Dask workers need
neither a shared file system nor write access.

Within one process units are serialised by a lock (``run_trial`` seeds torch's global
generator and sets warning filters), so a Dask worker with several threads stays
deterministic, just not faster: start Dask workers with one thread each
(``dask worker ADDRESS --nthreads 1 --nworkers N``).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from mtucb_bench.experiments import ExperimentOptions

__all__ = ["TrialUnit", "UnitOutcome", "execute", "require_distributed", "run_unit"]

_LOCK = threading.Lock()


@dataclass(frozen=True)
class TrialUnit:
    """One (trial, algorithm) pair of a run, with everything needed to run it anywhere.

    Attributes:
        experiment: Experiment name (looked up in the worker).
        trial: Trial index k.
        trial_seed: ``1000·seed + k``.
        algorithm: Algorithm name.
        horizon: Rounds T.
        bound: ``"spectral"`` or ``"directional"``.
        scalarization: ``"chebyshev"`` or ``"linear"``.
        constants: ``"authors"`` or ``"theory"``.
        options: Problem options.
        threads: torch threads while the unit runs (``None``: leave as is).
        progress: Per-round progress bar (serial runs with long horizons only).
    """

    experiment: str
    trial: int
    trial_seed: int
    algorithm: str
    horizon: int
    bound: str
    scalarization: str
    constants: str
    options: ExperimentOptions
    threads: int | None = None
    progress: bool = False


@dataclass(frozen=True)
class UnitOutcome:
    """What a unit sends back: the trial record, or why the algorithm was skipped.

    Attributes:
        trial: Trial index k.
        algorithm: Canonical algorithm name.
        record: :meth:`~.runner.TrialResult.to_json_dict` (plain lists), or ``None`` if skipped.
        skipped: The reason the algorithm cannot run on this problem, or ``None``.
        versions: :func:`~.manifest.package_versions` of the process that ran it (a Dask
            worker may have another environment than the client).
    """

    trial: int
    algorithm: str
    record: dict[str, Any] | None
    skipped: str | None = None
    versions: dict[str, str] | None = None


def run_unit(unit: TrialUnit) -> UnitOutcome:
    """Run one unit (in this process); importable by reference for worker processes."""
    import torch

    from mtucb_bench.algorithms import get_algorithm
    from mtucb_bench.experiments import get_experiment
    from mtucb_bench.manifest import package_versions
    from mtucb_bench.runner import run_trial

    with _LOCK:
        previous = torch.get_num_threads()
        if unit.threads is not None:
            torch.set_num_threads(unit.threads)
        try:
            problem = get_experiment(unit.experiment).make_problem(unit.trial_seed, unit.options)
            spec = get_algorithm(unit.algorithm)
            reason = spec.available(problem)
            if reason is not None:
                return UnitOutcome(unit.trial, spec.name, None, reason, package_versions())
            tr = run_trial(
                problem, spec.name, unit.horizon, unit.trial_seed, trial=unit.trial,
                bound=unit.bound, scalarization=unit.scalarization, constants=unit.constants,
                progress=unit.progress,
            )
            return UnitOutcome(unit.trial, spec.name, tr.to_json_dict(), None, package_versions())
        finally:
            if unit.threads is not None:
                torch.set_num_threads(previous)


def execute(
    units: Sequence[TrialUnit],
    on_result: Callable[[UnitOutcome], None],
    workers: int = 0,
    scheduler: Any = None,
) -> None:
    """Run ``units`` and hand each outcome to ``on_result`` (in this process) as it arrives.

    Args:
        units: The units to run.
        on_result: Called once per unit, in completion order (serially: in ``units`` order).
        workers: Local worker processes (``0``: run here, serially).
        scheduler: A Dask scheduler address (``"tcp://host:8786"``) or a
            ``distributed.Client``; mutually exclusive with ``workers``.

    Raises:
        ValueError: If both ``workers`` and ``scheduler`` are given, or ``workers < 0``.
        ImportError: If ``scheduler`` is given and ``distributed`` is not installed.
    """
    if not isinstance(workers, int) or workers < 0:
        raise ValueError(f"`workers` must be an integer >= 0, got {workers!r}.")
    if workers and scheduler is not None:
        raise ValueError("Give `workers` (local processes) or `scheduler` (Dask), not both.")
    if not units:
        return
    if scheduler is not None:
        _execute_dask(units, on_result, scheduler)
    elif workers:
        with ProcessPoolExecutor(max_workers=min(workers, len(units)), mp_context=_context(),
                                 initializer=_watch_parent, initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(run_unit, u) for u in units]
            try:
                for fut in as_completed(futures):
                    on_result(fut.result())
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    else:
        for u in units:
            on_result(run_unit(u))


def require_distributed() -> Any:
    """Import ``distributed`` or raise an ImportError that says how to install it."""
    try:
        import distributed
    except ImportError as err:
        raise ImportError(
            "`--scheduler` needs Dask distributed: pip install 'botorch-mtucb[dask]'."
        ) from err
    return distributed


def _watch_parent(pid: int, interval: float = 1.0) -> None:
    """Worker initializer: exit when the process that started the pool is gone.

    Without it a worker whose parent was killed (``kill``, an out-of-memory kill) would finish
    its current unit, minutes of CPU, before noticing the closed pipe.
    """

    def watch() -> None:
        while True:
            time.sleep(interval)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive, owned by someone else (cannot happen here)
                pass

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _context() -> multiprocessing.context.BaseContext:
    """``forkserver`` with this package preloaded (workers fork from one process that has
    imported torch and BoTorch once) where available, else ``spawn``; never plain ``fork``
    (unsafe in a process that may already run threads)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["mtucb_bench.runner"])
        return ctx
    return multiprocessing.get_context("spawn")


def _execute_dask(
    units: Sequence[TrialUnit], on_result: Callable[[UnitOutcome], None], scheduler: Any
) -> None:
    distributed = require_distributed()
    Client, dask_completed = distributed.Client, distributed.as_completed
    own = isinstance(scheduler, str)
    if not own and not isinstance(scheduler, Client):
        raise ValueError(
            f"`scheduler` must be an address string or a distributed.Client, got {scheduler!r}."
        )
    client = Client(scheduler) if own else scheduler
    futures = [client.submit(run_unit, u, pure=False) for u in units]
    try:
        for fut in dask_completed(futures):
            on_result(fut.result())
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if own:
            client.close()
