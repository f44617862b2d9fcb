"""BoTorch input constructors (``acqf_input_constructor``) for ScalarizedMultiTaskUCB and HeavyTailedUCB.

Ax builds every acquisition through BoTorch's input-constructor registry: it calls the
registered function with the model, the training data, ``X_pending``, the objective (as a
``ScalarizedPosteriorTransform``), the objective thresholds (``ref_point``) and the
``botorch_acqf_options`` of the generation strategy. Importing this module registers:

* :func:`construct_inputs_scalarized_mtucb` — one fresh λ ~ P_λ per trial (paper 000, §5),
  directions from Ax's objective (minimised objectives go to the scalarization's
  ``minimize``, so nothing is negated twice), the Chebyshev reference point from Ax's
  objective thresholds or the data, pending points by GP-BUCB hallucination.
* :func:`construct_inputs_heavy_tailed_ucb` — β from the model (``model.beta()``) or given,
  minimisation by a sign flip of the estimate, pending points by GP-BUCB hallucination.

Outcome constraints are refused (neither UCB models feasibility).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from botorch.acquisition.input_constructors import (
    ACQF_INPUT_CONSTRUCTOR_REGISTRY,
    acqf_input_constructor,
)
from botorch.acquisition.objective import PosteriorTransform, ScalarizedPosteriorTransform
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.acquisition.beta import BetaSchedule
from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.pending import check_pending
from botorch_mtucb.acquisition.scalarization import (
    ChebyshevScalarization,
    LinearScalarization,
    Scalarization,
    ScalarizationSampler,
    sample_scalarization_weights,
)
from botorch_mtucb.heavy_tailed.base import HeavyTailedModel
from botorch_mtucb.integrations.ax.objective import (
    REF_POINT_SCALE,
    ObjectiveInfo,
    data_reference_point,
    objective_info,
    stacked_training_data,
    trial_generator,
)
from botorch_mtucb.protocols import WidthScheduleModel

__all__ = ["construct_inputs_heavy_tailed_ucb", "construct_inputs_scalarized_mtucb"]


def _refuse_constraints(
    acqf_name: str, constraints: Any, constraints_tuple: Any, objective: Any
) -> None:
    if constraints is not None or constraints_tuple is not None:
        raise ValueError(
            f"{acqf_name} does not support outcome constraints; remove them from the "
            "optimization config (or use Ax's default generation strategy)."
        )
    if objective is not None:
        raise ValueError(
            f"{acqf_name} takes its objective from the posterior transform; got an MC "
            f"objective ({type(objective).__name__}), which is not supported."
        )


def _search_box(model: Model, d: int | None) -> Tensor | None:
    """``2 x d`` box of the model's fixed-bounds ``Normalize`` input transform (Ax builds it
    from the search space), else ``None`` (then the observed front sets the reference)."""
    from botorch.models.model import ModelList
    from botorch.models.transforms.input import ChainedInputTransform, Normalize

    first = model.models[0] if isinstance(model, ModelList) and len(model.models) else model
    tf = getattr(first, "input_transform", None)  # BoTorch models' optional attribute
    parts = list(tf.values()) if isinstance(tf, ChainedInputTransform) else [tf]
    for part in parts:
        if isinstance(part, Normalize) and not part.learn_bounds:
            lo, scale = part.offset.reshape(-1, part.offset.shape[-1]), part.coefficient
            scale = scale.reshape(-1, scale.shape[-1])
            if lo.shape[0] == 1 and lo.shape[-1] == d:
                return torch.cat([lo, lo + scale]).detach()
    return None


def _given_box(bounds: list[tuple[float, float]] | Tensor, d: int) -> Tensor:
    """``2 x d`` box from Ax's ``d`` pairs ``(lower, upper)`` or a ``2 x d`` tensor."""
    msg = (f"`bounds` must be {d} finite (lower, upper) pairs with lower <= upper (or a "
           f"2 x {d} tensor), got {bounds!r}.")
    if isinstance(bounds, Tensor):
        box = bounds.detach().to(torch.float64)
    else:  # Ax's list of (lower, upper) pairs, one per input
        try:
            box = torch.as_tensor(bounds, dtype=torch.float64).reshape(-1, 2).T
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(msg) from err
    if box.shape != (2, d) or not torch.isfinite(box).all() or (box[0] > box[1]).any():
        raise ValueError(msg)
    return box


