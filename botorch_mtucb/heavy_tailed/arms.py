"""Finite arm sets, append-only storage and training-data checks of the heavy-tailed models.

* :class:`ArmSet` — arm coordinates (``A x d``, or the float indices ``A x 1`` of a
  :class:`~botorch_mtucb.kernels.PrecomputedKernel`) and the input → arm-index lookup,
  cached per candidate tensor, so evaluating the same candidates every round does no work
  and no host synchronisation;
* :class:`RowBuffer` — append-only rows with doubling capacity, shared by a model and the
  model it is conditioned into (in-place appends by whoever holds the tip);
* :func:`check_training_data` — validated ``t x d`` inputs and ``t x 1`` rewards.

On a finite domain paper 001's estimators depend on the history only through the pull counts
``n_a`` and the rewards per arm, so both models store arm indices instead of inputs there.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.exceptions import InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.kernels.precomputed import PrecomputedKernel
from botorch_mtucb.utils.validation import check_finite

__all__ = ["ArmSet", "RowBuffer", "check_training_data"]


def check_training_data(train_X: Tensor, train_Y: Tensor) -> tuple[Tensor, Tensor]:
    """Validate ``t x d`` inputs and ``t x 1`` targets (``t = 0`` allowed).

    The dtype policy is BoTorch's: both float32 or both float64; mixed dtypes are refused
    (nothing is cast silently).

    Returns:
        ``(train_X, y)`` with ``y`` of shape ``t`` (views, not copies of the caller's
        tensors; they are never written to).

    Raises:
        TypeError: if either is not a float32 / float64 tensor.
        InputDataError: if their dtypes differ.
        ValueError: for NaN / infinite entries or wrong shapes.
    """
    for name, value in (("train_X", train_X), ("train_Y", train_Y)):
        if not torch.is_tensor(value):
            raise TypeError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}.")
        if value.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"`{name}` must be a float32 or float64 tensor, got {value.dtype}.")
    if train_X.dtype != train_Y.dtype:
        raise InputDataError(
            f"`train_X` ({train_X.dtype}) and `train_Y` ({train_Y.dtype}) must have the same "
            "dtype; convert both, e.g. with .to(torch.float64)."
        )
    check_finite(train_X, "train_X")
    check_finite(train_Y, "train_Y")
    if train_X.dim() != 2:
        raise ValueError(
            f"`train_X` must be a t x d matrix (observations in round order), got shape "
            f"{tuple(train_X.shape)}; batched data (batch x t x d) goes through the model "
            "constructor, which builds a HeavyTailedBatch."
        )
    if train_Y.dim() != 2 or train_Y.shape[-1] != 1 or train_Y.shape[0] != train_X.shape[0]:
        raise ValueError(
            f"`train_Y` must have shape (t, 1) = ({train_X.shape[0]}, 1) to match `train_X`, "
            f"got {tuple(train_Y.shape)}."
        )
    return train_X, train_Y[:, 0].to(train_X)


def _needs_grad(X: Tensor, Y: Tensor) -> bool:
    return torch.is_grad_enabled() and (X.requires_grad or Y.requires_grad)


def _exact_buffer(old: Tensor, rows: Tensor) -> RowBuffer:
    """A buffer of ``old`` then ``rows`` at exact capacity (a later append copies, never
    writes into a tensor that autograd may have saved)."""
    buf = RowBuffer.__new__(RowBuffer)
    buf.data, buf.length = torch.cat([old, rows]), old.shape[0] + rows.shape[0]
    buf._np = None  # autograd-tracked rows: written (if ever) through torch
    return buf


def _map_tensors(state: Any, fn) -> Any:
    """``state`` with ``fn`` applied to every tensor in its nested dicts."""
    if isinstance(state, Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {k: _map_tensors(v, fn) for k, v in state.items()}
    return state


def _numpy_view(data: Tensor) -> Any:
    """A NumPy array sharing ``data``'s memory (CPU, 1-d, a NumPy dtype, no autograd), else
    ``None``."""
    if data.device.type != "cpu" or data.dim() != 1 or data.requires_grad:
        return None
    if data.dtype not in (torch.float64, torch.float32, torch.int64):
        return None
    return data.numpy()


class RowBuffer:
    """Append-only rows with doubling capacity, shared between a model and its children.

    A model reads ``data[:n]`` for its own ``n``. :meth:`appended` writes in place when the
    caller holds the tip (``n == length``) and copies otherwise, so conditioning the same
    model twice never lets one child see the other's rows. On a CPU, single values are written
    through a NumPy view of ``data`` (much cheaper than a tensor ``__setitem__``).
    """

    __slots__ = ("_np", "data", "length")

    def __init__(self, rows: Tensor, capacity: int = 16) -> None:
        n = rows.shape[0]
        cap = max(capacity, 1)
        while cap < n:
            cap *= 2
        self.data = rows.new_empty((cap, *rows.shape[1:]))
        self.data[:n] = rows
        self.length = n
        self._np = _numpy_view(self.data)

    def __getstate__(self) -> tuple[Tensor, int]:
        """Copies and pickles hold ``data`` and ``length``; the NumPy view is rebuilt from the
        copied ``data`` (a copied view would write into the original's memory)."""
        return self.data, self.length

    def __setstate__(self, state: tuple[Tensor, int]) -> None:
        self.data, self.length = state
        self._np = _numpy_view(self.data)

    def view(self, n: int) -> Tensor:
        """The first ``n`` rows (a view)."""
        return self.data[:n]

    def appended_value(self, n: int, value: float) -> RowBuffer:
        """:meth:`appended` for one Python number (a single row of a 1-d buffer)."""
        if n == self.length and n < self.data.shape[0]:
            if self._np is not None:
                self._np[n] = value
            else:
                self.data[n] = value
            self.length = n + 1
            return self
        return self.appended(n, torch.tensor([value], dtype=self.data.dtype,
                                             device=self.data.device))

    def appended(self, n: int, rows: Tensor) -> RowBuffer:
        """A buffer holding ``data[:n]`` followed by ``rows`` (``self`` when in place)."""
        k = rows.shape[0]
        if n == self.length and n + k <= self.data.shape[0]:
            self.data[n : n + k] = rows
            self.length = n + k
            return self
        cap = self.data.shape[0]
        while cap < n + k:
            cap *= 2
        new = RowBuffer(self.data[:n], capacity=cap)
        new.data[n : n + k] = rows
        new.length = n + k
        return new


class ArmSet:
    """A finite candidate set: coordinates, kernel matrix and input → arm-index lookup.

    Either a :class:`~botorch_mtucb.kernels.PrecomputedKernel` (inputs are float arm indices,
    ``N x 1``) or an explicit ``A x d`` tensor of arm coordinates with any kernel / feature map.
    """

    def __init__(self, points: Tensor, by_index: bool) -> None:
        self.points = points
        self.by_index = by_index
        self._tol = 1e-9 * (1.0 + float(points.abs().max()))
        self._rows = {tuple(r): i for i, r in enumerate(points.tolist())}
        self._cache: list[tuple[tuple, Tensor, Tensor, bool, bool]] = []

    @classmethod
    def resolve(
        cls, arms: Tensor | None, kernel: Kernel | None, like: Tensor
    ) -> ArmSet | None:
        """The arm set of ``arms`` or of a
        :class:`~botorch_mtucb.kernels.PrecomputedKernel` ``kernel``, else ``None``."""
        if arms is not None:
            check_finite(arms, "arms")
            if arms.dim() != 2 or arms.shape[-1] != like.shape[-1] or arms.shape[0] < 1:
                raise ValueError(
                    f"`arms` must be an A x d matrix with d = {like.shape[-1]} (the dimension of "
                    f"`train_X`), got shape {tuple(arms.shape)}."
                )
            if torch.unique(arms, dim=0).shape[0] != arms.shape[0]:
                raise ValueError("`arms` must hold distinct rows.")
            return cls(arms.to(like, copy=True), by_index=False)
        if isinstance(kernel, PrecomputedKernel):
            if like.shape[-1] != 1:
                raise ValueError(
                    "With a PrecomputedKernel, `train_X` must hold float arm indices of shape "
                    f"t x 1, got {tuple(like.shape)}."
                )
            points = torch.arange(kernel.num_arms, dtype=like.dtype, device=like.device)
            return cls(points.unsqueeze(-1), by_index=True)
        return None

    @property
    def num_arms(self) -> int:
        return self.points.shape[0]

    def lookup(self, X: Tensor) -> tuple[Tensor, bool, bool]:
        """Arm indices ``...`` (long) of inputs ``... x d``, whether ``X`` is the whole arm set
        in order, and whether every row is an arm.

        Cached per candidate tensor (storage address, shape, strides, dtype, device, version):
        the first sight of a tensor costs one host sync, later ones none.
        """
        key = (X.data_ptr(), X.shape, X.stride(), X.dtype, X.device, X._version)
        for k, _, idx, whole, valid in self._cache:
            if k == key:
                return idx, whole, valid
        P = self.points.to(X)
        flat = X.reshape(-1, X.shape[-1])
        whole, valid = False, True
        if flat.shape == P.shape and torch.equal(flat, P):  # the whole arm set, in order
            idx, whole = torch.arange(P.shape[0], device=X.device).reshape(X.shape[:-1]), True
        elif flat.shape[0] == 0:
            idx = torch.zeros(X.shape[:-1], dtype=torch.long, device=X.device)
        else:
            if flat.shape[0] * P.shape[0] * P.shape[1] <= 4_000_000:
                dist = (flat.unsqueeze(-2) - P).abs().amax(dim=-1)
            else:
                dist = torch.cdist(flat, P, p=float("inf"))
            best, idx = dist.min(dim=-1)
            idx, valid = idx.reshape(X.shape[:-1]), bool((best <= self._tol).all())  # NaN-safe
        # Keeping X referenced pins its storage, so its address cannot be reused by another
        # tensor while the entry lives; in-place writes to X bump its version counter.
        self._cache = [(key, X, idx, whole, valid), *self._cache[:3]]
        return idx, whole, valid

    def index(self, X: Tensor, name: str = "X", kernel: Kernel | None = None) -> Tensor:
        """Arm indices (``...``, long) of inputs ``... x d`` that must be arms (validated)."""
        idx, _, valid = self.lookup(X)
        if not valid:
            raise ValueError(self._message(name))
        return idx

    def _message(self, name: str) -> str:
        if self.by_index:
            return (
                f"`{name}` must hold integer arm indices in [0, {self.num_arms - 1}] (float, "
                "last dimension of size 1) for this PrecomputedKernel model."
            )
        return (
            f"`{name}` must consist of rows of `arms` (this model was built on a finite arm "
            "set); use optimize_acqf_discrete with choices=arms."
        )

    def index_rows(self, values: list[list[float]], name: str = "X") -> list[int]:
        """Arm indices of a few rows given as Python lists (exact match first, then ``tol``)."""
        out = []
        for row in values:
            i = self._rows.get(tuple(row))
            if i is None:
                x = torch.tensor(row, dtype=self.points.dtype, device=self.points.device)
                dist = (self.points - x).abs().amax(dim=-1)
                best, j = dist.min(dim=0)
                if not float(best) <= self._tol:
                    raise ValueError(self._message(name))
                i = int(j)
            out.append(i)
        return out

    def kernel_matrix(self, kernel: Kernel) -> Tensor:
        """``A x A`` kernel matrix over the arms."""
        if self.by_index:
            return kernel.matrix.to(self.points)
        with torch.no_grad():
            return kernel(self.points, self.points).to_dense().to(self.points)

