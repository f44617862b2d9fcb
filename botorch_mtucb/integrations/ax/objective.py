"""What the MT-UCB input constructor reads from Ax's objective: directions, reference point, λ.

Ax hands a BoTorch input constructor (``Acquisition._construct_botorch_acquisition``)

* ``posterior_transform``: a ``ScalarizedPosteriorTransform`` whose weights are Ax's objective
  weights summed over objectives, one per model output (``-1`` for a minimised objective);
* ``ref_point``: the objective thresholds, one per *objective* (rows of Ax's
  ``n_objectives x n_outcomes`` weight matrix), maximisation-aligned (a minimised objective's
  threshold is negated), given by the user or inferred by Ax (scaled nadir of the
  model-predicted Pareto front);
* with :class:`~botorch_mtucb.integrations.ax.UCBAcquisition` also ``objective_weights``, that
  matrix itself, which says which output each threshold belongs to.

Everything is in Ax's transformed outcome space (after ``StandardizeY`` etc.), the space the
model is trained in, so all of it is used as is.

A seeded strategy's randomness is keyed by ``(seed, t)``, t the number of data points a trial
sees: the λ stream (:func:`trial_generator`) and, through :func:`seeded_trial`, torch's global
generator during the model fit, the acquisition's construction and its maximisation. A trial
then proposes the same point whatever ran before, also after the strategy is saved and loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from botorch.acquisition.objective import PosteriorTransform, ScalarizedPosteriorTransform
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.multi_objective.hypervolume import infer_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from botorch_mtucb.utils import check_finite

__all__ = [
    "ACQUISITION_STREAM",
    "FIT_STREAM",
    "OPTIMIZE_STREAM",
    "ObjectiveInfo",
    "data_reference_point",
    "objective_info",
    "seeded_trial",
    "stacked_training_data",
    "trial_generator",
    "trial_seed",
]

#: Stream of the model fit in :func:`seeded_trial` (random restarts of ``fit_gpytorch_mll``).
FIT_STREAM = 1
#: Stream of building the acquisition in :func:`seeded_trial` (conditioning on pending
#: points, which may redraw random features).
ACQUISITION_STREAM = 2
#: Stream of the acquisition maximisation in :func:`seeded_trial` (``optimize_acqf``'s raw
#: samples and initial conditions).
OPTIMIZE_STREAM = 3

#: Scale of the nadir margin in :func:`data_reference_point` (BoTorch's / Ax's default).
REF_POINT_SCALE = 0.1


class ObjectiveInfo:
    """Directions of the ``n`` model outputs and, when known, the output of each objective row.

    Attributes:
        minimize: ``n`` booleans, ``True`` where the objective is minimised.
        row_to_output: Output index of each Ax objective row, or ``None`` when unknown.
    """

    def __init__(self, minimize: Tensor, row_to_output: list[int] | None) -> None:
        self.minimize = minimize
        self.row_to_output = row_to_output

    def signs(self, like: Tensor) -> Tensor:
        """``n`` vector of ±1 (−1 for minimised outputs) with ``like``'s dtype/device."""
        return (1.0 - 2.0 * self.minimize.to(torch.float64)).to(like)


def _check_unit_weights(w: Tensor, what: str) -> None:
    if not torch.allclose(w.abs(), torch.ones_like(w), rtol=0.0, atol=1e-9):
        raise ValueError(
            f"MT-UCB draws its own scalarization weights λ; {what} must be ±1 (maximise / "
            f"minimise), got {w.tolist()}. Use a plain multi-objective objective such as "
            '"-a, -b".'
        )


