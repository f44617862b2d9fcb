"""The cached posterior solver of the multi-task GPs (mixed into ``MultiTaskGPBase``).

A solver (:mod:`botorch_mtucb.models.solvers`) holds the factorisation for one training set
and one set of hyperparameters. It is built on the first posterior call and reused while
nothing it depends on changed: the training tensors (identity, storage, version counter) and
the values of every parameter and buffer, compared in one flattened comparison. The list of
those tensors is itself reused until some module (re)assigns a parameter, buffer or submodule
(PyTorch's global registration hooks bump :data:`_STATE_EPOCH`) or the model is moved
(``_apply``), so a posterior call does not walk the module tree.
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import nullcontext
from typing import Any, Self

import torch
from gpytorch import settings as gpt_settings
from torch import Tensor
from torch.nn.modules import module as module_hooks

from botorch_mtucb.models.solvers import MultiTaskSolver

__all__ = ["SolverCacheMixin"]

#: Bumped whenever any module (re)assigns a parameter, buffer or submodule: the models' list of
#: state tensors (for the solver cache key) is then collected again, and otherwise reused
#: instead of walking the module tree on every posterior call.
_STATE_EPOCH = [0]


def _bump_state_epoch(*args: Any) -> None:
    _STATE_EPOCH[0] += 1


for _register in (
    module_hooks.register_module_buffer_registration_hook,
    module_hooks.register_module_parameter_registration_hook,
    module_hooks.register_module_module_registration_hook,
):
    _register(_bump_state_epoch)


class SolverCacheMixin:
    """``solver()`` with its cache; subclasses implement :meth:`_build_solver`."""

    def _cache_key(self) -> tuple[tuple, Tensor]:
        """What the solver depends on: the training data and every parameter and buffer.

        The training tensors are identified by identity, storage and version counter (no
        device work); the hyperparameters by value, flattened into one tensor so that the
        check is a single comparison (GPyTorch's setters write through ``.data``, which does
        not bump version counters, so values are the only reliable key).
        """
        X, Y = self.train_inputs[0], self.train_targets
        data = tuple((id(v), v._version, v.data_ptr(), v.shape) for v in (X, Y))
        listed = self.__dict__.get("_state_tensors")
        if listed is None or listed[0] != _STATE_EPOCH[0]:  # a module's state was (re)assigned
            listed = (_STATE_EPOCH[0], [*self.parameters(), *self.buffers()])
            self.__dict__["_state_tensors"] = listed
        state = [v.detach().reshape(-1) for v in listed[1]]
        flat = torch.cat([v.to(X.dtype) for v in state]) if state else X.new_zeros(0)
        return data, flat

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Self:
        """``.to`` / ``.double`` etc.: the solver and the listed state belong to the old tensors."""
        self.__dict__.pop("_state_tensors", None)
        self._solver_cache = None
        return super()._apply(fn, *args, **kwargs)

    def _cache_valid(self, key: tuple[tuple, Tensor]) -> bool:
        if self._solver_cache is None:
            return False
        (old_data, old_flat), _ = self._solver_cache
        return old_data == key[0] and old_flat.shape == key[1].shape and torch.equal(
            old_flat, key[1]
        )

    @abstractmethod
    def _build_solver(self) -> MultiTaskSolver:
        """The posterior solver for the current data and hyperparameters (no caching)."""

    def _predict(self, X: Tensor, full_cov: bool) -> tuple[Tensor, Tensor]:
        """Solver prediction at input-transformed ``X``, in the model's dtype."""
        solver = self.solver()
        mean, cov = solver.predict(X.to(solver.dtype), full_cov=full_cov)
        return mean.to(X.dtype), cov.to(X.dtype)

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

    def train(self, mode: bool = True) -> Self:
        self._solver_cache = None
        return super().train(mode=mode)
