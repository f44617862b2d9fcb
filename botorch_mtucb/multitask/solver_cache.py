"""The cached posterior solver of the multi-task GPs (mixed into ``MultiTaskGPBase``).

A solver (:class:`~botorch_mtucb.multitask.solvers.base.MultiTaskSolver`) holds the
factorisation of paper 000, eq. (1) for one training set and one set of hyperparameters. It is
built on the first posterior call and reused while nothing it depends on changed. The key is
read on the host without touching the device:

* the training tensors: identity, storage and version counter;
* every parameter and buffer: its version counter (bumped by every in-place write through the
  tensor: optimiser steps, ``copy_`` under ``no_grad``, ``load_state_dict``, transform
  statistics updated in place) and its storage (a ``p.data = ...`` swap);
* a counter of GPyTorch ``Module.initialize`` calls: GPyTorch's setters (``noise``,
  ``lengthscale``, ``outputscale``, ...) write through ``.data``, which no version counter
  sees, and all of them go through ``initialize``, which this module wraps once to count the
  calls.

A write through ``.data`` that bypasses ``initialize`` (``p.data.fill_(...)``) is seen at the
next ``train()`` / ``eval()``, which clear the cache, as GPyTorch's own prediction caches.
No value is compared, so the key costs no device work and no host synchronisation.

The list of state tensors (with detached aliases that keep their storages
alive, so that a swapped storage cannot come back at the same address) is reused until some
module (re)assigns a parameter, buffer or submodule (PyTorch's global registration hooks bump
:data:`_STATE_EPOCH`), a tensor's storage is swapped or the model is moved (``_apply``), so a
posterior call does not walk the module tree.

The acquisition hot path's frozen predictors
(:class:`~botorch_mtucb.linalg.icm.ProjectedICMPredictor` and
:class:`~botorch_mtucb.linalg.separable.ProjectedSeparablePredictor`, see
:meth:`_projected_predictor`)
are cached on the solver, so they are invalidated exactly when it is.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Self

import torch
from botorch.models.transforms.input import AffineInputTransform
from botorch.models.transforms.outcome import Standardize
from gpytorch import settings as gpt_settings
from gpytorch.means import ConstantMean
from gpytorch.module import Module as GPyTorchModule
from torch import Tensor
from torch.nn.modules import module as module_hooks

from botorch_mtucb.multitask.solvers.base import MultiTaskSolver, ProjectedPredictor
from botorch_mtucb.multitask.utils import KroneckerLowRankCovariance

__all__ = ["LAZY_JOINT_SIZE", "SolverCacheMixin"]

#: ``q·n`` above which ``posterior`` keeps the joint covariance lazy where the solver can
#: (``Σ_j K_j ⊗ B_j − R Rᵀ``): mean and variances then cost O(q n r), not O((q n)²) memory.
LAZY_JOINT_SIZE = 1024

#: Bumped whenever any module (re)assigns a parameter, buffer or submodule: the models' list of
#: state tensors (for the solver cache key) is then collected again, and otherwise reused
#: instead of walking the module tree on every posterior call.
_STATE_EPOCH = [0]

#: Bumped by every GPyTorch ``Module.initialize`` call (the setters' writes through ``.data``).
_INITIALIZE_EPOCH = [0]

def _bump_state_epoch(*args: Any) -> None:
    _STATE_EPOCH[0] += 1


for _register in (
    module_hooks.register_module_buffer_registration_hook,
    module_hooks.register_module_parameter_registration_hook,
    module_hooks.register_module_module_registration_hook,
):
    _register(_bump_state_epoch)


def _counting_initialize(initialize: Callable[..., Any]) -> Callable[..., Any]:
    """``initialize`` that bumps :data:`_INITIALIZE_EPOCH` after each call (also on error)."""

    @functools.wraps(initialize)
    def counted(self: GPyTorchModule, **kwargs: Any) -> Any:
        try:
            return initialize(self, **kwargs)
        finally:
            _INITIALIZE_EPOCH[0] += 1

    counted.counts_initialize = True  # type: ignore[attr-defined]
    return counted


if not getattr(GPyTorchModule.initialize, "counts_initialize", False):
    GPyTorchModule.initialize = _counting_initialize(GPyTorchModule.initialize)


def _plain_affine(tf: AffineInputTransform, d: int) -> bool:
    """Whether ``tf`` applies ``(x − offset)/coefficient`` to all ``d`` inputs in eval mode."""
    return (
        getattr(tf, "indices", None) is None and not tf.reverse and tf.transform_on_eval
        and tf.transform_on_fantasize and tf.coefficient.numel() == d and tf.offset.numel() == d
    )


class SolverCacheMixin:
    """``solver()`` with its cache; subclasses implement :meth:`_build_solver`.

    Example:
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> model = ExactMultiTaskGP(train_X, train_Y)  # a SolverCacheMixin
        >>> solver = model.solver()
        >>> model.solver() is solver  # True: nothing changed
        >>> model.likelihood.noise = 0.2
        >>> model.solver() is solver  # False: rebuilt for the new η
    """

    def _cache_key(self) -> tuple:
        """What the solver depends on: the training data and every parameter and buffer.

        Read on the host (module docstring): the training tensors by identity, storage and
        version counter; the state tensors by version counter and storage, and the count of
        GPyTorch ``initialize`` calls. The list of state tensors is kept with detached
        aliases (holding the storages, so a swapped one cannot come back at the same address)
        and their storage addresses; a swapped storage makes the list be collected again.
        """
        X, Y = self.train_inputs[0], self.train_targets
        data = (X, X._version, X.data_ptr(), X.shape, Y, Y._version, Y.data_ptr(), Y.shape)
        listed = self.__dict__.get("_state_tensors")
        if listed is None or listed[0] != _STATE_EPOCH[0] or listed[3] != [
            v.data_ptr() for v in listed[1]
        ]:  # a module's state was (re)assigned, or a tensor's storage was swapped
            tensors = [*self.parameters(), *self.buffers()]
            listed = (_STATE_EPOCH[0], tensors, [v.detach() for v in tensors],
                      [v.data_ptr() for v in tensors])
            self.__dict__["_state_tensors"] = listed
        # the aliases keep the key's storages alive: no address is reused while it is held
        return data, (_INITIALIZE_EPOCH[0], listed[2], listed[3]), tuple(
            v._version for v in listed[1]
        )

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Self:
        """``.to`` / ``.double`` etc.: the solver and the listed state belong to the old tensors."""
        self.__dict__.pop("_state_tensors", None)
        self._solver_cache = None
        return super()._apply(fn, *args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle state without the caches (rebuilt on the first query after loading)."""
        state = super().__getstate__().copy()
        state.pop("_state_tensors", None)
        state["_solver_cache"] = None
        return state

    def _cache_valid(self, key: tuple) -> bool:
        if self._solver_cache is None:
            return False
        (old_data, old_state, old_versions), _ = self._solver_cache
        return (
            old_data[0] is key[0][0]  # the training tensors themselves (held: ids not reused)
            and old_data[4] is key[0][4]
            and old_data[1:4] == key[0][1:4]
            and old_data[5:] == key[0][5:]
            and old_state[0] == key[1][0]
            and old_state[2] == key[1][2]
            and old_versions == key[2]
        )

    @abstractmethod
    def _build_solver(self) -> MultiTaskSolver:
        """The posterior solver for the current data and hyperparameters (no caching)."""

    def _predict(self, X: Tensor, full_cov: bool) -> tuple[Tensor, Tensor]:
        """Solver prediction at input-transformed ``X``, in the model's dtype: the mean
        ``batch_shape x q x n`` and the joint ``batch_shape x qn x qn`` covariance
        (``full_cov``) or the ``batch_shape x q x n x n`` blocks; empty for an empty ``X``."""
        if X.shape[:-1].numel() == 0:
            return self._empty_prediction(X, full_cov)
        solver = self.solver()
        mean, cov = solver.predict(X.to(solver.dtype), full_cov=full_cov)
        return mean.to(X.dtype), cov.to(X.dtype)

    def _predict_joint(self, X: Tensor) -> tuple[Tensor, Tensor | KroneckerLowRankCovariance]:
        """:meth:`_predict` with ``full_cov``, the covariance kept lazy for ``q > 1`` points
        and ``q·n >`` :data:`LAZY_JOINT_SIZE` where the solver allows it."""
        q = X.shape[-2]
        if q > 1 and q * self.num_tasks > LAZY_JOINT_SIZE and X.shape[:-1].numel() > 0:
            solver = self.solver()
            lazy = solver.predict_lazy_joint(X.to(solver.dtype))
            if lazy is not None:
                return lazy[0].to(X.dtype), lazy[1].to(X.dtype)
        return self._predict(X, full_cov=True)

    def _empty_prediction(self, X: Tensor, full_cov: bool) -> tuple[Tensor, Tensor]:
        """The (empty) prediction at an ``X`` without points: shapes as in :meth:`_predict`."""
        batch = torch.broadcast_shapes(X.shape[:-2], self.batch_shape)
        q, n = X.shape[-2], self.num_tasks
        mean = X.new_zeros(*batch, q, n)
        if full_cov:
            return mean, X.new_zeros(*batch, q * n, q * n)
        return mean, X.new_zeros(*batch, q, n, n)

    def solver(self) -> MultiTaskSolver:
        """The (cached) posterior solver for the current data and hyperparameters."""
        if self.training:
            self.eval()
        key = self._cache_key()
        if not self._cache_valid(key):
            with torch.no_grad() if gpt_settings.detach_test_caches.on() else nullcontext():
                solver = self._build_solver()
            for block in self._conditioned_blocks:  # a fantasy model: replay its updates
                solver = self._update_solver(solver, *block)
            self._solver_cache = (key, solver)  # ``key`` holds fresh tensors (torch.cat)
        return self._solver_cache[1]

    def _standardize_or_none(self, X: Tensor) -> Standardize | None | bool:
        """The outcome transform if it is a ``Standardize`` (or ``None``); ``False`` for
        another transform, which needs the generic ``posterior`` path."""
        tf = getattr(self, "outcome_transform", None)
        if tf is None or isinstance(tf, Standardize):
            return tf
        return False

    def _projected_predictor(self, directions: Tensor) -> ProjectedPredictor | None:
        """The frozen hot-path predictor of ``projected_task_posterior`` for ``directions``.

        Cached on the current solver (so it is rebuilt exactly when the solver is: new data,
        new hyperparameters or transform statistics, conditioning, ``.to``) and keyed by the
        directions tensor (identity and version counter). ``None`` where the model has no
        frozen path (then the general path is used).
        """
        solver = self.solver()
        cache = solver.__dict__.setdefault("_predictors", {})
        key = (id(directions), directions._version)
        hit = cache.get(key)
        if hit is not None and hit[0] is directions:
            return hit[1]
        with torch.no_grad():
            predictor = self._build_predictor(solver, directions)
        if len(cache) >= 8:
            cache.clear()
        cache[key] = (directions, predictor)  # holds ``directions``: its id is not reused
        return predictor

    def _build_predictor(
        self, solver: MultiTaskSolver, directions: Tensor
    ) -> ProjectedPredictor | None:
        """Fold the outcome transform, prior mean and input transform into the solver's
        predictor; ``None`` for anything without an exact fold (general path instead)."""
        dtype = self.train_targets.dtype
        if solver.dtype != dtype or self.train_targets.dim() > 2:
            return None
        like = self.train_targets
        n = like.shape[-1]
        tf = self._standardize_or_none(like)
        if tf is None:
            scale, shift = like.new_ones(n), like.new_zeros(n)
        elif tf is not False and tf.stdvs.numel() == n:
            scale, shift = tf.stdvs.reshape(n).to(like), tf.means.reshape(n).to(like)
        else:
            return None
        if not self._zero_mean:
            means = getattr(self.mean_module, "base_means", None)
            if means is None or any(
                type(m) is not ConstantMean or m.constant.numel() != 1 for m in means
            ):
                return None
            const = torch.stack([m.constant.reshape(()) for m in means]).to(like)
            shift = const * scale + shift
        in_affine = None
        it = getattr(self, "input_transform", None)
        if it is not None:
            if not (isinstance(it, AffineInputTransform) and _plain_affine(it, self._d)):
                return None
            in_affine = (it.offset.reshape(-1).to(like), it.coefficient.reshape(-1).to(like))
        return solver.projected_predictor(directions.to(like), scale, shift, in_affine)

    def train(self, mode: bool = True) -> Self:
        self._solver_cache = None
        return super().train(mode=mode)
