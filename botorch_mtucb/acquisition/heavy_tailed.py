"""Upper confidence bound of TGP-UCB / ATA-GP-UCB: ``μ_t(x) + β_{t+1} σ_t(x)``.

Paper 001, Algorithms 1 and 2: ``x_{t+1} = argmax_x μ_t(x) + β_{t+1} σ_t(x)``, with μ_t the
truncated (TGP-UCB) or adaptively truncated (ATA-GP-UCB) mean and σ_t the model's width; the
models carry the theory's β_{t+1} (:class:`~botorch_mtucb.protocols.WidthScheduleModel`).
Note that ``β`` multiplies ``σ`` directly, unlike BoTorch's ``UpperConfidenceBound``, which
uses ``√β``.

Batches (GP-BUCB): ``set_X_pending`` keeps the mean of the model and takes the variance from the
model conditioned on the pending points with their hallucinated means
(:mod:`botorch_mtucb.acquisition.pending`). For a Gaussian GP this is the conditioned model
itself; for TGP / ATA it avoids truncating a hallucinated reward (|y| > b_s ⇒ 0 would move the
mean), while their variance does not depend on the rewards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Self

import torch
from botorch.acquisition.analytic import AnalyticAcquisitionFunction
from botorch.exceptions import UnsupportedError
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.beta import as_beta_tensor
from botorch_mtucb.acquisition.pending import (
    PendingState,
    check_pending,
    resolve_inflation,
)
from botorch_mtucb.protocols import MarginalMomentsModel, WidthScheduleModel
from botorch_mtucb.utils.validation import check_test_tensor

__all__ = ["HeavyTailedUCB"]


@lru_cache(maxsize=64)
def _protocols(model_type: type) -> tuple[bool, bool]:
    """Whether a model class is a ``WidthScheduleModel`` / ``MarginalMomentsModel``.

    Runtime ``Protocol`` checks walk the protocol's members; a class answers the same for all
    its instances, so the answer is cached per class.
    """
    return issubclass(model_type, WidthScheduleModel), issubclass(model_type, MarginalMomentsModel)


class HeavyTailedUCB(AnalyticAcquisitionFunction):
    """``UCB(x) = μ(x) + β σ(x)`` for a single-output model (``q = 1``; paper 001, Alg. 1–2).

    ``argmax_x UCB(x)`` is the next point of TGP-UCB / ATA-GP-UCB when ``model`` is a
    :class:`~botorch_mtucb.models.TruncatedGP` / :class:`~botorch_mtucb.models.AdaptiveTruncationGP`
    and β = β_{t+1}. Works with any single-output BoTorch model; with ``beta=None`` the model
    must be a :class:`~botorch_mtucb.protocols.WidthScheduleModel` (``beta()``), evaluated
    once here: the theory's (or the authors') width β_{t+1} for the next round. A
    :class:`~botorch_mtucb.protocols.MarginalMomentsModel` is evaluated through
    ``mean_and_variance`` (no posterior object); any other model through its posterior. A
    batch ``beta`` tensor (``b``, or a batched model's ``b x 1``) broadcasts against the
    candidates' batch shape ``(b1 x … x bk)`` as in BoTorch (e.g. one β per member of a
    batched model's ``batch_shape``).

    Example:
        >>> from botorch_mtucb.models import TruncatedGP
        >>> train_X = torch.rand(8, 1, dtype=torch.float64)
        >>> train_Y = torch.randn(8, 1, dtype=torch.float64)
        >>> model = TruncatedGP(train_X, train_Y, alpha=1.0, v=2.0)
        >>> acqf = HeavyTailedUCB(model)  # β_{t+1} = model.beta()
        >>> arms = torch.linspace(0, 1, 11, dtype=torch.float64).reshape(11, 1, 1)
        >>> acqf(arms).shape
        torch.Size([11])
    """

    def __init__(
        self,
        model: Model,
        beta: float | Tensor | None = None,
        maximize: bool = True,
        X_pending: Tensor | None = None,
        pending_beta_inflation: float = 1.0,
    ) -> None:
        """
        Args:
            model: Single-output BoTorch model.
            beta: Width ``β ≥ 0`` multiplying ``σ`` (a scalar or a batch tensor); ``None``
                takes ``model.beta()``.
            maximize: ``False`` scores ``−μ + β σ`` (an optimistic bound for minimisation).
            X_pending: ``m x d`` pending points (GP-BUCB, see :meth:`set_X_pending`).
            pending_beta_inflation: Factor ≥ 1 on β while points are pending (GP-BUCB's
                exp(C); :mod:`botorch_mtucb.acquisition.pending`). Default 1 (none).

        Raises:
            UnsupportedError: if the model has more than one output.
            TypeError: if ``beta`` is not a real number or tensor (e.g. a string).
            ValueError: if ``beta`` is negative / non-finite, or ``None`` with a model that has
                no ``beta()`` method.
        """
        if model.num_outputs != 1:
            raise UnsupportedError(
                f"`model` must have a single output, got {model.num_outputs}."
            )
        is_width, is_moments = _protocols(type(model))
        if beta is None:
            if not (is_width and callable(model.beta)):
                raise ValueError(
                    "`beta=None` needs a model with a `beta()` schedule (TruncatedGP, "
                    f"AdaptiveTruncationGP); {type(model).__name__} has none."
                )
            beta = model.beta()
        if isinstance(beta, int | float) and not isinstance(beta, bool):  # no tensor check
            if not math.isfinite(beta) or beta < 0:
                raise ValueError(f"`beta` must be non-negative and finite, got {beta!r}.")
            beta_float = float(beta)
            beta_t = torch.scalar_tensor(beta_float, dtype=torch.float64)
        else:
            beta_t = as_beta_tensor(beta, "beta")
            beta_float = float(beta_t) if beta_t.numel() == 1 else None
        if resolve_inflation(pending_beta_inflation) == "gp-bucb":
            raise ValueError(
                "HeavyTailedUCB takes a numeric `pending_beta_inflation` (>= 1), not 'gp-bucb'."
            )
        # What nn.Module / AcquisitionFunction / AnalyticAcquisitionFunction.__init__ set (a
        # fresh copy of a bare module's state: ``model`` and the ``beta`` buffer registered
        # directly) and the plain attributes, straight into __dict__: this acquisition is
        # rebuilt every round, so its construction is kept to plain attribute writes.
        state = _bare_module_state()
        state["_modules"]["model"] = model
        # also a plain attribute: read without nn.Module.__getattr__; assigning
        # ``acqf.model = m`` goes through nn.Module.__setattr__, which drops this entry first
        state["model"] = model
        state["_buffers"]["beta"] = beta_t  # scalar or batch; read by the loop
        state.update(
            posterior_transform=None,
            beta_real_data=beta_t,
            _beta_float=beta_float,
            _beta_float_real=beta_float,
            _fast=is_moments,  # marginal moments without a posterior object
            maximize=bool(maximize),
            pending_beta_inflation=float(pending_beta_inflation),
            _pending=None,  # the GP-BUCB state, built when a point is first pending
            variance_model=model,
            X_pending=None,
        )
        self.__dict__.update(state)
        if X_pending is not None:
            self.set_X_pending(X_pending)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Self:
        """``nn.Module._apply`` (``.to``, ...), extended to the GP-BUCB state (the model of
        the real data, the hallucinated one and the pending points)."""
        super()._apply(fn, recurse)
        if self._pending is not None:
            self._pending.apply(fn)
            self.__dict__["variance_model"] = self._pending.model
            self.__dict__["X_pending"] = self._pending.X
        self.__dict__["beta_real_data"] = fn(self.beta_real_data)
        return self

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """GP-BUCB: the variance from the model conditioned on hallucinated means at pending points.

        The mean stays the real model's; β becomes ``beta_real_data * pending_beta_inflation``
        while points are pending (:mod:`botorch_mtucb.acquisition.pending`).

        Args:
            X_pending: ``m x d`` pending points, or ``None`` / an empty tensor for none.
        """
        X = check_pending(X_pending, None)
        if X is None and self._pending is None:  # nothing pending, ever: nothing to reset
            self.__dict__["X_pending"] = None
            return
        if self._pending is None:
            self.__dict__["_pending"] = PendingState(self.model)
        self.__dict__["variance_model"] = self._pending.update(X)
        self.__dict__["X_pending"] = X
        factor = 1.0 if X is None else self.pending_beta_inflation
        self.beta = self.beta_real_data.to(self.beta) * factor
        real = self._beta_float_real
        self.__dict__["_beta_float"] = None if real is None else real * factor

    def _moments(self, model: Model, X: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and standard deviation (each ``batch_shape x 1``) of a single-output ``model``
        at ``batch_shape x 1 x d`` inputs."""
        if _protocols(type(model))[1]:
            mean, var = model.mean_and_variance(X)
            return mean, var.clamp_min(1e-12).sqrt()
        post = model.posterior(X)
        return post.mean.squeeze(-1), post.variance.squeeze(-1).clamp_min(1e-12).sqrt()

    def forward(self, X: Tensor) -> Tensor:
        """Evaluate ``μ + β σ`` on ``(b1 x … x bk) x 1 x d`` candidates (``1 x d``: one point).

        The checks of BoTorch's ``t_batch_mode_transform(expected_q=1)``, inline.

        Args:
            X: ``(b1 x … x bk) x 1 x d`` candidates (a float32 / float64 tensor without NaN or
                infinite entries).

        Returns:
            ``(b1 x … x bk)`` acquisition values.

        Raises:
            TypeError: if ``X`` is not a float32 / float64 tensor.
            ValueError: if ``X`` holds NaN or infinite values or has fewer than 2 dimensions.
        """
        check_test_tensor(X, "X")
        if X.dim() < 3:
            if X.dim() < 2:
                raise ValueError(
                    f"HeavyTailedUCB requires X to have at least 2 dimensions, but received X "
                    f"with only {X.dim()} dimensions."
                )
            X = X.unsqueeze(0)
        if X.shape[-2] != 1:
            raise AssertionError(
                f"Expected X to be `batch_shape x q=1 x d`, but got X with shape {X.shape}."
            )
        model = self.model
        if self._fast:
            mean, var = model.mean_and_variance(X)  # (b1 x … x bk) x 1
            sigma = var.clamp_min(1e-12).sqrt()
        else:
            mean, sigma = self._mean_and_sigma(X)
        if self._pending is not None and self.variance_model is not model:  # GP-BUCB
            sigma = self._moments(self.variance_model, X)[1]
        if not self.maximize:
            mean = -mean
        if self._beta_float is not None:  # one fused op, no tensor for β
            return torch.add(mean, sigma, alpha=self._beta_float).squeeze(-1)
        beta = self.beta.to(mean)
        if beta.dim() >= 2 and beta.shape[-1] == 1:  # a batched model's `b x 1` beta()
            beta = beta.squeeze(-1)
        # β broadcasts against the candidates' batch shape (BoTorch's convention), not q
        return mean.squeeze(-1) + beta * sigma.squeeze(-1)


def _bare_module_state() -> dict:
    """A fresh copy of the attributes ``nn.Module.__init__`` sets (its containers are empty)."""
    state = _BARE_SCALARS.copy()
    for key, factory in _BARE_CONTAINERS:
        state[key] = factory()
    return state


_BARE = torch.nn.Module().__dict__
_BARE_SCALARS = {k: v for k, v in _BARE.items() if not isinstance(v, dict | set)}
_BARE_CONTAINERS = tuple((k, type(v)) for k, v in _BARE.items() if isinstance(v, dict | set))