def objective_info(
    num_outputs: int,
    objective_weights: Tensor | None,
    posterior_transform: PosteriorTransform | None,
) -> ObjectiveInfo:
    """Directions of the model outputs from Ax's objective.

    Args:
        num_outputs: Number of model outputs ``n``.
        objective_weights: Ax's ``n_objectives x n`` weight matrix, or ``None``.
        posterior_transform: Ax's ``ScalarizedPosteriorTransform`` (weights ``n``), or ``None``
            (then every output is maximised).

    Returns:
        An :class:`ObjectiveInfo`.

    Raises:
        ValueError: if some output is not an objective (tracking metric or outcome constraint
            modelled jointly), an objective combines several outputs, or a weight is not ±1.
    """
    if objective_weights is not None:
        W = torch.as_tensor(objective_weights).detach()
        if W.dim() != 2 or W.shape[-1] != num_outputs:
            raise ValueError(
                f"`objective_weights` must have shape n_objectives x {num_outputs}, got "
                f"{tuple(W.shape)}."
            )
        nonzero = W != 0
        if (nonzero.sum(dim=-1) != 1).any():
            raise ValueError(
                "Each objective must be a single metric (no scalarized sub-objectives); got "
                f"objective weights {W.tolist()}."
            )
        rows = nonzero.float().argmax(dim=-1).tolist()
        w = W[torch.arange(W.shape[0]), rows]
        _check_unit_weights(w, "objective weights")
        if sorted(rows) != list(range(num_outputs)):
            raise ValueError(
                "Every model output must be exactly one objective, got objective weights "
                f"{W.tolist()}: outcome constraints and modelled tracking metrics are not "
                "supported by MT-UCB (mtucb_generation_strategy sets fit_tracking_metrics=False)."
            )
        minimize = torch.zeros(num_outputs, dtype=torch.bool)
        minimize[rows] = w < 0
        return ObjectiveInfo(minimize, rows)
    if posterior_transform is None:
        return ObjectiveInfo(torch.zeros(num_outputs, dtype=torch.bool), None)
    if not isinstance(posterior_transform, ScalarizedPosteriorTransform):
        raise ValueError(
            "Expected Ax's ScalarizedPosteriorTransform (or None), got "
            f"{type(posterior_transform).__name__}."
        )
    w = posterior_transform.weights.detach()
    if w.shape != (num_outputs,):
        raise ValueError(
            f"The objective weights have shape {tuple(w.shape)} but the model has "
            f"{num_outputs} outputs."
        )
    if (w == 0).any():
        raise ValueError(
            f"Every model output must be an objective, got objective weights {w.tolist()}: "
            "outcome constraints and modelled tracking metrics are not supported by MT-UCB."
        )
    _check_unit_weights(w, "objective weights")
    return ObjectiveInfo(w < 0, None)


def stacked_training_data(
    training_data: SupervisedDataset | dict[str, SupervisedDataset] | None,
) -> tuple[Tensor, Tensor] | None:
    """``(X: N x d, Y: N x n)`` from Ax's training data (one dataset or one per outcome)."""
    if training_data is None:
        return None
    if isinstance(training_data, SupervisedDataset):
        return training_data.X, training_data.Y
    datasets = list(training_data.values())
    X = datasets[0].X
    if any(ds.X.shape != X.shape or not torch.equal(ds.X, X) for ds in datasets[1:]):
        raise ValueError(
            "The objectives were observed at different inputs; the reference point cannot be "
            "derived from the data. Report all objectives for every trial."
        )
    return X, torch.cat([ds.Y for ds in datasets], dim=-1)


def data_reference_point(Y: Tensor, info: ObjectiveInfo, scale: float = REF_POINT_SCALE) -> Tensor:
    """Chebyshev reference point z from observed outcomes (original units of ``Y``).

    z is the nadir of the observed Pareto front pushed back by ``scale`` times the front's
    range in each objective (``scale`` times the magnitude when the front is one point):
    BoTorch's ``infer_reference_point``, the heuristic Ax also uses for missing objective
    thresholds. Every Pareto-optimal observation improves on z.

    Args:
        Y: ``N x n`` observed outcomes.
        info: Directions of the outputs.
        scale: Margin as a fraction of the front's range.

    Returns:
        ``n`` reference point in the units of ``Y`` (not sign-flipped).
    """
    check_finite(Y, "Y")
    if Y.dim() != 2 or Y.shape[0] == 0:
        raise ValueError(f"`Y` must be a non-empty N x n matrix, got {tuple(Y.shape)}.")
    s = info.signs(Y)
    aligned = Y * s
    front = aligned[is_non_dominated(aligned)]
    return infer_reference_point(pareto_Y=front, scale=scale) * s