def _input_dim(stacked: tuple[Tensor, Tensor] | None, model: Model) -> int | None:
    if stacked is not None:
        return stacked[0].shape[-1]
    train_X = _train_X(model)
    return None if train_X is None else train_X.shape[-1]


def _train_X(model: Model) -> Tensor | None:
    """Training inputs of an exact GPyTorch model or a heavy-tailed model, else ``None``."""
    if isinstance(model, ExactGP) and model.train_inputs:
        return model.train_inputs[0]
    if isinstance(model, HeavyTailedModel):
        return model.train_X
    return None


def _num_observations(
    training_data: SupervisedDataset | dict[str, SupervisedDataset] | None, model: Model
) -> int:
    """Observations so far (the trial counter of the λ stream): data rows, all outcomes."""
    if isinstance(training_data, SupervisedDataset):
        return training_data.X.shape[0]
    if isinstance(training_data, dict) and training_data:
        return sum(ds.X.shape[0] for ds in training_data.values())
    train_X = _train_X(model)
    return 0 if train_X is None else train_X.shape[-2]


def _pending(X_pending: Tensor | None, d: int | None) -> Tensor | None:
    if X_pending is None:
        return None
    return check_pending(X_pending, X_pending.shape[-1] if d is None else d)


def _reference_point(
    info: ObjectiveInfo,
    ref_point: Tensor | None,
    training_data: SupervisedDataset | dict[str, SupervisedDataset] | None,
    n: int,
) -> Tensor:
    """Chebyshev z in the model's outcome units (see the module docstring of ``ax.py``)."""
    if ref_point is not None and info.row_to_output is not None:
        r = torch.as_tensor(ref_point).detach()
        if r.shape == (len(info.row_to_output),) and torch.isfinite(r).all():
            z = torch.empty(n, dtype=r.dtype, device=r.device)
            z[info.row_to_output] = r
            return z * info.signs(z)  # maximisation-aligned threshold -> original units
    stacked = stacked_training_data(training_data)
    if stacked is None:
        raise ValueError(
            "The Chebyshev scalarization needs a reference point: pass `training_data` (Ax "
            "always does) or objective thresholds with `objective_weights`."
        )
    return data_reference_point(stacked[1], info, REF_POINT_SCALE)


