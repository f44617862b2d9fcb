"""A CPU-testable detector of device → host synchronisations.

On a CUDA device an operation whose result (or whose output *shape*) the host must read waits for
every queued kernel: ``Tensor.item``, ``bool``/``int``/``float``/``index`` of a tensor,
``tolist``, ``cpu``/``numpy``, ``torch.equal``/``allclose``, boolean-mask indexing,
``nonzero``/``unique``/``masked_select`` (data-dependent shapes), and the LAPACK-style routines
that check their ``info`` on the host (``linalg.cholesky``/``solve``/``inv``, ``eigh``, ``svd``;
their ``*_ex`` variants do not). On the CPU none of this costs anything, so tests on a machine
without a GPU cannot *time* the syncs; :class:`SyncCounter` counts the operations instead, on any
device, with a :class:`~torch.utils._python_dispatch.TorchDispatchMode` (every ATen op, including
the ones reached from C++ such as the error checks of ``linalg.cholesky``) and a
:class:`~torch.overrides.TorchFunctionMode` (the Python-level reads that never reach ATen on the
CPU: ``tolist``, ``cpu``, ``numpy``).

Each event is recorded with its kind (``"read"``: a scalar or data-dependent shape read by the
host; ``"check"``: a factorisation's error check or a routine that synchronises by design) and
the innermost ``botorch_mtucb`` frame that issued it, so a failing assertion names the line.

Example:
    >>> with SyncCounter() as sc:
    ...     x = torch.ones(3)
    ...     _ = float(x.sum())
    >>> sc.count(), sc.events[0].op
    (1, '_local_scalar_dense')
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["SyncCounter", "SyncEvent"]

#: ATen ops whose result the host reads (a value or a data-dependent output shape).
_READ_OPS = {
    "_local_scalar_dense", "equal", "allclose", "is_nonzero", "nonzero", "nonzero_static",
    "_unique", "_unique2", "unique_dim", "unique_consecutive", "masked_select", "bincount",
    "histc", "repeat_interleave",
}
#: ATen ops that synchronise to check ``info`` or by design (one per factorisation, not per
#: element): counted separately so that a test can allow them on a factorising path.
_CHECK_OPS = {"_linalg_check_errors", "_linalg_eigh", "linalg_eigh", "_linalg_svd", "linalg_eig",
              "linalg_lstsq", "_linalg_slogdet", "linalg_slogdet"}
#: Indexing ops that synchronise when an index is a boolean mask (``nonzero`` inside).
_INDEX_OPS = {"index", "index_put", "index_put_", "_index_put_impl_"}
#: Tensor methods read by the host without an ATen op on the CPU.
_PY_READS = {"tolist", "cpu", "numpy"}

_PKG = os.sep + "botorch_mtucb" + os.sep
#: Third-party packages named in an event's place when the read happens inside them.
_LIBS = tuple(os.sep + lib + os.sep for lib in ("gpytorch", "linear_operator", "botorch"))


@dataclass(frozen=True)
class SyncEvent:
    """One synchronising operation: its name, kind and the product frame that issued it."""

    op: str
    kind: str
    where: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.op} at {self.where}"


def _where() -> str:
    frames = traceback.extract_stack()
    via = ""
    for fr in reversed(frames):
        for lib in _LIBS:
            if not via and lib in fr.filename:
                via = f" via {lib.strip(os.sep)}"
        if _PKG in fr.filename:
            return f"{fr.filename.split(_PKG, 1)[1]}:{fr.lineno} ({fr.name}){via}"
    for fr in reversed(frames):
        if "sync_counter" not in fr.filename and "torch" + os.sep not in fr.filename:
            return f"{os.path.basename(fr.filename)}:{fr.lineno} ({fr.name})"
    return "?"


def _has_bool_index(args: tuple) -> bool:
    idx = args[1] if len(args) > 1 else ()
    if torch.is_tensor(idx):
        idx = (idx,)
    return any(torch.is_tensor(i) and i.dtype in (torch.bool, torch.uint8)
               for i in (idx or ()) if i is not None)


def _equal_reads(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``torch.equal(a, b)`` reads the device: not for different shapes, empty tensors
    or the same view of one storage (ATen's fast paths), else one host read."""
    if a.shape != b.shape or a.numel() == 0:
        return False
    same_view = (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
                 and a.storage_offset() == b.storage_offset() and a.stride() == b.stride()
                 and a.dtype == b.dtype)
    return not same_view


class _Dispatch(TorchDispatchMode):
    def __init__(self, sink: SyncCounter) -> None:
        super().__init__()
        self.sink = sink

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::", 1)[-1]
        if name == "equal" and not _equal_reads(*args[:2]):
            pass
        elif name in _READ_OPS or (name in _INDEX_OPS and _has_bool_index(args)):
            self.sink._record(name, "read")
        elif name in _CHECK_OPS:
            self.sink._record(name, "check")
        return func(*args, **(kwargs or {}))


class _Function(TorchFunctionMode):
    def __init__(self, sink: SyncCounter) -> None:
        super().__init__()
        self.sink = sink

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _PY_READS and args and torch.is_tensor(args[0]):
            self.sink._record(name, "read")
        return func(*args, **(kwargs or {}))


class SyncCounter:
    """Context manager that records every operation that would synchronise a CUDA device.

    ``count()`` counts all events, ``count("read")`` the host reads only (the per-element
    kind that a hot path must not have), ``count("check")`` the factorisation checks.
    """

    def __init__(self) -> None:
        self.events: list[SyncEvent] = []
        self._modes: list = []

    def _record(self, op: str, kind: str) -> None:
        self.events.append(SyncEvent(op, kind, _where()))

    def __enter__(self) -> SyncCounter:
        self._modes = [_Function(self), _Dispatch(self)]
        for m in self._modes:
            m.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for m in reversed(self._modes):
            m.__exit__(*exc)
        self._modes = []

    def count(self, kind: str | None = None) -> int:
        return sum(1 for e in self.events if kind is None or e.kind == kind)

    def report(self, kind: str | None = None) -> str:
        """The events (of ``kind``) grouped by place, most frequent first."""
        groups: dict[str, int] = {}
        for e in self.events:
            if kind is None or e.kind == kind:
                groups[str(e)] = groups.get(str(e), 0) + 1
        return "\n".join(f"{n:5d} x {k}" for k, n in sorted(groups.items(), key=lambda kv: -kv[1]))
