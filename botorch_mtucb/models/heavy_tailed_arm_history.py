"""Finite arm sets, append-only storage and batches of the heavy-tailed models.

* :class:`ArmSet` — arm coordinates and the input → arm-index lookup (cached per candidate
  tensor, so evaluating the same candidates every round does no work and no host sync);
* :class:`RowBuffer` — append-only rows with doubling capacity, shared by a model and the
  model it is conditioned into (in-place appends by whoever holds the tip);
* :class:`HeavyTailedBatch` and :func:`fantasize` — a batch of models (fantasies, batched
  conditioning), each member holding its own stores;
* :func:`check_training_data` and :func:`shallow_copy_model` — validated inputs and model
  copies that share (never mutate) the stores.

:class:`ArmRewardHistory` (ATA-GP-UCB's per-arm sorted rewards) lives in
:mod:`botorch_mtucb.linalg.truncated_sums` and is re-exported here.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.models.model import FantasizeMixin, Model
from botorch.models.utils.assorted import fantasize as fantasize_flag
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.kernels.precomputed import PrecomputedKernel
from botorch_mtucb.linalg.truncated_sums import ArmRewardHistory
from botorch_mtucb.utils.validation import check_finite

__all__ = [
    "ArmRewardHistory",
    "ArmSet",
    "HeavyTailedBatch",
    "RowBuffer",
    "check_training_data",
    "fantasize",
    "shallow_copy_model",
]


_DICT_KEYS = ("_parameters", "_buffers", "_modules")


def check_training_data(train_X: Tensor, train_Y: Tensor) -> tuple[Tensor, Tensor]:
    """Validate ``t x d`` inputs and ``t x 1`` targets (``t = 0`` allowed).

    Returns:
        ``(train_X, y)`` with ``y`` of shape ``t`` in the dtype of ``train_X`` (views, not
        copies of the caller's tensors; they are never written to).
    """
    check_finite(train_X, "train_X")
    check_finite(train_Y, "train_Y")
    if not train_X.is_floating_point():
        raise ValueError(f"`train_X` must be a floating-point tensor, got {train_X.dtype}.")
    if train_X.dim() != 2:
        raise ValueError(
            f"`train_X` must be a t x d matrix (observations in round order), got shape "
            f"{tuple(train_X.shape)}; batched models are not supported."
        )
    if train_Y.dim() != 2 or train_Y.shape[-1] != 1 or train_Y.shape[0] != train_X.shape[0]:
        raise ValueError(
            f"`train_Y` must have shape (t, 1) = ({train_X.shape[0]}, 1) to match `train_X`, "
            f"got {tuple(train_Y.shape)}."
        )
    return train_X, train_Y[:, 0].to(train_X)


def shallow_copy_model(model: Model) -> Model:
    """A new model object sharing every (immutable) state tensor and sub-module of ``model``.

    Used by ``condition_on_observations``: the caller then *replaces* (never mutates) the
    state that changes, so the old model stays valid. The module registries are copied, so
    registering a sub-module on one model does not affect the other.
    """
    new = model.__class__.__new__(model.__class__)
    state = dict(model.__dict__)
    for key in _DICT_KEYS:
        state[key] = state[key].copy()
    new.__dict__.update(state)
    return new


def _needs_grad(X: Tensor, Y: Tensor) -> bool:
    return torch.is_grad_enabled() and (X.requires_grad or Y.requires_grad)


def _exact_buffer(old: Tensor, rows: Tensor) -> RowBuffer:
    """A buffer of ``old`` then ``rows`` at exact capacity (a later append copies, never
    writes into a tensor that autograd may have saved)."""
    buf = RowBuffer.__new__(RowBuffer)
    buf.data, buf.length = torch.cat([old, rows]), old.shape[0] + rows.shape[0]
    return buf


def _map_tensors(state: Any, fn) -> Any:
    """``state`` with ``fn`` applied to every tensor in its nested dicts."""
    if isinstance(state, Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {k: _map_tensors(v, fn) for k, v in state.items()}
    return state


class RowBuffer:
    """Append-only rows with doubling capacity, shared between a model and its children.

    A model reads ``data[:n]`` for its own ``n``. :meth:`appended` writes in place when the
    caller holds the tip (``n == length``) and copies otherwise, so conditioning the same
    model twice never lets one child see the other's rows.
    """

    __slots__ = ("data", "length")

    def __init__(self, rows: Tensor, capacity: int = 16) -> None:
        n = rows.shape[0]
        cap = max(capacity, 1)
        while cap < n:
            cap *= 2
        self.data = rows.new_empty((cap, *rows.shape[1:]))
        self.data[:n] = rows
        self.length = n

    def view(self, n: int) -> Tensor:
        """The first ``n`` rows (a view)."""
        return self.data[:n]

    def appended_value(self, n: int, value: float) -> RowBuffer:
        """:meth:`appended` for one Python number (a single row of a 1-d buffer)."""
        if n == self.length and n < self.data.shape[0]:
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

    Either a :class:`PrecomputedKernel` (inputs are float arm indices, ``N x 1``) or an
    explicit ``A x d`` tensor of arm coordinates with any kernel / feature map.
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
        """Build the arm set from ``arms`` or from a :class:`PrecomputedKernel`, else ``None``."""
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


def fantasize(model: Model, X: Tensor, sampler, observation_noise: Tensor | None = None,
               **kwargs: Any) -> Model:
    """BoTorch's ``Model.fantasize`` for the heavy-tailed models (no GPyTorch likelihood).

    ``Y ~ sampler(posterior(X, observation_noise=True))`` (noise variance ``λ``), shape
    ``num_fantasies x batch x q x 1``, then the batched ``condition_on_observations``: a
    fantasy model of batch shape ``num_fantasies x batch``.

    Args:
        model: A heavy-tailed model or batch.
        X: ``batch x q x d`` fantasy inputs.
        sampler: A BoTorch ``MCSampler``.
        observation_noise: Only ``None`` (the noise is the regulariser ``λ``).
        kwargs: Passed to ``condition_on_observations``.
    """
    if observation_noise is not None:
        raise ValueError("Heavy-tailed models fantasize with noise variance λ: "
                         "`observation_noise` must be None.")
    kwargs.pop("propagate_grads", None)
    with fantasize_flag():
        Y = sampler(model.posterior(X, observation_noise=True))
    return model.condition_on_observations(X, Y, **kwargs)


class HeavyTailedBatch(Model, FantasizeMixin):
    """A batch of heavy-tailed models (BoTorch's fantasy / batched-conditioning model).

    Truncation depends on the rewards, so each member of a fantasy batch is its own truncated
    model (``TruncatedGP`` / ``AdaptiveTruncationGP`` conditioned on its slice of the
    fantasies). ``posterior`` at ``batch' x batch_shape x q x d`` (``batch'`` broadcast) stacks
    the members' posteriors along ``batch_shape``: a Python loop over the members (the number of
    fantasies times the batch), not over observations. Members share the regulariser ``λ``.

    Built by ``model.condition_on_observations(X, Y)`` with ``X`` ``batch x q x d`` and ``Y``
    ``num_fantasies x batch x q x 1``, and by ``model.fantasize(X, sampler)`` (batch shape
    ``num_fantasies x batch``).
    """

    _num_outputs = 1
    fantasize = fantasize

    def __init__(self, members: list[Model], batch_shape: torch.Size) -> None:
        """
        Args:
            members: ``prod(batch_shape)`` models in row-major order of ``batch_shape``.
            batch_shape: The batch shape.
        """
        super().__init__()
        if len(members) != batch_shape.numel():
            raise ValueError(f"{len(members)} members for batch shape {tuple(batch_shape)}.")
        self.members = torch.nn.ModuleList(members)
        self._batch_shape = torch.Size(batch_shape)

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return self._batch_shape

    @property
    def lam(self) -> float:
        return self.members[0].lam

    def _moments_out(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        bs, (q, d) = self._batch_shape, X.shape[-2:]
        try:
            shape = torch.broadcast_shapes(X.shape[:-2], bs)
        except RuntimeError:
            raise ValueError(
                f"`X` of shape {tuple(X.shape)} does not broadcast with the model's batch shape "
                f"{tuple(bs)} (expected batch' x {' x '.join(map(str, bs))} x q x d)."
            ) from None
        Xe = X.expand(*shape, q, d).reshape(-1, bs.numel(), q, d)
        outs = [m._moments_out(Xe[:, i], full) for i, m in enumerate(self.members)]
        mean = torch.stack([o[0] for o in outs], 1).reshape(*shape, q)
        var = torch.stack([o[1] for o in outs], 1)
        return mean, var.reshape(*shape, q, q) if full else var.reshape(*shape, q)

    def posterior(self, X: Tensor, output_indices: list[int] | None = None,
                  observation_noise: bool | Tensor = False, posterior_transform=None,
                  **kwargs: Any) -> GPyTorchPosterior:
        """Joint posterior at ``batch' x batch_shape x q x d`` (as a member model)."""
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        mean, cov = self._moments_out(X, full=True)
        post = self.members[0]._make_posterior(mean, cov, self.lam, observation_noise)
        return post if posterior_transform is None else posterior_transform(post)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal mean and variance, each ``batch' x batch_shape x q``."""
        return self._moments_out(X, full=False)

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs: Any) -> HeavyTailedBatch:
        """Condition every member on its slice: ``X`` ``... x q x d``, ``Y`` ``... x q x 1``
        (leading shapes broadcast to ``batch' x batch_shape``; new batch shape
        ``batch' x batch_shape``). Nyström members keep their dictionaries unless
        ``resample_dictionary=True``."""
        if kwargs.get("noise") is not None:
            raise ValueError("Heavy-tailed models have no per-observation noise: `noise` must "
                             "be None.")
        bs = self._batch_shape
        if X.dim() < 2 or Y.dim() < 2 or Y.shape[-1] != 1 or Y.shape[-2] != X.shape[-2]:
            raise ValueError(f"`X` must be ... x q x d and `Y` ... x q x 1 with the same q; got "
                             f"{tuple(X.shape)} and {tuple(Y.shape)}.")
        try:
            shape = torch.broadcast_shapes(X.shape[:-2], Y.shape[:-2], bs)
        except RuntimeError:
            raise ValueError(
                f"The batch shapes of `X` {tuple(X.shape[:-2])} and `Y` {tuple(Y.shape[:-2])} "
                f"do not broadcast with the model's batch shape {tuple(bs)}."
            ) from None
        if shape[len(shape) - len(bs):] != bs:
            raise ValueError(f"Batch shape {tuple(shape)} does not end with {tuple(bs)}.")
        q, M = X.shape[-2], bs.numel()
        Xe = X.expand(*shape, q, X.shape[-1]).reshape(-1, q, X.shape[-1])
        Ye = Y.expand(*shape, q, 1).reshape(-1, q, 1)
        kwargs.pop("noise", None)
        kwargs.setdefault("resample_dictionary", False)  # Nyström members keep theirs
        members = [self.members[j % M].condition_on_observations(Xe[j], Ye[j], **kwargs)
                   for j in range(Xe.shape[0])]
        return HeavyTailedBatch(members, torch.Size(shape))

    def subset_output(self, idcs: list[int]) -> Model:
        if list(idcs) != [0]:
            raise ValueError(f"This model has a single output; got output indices {idcs}.")
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")