def construct_inputs_scalarized_mtucb(
    model: Model,
    training_data: SupervisedDataset | dict[str, SupervisedDataset] | None = None,
    X_pending: Tensor | None = None,
    posterior_transform: PosteriorTransform | None = None,
    ref_point: Tensor | None = None,
    objective_weights: Tensor | None = None,
    constraints: Any = None,
    constraints_tuple: Any = None,
    objective: Any = None,
    beta: float | Tensor | BetaSchedule | None = None,
    scalarization: Literal["chebyshev", "linear"] = "chebyshev",
    bound: Literal["spectral", "directional"] = "directional",
    seed: int | None = None,
    reference: Literal["data", "thresholds"] = "data",
    user_ref_point: Tensor | None = None,
    front: Literal["observed", "predicted"] = "predicted",
    bounds: list[tuple[float, float]] | Tensor | None = None,
) -> dict[str, Any]:
    """Keyword arguments of :class:`ScalarizedMultiTaskUCB` for one Ax trial.

    Args:
        model: Multi-output model (Ax passes the fitted surrogate, e.g. ``AxExactMultiTaskGP``).
        training_data: Ax's training data (used for the trial counter and the data-derived
            reference point).
        X_pending: ``m x d`` points of trials still running; handled by GP-BUCB hallucination
            (see :mod:`botorch_mtucb.acquisition.pending`).
        posterior_transform: Ax's objective as a ``ScalarizedPosteriorTransform`` (weights ±1
            per output, −1 for minimised objectives).
        ref_point: Ax's maximisation-aligned objective thresholds (``n_objectives``).
        objective_weights: Ax's ``n_objectives x n`` objective matrix (given by
            :class:`~botorch_mtucb.integrations.ax.UCBAcquisition`); maps ``ref_point`` to
            outputs. Without it the reference point is derived from the data.
        constraints: Outcome constraints: refused.
        constraints_tuple: Outcome constraints: refused.
        objective: MC objective: refused.
        beta: β: a number or a :class:`BetaSchedule` (evaluated on the un-hallucinated model);
            ``None``: the acquisition's default (practical) width.
        scalarization: ``"chebyshev"`` or ``"linear"`` (λ ~ P_λ of paper 000, §5).
        bound: ``"spectral"`` (paper 000, eq. (2)) or ``"directional"``.
        seed: Seed of the λ stream (``None``: torch's global generator, see
            :func:`~botorch_mtucb.integrations.ax.objective.trial_generator`).
        reference: Chebyshev reference point: ``"data"`` (default): the user's objective
            thresholds (``user_ref_point``) when set for every objective, else the scale-free
            :meth:`ChebyshevScalarization.from_data` of the training data; ``"thresholds"``:
            ``ref_point`` (Ax's thresholds, inferred where the user set none) with the plain
            s_λ, or the data's nadir heuristic without them.
        user_ref_point: The thresholds as the user set them (``n_objectives``, NaN where not
            set), before Ax's inference (given by
            :class:`~botorch_mtucb.integrations.ax.UCBAcquisition`).
        front: For the scale-free reference: ``"predicted"`` (default, the loop's
            default) — z and the ranges from the observed non-dominated points and the
            model's payoff table on the search box (``bounds``, else the box of the model's
            fixed-bounds ``Normalize`` input transform; the observed points only when there
            is neither), as ``ScalarizationSampler(..., front="predicted")``;
            ``"observed"`` — the observed points only.
        bounds: The search box in the model's input space: ``d`` pairs ``(lower, upper)``
            (Ax passes its search-space digest's ``bounds``, in the transformed space its
            models are fitted in) or a ``2 x d`` tensor. Used for the payoff table of
            ``front="predicted"``.

    Returns:
        ``{"model", "scalarization", "beta", "bound", "X_pending"}`` (``beta`` only when
        given); the acquisition
        conditions ``model`` on the pending points itself (GP-BUCB,
        :mod:`botorch_mtucb.acquisition.pending`).
    """
    _refuse_constraints("ScalarizedMultiTaskUCB", constraints, constraints_tuple, objective)
    if scalarization not in ("chebyshev", "linear"):
        raise ValueError(f"`scalarization` must be 'chebyshev' or 'linear', got {scalarization!r}.")
    n = model.num_outputs
    info = objective_info(n, objective_weights, posterior_transform)
    try:
        stacked = stacked_training_data(training_data)
    except ValueError:  # outcomes observed at different inputs (a ModelListGP)
        stacked = None  # only the data-derived Chebyshev reference point needs them stacked
    pending = _pending(X_pending, _input_dim(stacked, model))
    t = _num_observations(training_data, model) + (0 if pending is None else pending.shape[0])
    like = stacked[1] if stacked is not None else torch.empty(0, dtype=torch.float64)
    lam = sample_scalarization_weights(
        n, 1, scalarization, generator=trial_generator(seed, t), dtype=like.dtype
    )[0]
    if reference not in ("data", "thresholds"):
        raise ValueError(f"`reference` must be 'data' or 'thresholds', got {reference!r}.")
    s: Scalarization
    if scalarization == "linear":
        s = LinearScalarization(lam, minimize=info.minimize)
    elif reference == "thresholds":
        z = _reference_point(info, ref_point, training_data, n).to(lam)
        s = ChebyshevScalarization(lam, z, minimize=info.minimize)
    elif _complete(user_ref_point, info):
        z = _reference_point(info, user_ref_point, training_data, n).to(lam)
        s = ChebyshevScalarization(lam, z, minimize=info.minimize)
    else:
        if stacked is None:
            raise ValueError(
                "The scale-free Chebyshev scalarization (reference='data') needs the training "
                "data of every objective at the same inputs; set objective thresholds for "
                "every objective or use reference='thresholds'."
            )
        if front not in ("observed", "predicted"):
            raise ValueError(f"`front` must be 'observed' or 'predicted', got {front!r}.")
        Y = stacked[1].to(lam)
        box = None
        if front == "predicted":
            d = stacked[0].shape[-1]
            box = _search_box(model, d) if bounds is None else _given_box(bounds, d)
        data = ScalarizationSampler(n, "chebyshev", ref_point="data", minimize=info.minimize,
                                    front="observed" if box is None else "predicted")
        predicted = None if box is None else data.anchors(
            model, box.to(stacked[0]), Y, seed=None if seed is None else int(seed) + t)
        s = data.scalarize(lam, Y, predicted)
    if isinstance(beta, BetaSchedule):
        beta = beta(model)  # on the real data only, before any hallucination
    out = {"model": model, "scalarization": s, "bound": bound, "X_pending": pending}
    if beta is not None:
        out["beta"] = beta
    return out


