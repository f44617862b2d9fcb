"""Random scalarization weights λ ~ P_λ (paper 000, §5 and App. E) and a per-round sampler.

With u ~ U[0, 1]ⁿ, the Chebyshev law of paper 000 §5 (after Paria et al., 2019) is
λ = α / ‖α‖₁ with α_i = ‖u‖₁ / u_i, and the linear law of App. E is λ = u / ‖u‖₁; both lie on
the simplex. The hypervolume law (Zhang & Golovin, 2020) is uniform on the positive part of
the unit sphere, λ = |g| / ‖g‖₂ with g ~ N(0, Iₙ). :class:`ScalarizationSampler` turns one
draw into a scalarization s_{λ_t}, the step "sample λ_t ~ P_λ" of MT-KB (paper 000,
Algorithm 1).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from math import inf
from numbers import Integral
from typing import Literal

import torch
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.scalarization.base import Scalarization, _as_vector
from botorch_mtucb.acquisition.scalarization.chebyshev import (
    ChebyshevScalarization,
    predicted_anchors,
)
from botorch_mtucb.acquisition.scalarization.hypervolume import HypervolumeScalarization
from botorch_mtucb.acquisition.scalarization.linear import LinearScalarization
from botorch_mtucb.utils.validation import as_flag_vector, as_real

__all__ = ["ScalarizationSampler", "sample_scalarization_weights"]

_KINDS = ("chebyshev", "linear", "hypervolume")


def sample_scalarization_weights(
    n: int,
    num_samples: int,
    kind: Literal["chebyshev", "linear", "hypervolume"] = "chebyshev",
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> Tensor:
    """Draw weight vectors λ ~ P_λ as in paper 000 §5 (Chebyshev) and Appendix E (linear).

    With u ~ U[0, 1]ⁿ (drawn as 1 − U[0, 1), so no u_i is exactly 0):

    * ``"chebyshev"``: α_i = ‖u‖₁ / u_i and λ = α / ‖α‖₁ (Paria et al., 2019);
    * ``"linear"``: λ = u / ‖u‖₁;
    * ``"hypervolume"``: λ = |g| / ‖g‖₂, g ~ N(0, Iₙ) (|g_i| floored at the dtype's smallest
      normal number, so no λ_i is 0): uniform on the positive part of the unit sphere, the
      law of :class:`~botorch_mtucb.acquisition.scalarization.hypervolume.HypervolumeScalarization`
      (Zhang & Golovin, 2020). These rows lie on the sphere, not on the simplex.

    Args:
        n: Number of objectives (≥ 1).
        num_samples: Number of weight vectors (≥ 1).
        kind: ``"chebyshev"``, ``"linear"`` or ``"hypervolume"``.
        generator: Optional ``torch.Generator`` for reproducible draws (on ``device``).
        dtype: Floating dtype of the result.
        device: Device of the result.

    Returns:
        ``num_samples x n`` tensor whose rows lie on the simplex (``"hypervolume"``: on the
        positive unit sphere).

    Example:
        >>> W = sample_scalarization_weights(3, 5, generator=torch.Generator().manual_seed(0))
        >>> W.shape
        torch.Size([5, 3])
        >>> torch.allclose(W.sum(dim=-1), torch.ones(5, dtype=torch.float64))
        True
        >>> L = sample_scalarization_weights(3, 5, "hypervolume")
        >>> torch.allclose(L.norm(dim=-1), torch.ones(5, dtype=torch.float64))
        True
    """
    if not isinstance(n, Integral) or isinstance(n, bool) or n < 1:
        raise ValueError(f"`n` must be a positive integer, got {n!r}.")
    if not isinstance(num_samples, Integral) or isinstance(num_samples, bool) or num_samples < 1:
        raise ValueError(f"`num_samples` must be a positive integer, got {num_samples!r}.")
    n, num_samples = int(n), int(num_samples)
    if kind not in _KINDS:
        raise ValueError(f"`kind` must be 'chebyshev', 'linear' or 'hypervolume', got {kind!r}.")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"`dtype` must be a floating torch dtype (torch.float64), got {dtype!r}.")
    if kind == "hypervolume":
        g = torch.randn(num_samples, n, generator=generator, dtype=dtype, device=device)
        g = g.abs().clamp_min(torch.finfo(dtype).tiny)
        return g / torch.linalg.vector_norm(g, dim=-1, keepdim=True)
    u = 1.0 - torch.rand(num_samples, n, generator=generator, dtype=dtype, device=device)
    if kind == "chebyshev":
        u = u.sum(dim=-1, keepdim=True) / u
    return u / u.sum(dim=-1, keepdim=True)


def _check_augmentation(value: object) -> float:
    """The Chebyshev augmentation ρ (a real number or a one-element tensor) as a finite
    float ≥ 0, else ``ValueError``."""
    rho = as_real(value, "augmentation", "a finite number >= 0")
    if not 0.0 <= rho < inf:
        raise ValueError(f"`augmentation` must be a finite number >= 0, got {value!r}.")
    return rho


class ScalarizationSampler:
    """Draws a fresh random scalarization s_{λ_t}, λ_t ~ P_λ, each time it is called.

    This is the per-round step "sample weight vector λ_t ~ P_λ" of MT-KB (paper 000,
    Algorithm 1): λ_t from :func:`sample_scalarization_weights`, then s_{λ_t} is a
    :class:`~botorch_mtucb.acquisition.LinearScalarization`, or a
    :class:`~botorch_mtucb.acquisition.ChebyshevScalarization` or
    :class:`~botorch_mtucb.acquisition.scalarization.hypervolume.HypervolumeScalarization`
    with a fixed reference point, or the scale-free one of their ``from_data`` built from the
    round's observations (``ref_point="data"``). With ``kind="hypervolume"`` and a fixed
    reference point z, each draw is exactly Zhang & Golovin's
    s_λ(y) = min_i max(0, (y_i − z_i)/λ_i)ⁿ, λ uniform on the positive unit sphere.
    :func:`botorch_mtucb.loop.run_bo_loop` calls it once per round. With ``ref_point="data"``
    the front defaults to the loop's: ``"predicted"`` (the observed and the model-predicted
    non-dominated points), so a sampler built by hand, ``minimize`` or not, proposes what the
    loop's default sampler does.

    Example:
        >>> sampler = ScalarizationSampler(2, kind="chebyshev", ref_point=[0.0, 0.0])
        >>> s = sampler(torch.Generator().manual_seed(0))
        >>> s.num_objectives
        2
        >>> Y = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
        >>> observed = ScalarizationSampler(2, ref_point="data", front="observed")
        >>> observed(Y=Y).ref_point  # from_data, ρ = 0.05
        tensor([-0.1000, -0.1000], dtype=torch.float64)
        >>> ScalarizationSampler(2, ref_point="data").front   # the loop's default
        'predicted'
        >>> hv = ScalarizationSampler(2, kind="hypervolume", ref_point=[0.0, 0.0])
        >>> hv(torch.Generator().manual_seed(0))(torch.tensor([1.0, 1.0])) >= 1.0  # min_i 1/λ_i ≥ 1
        tensor(True)
    """

    def __init__(
        self,
        num_objectives: int,
        kind: Literal["chebyshev", "linear", "hypervolume"] = "chebyshev",
        ref_point: Tensor | Sequence[float] | Literal["data"] | None = None,
        minimize: Sequence[bool] | Tensor | None = None,
        augmentation: float | None = None,
        front: Literal["observed", "predicted"] | None = None,
    ) -> None:
        """
        Args:
            num_objectives: Number of objectives ``n``.
            kind: ``"chebyshev"`` (needs ``ref_point``), ``"linear"`` or ``"hypervolume"``
                (needs ``ref_point``; λ uniform on the positive unit sphere).
            ref_point: ``n`` reference point z (original units) of the Chebyshev or
                hypervolume scalarization, or ``"data"``: the scale-free s_λ of their
                ``from_data`` built each round from the observations passed to
                :meth:`__call__` (what :func:`~botorch_mtucb.loop.run_bo_loop` does).
            minimize: Optional ``n`` booleans marking objectives to minimise.
            augmentation: Chebyshev ρ ≥ 0 (default: 0.05 with ``"data"``, else 0, paper 000);
                the hypervolume scalarization has none (``None`` or 0 only). The linear one
                takes neither ``ref_point`` nor ``augmentation``: given, they are ignored
                with a ``UserWarning``.
            front: With ``ref_point="data"``, the estimated Pareto front that places the
                reference point and sets the ranges: ``"predicted"`` (the default with
                ``ref_point="data"``, as in :func:`~botorch_mtucb.loop.run_bo_loop`) — the
                observed non-dominated points together with the model's payoff table (its
                per-objective optima, :meth:`anchors`, computed once per round by the loop,
                which then needs the search box), ranges of that front
                (``from_data(..., predicted=..., span="front")``); ``"observed"`` — the
                observed non-dominated points, ranges of all observations (``from_data``'s
                defaults; the default otherwise, where it plays no part). The predicted
                front keeps the reference point below the front once one evaluated point
                dominates all others (then the observed nadir is that point and s_λ's
                maximiser is that point for every λ).
        """
        if kind not in _KINDS:
            raise ValueError(
                f"`kind` must be 'chebyshev', 'linear' or 'hypervolume', got {kind!r}."
            )
        if kind == "linear" and (
            (ref_point is not None and not isinstance(ref_point, str))
            or augmentation not in (None, 0, 0.0)
        ):
            warnings.warn(
                "The linear scalarization takes no `ref_point` or `augmentation`; they are "
                f"ignored (got ref_point={ref_point!r}, augmentation={augmentation!r}).",
                UserWarning,
                stacklevel=2,
            )
            ref_point, augmentation = None, None
        if kind != "linear" and ref_point is None:
            raise ValueError(
                f"`ref_point` is required for the {kind} scalarization (a point, or 'data')."
            )
        if kind == "hypervolume" and augmentation not in (None, 0, 0.0):
            raise ValueError(
                "`augmentation` is a Chebyshev option; the hypervolume scalarization has none, "
                f"got {augmentation!r}."
            )
        if (
            isinstance(num_objectives, bool)
            or not isinstance(num_objectives, Integral)
            or num_objectives < 1
        ):
            raise ValueError(
                f"`num_objectives` must be a positive integer, got {num_objectives!r}."
            )
        num_objectives = int(num_objectives)
        self.num_objectives = num_objectives
        self.kind = kind
        self.uses_data = isinstance(ref_point, str)
        if self.uses_data and (ref_point != "data" or kind == "linear"):
            raise ValueError(
                "`ref_point` as a string must be 'data' (Chebyshev or hypervolume), got "
                f"{ref_point!r}."
            )
        self.ref_point = None
        if ref_point is not None and not self.uses_data:
            self.ref_point = _as_vector(ref_point, "ref_point")
            if self.ref_point.numel() != num_objectives:
                raise ValueError(
                    f"`ref_point` must have {num_objectives} entries, got "
                    f"{self.ref_point.numel()}."
                )
        self.augmentation = (
            (0.05 if self.uses_data and kind == "chebyshev" else 0.0)
            if augmentation is None
            else _check_augmentation(augmentation)
        )
        self.minimize = (
            None if minimize is None else as_flag_vector(minimize, "minimize", num_objectives)
        )
        if front is None:
            front = "predicted" if self.uses_data else "observed"
        if front not in ("observed", "predicted"):
            raise ValueError(f"`front` must be 'observed' or 'predicted', got {front!r}.")
        if front == "predicted" and not self.uses_data:
            raise ValueError(
                "`front='predicted'` needs `ref_point='data'` (Chebyshev or hypervolume)."
            )
        self.front = front
        #: Whether :meth:`__call__` needs ``predicted`` (the round's :meth:`anchors`).
        self.uses_model = front == "predicted"

    def anchors(
        self, model: Model, bounds: Tensor, Y: Tensor, seed: int | None = None
    ) -> Tensor:
        """The model's payoff table for ``front="predicted"``: ``n x n``, row i = μ(x_i*).

        :func:`~botorch_mtucb.acquisition.scalarization.chebyshev.predicted_anchors` with this
        sampler's ``minimize``.

        Args:
            model: A fitted BoTorch model with ``n`` outputs (original units).
            bounds: ``2 x d`` search box.
            Y: ``N x n`` observations (for the ranges).
            seed: Seed of the raw samples of the maximisation.

        Returns:
            ``n x n`` payoff table, row i = μ(x_i*).
        """
        return predicted_anchors(model, bounds, Y, minimize=self.minimize, seed=seed)

    def scalarize(
        self, weights: Tensor, Y: Tensor | None = None, predicted: Tensor | None = None
    ) -> Scalarization:
        """s_λ for given weights λ with this sampler's settings.

        Args:
            weights: ``n`` weights λ on the simplex (``kind="hypervolume"``: on the positive
                unit sphere).
            Y: ``N x n`` observations (needed with ``ref_point="data"``).
            predicted: ``n x n`` payoff table of the round (:meth:`anchors`; needed with
                ``front="predicted"``).

        Returns:
            The scalarization s_λ.
        """
        if predicted is not None and not self.uses_model:
            raise ValueError("`predicted` is only used with `front='predicted'`.")
        if self.uses_data:
            if Y is None:
                raise ValueError("A ScalarizationSampler with ref_point='data' needs `Y`.")
            if self.uses_model and predicted is None:
                raise ValueError(
                    "A ScalarizationSampler with front='predicted' needs `predicted` (the "
                    "round's `anchors(model, bounds, Y)`)."
                )
            extra = {"predicted": predicted, "span": "front"} if self.uses_model else {}
            if self.kind == "hypervolume":
                return HypervolumeScalarization.from_data(weights, Y, self.minimize, **extra)
            return ChebyshevScalarization.from_data(
                weights, Y, self.minimize, augmentation=self.augmentation, **extra
            )
        if self.kind == "hypervolume":
            return HypervolumeScalarization(weights, self.ref_point, self.minimize)
        if self.kind == "chebyshev":
            return ChebyshevScalarization(weights, self.ref_point, self.minimize,
                                          self.augmentation)
        return LinearScalarization(weights, self.minimize)

    def __call__(
        self,
        generator: torch.Generator | None = None,
        Y: Tensor | None = None,
        predicted: Tensor | None = None,
    ) -> Scalarization:
        """Return s_λ for one fresh λ ~ P_λ.

        Args:
            generator: Optional ``torch.Generator`` of the λ draw.
            Y: ``N x n`` observations (needed with ``ref_point="data"``).
            predicted: ``n x n`` payoff table of the round (:meth:`anchors`; needed with
                ``front="predicted"``).

        Returns:
            The scalarization s_{λ_t}.
        """
        w = sample_scalarization_weights(self.num_objectives, 1, self.kind, generator)[0]
        return self.scalarize(w, Y, predicted)
