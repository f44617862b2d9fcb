r"""BoTorch input constructors of the package's UCBs, as Ax calls them.

Ax builds every acquisition through BoTorch's ``acqf_input_constructor`` registry: it calls
the registered function with the fitted model, the training data, ``X_pending`` (trials still
running), the objective as a ``ScalarizedPosteriorTransform``, the objective thresholds
(``ref_point``), the search box (``bounds``) and the strategy's ``botorch_acqf_options``. All
of it is in Ax's transformed spaces, the ones the model is fitted in (inputs mapped to the
search box or the unit cube, outcomes possibly standardized), and is used as is.
:func:`register_input_constructors` (called by ``import botorch_mtucb.integrations.ax``)
registers:

* :func:`~botorch_mtucb.integrations.ax.construct_inputs_scalarized_mtucb` for
  :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`: a fresh λ ~ P_λ per trial
  (paper 000, §5), the directions of Ax's objective as the scalarization's ``minimize``, the
  Chebyshev or hypervolume reference point from the user's thresholds or the data;
* :func:`~botorch_mtucb.integrations.ax.construct_inputs_heavy_tailed_ucb` for
  :class:`~botorch_mtucb.acquisition.HeavyTailedUCB`: β from the model or given, a minimised
  objective as ``maximize=False``.

Both pass ``X_pending`` (``m x d``) on to the acquisition, which conditions the model on
hallucinated observations there (GP-BUCB, :mod:`botorch_mtucb.acquisition.pending`). Outcome
constraints and MC objectives are refused (neither UCB models feasibility).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Literal

import torch
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.acquisition.input_constructors import (
    ACQF_INPUT_CONSTRUCTOR_REGISTRY,
    acqf_input_constructor,
)
from botorch.acquisition.objective import PosteriorTransform, ScalarizedPosteriorTransform
from botorch.models.model import Model, ModelList
from botorch.models.transforms.input import ChainedInputTransform, Normalize
from botorch.utils.datasets import SupervisedDataset
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.acquisition import (
    BetaSchedule,
    ChebyshevScalarization,
    HeavyTailedUCB,
    HypervolumeScalarization,
    LinearScalarization,
    Scalarization,
    ScalarizationSampler,
    ScalarizedMultiTaskUCB,
    sample_scalarization_weights,
)
from botorch_mtucb.acquisition import robust as robust_module
from botorch_mtucb.acquisition.pending import check_pending, hallucinate_mean
from botorch_mtucb.heavy_tailed.base import HeavyTailedModel
from botorch_mtucb.heavy_tailed.robust import _clipped_readings
from botorch_mtucb.integrations.ax.objective import (
    REF_POINT_SCALE,
    ObjectiveInfo,
    data_reference_point,
    objective_info,
    stacked_training_data,
    trial_generator,
)
from botorch_mtucb.protocols import WidthScheduleModel
from botorch_mtucb.utils.incumbent import robust_incumbent

__all__ = [
    "construct_inputs_heavy_tailed_ucb",
    "construct_inputs_scalarized_mtucb",
    "construct_robust_acquisition",
    "reading_flags",
    "register_input_constructors",
    "robust_best_index",
]

#: The scalarizations with a reference point z, built with z fixed (thresholds).
_FIXED_REFERENCE: dict[str, type[ChebyshevScalarization] | type[HypervolumeScalarization]] = {
    "chebyshev": ChebyshevScalarization,
    "hypervolume": HypervolumeScalarization,
}


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
    """Reference point z (``n``, Chebyshev or hypervolume) in the model's outcome units from
    thresholds or the data's nadir.

    ``ref_point`` (one maximisation-aligned threshold per objective row) is used when the rows
    map to outputs (``info.row_to_output``) and all are finite; otherwise z is the nadir of the
    observed front pushed back by ``REF_POINT_SCALE`` of its range.
    """
    if ref_point is not None and info.row_to_output is not None:
        r = torch.as_tensor(ref_point).detach()
        if r.shape == (len(info.row_to_output),) and torch.isfinite(r).all():
            z = torch.empty(n, dtype=r.dtype, device=r.device)
            z[info.row_to_output] = r
            return z * info.signs(z)  # maximisation-aligned threshold -> original units
    stacked = stacked_training_data(training_data)
    if stacked is None:
        raise ValueError(
            "The Chebyshev and hypervolume scalarizations need a reference point: pass "
            "`training_data` (Ax always does) or objective thresholds with `objective_weights`."
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
    scalarization: Literal["chebyshev", "linear", "hypervolume"] = "chebyshev",
    bound: Literal["spectral", "directional"] = "directional",
    seed: int | None = None,
    reference: Literal["data", "thresholds"] = "data",
    user_ref_point: Tensor | None = None,
    front: Literal["observed", "predicted"] = "predicted",
    bounds: list[tuple[float, float]] | Tensor | None = None,
) -> dict[str, Any]:
    r"""Keyword arguments of ``ScalarizedMultiTaskUCB`` for one Ax trial.

    Inputs of :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`: draws λ ~ P_λ
    (paper 000, §5) from the stream
    :func:`~botorch_mtucb.integrations.ax.objective.trial_generator` ``(seed, t)``,
    t = observed rows + pending points, and builds s_λ with the directions of Ax's objective
    as ``minimize``. The reference point z of the Chebyshev and the hypervolume
    scalarization (Zhang & Golovin's s_λ(y) = min_i max(0, (y_i − z_i)/λ_i)ⁿ, λ uniform on
    the positive unit sphere):

    * ``reference="thresholds"``: ``ref_point`` mapped to outputs by ``objective_weights``
      (plain s_λ), else the observed front's nadir pushed back by 10 % of its range;
    * ``reference="data"`` (default): ``user_ref_point`` when finite for every objective
      (plain s_λ), else the scale-free
      :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data` (augmented) or
      :meth:`~botorch_mtucb.acquisition.HypervolumeScalarization.from_data`
      (:meth:`~botorch_mtucb.acquisition.ScalarizationSampler.scalarize`), whose nadir and
      ranges come from the observed non-dominated points and, with ``front="predicted"``,
      the model's payoff table on the search box.

    All quantities are in the model's (Ax's transformed) units.

    Args:
        model: Multi-output model with ``n = model.num_outputs`` outputs (Ax passes the
            fitted surrogate, e.g. ``AxPracticalMultiTaskGP``).
        training_data: One ``SupervisedDataset`` (``X: N x d``, ``Y: N x n``) or one per
            outcome; the trial counter and the data-derived reference point read it.
        X_pending: ``m x d`` inputs of trials still running, or ``None``.
        posterior_transform: Ax's objective as a ``ScalarizedPosteriorTransform`` with ``n``
            weights ±1 (−1 for a minimised objective).
        ref_point: Ax's maximisation-aligned objective thresholds, ``n_objectives``.
        objective_weights: Ax's ``n_objectives x n`` objective matrix (passed by
            :class:`~botorch_mtucb.integrations.ax.UCBAcquisition`); maps the thresholds'
            rows to outputs. Without it thresholds are not used.
        constraints: Outcome constraints: refused.
        constraints_tuple: Outcome constraints: refused.
        objective: MC objective: refused.
        beta: β: a number or a :class:`~botorch_mtucb.acquisition.BetaSchedule` (evaluated on
            ``model`` before any pending point); ``None``: the acquisition's default.
        scalarization: ``"chebyshev"``, ``"linear"`` or ``"hypervolume"``.
        bound: ``"spectral"`` (paper 000, eq. (2)) or ``"directional"``.
        seed: Seed of the λ stream (``None``: torch's global generator mixed with t).
        reference: ``"data"`` or ``"thresholds"`` (see above).
        user_ref_point: The thresholds as the user set them (``n_objectives``, NaN where not
            set), before Ax infers the missing ones (passed by ``UCBAcquisition``).
        front: For the scale-free reference: ``"predicted"`` (default) — the observed
            non-dominated points and the model's payoff table on the search box (``bounds``,
            else the box of the model's fixed-bounds ``Normalize`` input transform, else the
            observed points only); ``"observed"`` — the observed points only.
        bounds: The search box in the model's input space: ``d`` pairs ``(lower, upper)``
            (Ax's search-space digest) or a ``2 x d`` tensor.

    Returns:
        ``{"model", "scalarization", "bound", "X_pending"}``, plus ``"beta"`` when given.

    Raises:
        ValueError: for outcome constraints, an MC objective, objective weights other than
            ±1 or an output that is no objective, ``X_pending`` not ``m x d``, or no way to
            set the reference point.

    Example:
        >>> import torch
        >>> from botorch.utils.datasets import SupervisedDataset
        >>> from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB
        >>> from botorch_mtucb.integrations.ax import construct_inputs_scalarized_mtucb
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> Y = torch.stack([X.sum(-1), (X - 0.5).norm(dim=-1)], dim=-1)
        >>> data = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["a", "b"])
        >>> inputs = construct_inputs_scalarized_mtucb(
        ...     ExactMultiTaskGP(X, Y), data, seed=0, bounds=[(0.0, 1.0), (0.0, 1.0)])
        >>> ScalarizedMultiTaskUCB(**inputs)(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        torch.Size([5])
    """
    _refuse_constraints("ScalarizedMultiTaskUCB", constraints, constraints_tuple, objective)
    if scalarization not in _FIXED_REFERENCE and scalarization != "linear":
        raise ValueError(
            "`scalarization` must be 'chebyshev', 'linear' or 'hypervolume', got "
            f"{scalarization!r}."
        )
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
        s = _FIXED_REFERENCE[scalarization](lam, z, minimize=info.minimize)
    elif _complete(user_ref_point, info):
        z = _reference_point(info, user_ref_point, training_data, n).to(lam)
        s = _FIXED_REFERENCE[scalarization](lam, z, minimize=info.minimize)
    else:
        anchor_seed = None if seed is None else int(seed) + t
        s = _scale_free_scalarization(
            model, stacked, lam, info, front, bounds, anchor_seed, scalarization
        )
    if isinstance(beta, BetaSchedule):
        beta = beta(model)  # on the real data only, before any hallucination
    out = {"model": model, "scalarization": s, "bound": bound, "X_pending": pending}
    if beta is not None:
        out["beta"] = beta
    return out


def _scale_free_scalarization(
    model: Model,
    stacked: tuple[Tensor, Tensor] | None,
    lam: Tensor,
    info: ObjectiveInfo,
    front: str,
    bounds: list[tuple[float, float]] | Tensor | None,
    seed: int | None,
    kind: Literal["chebyshev", "hypervolume"] = "chebyshev",
) -> Scalarization:
    """The scale-free ``from_data`` scalarization of ``kind`` for weights ``lam`` (``n``).

    ``"chebyshev"``: the augmented ``ChebyshevScalarization.from_data``; ``"hypervolume"``:
    ``HypervolumeScalarization.from_data`` (``lam`` on the positive unit sphere). Its nadir
    and ranges come from the observed ``Y: N x n`` of ``stacked`` and, with
    ``front="predicted"`` and a search box (``bounds`` or the model's ``Normalize`` box), the
    model's payoff table on that box (anchors optimised with ``seed``).
    """
    if stacked is None:
        raise ValueError(
            f"The scale-free {kind} scalarization (reference='data') needs the training "
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
    data = ScalarizationSampler(lam.shape[-1], kind, ref_point="data",
                                minimize=info.minimize,
                                front="observed" if box is None else "predicted")
    predicted = None if box is None else data.anchors(model, box.to(stacked[0]), Y, seed=seed)
    return data.scalarize(lam, Y, predicted)


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
    r"""Keyword arguments of ``HeavyTailedUCB`` for one Ax trial.

    :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` then scores μ_t(x) + β σ_t(x), or
    −μ_t(x) + β σ_t(x) for a minimised objective (``maximize=False``; the truncation acts on
    ``|y − loc|``, so this equals negating the rewards), with σ_t from the model conditioned
    on ``X_pending`` (GP-BUCB, variance only).

    Args:
        model: Single-output model (Ax passes the surrogate, e.g. ``AxTruncatedGP``).
        training_data: Ax's data (``X: t x d``); only its input dimension is read.
        X_pending: ``m x d`` inputs of trials still running, or ``None``.
        posterior_transform: Ax's objective: one weight, ``> 0`` maximise, ``< 0`` minimise.
        constraints: Outcome constraints: refused.
        constraints_tuple: Outcome constraints: refused.
        objective: MC objective: refused.
        beta: Width β multiplying σ; ``None`` takes ``model.beta()`` (β_{t+1} of paper 001,
            read before any pending point).

    Returns:
        ``{"model", "beta", "maximize", "X_pending"}``.

    Raises:
        ValueError: for a model with several outputs, outcome constraints, an MC objective,
            an objective weight of 0, or ``beta=None`` with a model without ``beta()``.

    Example:
        >>> import torch
        >>> from botorch_mtucb.acquisition import HeavyTailedUCB
        >>> from botorch_mtucb.integrations.ax import construct_inputs_heavy_tailed_ucb
        >>> from botorch_mtucb.models import TruncatedGP
        >>> X = torch.rand(6, 1, dtype=torch.float64)
        >>> model = TruncatedGP(X, torch.sin(6 * X), alpha=1.0, v=2.0)
        >>> inputs = construct_inputs_heavy_tailed_ucb(
        ...     model, X_pending=torch.full((1, 1), 0.5, dtype=torch.float64))
        >>> HeavyTailedUCB(**inputs)(torch.rand(4, 1, 1, dtype=torch.float64)).shape
        torch.Size([4])
    """
    _refuse_constraints("HeavyTailedUCB", constraints, constraints_tuple, objective)
    if model.num_outputs != 1:
        raise ValueError(
            f"HeavyTailedUCB needs a single-output model, got {model.num_outputs} outputs; use "
            "a single objective (heavy_tailed_generation_strategy)."
        )
    sign = _objective_sign(posterior_transform)
    if beta is None:
        if not (isinstance(model, WidthScheduleModel) and callable(model.beta)):
            raise ValueError(
                f"`beta=None` needs a model with a `beta()` schedule; {type(model).__name__} "
                "has none. Pass `beta` explicitly."
            )
        beta = model.beta()
    pending = _pending(X_pending, _input_dim(stacked_training_data(training_data), model))
    return {"model": model, "beta": beta, "maximize": sign == 1.0, "X_pending": pending}


def _objective_sign(posterior_transform: PosteriorTransform | None) -> float:
    """``+1`` (maximise) or ``−1`` (minimise) from Ax's one-weight objective transform."""
    if posterior_transform is None:
        return 1.0
    if not isinstance(posterior_transform, ScalarizedPosteriorTransform):
        raise ValueError(
            "Expected Ax's ScalarizedPosteriorTransform (or None), got "
            f"{type(posterior_transform).__name__}."
        )
    w = posterior_transform.weights.detach().reshape(-1)
    if w.numel() != 1 or float(w) == 0.0:
        raise ValueError(f"Expected one non-zero objective weight, got {w.tolist()}.")
    return 1.0 if float(w) > 0 else -1.0


def reading_flags(model: Model) -> Tensor | None:
    """``t`` bools over the model's readings: those :func:`~botorch_mtucb.models.recommend`
    does not trust (``model.suspicious``; for a truncating
    :class:`~botorch_mtucb.models.TruncatedGP` the truncated or clipped readings), or
    ``None`` (every reading trusted).

    Example:
        >>> from botorch_mtucb.models import robust_gp
        >>> X = torch.linspace(0, 1, 12, dtype=torch.float64).unsqueeze(-1)
        >>> Y = torch.sin(6 * X)
        >>> Y[4] = 30.0
        >>> reading_flags(robust_gp(X, Y)).nonzero().view(-1).tolist()
        [4]
    """
    flags = getattr(model, "suspicious", None)
    return _clipped_readings(model) if flags is None else flags


def robust_best_index(model: Model, X: Tensor, maximize: bool = True) -> tuple[int, Tensor]:
    """The row of ``X`` that :func:`~botorch_mtucb.models.recommend` picks, for either direction.

    Rows whose readings (training inputs equal to the row) are all flagged
    (:func:`reading_flags`) are excluded; among the others the row with the best posterior
    mean, ``argmax μ`` (``maximize=True``: :func:`~botorch_mtucb.utils.robust_incumbent`,
    so ``X[index]`` is ``recommend(model, X)``) or ``argmin μ``.

    Args:
        model: Single-output model (e.g. :class:`~botorch_mtucb.integrations.ax.models.AxRobustGP`).
        X: ``t x d`` evaluated points on the model's input scale.
        maximize: Direction of the objective.

    Returns:
        ``(index, mean)``: the row and its posterior mean (0-dim tensor, the model's units).

    Raises:
        ValueError: if ``X`` is not a non-empty ``t x d`` tensor or every row is excluded.

    Example:
        >>> from botorch_mtucb.models import recommend, robust_gp
        >>> X = torch.linspace(0, 1, 12, dtype=torch.float64).unsqueeze(-1)
        >>> Y = torch.sin(6 * X)
        >>> Y[4] = 30.0
        >>> model = robust_gp(X, Y)
        >>> i, _ = robust_best_index(model, X)
        >>> torch.equal(X[i : i + 1], recommend(model, X)), robust_best_index(model, X, False)[0]
        (True, 9)
    """
    flags = reading_flags(model)
    if maximize:
        return robust_incumbent(model, X, suspicious=flags)
    index, best = robust_incumbent(_NegatedMean(model, flags), X)
    return index, -best


class _NegatedMean:
    """The minimal model view :func:`~botorch_mtucb.utils.robust_incumbent` reads, with the
    posterior mean negated: ``posterior(X).mean``, ``train_inputs``, ``suspicious``."""

    def __init__(self, model: Model, flags: Tensor | None) -> None:
        self._model = model
        self.suspicious = flags
        self.train_inputs = getattr(model, "train_inputs", None)
        original = model.__dict__.get("_original_train_inputs")
        if original is not None:
            self._original_train_inputs = original

    def posterior(self, X: Tensor) -> Any:
        post = self._model.posterior(X)
        return SimpleNamespace(mean=-post.mean)


def construct_robust_acquisition(
    model: Model,
    X_pending: Tensor | None = None,
    posterior_transform: PosteriorTransform | None = None,
    constraints: Any = None,
    constraints_tuple: Any = None,
    objective: Any = None,
    kind: str | None = None,
    beta: float | None = None,
) -> AcquisitionFunction:
    r"""The robust default's acquisition for one Ax trial.

    :func:`~botorch_mtucb.acquisition.robust_acquisition` with Ax's objective direction and
    pending points.

    * ``kind="logei"``: ``LogExpectedImprovement`` with the robust incumbent
      ``best_f = max { ±μ(x_i) : reading i not flagged }`` (:func:`robust_best_index` on the
      model's training inputs; ``−μ`` and a ``−1`` posterior transform for a minimised
      objective). Pending points (``X_pending``): the model is conditioned on its own mean
      there (:func:`~botorch_mtucb.acquisition.pending.hallucinate_mean`: same mean, smaller
      σ, so the expected improvement at and near a running trial drops); the incumbent is
      taken on the real data.
    * ``kind="ucb"``: :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` ``±μ + β σ`` with
      ``β`` = ``beta`` or the model's ``beta()`` (else
      :data:`~botorch_mtucb.acquisition.robust.UCB_WIDTH`), pending points as GP-BUCB.

    Args:
        model: Single-output model (Ax passes the surrogate's
            :class:`~botorch_mtucb.integrations.ax.models.AxRobustGP`).
        X_pending: ``m x d`` inputs of trials still running, or ``None``.
        posterior_transform: Ax's objective: one weight, ``> 0`` maximise, ``< 0`` minimise.
        constraints: Outcome constraints: refused.
        constraints_tuple: Outcome constraints: refused.
        objective: MC objective: refused.
        kind: ``"logei"`` or ``"ucb"``; default
            :data:`~botorch_mtucb.acquisition.robust.DEFAULT_ROBUST_ACQUISITION`.
        beta: UCB width (``kind="ucb"`` only).

    Returns:
        The acquisition function (analytic, ``q = 1``).

    Raises:
        ValueError: for a model with several outputs, outcome constraints, an MC objective,
            an objective weight of 0, an unknown ``kind``, ``beta`` with ``kind="logei"``, or
            ``X_pending`` not ``m x d``.

    Example:
        >>> from botorch_mtucb.models import robust_gp
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> model = robust_gp(X, X.sum(-1, keepdim=True))
        >>> acqf = construct_robust_acquisition(
        ...     model, kind="logei", X_pending=torch.full((1, 2), 0.5, dtype=torch.float64))
        >>> type(acqf).__name__, acqf(torch.rand(4, 1, 2, dtype=torch.float64)).shape
        ('LogExpectedImprovement', torch.Size([4]))
    """
    _refuse_constraints("The robust acquisition", constraints, constraints_tuple, objective)
    kind = robust_module.DEFAULT_ROBUST_ACQUISITION if kind is None else kind
    if kind not in robust_module.ROBUST_ACQUISITION_KINDS:
        raise ValueError(
            f"`kind` must be one of {robust_module.ROBUST_ACQUISITION_KINDS}, got {kind!r}."
        )
    if model.num_outputs != 1:
        raise ValueError(f"`model` must have a single output, got {model.num_outputs}.")
    maximize = _objective_sign(posterior_transform) > 0
    pending = _pending(X_pending, _input_dim(None, model))
    if kind == "ucb":
        if beta is None:
            schedule = getattr(model, "beta", None)
            beta = schedule() if callable(schedule) else robust_module.UCB_WIDTH
        return HeavyTailedUCB(model, beta=beta, maximize=maximize, X_pending=pending)
    if beta is not None:
        raise ValueError(f"`beta` is an option of kind='ucb', got beta={beta!r} with 'logei'.")
    X = _train_X(model)
    if X is None:
        raise ValueError(f"{type(model).__name__} has no training inputs to take the incumbent at.")
    _, best_f = robust_best_index(model, X, maximize)
    conditioned = model if pending is None else hallucinate_mean(model, pending)
    if maximize:
        return LogExpectedImprovement(conditioned, best_f=best_f)
    negate = ScalarizedPosteriorTransform(weights=-torch.ones(1).to(best_f))
    return LogExpectedImprovement(conditioned, best_f=-best_f, posterior_transform=negate)


def register_input_constructors() -> None:
    """Register both constructors in BoTorch's input-constructor registry; idempotent.

    Called by ``import botorch_mtucb.integrations.ax``. A class that already has a
    constructor keeps it.

    Example:
        >>> from botorch.acquisition.input_constructors import ACQF_INPUT_CONSTRUCTOR_REGISTRY
        >>> from botorch_mtucb.acquisition import HeavyTailedUCB
        >>> register_input_constructors()
        >>> HeavyTailedUCB in ACQF_INPUT_CONSTRUCTOR_REGISTRY
        True
    """
    for cls, fn in (
        (ScalarizedMultiTaskUCB, construct_inputs_scalarized_mtucb),
        (HeavyTailedUCB, construct_inputs_heavy_tailed_ucb),
    ):
        if cls not in ACQF_INPUT_CONSTRUCTOR_REGISTRY:
            acqf_input_constructor(cls)(fn)