def _complete(user_ref_point: Tensor | None, info: ObjectiveInfo) -> bool:
    """Whether the user set a finite threshold for every objective row Ax knows of."""
    if user_ref_point is None or info.row_to_output is None:
        return False
    r = torch.as_tensor(user_ref_point).detach()
    return r.shape == (len(info.row_to_output),) and bool(torch.isfinite(r).all())


def construct_inputs_heavy_tailed_ucb(
    model: Model,
    training_data: SupervisedDataset | dict[str, SupervisedDataset] | None = None,
    X_pending: Tensor | None = None,
    posterior_transform: PosteriorTransform | None = None,
    constraints: Any = None,
    constraints_tuple: Any = None,
    objective: Any = None,
    beta: float | Tensor | None = None,
) -> dict[str, Any]:
    """Keyword arguments of :class:`HeavyTailedUCB` for one Ax trial.

    Args:
        model: Single-output model (Ax passes the surrogate, e.g. ``AxTruncatedGP``).
        training_data: Unused (accepted for Ax).
        X_pending: ``m x d`` points of running trials; GP-BUCB hallucination (variance only).
        posterior_transform: Ax's objective (weight ``+1`` maximise, ``-1`` minimise; only the
            sign matters for a single objective).
        constraints: Outcome constraints: refused.
        constraints_tuple: Outcome constraints: refused.
        objective: MC objective: refused.
        beta: Width β multiplying σ; ``None`` takes ``model.beta()`` (β_{t+1} of paper 001,
            read before hallucination).

    Returns:
        ``{"model", "beta", "maximize", "X_pending"}`` (``maximize=False`` for a minimised
        objective: the acquisition scores −μ + β σ; pending points by GP-BUCB in the
        acquisition, :mod:`botorch_mtucb.acquisition.pending`).
    """
    _refuse_constraints("HeavyTailedUCB", constraints, constraints_tuple, objective)
    if model.num_outputs != 1:
        raise ValueError(
            f"HeavyTailedUCB needs a single-output model, got {model.num_outputs} outputs; use "
            "a single objective (heavy_tailed_generation_strategy)."
        )
    sign = 1.0
    if posterior_transform is not None:
        if not isinstance(posterior_transform, ScalarizedPosteriorTransform):
            raise ValueError(
                "Expected Ax's ScalarizedPosteriorTransform (or None), got "
                f"{type(posterior_transform).__name__}."
            )
        w = posterior_transform.weights.detach().reshape(-1)
        if w.numel() != 1 or float(w) == 0.0:
            raise ValueError(f"Expected one non-zero objective weight, got {w.tolist()}.")
        sign = 1.0 if float(w) > 0 else -1.0
    if beta is None:
        if not (isinstance(model, WidthScheduleModel) and callable(model.beta)):
            raise ValueError(
                f"`beta=None` needs a model with a `beta()` schedule; {type(model).__name__} "
                "has none. Pass `beta` explicitly."
            )
        beta = model.beta()
    pending = _pending(X_pending, _input_dim(stacked_training_data(training_data), model))
    return {"model": model, "beta": beta, "maximize": sign == 1.0, "X_pending": pending}


def _register() -> None:
    """Register the constructors once (re-importing the module must not raise)."""
    for cls, fn in (
        (ScalarizedMultiTaskUCB, construct_inputs_scalarized_mtucb),
        (HeavyTailedUCB, construct_inputs_heavy_tailed_ucb),
    ):
        if cls not in ACQF_INPUT_CONSTRUCTOR_REGISTRY:
            acqf_input_constructor(cls)(fn)


_register()
