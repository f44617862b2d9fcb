r"""Scalarized multi-task Thompson sampling: maximise s_λ of one posterior sample path.

Thompson sampling for a scalarized multi-objective problem draws one function f̃ from the
posterior of the multi-output model and maximises its scalarization,

.. math::
    x_{t+1} = \arg\max_x\, s_λ(\tilde f(x)), \qquad \tilde f \sim \mathrm{GP}(μ_t, Γ_t),

with s_λ a :class:`~botorch_mtucb.acquisition.Scalarization` (objectives listed in its
``minimize`` are negated inside it) and λ drawn from P_λ each round as for the UCB rule of
paper 000, eq. (2). The path f̃ is a random-feature prior path plus a Matheron update
(pathwise conditioning: Wilson et al., "Efficiently sampling functions from Gaussian process
posteriors", ICML 2020), drawn with BoTorch's dispatcher
``botorch.sampling.pathwise.draw_matheron_paths``: it is a deterministic, differentiable
function of ``x``, so the acquisition is maximised with ``optimize_acqf`` (or
``optimize_acqf_discrete`` on a finite arm set) like any analytic one.

The acquisition imports no model class: any model that ``draw_matheron_paths`` accepts and
whose paths have BoTorch's multi-output layout (``sample_shape x n x q``) works, e.g. the
package's ExactMultiTaskGP and its practical form once :mod:`botorch_mtucb.models` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from botorch.sampling.pathwise import draw_matheron_paths
from gpytorch.models import ExactGP
from torch import Tensor
from torch.nn import Module

from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.acquisition.scalarization.base import check_scalarization
from botorch_mtucb.utils.validation import check_test_tensor

__all__ = ["ScalarizedThompsonSampling"]


class ScalarizedThompsonSampling(AcquisitionFunction):
    r"""Scalarized value s_λ(f̃(x)) of posterior sample paths f̃ of a multi-output model (q = 1).

    The paths are drawn once, here, with ``draw_matheron_paths(model, torch.Size([k]))``
    (``k = num_paths``), and the acquisition is

    .. math::
        α(x) = \frac{1}{k} \sum_{j=1}^{k} s_λ(\tilde f_j(x)),
        \qquad \tilde f_j \sim \mathrm{GP}(μ_t, Γ_t) \text{ independently},

    so with ``k = 1`` (the default) ``argmax_x α(x)`` is a Thompson-sampling choice for the
    scalarized objective (pathwise conditioning, Wilson et al., ICML 2020); a larger ``k``
    averages several paths into a Monte-Carlo estimate of E[s_λ(f(x))] (less exploratory).
    s_λ is the scalarization of paper 000, §2 (all objectives maximised unless listed in its
    ``minimize``). The value is a deterministic, differentiable function of ``x`` for fixed
    paths; with ``seed`` the paths, and so the acquisition, are reproducible (the draw runs
    inside ``torch.random.fork_rng()`` after ``torch.manual_seed(seed)``, leaving the global
    random state untouched); without it they use the global random state.

    The value is the exact s_λ of each path. For a
    :class:`~botorch_mtucb.acquisition.HypervolumeScalarization`,
    s_λ(y) = min_i max(0, (ỹ_i − z̃_i)/(r_i λ_i))ⁿ is zero, and flat (no gradient), wherever a
    path lies below the reference point z in some objective; the average over ``k`` paths is
    flat where all of them do.

    Batches from pending points are not supported (a path sample does not shrink at pending
    points): ``X_pending`` is refused.

    Example:
        >>> from botorch_mtucb.acquisition import LinearScalarization
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> train_X = torch.rand(10, 2, dtype=torch.float64)
        >>> train_Y = torch.stack([train_X.sum(-1), train_X.prod(-1)], dim=-1)
        >>> model = ExactMultiTaskGP(train_X, train_Y)
        >>> acqf = ScalarizedThompsonSampling(model, LinearScalarization([0.3, 0.7]), seed=0)
        >>> acqf(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        torch.Size([5])
    """

    def __init__(
        self,
        model: Model,
        scalarization: Scalarization,
        num_paths: int = 1,
        seed: int | None = None,
        X_pending: Tensor | None = None,
    ) -> None:
        """
        Args:
            model: A multi-output BoTorch model with ``n = model.num_outputs ≥ 2`` and no
                batch shape, supported by ``botorch.sampling.pathwise.draw_matheron_paths``.
            scalarization: s_λ with ``n`` weights (:class:`LinearScalarization`,
                :class:`ChebyshevScalarization` or :class:`HypervolumeScalarization`).
            num_paths: Number ``k ≥ 1`` of paths averaged (``1``: Thompson sampling).
            seed: Seed of the path draw (``None``: the global random state).
            X_pending: Must be ``None``: pending points are not supported.

        Raises:
            ValueError: if the model, the scalarization, ``num_paths`` or ``seed`` do not fit,
                or ``X_pending`` is given.
        """
        super().__init__(model=model)
        n = model.num_outputs
        if n < 2:
            raise ValueError(
                "ScalarizedThompsonSampling needs a multi-output model (num_outputs >= 2), got "
                f"num_outputs={n}."
            )
        batch_shape = _batch_shape(model)
        if len(batch_shape) > 0:
            raise ValueError(
                "ScalarizedThompsonSampling needs a model without a batch shape, got "
                f"batch_shape={tuple(batch_shape)}."
            )
        check_scalarization(scalarization, n)
        if isinstance(num_paths, bool) or not isinstance(num_paths, int) or num_paths < 1:
            raise ValueError(f"`num_paths` must be an integer >= 1, got {num_paths!r}.")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"`seed` must be an integer or None, got {seed!r}.")
        self.set_X_pending(X_pending)
        self.scalarization = scalarization
        self.num_paths = num_paths
        self.seed = seed
        self.paths = self._draw()

    def _draw(self) -> Module:
        """``num_paths`` Matheron paths of the model (seeded in a forked RNG when ``seed``)."""
        if self.seed is None:
            return draw_matheron_paths(self.model, torch.Size([self.num_paths]))
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            return draw_matheron_paths(self.model, torch.Size([self.num_paths]))

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Self:
        """``nn.Module._apply`` (``.to``, ...): the model is moved and the paths are drawn
        again on it (BoTorch's drawn paths keep their caches in the old dtype), with the same
        ``seed`` when one was given."""
        paths = self._modules.pop("paths")
        try:
            super()._apply(fn, recurse)
            for module in self.model.modules():  # GPyTorch's test-time caches are not moved
                if isinstance(module, ExactGP):
                    module._clear_cache()
        finally:
            self._modules["paths"] = paths
        self.paths = self._draw()
        return self

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """Refuse pending points (``None`` or an empty tensor is accepted and means none).

        Args:
            X_pending: ``None`` (or an empty ``0 x d`` tensor).

        Raises:
            ValueError: if ``X_pending`` holds points.
        """
        if X_pending is not None and X_pending.numel() > 0:
            raise ValueError(
                "ScalarizedThompsonSampling does not support `X_pending` (a sample path does "
                "not change at pending points); got X_pending of shape "
                f"{tuple(X_pending.shape)}. Draw a new acquisition (new seed) per batch point "
                "instead, or use ScalarizedMultiTaskUCB for GP-BUCB batches."
            )
        self.X_pending = None

    def forward(self, X: Tensor) -> Tensor:
        """Evaluate α on ``batch_shape x 1 x d`` candidates (a ``1 x d`` input is one point).

        Args:
            X: ``batch_shape x 1 x d`` candidates (``q = 1``; a float32 / float64 tensor without
                NaN or infinite entries).

        Returns:
            ``batch_shape`` tensor of scalarized path values.

        Raises:
            TypeError: if ``X`` is not a float32 / float64 tensor.
            ValueError: if ``X`` holds NaN or infinite values or is not ``batch_shape x 1 x d``.
        """
        check_test_tensor(X, "X")
        if X.dim() == 2:
            X = X.unsqueeze(0)
        if X.dim() < 2 or X.shape[-2] != 1:
            raise ValueError(
                "ScalarizedThompsonSampling supports q = 1 only: `X` must be batch_shape x 1 x d, "
                f"got shape {tuple(X.shape)}. For batches draw one acquisition per point."
            )
        batch_shape = X.shape[:-2]
        # All candidates as one q-batch: the path gives num_paths x n x P (BoTorch's layout).
        values = self.paths(X.reshape(-1, X.shape[-1]))
        if isinstance(values, list | tuple):  # a ModelListGP's PathList: n of num_paths x P
            values = torch.stack(list(values), dim=-2)
        n = self.scalarization.num_objectives
        if values.shape != (self.num_paths, n, batch_shape.numel()):
            raise ValueError(
                f"The model's sample paths returned shape {tuple(values.shape)} for "
                f"{batch_shape.numel()} points; expected {(self.num_paths, n, batch_shape.numel())}"
                " (num_paths x n x q, BoTorch's multi-output path layout)."
            )
        scalarized = self.scalarization(values.transpose(-1, -2))  # num_paths x P
        return scalarized.mean(dim=0).reshape(batch_shape)


def _batch_shape(model: Model) -> torch.Size:
    """The model's batch shape, or an empty one where the model does not report it."""
    try:
        return torch.Size(model.batch_shape)
    except (AttributeError, NotImplementedError):
        return torch.Size()
