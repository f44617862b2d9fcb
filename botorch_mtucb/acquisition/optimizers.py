"""Per-round maximisers x_t = argmax_x u(x) of an acquisition (paper 000, Algorithm 1, step 3).

An optimizer is a callable ``optimizer(acqf) -> 1 x d`` tensor, the point to evaluate next:

* :class:`BoxOptimizer` — ``optimize_acqf`` (multi-start L-BFGS-B) on a box;
* :class:`FiniteArmOptimizer` — the exact argmax over a finite arm set.

Both return one point (``q = 1``); batches are built point by point with pending points
(GP-BUCB, :mod:`botorch_mtucb.acquisition.pending`). :func:`botorch_mtucb.loop.run_bo_loop`
calls one per round.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction, OneShotAcquisitionFunction
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from torch import Tensor

from botorch_mtucb.utils.validation import check_finite

__all__ = ["BoxOptimizer", "FiniteArmOptimizer"]


class BoxOptimizer:
    """x_t = argmax over a box with BoTorch's ``optimize_acqf`` (multi-start L-BFGS-B).

    The starts are the best of ``raw_samples`` scrambled-Sobol points; with a ``seed`` the
    n-th call uses ``seed + n``, so a seeded run is reproducible.

    Example:
        >>> from botorch.acquisition import PosteriorMean
        >>> from botorch.models import SingleTaskGP
        >>> train_X = torch.rand(6, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(train_X, train_X.sum(-1, keepdim=True))
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> optimizer = BoxOptimizer(bounds, num_restarts=2, raw_samples=16, seed=0)
        >>> optimizer(PosteriorMean(model)).shape
        torch.Size([1, 2])
    """

    def __init__(
        self,
        bounds: Tensor,
        num_restarts: int = 10,
        raw_samples: int = 512,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """
        Args:
            bounds: ``2 x d`` lower/upper bounds.
            num_restarts: Number of L-BFGS-B starts (a positive Python or NumPy integer).
            raw_samples: Number of raw (Sobol) samples to pick the starts from
                (``>= num_restarts``).
            seed: Base seed for the raw samples (incremented at each call), for reproducible
                runs; ``None`` uses torch's global RNG.
            options: Extra ``optimize_acqf`` options.
        """
        check_finite(bounds, "bounds")
        if bounds.dim() != 2 or bounds.shape[0] != 2 or (bounds[0] >= bounds[1]).any():
            raise ValueError(
                f"`bounds` must be 2 x d with lower < upper, got shape {tuple(bounds.shape)}."
            )
        counts = (num_restarts, raw_samples)
        if any(isinstance(c, bool) or not isinstance(c, Integral) for c in counts) or not (
            1 <= num_restarts <= raw_samples
        ):
            raise ValueError(
                "`num_restarts` must be >= 1 and `raw_samples` >= `num_restarts` (integers), "
                f"got {num_restarts!r} and {raw_samples!r}."
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, Integral)):
            raise ValueError(f"`seed` must be an integer or None, got {seed!r}.")
        self.bounds = bounds.clone()
        self.num_restarts = int(num_restarts)
        self.raw_samples = int(raw_samples)
        self.seed = None if seed is None else int(seed)
        self.options = dict(options or {})
        self._calls = 0

    def __call__(self, acqf: AcquisitionFunction) -> Tensor:
        """Maximise ``acqf`` (a ``q = 1`` acquisition) over the box.

        Returns:
            The ``1 x d`` maximiser found.
        """
        return self._maximise(acqf, self.bounds)

    def _next_options(self) -> dict[str, Any]:
        """The ``optimize_acqf`` options of the next call (seed ``seed + calls so far``)."""
        options = dict(self.options)
        if self.seed is not None:
            options["seed"] = self.seed + self._calls
        self._calls += 1
        return options

    def _maximise(self, acqf: AcquisitionFunction, bounds: Tensor) -> Tensor:
        """``optimize_acqf`` (q = 1) over ``bounds`` (``2 x d``, within the box); ``1 x d``."""
        cand, _ = optimize_acqf(
            acqf,
            bounds=bounds,
            q=1,
            num_restarts=self.num_restarts,
            raw_samples=self.raw_samples,
            options=self._next_options(),
        )
        return cand.detach()


class FiniteArmOptimizer:
    """x_t = exact argmax over a finite arm set (``optimize_acqf_discrete``, first on ties).

    Example:
        >>> from botorch.acquisition import PosteriorMean
        >>> from botorch.models import SingleTaskGP
        >>> arms = torch.linspace(0, 1, 11, dtype=torch.float64).unsqueeze(-1)
        >>> model = SingleTaskGP(arms[::2], -(arms[::2] - 0.3) ** 2)
        >>> FiniteArmOptimizer(arms)(PosteriorMean(model)).shape
        torch.Size([1, 1])
    """

    def __init__(self, choices: Tensor, max_batch_size: int = 2048) -> None:
        """
        Args:
            choices: ``A x d`` arms.
            max_batch_size: Arms evaluated per acquisition call.
        """
        check_finite(choices, "choices")
        if choices.dim() != 2 or choices.shape[0] == 0:
            raise ValueError(f"`choices` must be a non-empty A x d tensor, got {choices.shape}.")
        if (
            isinstance(max_batch_size, bool)
            or not isinstance(max_batch_size, Integral)
            or max_batch_size < 1
        ):
            raise ValueError(
                f"`max_batch_size` must be a positive integer, got {max_batch_size!r}."
            )
        self.choices = choices.clone()
        self.max_batch_size = int(max_batch_size)
        self._batched = self.choices.unsqueeze(-2)  # A x 1 x d, what the acquisition sees
        self._chunks = self._batched.split(self.max_batch_size)

    def __call__(self, acqf: AcquisitionFunction) -> Tensor:
        """Return the ``1 x d`` best arm (a copy, not a view of the arm set).

        The ``q = 1`` case of BoTorch's ``optimize_acqf_discrete`` (same batches, same
        ``torch.argmax``, so the same arm), without its per-call set-up: the loop calls this
        every round of a finite-arm run. One-shot acquisitions go to BoTorch (which refuses).
        """
        if isinstance(acqf, OneShotAcquisitionFunction):
            cand, _ = optimize_acqf_discrete(
                acqf, q=1, choices=self.choices, max_batch_size=self.max_batch_size
            )
            return cand.detach()
        with torch.no_grad():
            if len(self._chunks) == 1:
                values = acqf(self._batched)
            else:
                values = torch.cat([acqf(chunk) for chunk in self._chunks])
        return self._batched[torch.argmax(values)].clone()  # not a view of the arm set
