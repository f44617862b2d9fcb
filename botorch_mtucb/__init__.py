"""botorch-mtucb: multi-task scalarized UCB (paper 000) and heavy-tailed BO (paper 001) for
BoTorch.

The names a BoTorch user reaches for first, each the same object as in its public face:

* models (:mod:`botorch_mtucb.models`): :func:`practical_multitask_gp`,
  :class:`ExactMultiTaskGP` (MT-KB, paper 000 eq. (1)), :class:`NystromMultiTaskGP`
  (MT-BKB, paper 000 Alg. 2), :class:`TruncatedGP` (TGP-UCB, paper 001 Alg. 1),
  :class:`AdaptiveTruncationGP` (ATA-GP-UCB, paper 001 Alg. 2);
* acquisition (:mod:`botorch_mtucb.acquisition`): :class:`ScalarizedMultiTaskUCB` (paper 000
  eq. (2)), :class:`HeavyTailedUCB`, :class:`ChebyshevScalarization`,
  :class:`LinearScalarization`, :func:`sample_scalarization_weights`,
  :func:`predicted_anchors`;
* the loop (:mod:`botorch_mtucb.loop`): :func:`run_bo_loop` (paper 000 Alg. 1),
  :class:`RefitSchedule`; and :func:`sobol_initial_design` (:mod:`botorch_mtucb.utils`).

Each name loads its face on first use, so ``import botorch_mtucb`` is cheap and
``import botorch_mtucb.acquisition`` does not load the models or the loop.

Example:
    >>> import botorch_mtucb
    >>> from botorch_mtucb.models import ExactMultiTaskGP
    >>> botorch_mtucb.ExactMultiTaskGP is ExactMultiTaskGP
    True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Top-level name -> the public face it is taken from.
_FACES = {
    "AdaptiveTruncationGP": "botorch_mtucb.models",
    "ExactMultiTaskGP": "botorch_mtucb.models",
    "NystromMultiTaskGP": "botorch_mtucb.models",
    "TruncatedGP": "botorch_mtucb.models",
    "practical_multitask_gp": "botorch_mtucb.models",
    "ChebyshevScalarization": "botorch_mtucb.acquisition",
    "HeavyTailedUCB": "botorch_mtucb.acquisition",
    "LinearScalarization": "botorch_mtucb.acquisition",
    "ScalarizedMultiTaskUCB": "botorch_mtucb.acquisition",
    "predicted_anchors": "botorch_mtucb.acquisition",
    "sample_scalarization_weights": "botorch_mtucb.acquisition",
    "RefitSchedule": "botorch_mtucb.loop",
    "run_bo_loop": "botorch_mtucb.loop",
    "sobol_initial_design": "botorch_mtucb.utils",
}

if TYPE_CHECKING:
    from botorch_mtucb.acquisition import (
        ChebyshevScalarization,
        HeavyTailedUCB,
        LinearScalarization,
        ScalarizedMultiTaskUCB,
        predicted_anchors,
        sample_scalarization_weights,
    )
    from botorch_mtucb.loop import RefitSchedule, run_bo_loop
    from botorch_mtucb.models import (
        AdaptiveTruncationGP,
        ExactMultiTaskGP,
        NystromMultiTaskGP,
        TruncatedGP,
        practical_multitask_gp,
    )
    from botorch_mtucb.utils import sobol_initial_design

__all__ = [
    "AdaptiveTruncationGP",
    "ChebyshevScalarization",
    "ExactMultiTaskGP",
    "HeavyTailedUCB",
    "LinearScalarization",
    "NystromMultiTaskGP",
    "RefitSchedule",
    "ScalarizedMultiTaskUCB",
    "TruncatedGP",
    "__version__",
    "practical_multitask_gp",
    "predicted_anchors",
    "run_bo_loop",
    "sample_scalarization_weights",
    "sobol_initial_design",
]


def __getattr__(name: str) -> Any:
    """The top-level name ``name``, taken from its public face on first use (PEP 562)."""
    face = _FACES.get(name)
    if face is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(face), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
