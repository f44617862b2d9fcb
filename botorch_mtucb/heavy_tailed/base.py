"""The common base of the heavy-tailed models of paper 001 and their cheap copies.

:class:`~botorch_mtucb.models.TruncatedGP` (TGP-UCB) and
:class:`~botorch_mtucb.models.AdaptiveTruncationGP` (ATA-GP-UCB) derive from it.

:class:`HeavyTailedModel` is a single-output BoTorch ``Model`` whose posterior at
``batch_shape x q x d`` inputs is ``N(μ_t, Σ_t)`` built from a mean and a covariance that a
subclass computes (paper 001, Algorithm 1 for TGP-UCB, Algorithm 2 for ATA-GP-UCB). It holds
what both share: input validation, the training data in append-only stores, the finite arm
set, cheap copies for ``condition_on_observations`` (:func:`shallow_copy_model`: a model and
the model conditioned from it share every unchanged tensor), the primary state behind
``state_dict`` / ``.to``, the dispatch of batched training data to a
:class:`~botorch_mtucb.models.HeavyTailedBatch` and the BoTorch posterior wrapper.

Hot-path rules: posterior evaluations validate their test inputs with
:func:`~botorch_mtucb.utils.validation.check_test_tensor` (type, dtype, finiteness: no host
synchronisation on an accelerator; once per candidate tensor and content) and do no other
data-dependent check; the arm lookup of a candidate tensor is cached (by storage, shape,
strides and version counter), so evaluating the same candidate set every round costs a few
attribute reads.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import FantasizeMixin, Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_mtucb.heavy_tailed.arms import (
    ArmSet,
    RowBuffer,
    _exact_buffer,
    _map_tensors,
    _needs_grad,
)
from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch, fantasize
from botorch_mtucb.utils.batched_data import ConstructorSignature, has_batched_training_data
from botorch_mtucb.utils.validation import check_finite, check_test_tensor

__all__ = ["HeavyTailedModel", "shallow_copy_model"]


class HeavyTailedModel(Model, FantasizeMixin):
    """Common base: single output, posterior built from a mean and a covariance.

    A model holds one ``t x d`` history. Batched training data (``train_X`` ``batch x N x d``,
    ``train_Y`` ``batch x N x 1``) makes the constructor (:meth:`__new__`) return a
    :class:`~botorch_mtucb.models.HeavyTailedBatch` of ``batch`` members, member ``i`` built,
    fitted and truncated on its own slice ``(train_X[i], train_Y[i])`` with every other
    argument as given (a loop over the members, not over observations):
    ``batch_shape == batch``, but not an instance of the model class.

    State shared by both models: the regulariser ``lam``, the number of observations ``_t``, raw
    rewards in a :class:`~botorch_mtucb.heavy_tailed.arms.RowBuffer` and either inputs (``_X_buf``)
    or arm indices (``_idx_buf``) in another. The *primary* state (scalars named in ``_STATE``, the
    training data, the arm set and what a subclass adds in :meth:`_extra_primary`) is what
    ``state_dict()`` holds (as ``_extra_state``) and what ``.to()`` moves; everything else (factors,
    caches) is rebuilt from it by :meth:`_build`. Factors live in the working dtype ``_cdtype``
    (:func:`~botorch_mtucb.linalg.working_dtype`: the data's, or float64 where the data's would be
    inaccurate); results are returned in the data's dtype ``_dtype``.

    ``inspect.signature`` of a subclass (and its API reference) shows the subclass's
    ``__init__`` arguments, not the dispatching ``__new__(cls, *args, **kwargs)``.

    Example:
        >>> import torch
        >>> from botorch_mtucb.models import TruncatedGP
        >>> X, Y = torch.rand(8, 1, dtype=torch.float64), torch.rand(8, 1, dtype=torch.float64)
        >>> model = TruncatedGP(X, Y, v=1.0)
        >>> isinstance(model, HeavyTailedModel), model.num_observations
        (True, 8)
        >>> model.posterior(torch.rand(4, 3, 1, dtype=torch.float64)).mean.shape
        torch.Size([4, 3, 1])
        >>> type(TruncatedGP(X.expand(2, 8, 1), Y.expand(2, 8, 1), v=1.0)).__name__
        'HeavyTailedBatch'
    """

    _num_outputs = 1
    fantasize = fantasize
    __signature__ = ConstructorSignature()
    _STATE: tuple[str, ...] = ("alpha", "v", "lam", "delta", "B", "constants", "truncate")
    #: Per-observation keywords that batched training data may batch too (``batch x N``).
    _PER_MEMBER_KWARGS: tuple[str, ...] = ("dictionary_variances",)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """Batched ``train_X`` / ``train_Y`` (either with more than 2 dimensions): a
        :class:`~botorch_mtucb.models.HeavyTailedBatch` of per-slice members
        (:meth:`~botorch_mtucb.models.HeavyTailedBatch.from_batched_data`); otherwise a plain
        instance."""
        if has_batched_training_data(args, kwargs):
            return HeavyTailedBatch.from_batched_data(cls, args, kwargs)
        return super().__new__(cls)

    def __init__(self) -> None:
        super().__init__()
        self.register_load_state_dict_post_hook(_apply_loaded_state)

    @property
    def num_outputs(self) -> int:
        return 1

    # ------------------------------------------------------------------ state
    def get_extra_state(self) -> dict[str, Any]:
        """The primary state (copies): scalars, ``X``, raw ``y``, arms, subclass extras."""
        arms = self._arms
        return {
            "scalars": {k: getattr(self, k) for k in self._STATE},
            "X": self.train_X.detach().clone(),
            "y": self._y_buf.view(self._t).detach().clone(),
            "arms": None if arms is None else arms.points.clone(),
            "by_index": None if arms is None else arms.by_index,
            **self._extra_primary(),
        }

    def set_extra_state(self, state: dict[str, Any]) -> None:
        """Keep ``state`` until the sub-modules are loaded too (then :meth:`_import_state`)."""
        self.__dict__["_pending_state"] = state

    def _extra_primary(self) -> dict[str, Any]:
        return {}

    def _import_state(self, state: dict[str, Any]) -> None:
        """Replace the whole model state by ``state`` and rebuild factors and caches."""
        self._check_state(state)  # refuse while nothing has changed yet
        self.__dict__.update(state["scalars"])
        arms = None if state["arms"] is None else ArmSet(state["arms"], state["by_index"])
        X, y = state["X"], state["y"]
        self.__dict__.pop("_kern64", None)
        self._init_data(X, y, arms, self._arm_kernel())
        self._import_extra(state)
        with torch.no_grad():
            self._build()

    def _import_extra(self, state: dict[str, Any]) -> None:
        pass

    def _check_state(self, state: dict[str, Any]) -> None:
        pass

    def _arm_kernel(self) -> Kernel | None:
        raise NotImplementedError  # pragma: no cover

    def _build(self) -> None:
        """Factors and caches from the primary state."""
        raise NotImplementedError  # pragma: no cover

    def _apply(self, fn, *args, **kwargs):
        """``.to`` / ``.float()`` / ``.cuda()``: sub-modules move, the primary state is moved
        with ``fn`` and the factors are rebuilt in the new dtype / on the new device (under
        the float32 policy of :func:`~botorch_mtucb.linalg.working_dtype`)."""
        if "_t" not in self.__dict__:  # not built yet
            return super()._apply(fn, *args, **kwargs)
        probe = self._y_buf.data[:1]
        moved = fn(probe)
        if moved.dtype == probe.dtype and moved.device == probe.device:  # e.g. acqf.to(X)
            return super()._apply(fn, *args, **kwargs)  # nothing to rebuild (no copy, no sync)
        state = self.get_extra_state()
        super()._apply(fn, *args, **kwargs)
        self._import_state(_map_tensors(state, fn))
        return self

    @property
    def batch_shape(self) -> torch.Size:
        """Always ``torch.Size([])`` (batched data gives a
        :class:`~botorch_mtucb.models.HeavyTailedBatch`)."""
        return torch.Size([])

    @property
    def noise(self) -> Tensor:
        """The regulariser ``λ`` as a 0-dim tensor
        (:class:`~botorch_mtucb.protocols.RegularisedModel`; do not modify)."""
        return self._lam_t

    @property
    def num_observations(self) -> int:
        """Number of observations ``t``."""
        return self._t

    @property
    def train_X(self) -> Tensor:
        """``t x d`` inputs in round order (arm coordinates on a finite arm set)."""
        if self._arms is not None:
            return self._arms.points[self._idx_buf.view(self._t)]
        return self._X_buf.view(self._t)

    @property
    def train_inputs(self) -> tuple[Tensor]:
        """``(train_X,)``: the ``t x d`` training inputs as GPyTorch models hold them (read by
        BoTorch acquisitions such as ``qPredictiveEntropySearch`` and ``qMaxValueEntropy``)."""
        return (self.train_X,)

    @property
    def train_Y(self) -> Tensor:
        """``t x 1`` raw rewards in round order (the centre ``loc`` added back)."""
        return self._y_buf.view(self._t).unsqueeze(-1) + self._loc

    @property
    def location(self) -> float:
        """The centre ``loc`` subtracted from the rewards (0 without centring)."""
        return self._loc

    def _init_data(self, X: Tensor, y: Tensor, arms: ArmSet | None, kernel: Kernel | None) -> None:
        """Store the training data (copied into
        :class:`~botorch_mtucb.heavy_tailed.arms.RowBuffer` s) and the arm set."""
        self._arms, self._t, self._dtype = arms, X.shape[0], X.dtype
        self._cdtype = X.dtype  # the working dtype; a subclass's _build may raise it
        self._lam_t = torch.tensor(self.lam, dtype=X.dtype, device=X.device)
        self._y_buf = RowBuffer(y)
        if arms is not None:
            self._idx_buf = RowBuffer(arms.index(X, "train_X", kernel))
            self._X_buf = None
        else:
            self._X_buf, self._idx_buf = RowBuffer(X), None

    _loc = 0.0  # the data-driven modes centre the rewards: stored ``y − loc``

    def _moments(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """:meth:`_centred_moments` with the centre ``loc`` added back to the mean."""
        mean, var = self._centred_moments(X, full)
        return (mean, var) if self._loc == 0.0 else (mean + self._loc, var)

    def _centred_moments(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """Mean ``... x q`` and covariance ``... x q x q`` (``full``) or variance ``... x q``
        of the centred rewards."""
        raise NotImplementedError  # pragma: no cover

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform=None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior at ``batch_shape x q x d`` inputs (mean ``batch_shape x q x 1``).

        Args:
            X: ``batch_shape x q x d`` test points, a float32 / float64 tensor without NaN or
                infinite entries (cast to the model's dtype; ``q = 0`` or an empty batch gives
                an empty posterior).
            output_indices: Only ``None`` or ``[0]`` (single output).
            observation_noise: If ``True``, add ``λ`` to the diagonal.
            posterior_transform: Optional BoTorch posterior transform.

        Raises:
            TypeError: if ``X`` is not a float32 / float64 tensor.
            ValueError: if ``X`` holds NaN or infinite values or has the wrong shape.
        """
        check_test_tensor(X, "X")
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        mean, cov = self._moments_out(X, full=True)
        post = self._make_posterior(mean, cov, self.lam, observation_noise)
        return post if posterior_transform is None else posterior_transform(post)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal posterior mean and variance at ``batch_shape x q x d`` inputs.

        The fast path of :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` (no joint covariance, no
        posterior object, no host synchronisation). On the whole arm set in order the results may be
        views of the model's state: do not modify them in place.

        Args:
            X: ``batch_shape x q x d`` test points, a float32 / float64 tensor without NaN or
                infinite entries.

        Returns:
            ``(mean, variance)``, each ``batch_shape x q``.

        Raises:
            TypeError: if ``X`` is not a float32 / float64 tensor.
            ValueError: if ``X`` holds NaN or infinite values or has the wrong shape.
        """
        check_test_tensor(X, "X")
        return self._moments_out(X, full=False)

    def _moments_out(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """:meth:`_moments` at checked inputs, returned in the data's dtype."""
        mean, cov = self._moments(self._check_test_inputs(X), full)
        if self._cdtype != self._dtype:
            return mean.to(self._dtype), cov.to(self._dtype)
        return mean, cov

    def _check_test_inputs(self, X: Tensor) -> Tensor:
        """Shape check (no data-dependent check: this is the hot path) and dtype cast."""
        d = self._arms.points.shape[-1] if self._arms is not None else self._X_buf.data.shape[-1]
        if X.dim() < 2 or X.shape[-1] != d:
            raise ValueError(
                f"`X` must have shape batch_shape x q x d with d = {d}, got {tuple(X.shape)}."
            )
        return X if X.dtype == self._cdtype else X.to(self._cdtype)

    def _arm_index(self, X: Tensor) -> tuple[Tensor, bool]:
        """Arm indices of test inputs and whether they are all arms in order (no sync when the
        candidate tensor is already cached; a first sight validates it)."""
        idx, whole, valid = self._arms.lookup(X)
        if not valid:
            raise ValueError(self._arms._message("X"))
        return idx, whole

    @staticmethod
    def _make_posterior(
        mean: Tensor, cov: Tensor, noise: float, observation_noise: bool | Tensor
    ) -> GPyTorchPosterior:
        """``GPyTorchPosterior`` from ``... x q`` mean and ``... x q x q`` covariance.

        ``observation_noise=True`` adds the regulariser ``λ`` (the Gaussian noise variance of
        the GP interpretation) to the diagonal.
        """
        if isinstance(observation_noise, Tensor):
            raise ValueError("`observation_noise` must be a bool for this model.")
        if observation_noise:
            cov = cov + noise * torch.eye(cov.shape[-1], dtype=cov.dtype, device=cov.device)
        # Lazy covariance: no eager Cholesky (joint covariances over arms are often singular).
        return GPyTorchPosterior(MultivariateNormal(mean, to_linear_operator(cov)))

    def _check_condition_inputs(self, X: Tensor, Y: Tensor) -> tuple[Tensor, Tensor]:
        """Shapes and the cast to the model's dtype (finiteness is checked by the caller)."""
        d = self._arms.points.shape[-1] if self._arms is not None else self._X_buf.data.shape[-1]
        if X.dim() != 2 or X.shape[-1] != d:
            raise ValueError(f"`X` must be an n x d matrix with d = {d}, got {tuple(X.shape)}.")
        if Y.dim() != 2 or Y.shape != (X.shape[0], 1):
            raise ValueError(
                f"`Y` must have shape ({X.shape[0]}, 1) to match `X`, got {tuple(Y.shape)}."
            )
        dt = self._dtype
        return (X if X.dtype == dt else X.to(dt)), (Y if Y.dtype == dt else Y.to(dt))

    def _appended_copy(
        self, X: Tensor, Y: Tensor, arm_kernel: Kernel | None = None
    ) -> tuple[HeavyTailedModel, Tensor, Tensor, Tensor | None, tuple | None]:
        """Checked shallow copy with ``(X, Y)`` appended (the start of every conditioning).

        Validation costs one host sync. On a finite arm set with a few rows, ``X`` and ``Y``
        are read to the host in that sync and the arms are found by exact match (a tolerance
        search only for rows that are not bit-identical to an arm).

        Returns:
            ``(new, X, y, idx, host)``: the copy, ``X`` in the model's dtype, the ``n``
            rewards as a vector, the arm indices of ``X`` (``None`` without arms, and for the
            host path) and, for the host path, ``(arm indices, rewards)`` as Python lists.
        """
        X, Y = self._check_condition_inputs(X, Y)
        if _needs_grad(X, Y) and not self._differentiable_conditioning():
            raise NotImplementedError(
                f"{type(self).__name__} cannot propagate gradients through "
                "`condition_on_observations` here (finite arms or per-direction truncation). "
                "Evaluate look-ahead acquisitions (qKnowledgeGradient, ...) under torch.no_grad() "
                "(optimize_acqf_discrete does), or use TruncatedGP on a continuous domain."
            )
        n, y, t = X.shape[0], Y[:, 0], self._t
        idx = host = None
        if self._arms is not None and n <= 64:
            rows = torch.cat([X, Y], dim=-1).tolist()  # the one sync
            if not all(math.isfinite(v) for row in rows for v in row):
                check_finite(X, "X")
                check_finite(Y, "Y")
            idx_list = self._arms.index_rows([row[:-1] for row in rows])
            y_list = [row[-1] for row in rows]
            host = (idx_list, y_list)
            if n == 1:
                state = {
                    "_y_buf": self._y_buf.appended_value(t, y_list[0]),
                    "_idx_buf": self._idx_buf.appended_value(t, idx_list[0]),
                }
            else:
                idx_t = torch.tensor(idx_list, dtype=torch.long, device=X.device)
                state = {"_y_buf": self._y_buf.appended(t, y),
                         "_idx_buf": self._idx_buf.appended(t, idx_t)}
        elif self._arms is None and _needs_grad(X, Y):  # fresh buffers: autograd-safe
            check_finite(X, "X")
            check_finite(Y, "Y")
            state = {"_y_buf": _exact_buffer(self._y_buf.view(t), y),
                     "_X_buf": _exact_buffer(self._X_buf.view(t), X)}
        else:
            check_finite(Y, "Y")
            state = {"_y_buf": self._y_buf.appended(t, y)}
            if self._arms is not None:
                idx = self._arms.index(X, "X", arm_kernel)
                state["_idx_buf"] = self._idx_buf.appended(t, idx)
            else:
                check_finite(X, "X")
                state["_X_buf"] = self._X_buf.appended(t, X)
        state["_t"] = t + n
        new = shallow_copy_model(self)
        new.__dict__.update(state)
        return new, X, y, idx, host

    def _differentiable_conditioning(self) -> bool:
        return False

    def _condition_batched(self, X: Tensor, Y: Tensor, kwargs: dict) -> HeavyTailedBatch | None:
        """Batched ``condition_on_observations`` (``None`` for plain ``n x d`` / ``n x 1``).

        ``X`` is ``batch x q x d`` and ``Y`` ``num_fantasies x batch x q x 1`` (any shapes
        that broadcast): every batch member is the model conditioned on its own slice.
        """
        if X.dim() <= 2 and Y.dim() <= 2:
            return None
        return HeavyTailedBatch([self], torch.Size([])).condition_on_observations(X, Y, **kwargs)

    def _noise_representable(self) -> bool:
        """Whether conditioning can give new observations a noise variance other than ``λ``."""
        return False

    def _observation_noise(self, noise: Tensor | None, Y: Tensor) -> Tensor | None:
        """The checked noise variances of ``n`` new observations, as an ``n`` vector in the
        data's dtype; ``None`` when ``noise`` is ``None`` or equals ``λ`` everywhere (plain
        conditioning). One host synchronisation when ``noise`` is given.

        Args:
            noise: ``None`` or non-negative finite variances broadcastable to ``Y``'s ``n x 1``.
            Y: ``n x 1`` new rewards.

        Raises:
            ValueError: if ``noise`` is not a tensor of that shape or holds negative or
                non-finite values.
            UnsupportedError: if a variance other than ``λ`` cannot be represented.
        """
        if noise is None:
            return None
        if not isinstance(noise, Tensor) or Y.dim() != 2:
            raise ValueError(
                f"`noise` must be None or a tensor of noise variances shaped as `Y` (n x 1), "
                f"got {type(noise).__name__}."
            )
        try:
            noise = noise.to(self._dtype).expand(Y.shape)[:, 0]
        except RuntimeError:
            raise ValueError(
                f"`noise` must have the shape of `Y` {tuple(Y.shape)}, got {tuple(noise.shape)}."
            ) from None
        valid, plain = torch.stack(
            [(noise.isfinite() & (noise >= 0)).all(), (noise == self.lam).all()]
        ).tolist()
        if not valid:
            raise ValueError("`noise` must hold non-negative finite noise variances.")
        if plain:
            return None
        if not self._noise_representable():
            raise UnsupportedError(
                f"{type(self).__name__} cannot condition on observations with a noise variance "
                f"other than its regulariser λ = {self.lam:g} here (finite arms or "
                "per-direction truncation keep only per-arm or feature-space statistics): pass "
                "noise=None, or condition_noiseless=False to qJointEntropySearch."
            )
        return noise

    def subset_output(self, idcs: list[int]) -> Model:
        if list(idcs) != [0]:
            raise ValueError(f"This model has a single output; got output indices {idcs}.")
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")


def _apply_loaded_state(module: HeavyTailedModel, incompatible_keys: Any) -> None:
    """``load_state_dict`` post-hook: rebuild from the loaded primary state."""
    state = module.__dict__.pop("_pending_state", None)
    if state is not None:
        module._import_state(state)


_DICT_KEYS = ("_parameters", "_buffers", "_modules")


def shallow_copy_model(model: Model) -> Model:
    """A new model object sharing every (immutable) state tensor and sub-module of ``model``.

    Used by ``condition_on_observations``: the caller then *replaces* (never mutates) the
    state that changes, so the original model stays valid. The module registries are copied, so
    registering a sub-module on one model does not affect the other.
    """
    new = _bare_instance(model.__class__)
    state = dict(model.__dict__)
    for key in _DICT_KEYS:
        state[key] = state[key].copy()
    new.__dict__.update(state)
    return new


_PLAIN_NEW: dict[type, bool] = {}


def _bare_instance(cls: type) -> Any:
    """``cls.__new__(cls)``; ``object.__new__(cls)`` where every ``__new__`` in the MRO is
    ``object``'s or ``HeavyTailedModel``'s (which only dispatches batched training data, and a
    copy has none: the dispatch is skipped on every conditioning)."""
    plain = _PLAIN_NEW.get(cls)
    if plain is None:
        ours = HeavyTailedModel.__dict__["__new__"]
        plain = _PLAIN_NEW[cls] = all(
            k.__dict__.get("__new__", ours) is ours for k in cls.__mro__[:-1]
        )
    return object.__new__(cls) if plain else cls.__new__(cls)
