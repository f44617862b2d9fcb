"""The acquisition of the robust default model: UCB, or LogEI with a robust incumbent.

The default kind (:data:`DEFAULT_ROBUST_ACQUISITION`) is ``"ucb"``:
:class:`~botorch_mtucb.acquisition.HeavyTailedUCB` ``μ + β σ`` with the model's width
``beta()`` (``UCB_WIDTH`` for a model without one).

For expected improvement (``kind="logei"``): with corrupted readings its usual incumbent, the
best *observed* reward, is itself corrupted, and a single failure reading far above every
real value makes every improvement look hopeless. :func:`robust_acquisition` uses the best
posterior mean at the evaluated points that have a trusted reading instead,

    best_f = max { μ(x_i) : reading i not flagged },

(:func:`~botorch_mtucb.utils.incumbent.robust_incumbent`; the flags are the model's
``suspicious`` attribute, e.g. of :func:`~botorch_mtucb.models.robust_gp`; a model without
one trusts every reading), and BoTorch's ``LogExpectedImprovement`` with it.

This module imports no model class: the flags and the training inputs are read off the
model.
"""

from __future__ import annotations

from typing import Any

from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.models.model import Model

from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.utils.incumbent import robust_incumbent

__all__ = [
    "DEFAULT_ROBUST_ACQUISITION",
    "ROBUST_ACQUISITION_KINDS",
    "UCB_WIDTH",
    "robust_acquisition",
]

#: The kind :func:`robust_acquisition` builds when none is given.
DEFAULT_ROBUST_ACQUISITION = "ucb"

#: The kinds :func:`robust_acquisition` builds.
ROBUST_ACQUISITION_KINDS = ("logei", "ucb")

#: UCB width ``β`` of ``μ + β σ`` for a model without a ``beta()`` schedule (the practical
#: width of the data-driven heavy-tailed models).
UCB_WIDTH = 1.0

_OPTIONS = {"logei": ("X_baseline",), "ucb": ("beta",)}


def robust_acquisition(model: Model, **options: Any) -> AcquisitionFunction:
    """Acquisition for ``optimize_acqf`` on a (robust) single-output model.

    * ``kind="logei"``: ``LogExpectedImprovement(model, best_f)`` with the robust incumbent
      ``best_f = max { μ(x_i) : reading i not flagged }``
      (:func:`~botorch_mtucb.utils.incumbent.robust_incumbent`), so a
      suspicious reading never sets the bar; option ``X_baseline`` (``t x d`` evaluated
      points, default the model's training inputs).
    * ``kind="ucb"``: :class:`~botorch_mtucb.acquisition.HeavyTailedUCB`
      ``μ(x) + β σ(x)``; option ``beta`` (default ``model.beta()`` where the model has it,
      else :data:`UCB_WIDTH`).

    ``kind`` defaults to :data:`DEFAULT_ROBUST_ACQUISITION`. Works for any single-output
    BoTorch model (no ``suspicious`` flags: every reading is trusted).

    Args:
        model: Single-output BoTorch model, e.g. :func:`~botorch_mtucb.models.robust_gp`.
        **options: ``kind`` and the options of that kind (above).

    Returns:
        An analytic acquisition (``q = 1``).

    Raises:
        ValueError: for a model with more than one output, an unknown ``kind`` or an option
            the kind does not take.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> from botorch.optim import optimize_acqf
        >>> bounds = torch.tensor([[0.0, -2.0], [4.0, 2.0]], dtype=torch.float64)
        >>> X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(8, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(X, X.sum(dim=-1, keepdim=True)).eval()
        >>> acqf = robust_acquisition(model)  # the default kind: UCB, μ + σ
        >>> candidate, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=16)
        >>> candidate.shape
        torch.Size([1, 2])
        >>> type(robust_acquisition(model, kind="logei")).__name__  # robust incumbent
        'LogExpectedImprovement'
    """
    kind = options.pop("kind", DEFAULT_ROBUST_ACQUISITION)
    if kind not in ROBUST_ACQUISITION_KINDS:
        raise ValueError(f"`kind` must be one of {ROBUST_ACQUISITION_KINDS}, got {kind!r}.")
    unknown = sorted(set(options) - set(_OPTIONS[kind]))
    if unknown:
        raise ValueError(
            f"robust_acquisition(kind={kind!r}) takes the options {_OPTIONS[kind]}, got "
            f"unknown {unknown}."
        )
    if model.num_outputs != 1:
        raise ValueError(f"`model` must have a single output, got {model.num_outputs}.")
    if kind == "ucb":
        beta = options.get("beta")
        if beta is None:
            schedule = getattr(model, "beta", None)
            beta = schedule() if callable(schedule) else UCB_WIDTH
        return HeavyTailedUCB(model, beta=beta)
    _, best_f = robust_incumbent(model, options.get("X_baseline"))
    return LogExpectedImprovement(model, best_f=best_f)