def trial_generator(seed: int | None, t: int) -> torch.Generator:
    """The random stream of the scalarization drawn for the trial after ``t`` data points.

    ``seed`` given: a deterministic function of ``(seed, t)`` (reproducible experiments).
    ``seed=None``: a draw from torch's global generator mixed with ``t``. The mixing matters:
    ``ax.Client(random_seed=...)`` reseeds the global generator at every
    ``get_next_trials`` call, so the global draw alone would repeat the same λ every trial.

    Args:
        seed: Non-negative integer seed or ``None``.
        t: Number of observed plus pending points (a per-trial counter).

    Returns:
        A CPU ``torch.Generator``.
    """
    if seed is None:
        base = int(torch.randint(0, 2**62, (1,)).item())
    else:
        _check_seed(seed)
        base = seed
    return torch.Generator().manual_seed(_mix(base, int(t)))


def trial_seed(seed: int, t: int, stream: int) -> int:
    """A seed for one random consumer of the trial after ``t`` data points.

    A deterministic function of ``(seed, t, stream)``, independent across streams and of the
    λ stream :func:`trial_generator` ``(seed, t)``.

    Args:
        seed: Non-negative integer seed of the strategy.
        t: Number of data points the trial sees (observed, plus pending where known).
        stream: The consumer: :data:`FIT_STREAM`, :data:`ACQUISITION_STREAM` or
            :data:`OPTIMIZE_STREAM`.

    Returns:
        A seed in [0, 2^63).

    Example:
        >>> trial_seed(0, 6, OPTIMIZE_STREAM) == trial_seed(0, 6, OPTIMIZE_STREAM)
        True
        >>> trial_seed(0, 6, OPTIMIZE_STREAM) != trial_seed(0, 7, OPTIMIZE_STREAM)
        True
    """
    _check_seed(seed)
    return _mix(seed, int(t), int(stream))


@contextmanager
def seeded_trial(seed: int | None, t: int, stream: int) -> Iterator[None]:
    """Run a block on torch's global generator seeded from ``(seed, t, stream)``, then restore it.

    Inside ``torch.random.fork_rng``: the global state (CPU and the visible accelerators) is
    set by ``torch.manual_seed(trial_seed(seed, t, stream))`` and restored on exit, so what
    the block draws (BoTorch's fit restarts, random features redrawn when conditioning,
    ``optimize_acqf``'s initial conditions) depends on ``(seed, t)`` only, never on what ran
    before, and the caller's stream is untouched.
    ``seed=None``: the block runs on the global generator as it is.

    Args:
        seed: Non-negative integer seed or ``None``.
        t: Number of data points the trial sees.
        stream: :data:`FIT_STREAM`, :data:`ACQUISITION_STREAM` or :data:`OPTIMIZE_STREAM`.

    Example:
        >>> with seeded_trial(0, 6, FIT_STREAM):
        ...     a = torch.rand(2)
        >>> _ = torch.rand(3)
        >>> with seeded_trial(0, 6, FIT_STREAM):
        ...     b = torch.rand(2)
        >>> torch.equal(a, b)
        True
    """
    if seed is None:
        yield
        return
    value = trial_seed(seed, t, stream)
    with torch.random.fork_rng():
        torch.manual_seed(value)
        yield


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer or None, got {seed!r}.")


def _mix(*entropy: int) -> int:
    """A 63-bit seed from the integers ``entropy`` (NumPy's ``SeedSequence``)."""
    state = np.random.SeedSequence(list(entropy)).generate_state(1, dtype=np.uint64)[0]
    return int(state) & (2**63 - 1)
