"""Space-filling initial designs: how many points, and scrambled Sobol points in a box.

The loop (:func:`botorch_mtucb.loop.run_bo_loop` without ``initial_X``) and the Ax helpers
(:func:`botorch_mtucb.integrations.ax.mtucb_generation_strategy`) start from
:func:`sobol_initial_design` with :func:`initial_design_size` points, so a BoTorch loop and an
Ax experiment on the same problem start alike.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import torch
from botorch.exceptions.warnings import InputDataWarning
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.utils.validation import check_finite

__all__ = [
    "MIN_INITIAL_DESIGN",
    "check_bounds",
    "initial_design_size",
    "sobol_initial_design",
    "warn_outside_bounds",
]

#: Smallest initial design (Ax's floor).
MIN_INITIAL_DESIGN = 5


def initial_design_size(d: int, budget: int | None = None) -> int:
    """Number of space-filling points ahead of the first model-based round: max(5, 2·d).

    This is Ax's rule (``calculate_num_initialization_trials``: twice the number of tunable
    parameters, at least 5, at most a fifth of the trial budget when one is known, the floor
    winning), so the package's loop and its Ax generation strategies start identically. Why
    these numbers: the practical model
    (:func:`~botorch_mtucb.models.practical_multitask_gp`) fits d ARD lengthscales, the task
    matrix B and one constant mean and the noise per output; with fewer than about 2 points
    per input dimension the marginal likelihood cannot tell a short lengthscale from noise,
    and the first rounds are spent fitting rather than optimising. More than 2·d spends
    budget on random points that the model-based rounds place better.

    Args:
        d: Input dimension (a positive integer: ``int`` or a NumPy integer).
        budget: Optional total number of evaluations (initial design included); caps the
            design at ``budget // 5`` (never below 5), as Ax does.

    Returns:
        The design size.

    Example:
        >>> initial_design_size(2), initial_design_size(6), initial_design_size(6, budget=40)
        (5, 12, 8)
    """
    d = _as_count(d, 1, "`d` (input dimension) must be a positive integer")
    size = 2 * d
    if budget is not None:
        budget = _as_count(budget, 0, "`budget` must be a non-negative integer or None")
        size = min(size, budget // 5)
    return max(size, MIN_INITIAL_DESIGN)


def _as_count(value: object, minimum: int, message: str) -> int:
    """``value`` as a Python int (any integer type: ``int``, ``numpy.int64``, a 0-d integer
    tensor; not a bool) ≥ ``minimum``, else ``ValueError(message)``."""
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if isinstance(value, (bool, np.bool_)) or number is None or number < minimum:
        raise ValueError(f"{message}, got {value!r}.")
    return number


def check_bounds(bounds: Tensor, d: int | None = None, name: str = "bounds") -> Tensor:
    """Validate a box: a finite ``2 x d`` tensor with lower < upper in every dimension.

    Args:
        bounds: ``2 x d`` tensor, lower row then upper row.
        d: Expected dimension (any when ``None``).
        name: Argument name used in the error messages.

    Returns:
        ``bounds`` itself (not copied).

    Raises:
        ValueError: If ``bounds`` is not a finite floating ``2 x d`` tensor with lower < upper
            and a finite width upper − lower.

    Example:
        >>> check_bounds(torch.tensor([[0.0, -1.0], [1.0, 1.0]]), d=2).shape
        torch.Size([2, 2])
    """
    want = "2 x d" if d is None else f"2 x d = (2, {d})"
    if not isinstance(bounds, Tensor):
        raise ValueError(f"`{name}` must be a {want} tensor, got {type(bounds).__name__}.")
    if bounds.dim() != 2 or bounds.shape[0] != 2 or (d is not None and bounds.shape[1] != d):
        raise ValueError(
            f"`{name}` must be a {want} tensor (lower row, upper row), got shape "
            f"{tuple(bounds.shape)}."
        )
    if not bounds.is_floating_point():
        raise ValueError(f"`{name}` must be a floating tensor, got dtype {bounds.dtype}.")
    check_finite(bounds, name)
    if not bool((bounds[0] < bounds[1]).all()):
        raise ValueError(f"`{name}` must have lower < upper in every dimension, got {bounds}.")
    wide = ~torch.isfinite(bounds[1] - bounds[0])
    if bool(wide.any()):
        raise ValueError(
            f"`{name}` must have a finite width upper − lower in every dimension (the models "
            f"map the box to the unit cube); the width overflows {bounds.dtype} in dimensions "
            f"{wide.nonzero().flatten().tolist()}. Rescale the inputs."
        )
    return bounds


def warn_outside_bounds(X: Tensor, bounds: Tensor, name: str = "train_X") -> None:
    """Warn (``InputDataWarning``) if rows of ``X`` (``N x d``) lie outside the ``2 x d``
    ``bounds`` beyond a rounding tolerance of 1e-6 of the box's width: a transform that maps
    ``bounds`` to the unit cube maps them outside it.

    Example:
        >>> warn_outside_bounds(torch.rand(5, 2), torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
    """
    tol = 1e-6 * (bounds[1] - bounds[0])
    outside = ((X < bounds[0] - tol) | (X > bounds[1] + tol)).any(-1)
    if bool(outside.any()):
        warnings.warn(
            f"{int(outside.sum())} of the {len(X)} rows of `{name}` lie outside `bounds`, "
            "which the model maps to the unit cube. Pass bounds that contain the training "
            "inputs.",
            InputDataWarning,
            stacklevel=3,
        )


def sobol_initial_design(
    bounds: Tensor, n: int | None = None, seed: int | None = None
) -> Tensor:
    """``n`` scrambled Sobol points in the box ``bounds`` (dtype and device of ``bounds``).

    Args:
        bounds: ``2 x d`` box (lower < upper).
        n: Number of points (``int`` or a NumPy integer); default
            :func:`initial_design_size` (d).
        seed: Seed of the Owen scrambling (reproducible designs; ``int`` or a NumPy
            integer); ``None`` draws it from torch's global generator.

    Returns:
        ``n x d`` points lower + (upper − lower) · u, u the first ``n`` scrambled Sobol points
        of [0, 1)^d.

    Example:
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 2.0]], dtype=torch.float64)
        >>> X = sobol_initial_design(bounds, seed=0)   # max(5, 2·2) = 5 points
        >>> X.shape, bool((X >= bounds[0]).all() and (X <= bounds[1]).all())
        (torch.Size([5, 2]), True)
    """
    check_bounds(bounds)
    d = bounds.shape[-1]
    if n is None:
        n = initial_design_size(d)
    n = _as_count(n, 0, "`n` (number of points) must be a non-negative integer")
    if seed is not None:
        seed = _as_count(seed, -(2**63), "`seed` must be an integer or None")
    if n == 0:
        return bounds[:0].clone()
    if seed is None:
        seed = int(torch.randint(2**31 - 1, (1,)).item())
    U = SobolEngine(d, scramble=True, seed=seed).draw(n, dtype=torch.float64)
    U = U.to(dtype=bounds.dtype, device=bounds.device)
    return bounds[0] + (bounds[1] - bounds[0]) * U
