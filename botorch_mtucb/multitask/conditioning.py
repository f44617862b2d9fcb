r"""Batched conditioning of a multi-task posterior: fantasies and look-ahead models.

Appending ``m`` observations ``Y_1`` at ``X_1`` to a Gaussian posterior with mean μ and
covariance Γ_t (noise η) is one more Gaussian update:

.. math::
    μ'(x) = μ(x) + Γ_t(x, X_1) (Γ_t(X_1, X_1) + ηI)^{-1} (Y_1 − μ(X_1)), \qquad
    Γ'(x, x') = Γ_t(x, x') − Γ_t(x, X_1) (Γ_t(X_1, X_1) + ηI)^{-1} Γ_t(X_1, x').

For the exact model this *is* the posterior on the extended data (the Gaussian update is
exact), so :class:`ConditionedSolver` serves batched ``condition_on_observations`` and BoTorch's
``fantasize`` (``X: batch x m x d``, ``Y: num_fantasies x batch x m x n``) without rebuilding
anything, for any base solver. For MT-BKB it updates the current Nyström posterior with its
dictionary kept (a fantasy is hypothetical: no new dictionary is drawn for it). Unbatched
conditioning of the exact ICM model uses the cheaper Schur block of
:class:`~botorch_mtucb.multitask.solvers.exact.ICMSolver` instead.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from contextlib import nullcontext
from typing import Any, Self

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError
from gpytorch import settings as gpt_settings
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.multitask.solvers.base import MultiTaskSolver
from botorch_mtucb.multitask.utils import validate_train_data
from botorch_mtucb.utils.validation import check_finite

__all__ = ["ConditionedSolver", "MultiTaskConditioningMixin"]


class ConditionedSolver(MultiTaskSolver):
    """A base solver's posterior updated on ``m`` (batched) observations.

    ``μ'(x) = μ(x) + Γ_t(x, X_1) (Γ_t(X_1, X_1) + ηI)⁻¹ (Y_1 − μ(X_1))`` and
    ``Γ'(x, x') = Γ_t(x, x') − Γ_t(x, X_1) (Γ_t(X_1, X_1) + ηI)⁻¹ Γ_t(X_1, x')`` (module
    docstring): one ``mn x mn`` Cholesky factor, and each query asks the base for the joint
    posterior at ``X ∪ X_1``.

    Args:
        base: The solver of the model that is conditioned.
        X1: ``batch x m x d`` appended inputs (input-transformed, the base's dtype).
        resid1: ``batch' x m x n`` appended targets minus the prior mean (``batch'`` may have
            leading fantasy dimensions in front of ``batch``).
        noise: η (0-dim tensor), or ``batch x m x n`` noise variances of the new rows.

    Example:
        >>> from botorch_mtucb.multitask.solvers.exact import DenseSolver
        >>> eta = torch.tensor(0.1, dtype=torch.float64)
        >>> base = DenseSolver(kernel, train_X[:8], train_resid[:8], eta)
        >>> X1, R1 = train_X[8:].expand(2, -1, -1), train_resid[8:].expand(5, 2, -1, -1)
        >>> solver = ConditionedSolver(base, X1, R1, eta)  # 5 fantasies x batch 2
        >>> mean, blocks = solver.predict(torch.rand(2, 1, d, dtype=torch.float64), False)
    """

    def __init__(self, base: MultiTaskSolver, X1: Tensor, resid1: Tensor, noise: Tensor) -> None:
        self.base, self.X1, self.noise = base, X1, noise
        self.train_X = X1  # (the dtype)
        self.num_tasks = n = base.num_tasks
        m = X1.shape[-2]
        mean1, cov11 = base.predict(X1, full_cov=True)  # batch x m x n, batch x mn x mn
        if noise.dim() == 0:
            cov11 = cov11 + noise * torch.eye(m * n, dtype=cov11.dtype, device=cov11.device)
        else:  # batch x m x n variances, interleaved on the diagonal
            diag = noise.expand(*noise.shape[:-2], m, n).reshape(*noise.shape[:-2], m * n)
            cov11 = cov11 + torch.diag_embed(diag)
        self.factor = CholeskyFactor.from_matrix(cov11)
        batch = torch.broadcast_shapes(resid1.shape[:-2], mean1.shape[:-2])
        e = (resid1 - mean1).expand(*batch, m, n).reshape(*batch, m * n, 1)
        self.coef = self.factor.solve(e)  # batch' x mn x 1 (cholesky_solve broadcasts)

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        n = self.num_tasks
        if not full_cov:  # one point per block: batch x q x 1 x d
            mean, cov = self._joint(X.unsqueeze(-2), self.X1.unsqueeze(-3))
            return mean.squeeze(-2), cov.reshape(*mean.shape[:-2], n, n)
        return self._joint(X, self.X1)

    def _joint(self, X: Tensor, X1: Tensor) -> tuple[Tensor, Tensor]:
        q, m, n = X.shape[-2], X1.shape[-2], self.num_tasks
        coef, L = self.coef, self.factor.L
        if X1.dim() > self.X1.dim():  # per-point blocks: align the coefficients' batch dims
            coef, L = coef.unsqueeze(-3), L.unsqueeze(-3)
        batch = torch.broadcast_shapes(X.shape[:-2], X1.shape[:-2], coef.shape[:-2])
        d = X.shape[-1]
        joint_X = torch.cat([X.expand(*batch, q, d), X1.expand(*batch, m, d)], dim=-2)
        mean, cov = self.base.predict(joint_X, full_cov=True)
        qn = q * n
        C = cov[..., :qn, qn:]  # Γ_t(X, X_1): batch x qn x mn
        mean = mean[..., :q, :] + (C @ coef).reshape(*batch, q, n)
        V = torch.linalg.solve_triangular(L, C.transpose(-1, -2), upper=False)
        return mean, cov[..., :qn, :qn] - V.transpose(-1, -2) @ V

    def information_gain(self) -> Tensor:
        """The base's gain plus ½ log det(I + η⁻¹ Γ_t(X_1, X_1)) (Lemma 4's chain rule)."""
        mn = self.factor.size
        log_noise = mn * torch.log(self.noise) if self.noise.dim() == 0 else torch.log(
            self.noise).expand(*self.noise.shape[:-2], mn // self.num_tasks,
                               self.num_tasks).sum((-1, -2))
        return self.base.information_gain() + 0.5 * (self.factor.logdet() - log_noise)


class MultiTaskConditioningMixin:
    """``condition_on_observations`` of the multi-task GPs (mixed into ``MultiTaskGPBase``).

    Unbatched data go through the model's own :meth:`_after_conditioning` (an extended
    factorisation, a new dictionary); batched data (fantasies) through
    :class:`ConditionedSolver`, recorded so that a rebuilt solver replays them.

    Example:
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> model = ExactMultiTaskGP(train_X, train_Y)
        >>> new = model.condition_on_observations(x_new, y_new)  # m x d, m x n
        >>> fantasies = model.condition_on_observations(x_new, y_new.expand(4, -1, -1))
        >>> fantasies.batch_shape  # torch.Size([4])
    """

    def _base_train_data(self) -> tuple[Tensor, Tensor]:
        """Transformed inputs and residuals the solver is built from.

        All training rows; for a model conditioned on batched blocks (a fantasy model) the
        unbatched rows before the first block, which :meth:`solver` then updates block by block.
        """
        X, resid = self.train_inputs[0], self._train_resid()
        if not self._conditioned_blocks:
            return X, resid
        m = sum(block[0].shape[-2] for block in self._conditioned_blocks)
        first = (0,) * (X.dim() - 2 - len(self._base_batch_shape))  # the added leading dims
        return X[first][..., :-m, :], resid[first][..., :-m, :]

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> Self:
        """A new model with ``(X, Y)`` appended to the training data.

        Hyperparameters and outcome-transform statistics are kept; the old factorisation is
        reused (dense: a block Cholesky update; ICM: the old block of ``K_t``). The result
        agrees with a model built from scratch on the concatenated data with the same
        hyperparameters. Subclasses customise the last step through
        :meth:`_after_conditioning`.

        Batched ``X: batch_shape x m x d`` and ``Y: batch_shape' x m x n`` (e.g. BoTorch's
        ``fantasize``, with ``batch_shape' = num_fantasies x batch_shape``) give a model of
        batch shape ``batch_shape'``: a Gaussian update of this posterior
        (:class:`~botorch_mtucb.multitask.conditioning.ConditionedSolver`).

        Args:
            X: ``[batch_shape x] m x d`` new inputs.
            Y: ``[batch_shape' x] m x n`` new observations (original outcome scale).
            noise: Noise variances of the new observations, shaped like ``Y`` and, as in
                BoTorch, already outcome-transformed. Required for a model with known noise
                (``train_Yvar``); for a batched update of a homoscedastic model it replaces η;
                otherwise it must be ``None`` (η is shared).
        """
        self._check_new_observations(X, Y, noise)
        old_solver = self.solver()  # eval mode: train_inputs are transformed
        new, Xt, Yt = self._appended_copy(X, Y)
        batched = X.dim() > 2 or Y.dim() > 2
        if not batched and not self._conditioned_blocks and self.batch_shape == torch.Size():
            if self.known_noise:  # the new rows' variances join the likelihood; rebuild lazily
                new.likelihood.noise = torch.cat([self.likelihood.noise, noise.to(Yt)], dim=-2)
                return new
            self._after_conditioning(new, old_solver, Xt)
            return new
        # batched (fantasies): a Gaussian update of this posterior, no rebuild
        new._conditioned_blocks = [*self._conditioned_blocks, (Xt, Yt, noise)]
        new._input_batch_shape = new.train_targets.shape[:-2]
        new._solver_cache = (new._cache_key(), self._update_solver(old_solver, Xt, Yt, noise))
        return new

    def _update_solver(
        self, solver: MultiTaskSolver, Xt: Tensor, Yt: Tensor, noise: Tensor | None
    ) -> MultiTaskSolver:
        """:class:`ConditionedSolver` of ``solver`` on a batched block (the solver's dtype).

        ``noise`` (``batch_shape x m x n``, outcome-transformed) defaults to η, or for a
        known-noise model to each task's average training variance.
        """
        cdt = solver.dtype
        resid = Yt if self._zero_mean else Yt - self.mean_module(Xt)
        if noise is None:
            noise = self._observation_noise(Yt, True) if self.known_noise else self.noise
        # detached like the other caches, except from appended points that carry a graph: a
        # fantasy at a candidate (qKnowledgeGradient, qNIPV) must pass its gradient on
        detach = gpt_settings.detach_test_caches.on() and not (
            Xt.requires_grad or Yt.requires_grad
        )
        with torch.no_grad() if detach else nullcontext():
            return ConditionedSolver(solver, Xt.to(cdt), resid.to(cdt), noise.to(cdt))

    def _check_new_observations(self, X: Tensor, Y: Tensor, noise: Tensor | None) -> None:
        batched = X.dim() > 2 or Y.dim() > 2
        if noise is not None:
            check_finite(noise, "noise")
            if noise.shape[-1] != Y.shape[-1] or not bool((noise > 0).all()):
                raise ValueError(
                    "`noise` must hold positive variances with one column per task, got shape "
                    f"{tuple(noise.shape)}."
                )
            if not (batched or self.known_noise):
                raise NotImplementedError(
                    "Per-observation `noise` needs a model built with `train_Yvar`: this "
                    "model's noise η is shared by all observations."
                )
        elif self.known_noise and not batched:
            raise ValueError("A model with known noise (`train_Yvar`) needs `noise` for new rows.")
        if not batched:
            validate_train_data(X, Y, names=("X", "Y"))
        else:
            check_finite(X, "X")
            check_finite(Y, "Y")
            try:
                torch.broadcast_shapes(X.shape[:-1], Y.shape[:-1])
            except RuntimeError as err:
                raise BotorchTensorDimensionError(
                    "Batched `X: batch_shape x m x d` and `Y: batch_shape' x m x n` must have "
                    f"broadcastable batch shapes, got {tuple(X.shape)} and {tuple(Y.shape)}."
                ) from err
        if X.dim() < 2 or X.shape[-1] != self._d or Y.shape[-1] != self.num_tasks:
            raise BotorchTensorDimensionError(
                f"Expected `X: [batch_shape x] m x {self._d}` and `Y: [batch_shape x] m x "
                f"{self.num_tasks}`, got {tuple(X.shape)} and {tuple(Y.shape)}."
            )

    def _deepcopy_memo(self) -> dict:
        """Objects that conditioned copies share instead of duplicating: the training tensors
        (the copy replaces them) and the conditioned blocks (never changed). Fantasies may
        carry an autograd graph, and a non-leaf tensor cannot be deep-copied, so sharing them
        is what lets a fantasy model be conditioned or fantasized again."""
        keep = [*self.train_inputs, self.train_targets, self.__dict__.get("_original_train_inputs")]
        keep += [t for block in self._conditioned_blocks for t in block]
        return {id(t): t for t in keep if isinstance(t, Tensor)}

    def _appended_copy(self, X: Tensor, Y: Tensor) -> tuple[Self, Tensor, Tensor]:
        """A copy of this model (without its solver cache) with ``(X, Y)`` appended.

        Batched ``X`` / ``Y`` broadcast the training data to their common batch shape.

        Returns:
            The copy, the input-transformed ``X`` and the outcome-transformed ``Y``.
        """
        Xt = self.transform_inputs(X).to(self.train_inputs[0])
        Yt = Y.to(self.train_targets)
        if hasattr(self, "outcome_transform"):
            Yt, _ = self.outcome_transform(Yt, X=Xt)
        cache, self._solver_cache = self._solver_cache, None
        try:
            new = copy.deepcopy(self, self._deepcopy_memo())
        finally:
            self._solver_cache = cache
        old_X, old_Y = self.train_inputs[0], self.train_targets
        batch = torch.broadcast_shapes(old_X.shape[:-2], Xt.shape[:-2], Yt.shape[:-2])

        def cat(old: Tensor, add: Tensor) -> Tensor:
            return torch.cat([old.expand(*batch, *old.shape[-2:]),
                              add.expand(*batch, *add.shape[-2:])], dim=-2)

        # GPyTorch's own setter: the data only; the subclass's `_after_conditioning` sets the
        # rest of its state (a Nystrom model's dictionary) from the old model
        ExactGP.set_train_data(new, cat(old_X, Xt), cat(old_Y, Yt), strict=False)
        if getattr(self, "_original_train_inputs", None) is not None:
            new._original_train_inputs = cat(
                self._original_train_inputs, X.to(self._original_train_inputs)
            )
        return new, Xt, Yt

    @abstractmethod
    def _after_conditioning(
        self, new: Self, old_solver: MultiTaskSolver, Xt: Tensor
    ) -> None:
        """Pass this model's state on to ``new`` (this model with ``Xt`` appended).

        Args:
            new: The conditioned copy (its training data already extended).
            old_solver: This model's solver.
            Xt: ``m x d`` appended inputs, input-transformed.
        """
