"""A box optimizer that does not re-propose an evaluated point (for noise-free problems).

On a noise-free problem a second evaluation of a point teaches the model nothing, yet a UCB
can keep choosing it (e.g. when the scalarization's maximiser is an evaluated point for every
λ). :class:`DedupOptimizer` is :class:`~botorch_mtucb.acquisition.optimizers.BoxOptimizer`'s
multi-start L-BFGS-B (same seeds, so the same proposal whenever that is new) that returns the
best *new* point: the best restart that is not within ``tol`` of an evaluated point, else the
best raw (Sobol) sample that is not. It removes repeats, not their cause: when a
scalarization keeps pointing at an evaluated point, its reference point is usually the
culprit (see ``ChebyshevScalarization.from_data(..., predicted=...)``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from numbers import Real
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import ModelList
from botorch.optim import optimize_acqf
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.utils.model_data import original_train_inputs

__all__ = ["DedupOptimizer", "evaluated_inputs"]


def evaluated_inputs(model: Any) -> Tensor:
    """The ``N x d`` training inputs of a BoTorch model in the problem's (raw) units.

    :func:`~botorch_mtucb.utils.model_data.original_train_inputs`; a ``ModelList`` gives the
    union of its models' (rows deduplicated).

    Args:
        model: A BoTorch model with ``train_inputs`` (or a ``ModelList`` of such).

    Returns:
        ``N x d`` evaluated inputs.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from botorch.models.transforms import Normalize
        >>> X = 10.0 * torch.rand(4, 2, dtype=torch.float64)
        >>> bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
        >>> normalize = Normalize(2, bounds=bounds)
        >>> model = SingleTaskGP(X, X.sum(-1, keepdim=True), input_transform=normalize)
        >>> torch.allclose(evaluated_inputs(model), X)  # raw units, not the unit cube
        True

    Raises:
        ValueError: If the model has no training inputs.
    """
    if isinstance(model, ModelList):
        return torch.cat([evaluated_inputs(m) for m in model.models]).unique(dim=0)
    try:
        return original_train_inputs(model)
    except TypeError as err:
        raise ValueError(
            f"`model` ({type(model).__name__}) has no `train_inputs`; pass `evaluated` to "
            "DedupOptimizer."
        ) from err


class DedupOptimizer(BoxOptimizer):
    """x_t = the best point of a multi-start L-BFGS-B that is not an evaluated point.

    A candidate x duplicates an evaluated x' when max_j |x_j − x'_j| / (u_j − l_j) ≤ ``tol``
    (box-relative sup-norm). Order of preference: the restarts by acquisition value, then the
    ``raw_samples`` scrambled-Sobol points by acquisition value (not polished). Without
    duplicates the result is :class:`~botorch_mtucb.acquisition.optimizers.BoxOptimizer`'s
    with the same ``num_restarts``, ``raw_samples``, ``seed`` and ``options`` (up to
    L-BFGS-B's tolerance). Each call records where its point came from in ``sources``.
    Inputs given to :meth:`avoid` (the loop's failed inputs) count as evaluated.

    Example:
        >>> from botorch.acquisition import PosteriorMean
        >>> from botorch.models import SingleTaskGP
        >>> train_X = torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.5, 0.2]], dtype=torch.float64)
        >>> model = SingleTaskGP(train_X, train_X.sum(-1, keepdim=True))
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> optimizer = DedupOptimizer(bounds, num_restarts=2, raw_samples=16, seed=0)
        >>> x = optimizer(PosteriorMean(model))  # the corner (1, 1) is evaluated: not it
        >>> bool(optimizer.is_new(x, train_X)), optimizer.sources[-1] in ("restart", "raw")
        (True, True)
    """

    def __init__(
        self,
        bounds: Tensor,
        num_restarts: int = 10,
        raw_samples: int = 512,
        seed: int | None = None,
        tol: float = 1e-6,
        evaluated: Tensor | Callable[[], Tensor] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """
        Args:
            bounds: ``2 x d`` lower/upper bounds.
            num_restarts: Number of L-BFGS-B starts.
            raw_samples: Number of raw (Sobol) samples to pick the starts from.
            seed: Base seed (incremented at each call), as ``BoxOptimizer``'s; ``None`` uses
                torch's global RNG.
            tol: Box-relative sup-norm distance at or below which two points are the same
                (``>= 0``).
            evaluated: ``N x d`` evaluated points, or a callable returning them; ``None``
                (default) reads them from ``acqf.model`` (:func:`evaluated_inputs`).
            options: Extra ``optimize_acqf`` options.
        """
        super().__init__(bounds, num_restarts, raw_samples, seed, options)
        if isinstance(tol, bool) or not (isinstance(tol, Real) and tol >= 0):
            raise ValueError(f"`tol` must be a number >= 0, got {tol!r}.")
        self.tol, self.evaluated = float(tol), evaluated
        self._avoided: Tensor | None = None
        #: Per call: ``"best"`` (the optimum was new), ``"restart"``, ``"raw"`` or
        #: ``"duplicate"`` (nothing new within ``tol``: the best restart, with a warning).
        self.sources: list[str] = []

    def avoid(self, X: Tensor | None) -> None:
        """Inputs the next calls treat as evaluated too (``F x d``; ``None``: none): the
        loop's failed inputs (:class:`~botorch_mtucb.acquisition.protocols.AvoidingOptimizer`).
        """
        d = self.bounds.shape[-1]
        if X is not None and (not torch.is_tensor(X) or X.dim() != 2 or X.shape[-1] != d):
            shape = tuple(X.shape) if torch.is_tensor(X) else type(X).__name__
            raise ValueError(f"`X` must be an F x d = F x {d} tensor or None, got {shape}.")
        self._avoided = None if X is None else X.detach().clone()

    def _evaluated(self, acqf: AcquisitionFunction) -> Tensor:
        """The ``N x d`` evaluated points (``evaluated``, or the model's training inputs),
        with the inputs to :meth:`avoid`."""
        if self.evaluated is None:
            E = evaluated_inputs(acqf.model)
        else:
            E = self.evaluated() if callable(self.evaluated) else self.evaluated
            d = self.bounds.shape[-1]
            if not torch.is_tensor(E) or E.dim() != 2 or E.shape[-1] != d:
                shape = tuple(E.shape) if torch.is_tensor(E) else type(E).__name__
                raise ValueError(f"`evaluated` must be an N x d = N x {d} tensor, got {shape}.")
        if self._avoided is None:
            return E
        return torch.cat([E.reshape(-1, self.bounds.shape[-1]), self._avoided.to(E)])

    def is_new(self, X: Tensor, evaluated: Tensor) -> Tensor:
        """``M`` booleans: row m of ``X`` (``M x d``) is farther than ``tol`` from every row of
        ``evaluated`` (``N x d``) in the box-relative sup-norm."""
        if evaluated.numel() == 0:
            return torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
        side = (self.bounds[1] - self.bounds[0]).to(X)
        gap = ((X[:, None, :] - evaluated.to(X)[None]).abs() / side).amax(dim=-1)
        return (gap > self.tol).all(dim=-1)

    def __call__(self, acqf: AcquisitionFunction) -> Tensor:
        """Maximise ``acqf`` (``q = 1``) over the box, skipping evaluated points.

        Returns:
            The ``1 x d`` best new point.
        """
        options = self._next_options()
        bounds = self.bounds
        cands, vals = optimize_acqf(
            acqf, bounds=bounds, q=1, num_restarts=self.num_restarts,
            raw_samples=self.raw_samples, options=options, return_best_only=False,
        )
        cands, vals = cands.detach().reshape(-1, bounds.shape[-1]), vals.detach().reshape(-1)
        E = self._evaluated(acqf)
        new = self.is_new(cands, E)
        order = vals.argsort(descending=True)
        best = int(order[0])
        if bool(new[best]):
            self.sources.append("best")
            return cands[best : best + 1]
        if bool(new.any()):
            self.sources.append("restart")
            k = int(order[new[order]][0])
            return cands[k : k + 1]
        engine = SobolEngine(bounds.shape[-1], scramble=True, seed=options.get("seed"))
        U = engine.draw(self.raw_samples).to(bounds)
        R = bounds[0] + (bounds[1] - bounds[0]) * U
        with torch.no_grad():
            v = acqf(R.unsqueeze(-2)).reshape(-1)
        new_raw = self.is_new(R, E)
        if not bool(new_raw.any()):
            warnings.warn(
                f"DedupOptimizer: every restart and all {self.raw_samples} raw samples lie "
                f"within tol = {self.tol} of an evaluated point; returning the best restart, "
                "an evaluated point (lower `tol`).",
                RuntimeWarning,
                stacklevel=2,
            )
            self.sources.append("duplicate")
            return cands[best : best + 1]
        v = torch.where(new_raw, v, torch.full_like(v, -torch.inf))
        self.sources.append("raw")
        k = int(v.argmax())
        return R[k : k + 1]
