"""Execution engines: map a function over independent jobs serially, on local processes or on Dask.

:func:`execute` calls ``function(job)`` for every job and hands each result to a callback in
the calling process as it arrives. The engines are :class:`concurrent.futures.ProcessPoolExecutor`
with the ``forkserver`` context, or ``spawn`` where there is none (``run --workers N``), and
Dask distributed (``run --scheduler ADDRESS``; install with ``pip install mtucb-bench[dask]``).
``function`` must be importable by reference (a module-level function) and the jobs picklable.
Results come back to the calling process, which writes every file, so Dask workers need
neither a shared file system nor write access.

The jobs of a run are its (trial, algorithm) units (:class:`~.runner.TrialUnit`, run by
:func:`~.runner.run_unit`); common random numbers make them independent, so they can run in
any order, on any machine (see :mod:`.runner`).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

__all__ = ["execute", "require_distributed"]

J = TypeVar("J")
R = TypeVar("R")


def execute(
    function: Callable[[J], R],
    jobs: Sequence[J],
    on_result: Callable[[R], None],
    workers: int = 0,
    scheduler: Any = None,
) -> None:
    """Run ``function`` on every job and hand each result to ``on_result`` (in this process).

    Args:
        function: A module-level function (workers import it by reference); with local
            processes its module is preloaded in the ``forkserver``.
        jobs: Its arguments, one call each (picklable).
        on_result: Called once per job with ``function(job)``, in completion order (serially:
            in ``jobs`` order).
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
    if not jobs:
        return
    if scheduler is not None:
        _execute_dask(function, jobs, on_result, scheduler)
    elif workers:
        context = _context(function.__module__)
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                                 initializer=_watch_parent, initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(function, job) for job in jobs]
            try:
                for fut in as_completed(futures):
                    on_result(fut.result())
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    else:
        for job in jobs:
            on_result(function(job))


def require_distributed() -> Any:
    """Import ``distributed`` or raise an ImportError that says how to install it."""
    try:
        import distributed
    except ImportError as err:
        raise ImportError(
            "`--scheduler` needs Dask distributed: pip install 'mtucb-bench[dask]'."
        ) from err
    return distributed


def _watch_parent(pid: int, interval: float = 1.0) -> None:
    """Worker initializer: exit when the process that started the pool is gone.

    Without it a worker whose parent was killed (``kill``, an out-of-memory kill) would finish
    its current unit, minutes of CPU, before noticing the closed pipe; and it would keep the
    parent's output pipe open, so a caller reading it (``subprocess.run(...,
    capture_output=True)``) would wait for it. A parent that is dead but not yet reaped by its
    own caller (a zombie) counts as gone.
    """

    def watch() -> None:
        while True:
            time.sleep(interval)
            if _is_gone(pid):
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _is_gone(pid: int) -> bool:
    """Whether process ``pid`` has exited: no such process, or (where ``/proc`` tells) a
    zombie, dead but not yet reaped (``os.kill(pid, 0)`` still succeeds on one)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:  # no such process, or no /proc (not Linux): ask the kernel
        stat = b""
    if stat:  # "pid (comm) S ...": the state follows the last ')'
        return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by someone else (cannot happen here)
        pass
    return False


def _context(preload: str) -> multiprocessing.context.BaseContext:
    """``forkserver`` with the module ``preload`` imported (workers fork from one process that
    has imported torch and BoTorch once) where available, else ``spawn``; never plain ``fork``
    (unsafe in a process that may already run threads)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([preload])
        return ctx
    return multiprocessing.get_context("spawn")


def _execute_dask(
    function: Callable[[J], R], jobs: Sequence[J], on_result: Callable[[R], None],
    scheduler: Any,
) -> None:
    distributed = require_distributed()
    Client, dask_completed = distributed.Client, distributed.as_completed
    own = isinstance(scheduler, str)
    if not own and not isinstance(scheduler, Client):
        raise ValueError(
            f"`scheduler` must be an address string or a distributed.Client, got {scheduler!r}."
        )
    client = Client(scheduler) if own else scheduler
    futures = [client.submit(function, job, pure=False) for job in jobs]
    try:
        for fut in dask_completed(futures):
            on_result(fut.result())
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if own:
            client.close()
