"""A TuRBO-style trust region for the per-round maximiser (a drop-in for ``BoxOptimizer``).

:class:`TrustRegionOptimizer` maximises the acquisition with BoTorch's ``optimize_acqf``
(multi-start L-BFGS-B, like :class:`~botorch_mtucb.acquisition.optimizers.BoxOptimizer`) inside
a box around the incumbent instead of the whole search box. The rule is TuRBO's (Eriksson,
Pearce, Gardner, Turner & Poloczek, *Scalable Global Optimization via Local Bayesian
Optimization*, NeurIPS 2019, §2 and App.), in the normalised cube ``[0, 1]^d``:

* **incumbent** x⁺: the evaluated point that is best under the round's scalarization,
  ``argmax_i s_λt(y_i)`` over the model's training data (outcomes in original units);
* **region**: ``x⁺ ± w_i L / 2`` clipped to the box, with ``w_i = 1`` (``shape="isotropic"``)
  or TuRBO's ``w_i = ℓ_i / (∏_j ℓ_j)^{1/d}`` (``shape="lengthscale"``, ℓ the model's ARD
  lengthscales in unit-cube units); the weighted region is widest along the
  long-lengthscale inputs;
* **side length** L: ``L_init = 0.8``, ``L_min = 2⁻⁷``, ``L_max = 1.6``. At each call the
  observations the model holds beyond those of the previous call judge the previous
  proposal: a *success* when their best value under the *previous* round's scalarization
  exceeds the best earlier value by more than ``1e-3 · |best|`` (BoTorch's TuRBO-1 rule),
  else a *failure*. After ``τ_succ = 3`` consecutive successes ``L ← min(2L, L_max)``; after
  ``τ_fail = ⌈max(4, d) / q⌉`` consecutive failures (default: q = 1) ``L ← L / 2``; each
  change resets both counters. When ``L < L_min`` the region restarts: ``L ← L_init``,
  counters zero. Later points of a round (the acquisition has ``X_pending``, the loop's
  q > 1) keep the round's region, and the next round judges the whole batch, as TuRBO's;
  a loop that also gives a round's first point pending points (its failed evaluations)
  marks where rounds start with :meth:`TrustRegionOptimizer.new_round`.

The acquisition must declare its model and scalarization
(:class:`~botorch_mtucb.acquisition.protocols.ScalarizedAcquisition`,
e.g. :class:`~botorch_mtucb.acquisition.multi_task_ucb.ScalarizedMultiTaskUCB`); the model must
be a GPyTorch exact GP with BoTorch transforms (``train_inputs``, ``train_targets`` of shape
``N x n``, an optional ``input_transform`` and ``outcome_transform``), such as
:func:`~botorch_mtucb.models.practical_multitask_gp`'s model.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Literal

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.acquisition.protocols import ScalarizedAcquisition
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.utils.model_data import training_data

__all__ = ["TrustRegionOptimizer", "lengthscale_weights"]

SHAPES = ("isotropic", "lengthscale")


class TrustRegionOptimizer(BoxOptimizer):
    """x_t = argmax of the acquisition over TuRBO's trust region around the incumbent.

    Keeps ``length`` (L), ``success_count`` and ``failure_count`` between calls (one instance
    per run) and records each call's region in ``regions`` (``2 x d``, original units); the
    rule is in the module docstring.

    Example:
        >>> from botorch_mtucb.acquisition import LinearScalarization, ScalarizedMultiTaskUCB
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> train_X = torch.rand(8, 2, dtype=torch.float64)
        >>> train_Y = torch.stack([train_X.sum(-1), -train_X.prod(-1)], dim=-1)
        >>> model = ExactMultiTaskGP(train_X, train_Y)
        >>> acqf = ScalarizedMultiTaskUCB(model, LinearScalarization([0.5, 0.5]))
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> optimizer = TrustRegionOptimizer(bounds, num_restarts=2, raw_samples=16, seed=0)
        >>> x = optimizer(acqf)
        >>> x.shape, optimizer.regions[-1].shape, optimizer.length
        (torch.Size([1, 2]), torch.Size([2, 2]), 0.8)
    """

    def __init__(
        self,
        bounds: Tensor,
        num_restarts: int = 10,
        raw_samples: int = 512,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        shape: Literal["isotropic", "lengthscale"] = "isotropic",
        length_init: float = 0.8,
        length_min: float = 2.0**-7,
        length_max: float = 1.6,
        success_tolerance: int = 3,
        failure_tolerance: int | None = None,
    ) -> None:
        """
        Args:
            bounds: ``2 x d`` lower/upper bounds of the search box (original units).
            num_restarts: Number of L-BFGS-B starts.
            raw_samples: Number of raw (Sobol) samples to pick the starts from.
            seed: Base seed for the raw samples (incremented at each call), as in
                ``BoxOptimizer``; ``None`` uses torch's global RNG.
            options: Extra ``optimize_acqf`` options.
            shape: ``"isotropic"`` (w_i = 1) or ``"lengthscale"`` (TuRBO's w_i = ℓ_i / geometric
                mean of ℓ; needs an ICM model with ARD lengthscales).
            length_init: L_init, side length in unit-cube units (TuRBO: 0.8).
            length_min: L_min; a smaller L restarts the region at L_init (TuRBO: 2⁻⁷).
            length_max: L_max (TuRBO: 1.6).
            success_tolerance: τ_succ, consecutive successes that double L (TuRBO: 3).
            failure_tolerance: τ_fail, consecutive failures that halve L; ``None`` is TuRBO's
                ``max(4, d)`` (q = 1).
        """
        super().__init__(bounds, num_restarts, raw_samples, seed, options)
        if shape not in SHAPES:
            raise ValueError(f"`shape` must be one of {SHAPES}, got {shape!r}.")
        lengths = {"length_init": length_init, "length_min": length_min,
                   "length_max": length_max}
        for name, value in lengths.items():
            if (
                isinstance(value, bool)
                or not isinstance(value, Real)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
        if not length_min <= length_init <= length_max:
            raise ValueError(
                "Expected `length_min` <= `length_init` <= `length_max`, got "
                f"{length_min}, {length_init}, {length_max}."
            )
        d = bounds.shape[-1]
        if failure_tolerance is None:
            failure_tolerance = max(4, d)
        for name, value in (("success_tolerance", success_tolerance),
                            ("failure_tolerance", failure_tolerance)):
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
        self.shape = shape
        self.length_init = float(length_init)
        self.length_min = float(length_min)
        self.length_max = float(length_max)
        self.success_tolerance = int(success_tolerance)
        self.failure_tolerance = int(failure_tolerance)
        self.length = self.length_init
        self.success_count = 0
        self.failure_count = 0
        self.restarts = 0
        self.regions: list[Tensor] = []
        self._previous: tuple[int, Scalarization] | None = None
        self._new_round = False  # set by new_round(): the next call starts a round

    # ------------------------------------------------------------------ state
    def update(self, Y: Tensor, num_previous: int, scalarization: Scalarization) -> None:
        """Judge the rows of ``Y`` beyond the first ``num_previous`` (the new observations)
        under ``scalarization`` and apply TuRBO's rule to L and the counters.

        Args:
            Y: ``N x n`` outcomes (original units), the earlier rows first.
            num_previous: Rows of ``Y`` the previous call saw; nothing happens unless
                ``0 < num_previous < N``.
            scalarization: s_λ of the round that proposed the new rows.
        """
        if not 0 < num_previous < Y.shape[-2]:
            return
        values = scalarization(Y)
        best_old = values[:num_previous].max()
        best_new = values[num_previous:].max()
        if bool(best_new > best_old + 1e-3 * best_old.abs()):  # one host read per round
            self.success_count += 1
            self.failure_count = 0
        else:
            self.failure_count += 1
            self.success_count = 0
        if self.success_count == self.success_tolerance:
            self.length = min(2.0 * self.length, self.length_max)
            self.success_count = 0
        elif self.failure_count == self.failure_tolerance:
            self.length /= 2.0
            self.failure_count = 0
        if self.length < self.length_min:
            self.length = self.length_init
            self.success_count = self.failure_count = 0
            self.restarts += 1

    def region(self, center: Tensor, weights: Tensor | None = None) -> Tensor:
        """The ``2 x d`` box ``center ± w L / 2`` (unit-cube widths) clipped to ``bounds``.

        Args:
            center: ``d`` incumbent, original units.
            weights: ``d`` positive widths w_i (``None``: ones).

        Returns:
            ``2 x d`` lower and upper bounds.
        """
        lower, upper = self.bounds.to(center)
        half = 0.5 * self.length * (upper - lower)
        if weights is not None:
            half = half * weights.to(center)
        return torch.stack(
            [torch.maximum(center - half, lower), torch.minimum(center + half, upper)]
        )

    # ------------------------------------------------------------------ call
    def new_round(self) -> None:
        """Mark the next call as a round's first point
        (:class:`~botorch_mtucb.acquisition.protocols.RoundAwareOptimizer`; the loop calls it):
        it then updates L and re-centres the region even if its acquisition has pending
        points (the loop's failed evaluations). Without it, a call whose acquisition has
        ``X_pending`` is a later point of the current round."""
        self._new_round = True

    def __call__(self, acqf: AcquisitionFunction) -> Tensor:
        """Maximise ``acqf`` over the round's trust region (and update L first).

        Args:
            acqf: A :class:`~botorch_mtucb.acquisition.protocols.ScalarizedAcquisition`
                (``q = 1``).

        Returns:
            The ``1 x d`` maximiser found in the trust region.
        """
        if not isinstance(acqf, ScalarizedAcquisition) or acqf.scalarization is None:
            raise TypeError(
                "TrustRegionOptimizer needs an acquisition with `model` and `scalarization` "
                f"(e.g. ScalarizedMultiTaskUCB, or HypervolumeImprovementUCB given the round's "
                f"`scalarization`), got {type(acqf).__name__} without one."
            )
        pending = getattr(acqf, "X_pending", None)
        new_round, self._new_round = self._new_round, False
        if pending is not None and self.regions and not new_round:
            # a later point of the same round (GP-BUCB pending points, the loop's q > 1):
            # TuRBO's batch keeps the round's region, and the next call judges the batch
            self.regions.append(self.regions[-1])
            return self._maximise(acqf, self.regions[-1])
        X, Y = training_data(acqf.model)
        if pending is not None and pending.shape[0] > 0:  # hallucinated rows come last
            X, Y = X[: -pending.shape[0]], Y[: -pending.shape[0]]
        if X.shape[-1] != self.bounds.shape[-1]:
            raise ValueError(
                f"The model's inputs have d = {X.shape[-1]} but `bounds` has "
                f"d = {self.bounds.shape[-1]}."
            )
        if self._previous is not None:
            self.update(Y, *self._previous)
        scal = acqf.scalarization
        center = X[torch.argmax(scal(Y))]
        weights = None
        if self.shape == "lengthscale":
            weights = lengthscale_weights(acqf.model, self.bounds.to(X))
        region = self.region(center, weights)
        self.regions.append(region)
        self._previous = (Y.shape[-2], scal)
        return self._maximise(acqf, region)


def lengthscale_weights(model: Model, bounds: Tensor) -> Tensor:
    """TuRBO's widths ``w_i = ℓ_i / (∏_j ℓ_j)^{1/d}`` from the model's ARD lengthscales.

    The lengthscales are read from the ICM kernel's scalar kernel
    (``covar_module.icm_components()``); they are in unit-cube units when the model
    normalises its inputs (an ``input_transform``), else divided by ``bounds``' ranges.

    Args:
        model: An ICM model whose scalar kernel has ``d`` ARD lengthscales.
        bounds: ``2 x d`` search box.

    Returns:
        ``d`` positive widths with geometric mean 1.

    Example:
        >>> from gpytorch.kernels import RBFKernel
        >>> from botorch_mtucb.kernels import ICMKernel
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X = torch.rand(6, 2, dtype=torch.float64)
        >>> kernel = ICMKernel(RBFKernel(ard_num_dims=2), num_tasks=2)
        >>> kernel.icm_components()[0].lengthscale = torch.tensor([[0.1, 0.4]])
        >>> model = ExactMultiTaskGP(X, torch.cat([X[:, :1], -X[:, 1:]], -1), kernel)
        >>> lengthscale_weights(model, torch.tensor([[0.0, 0.0], [1.0, 1.0]]).to(X))
        tensor([0.5000, 2.0000], dtype=torch.float64)
    """
    covar = getattr(model, "covar_module", None)
    parts = covar.icm_components() if hasattr(covar, "icm_components") else None
    ls = None if parts is None else getattr(parts[0], "lengthscale", None)
    d = bounds.shape[-1]
    if ls is None or ls.numel() != d:
        raise TypeError(
            "shape='lengthscale' needs an ICM model whose scalar kernel has d ARD "
            f"lengthscales, got {type(model).__name__}."
        )
    ls = ls.detach().reshape(d).to(bounds)
    if getattr(model, "input_transform", None) is None:
        ls = ls / (bounds[1] - bounds[0])
    return ls / ls.log().mean().exp()
