"""One round of paper 000, Algorithm 1: propose q points, observe them, update the model.

* :class:`Proposer` — steps 1–3 for each of the round's q points: draw s_{λ_t}
  (λ_t ~ P_λ), build the acquisition on the current model, x_t = argmax of it; point j > 1
  sees the round's earlier points as pending points (``set_X_pending``, GP-BUCB).
* :class:`ModelUpdater` — step 5: the model conditioned on the round's observed points,
  refitted, or updated by a user rule (step 4, observing, is
  :func:`~botorch_mtucb.loop.failures.evaluate`).
* :func:`round_records` — step 6: one :class:`~botorch_mtucb.loop.history.RoundRecord` per
  point (x_t, y_t, λ_t, β_{t−1}, wall time, regret, Nyström dictionary size).
* :func:`gaussian_observer` — an ``observe`` with Gaussian noise, for known test functions.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions import UnsupportedError
from botorch.models.model import Model, ModelList
from torch import Tensor

from botorch_mtucb.acquisition.pending import condition_model, has_known_noise
from botorch_mtucb.acquisition.protocols import (
    AvoidingOptimizer,
    ConfidenceWidthAcquisition,
    ModelAnchoredSampler,
    RoundAwareOptimizer,
)
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.loop.defaults import RefitRule, refit_due
from botorch_mtucb.loop.history import RoundRecord
from botorch_mtucb.protocols import DictionaryModel

__all__ = [
    "LoopState",
    "ModelUpdater",
    "Proposal",
    "Proposer",
    "dictionary_size",
    "gaussian_observer",
    "round_records",
]

#: ``update`` of :func:`~botorch_mtucb.loop.run_bo_loop`: a name or ``(model, X, Y) -> Model``.
UpdateRule = Literal["condition", "refit"] | Callable[[Model, Tensor, Tensor], Model]

#: ``(s_λ or None, 1 x d point) -> r_t``, e.g. a
#: :class:`~botorch_mtucb.loop.regret.ScalarizedRegret`.
RegretFn = Callable[[Scalarization | None, Tensor], float]


def gaussian_observer(
    f: Callable[[Tensor], Tensor], noise_std: float, generator: torch.Generator | None = None
) -> Callable[[Tensor], Tensor]:
    """``observe(X) = f(X) + noise_std · ε``, ε ~ N(0, I), seedable with ``generator``.

    Args:
        f: Noise-free objective ``N x d -> N x n``.
        noise_std: Standard deviation σ of the Gaussian noise.
        generator: Generator of the noise draws (float64 draws, cast to f's dtype).

    Returns:
        ``observe``: ``N x d -> N x n`` noisy observations.

    Example:
        >>> observe = gaussian_observer(lambda X: X.sum(-1, keepdim=True), 0.1,
        ...                             torch.Generator().manual_seed(0))
        >>> observe(torch.zeros(3, 2, dtype=torch.float64)).shape
        torch.Size([3, 1])
    """

    def observe(X: Tensor) -> Tensor:
        F = f(X)
        eps = torch.randn(F.shape, generator=generator, dtype=torch.float64).to(F)
        return F + noise_std * eps

    return observe


@dataclass
class Proposal:
    """One point chosen in a round (steps 1–3).

    Attributes:
        x: ``1 x d`` chosen point.
        scalarization: s_{λ_t} it was chosen for (``None`` in single-objective runs).
        acqf: The acquisition it maximised.
        wall_time: Seconds of steps 1–3 for this point (the first point also carries the
            round's payoff-table computation).
    """

    x: Tensor
    scalarization: Scalarization | None
    acqf: AcquisitionFunction
    wall_time: float


@dataclass
class LoopState:
    """What a run carries from round to round.

    Attributes:
        X: ``N x d`` every input observed so far (initial design included).
        Y: ``N x n`` their observations.
        model: The current model.
        N_fit: Number of observations at the last ``model_factory`` fit.
        failed_X: ``F x d`` inputs whose evaluation failed (``None``: none); every later
            proposal sees them as pending points, and an optimizer with ``avoid`` (the
            default) never returns them.
    """

    X: Tensor
    Y: Tensor
    model: Model
    N_fit: int
    failed_X: Tensor | None = None

    def add_failed(self, X_failed: Tensor) -> None:
        """Append ``k x d`` failed inputs to :attr:`failed_X` (nothing when ``k = 0``)."""
        if X_failed.shape[0] == 0:
            return
        X_failed = X_failed.to(self.X)
        self.failed_X = X_failed if self.failed_X is None else torch.cat([self.failed_X, X_failed])


@dataclass
class Proposer:
    """Steps 1–3 of Algorithm 1 for the q points of a round.

    Attributes:
        acquisition_factory: ``(model, s_λ or None) -> AcquisitionFunction``.
        optimizer: ``acqf -> 1 x d`` maximiser.
        sampler: ``generator -> s_λ`` (or one taking the data ``Y``, or the round's payoff
            table: ``uses_data`` / ``uses_model``); ``None`` for single-objective runs.
        generator: Generator of the λ_t draws.
        box: ``2 x d`` search box (needed by a sampler with ``uses_model``).
        seed: Base seed; round t computes the payoff table with seed ``seed + 2 + t``.
    """

    acquisition_factory: Callable[[Model, Scalarization | None], AcquisitionFunction]
    optimizer: Callable[[AcquisitionFunction], Tensor]
    sampler: Callable[..., Scalarization] | None
    generator: torch.Generator | None
    box: Tensor | None
    seed: int
    anchored: bool = field(init=False)
    _warned_failed: bool = field(default=False, init=False, repr=False)
    _warned_repeat: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self.anchored = isinstance(self.sampler, ModelAnchoredSampler) and bool(
            self.sampler.uses_model
        )
        if self.anchored and self.box is None:
            raise ValueError(
                "A scalarization sampler with a predicted front (front='predicted') needs the "
                "search box for the model's payoff table: pass `bounds=` (2 x d)."
            )

    def propose(self, state: LoopState, t: int, q: int) -> list[Proposal]:
        """The round's ``q`` points, each with its own λ (one λ per point, not per batch).

        Args:
            state: The run's data and current model.
            t: Round index, 1-based.
            q: Number of points.

        Returns:
            ``q`` proposals, in the order chosen.
        """
        start = time.perf_counter()
        if isinstance(self.optimizer, RoundAwareOptimizer):
            self.optimizer.new_round()
        predicted = None
        if self.anchored:  # the model's payoff table, once per round (its time: the first point's)
            predicted = self.sampler.anchors(state.model, self.box, state.Y, seed=self.seed + 2 + t)
        anchor_time = time.perf_counter() - start
        points: list[Proposal] = []
        for j in range(q):
            start = time.perf_counter()
            x, scal, acqf = self._point(state, predicted, points, t)
            wall = time.perf_counter() - start + (anchor_time if j == 0 else 0.0)
            points.append(Proposal(x, scal, acqf, wall))
        return points

    def scalarization(self, Y: Tensor, predicted: Tensor | None) -> Scalarization | None:
        """Step 1: s_{λ_t} with λ_t ~ P_λ (from the data ``Y`` and the payoff table
        ``predicted`` when the sampler uses them); ``None`` without a sampler."""
        if self.anchored:
            return self.sampler(self.generator, Y, predicted=predicted)
        if getattr(self.sampler, "uses_data", False):  # scale-free, from data
            return self.sampler(self.generator, Y)
        if self.sampler is not None:
            return self.sampler(self.generator)
        return None

    def _point(
        self, state: LoopState, predicted: Tensor | None, pending: list[Proposal], t: int
    ) -> tuple[Tensor, Scalarization | None, AcquisitionFunction]:
        """Steps 1–3 for one point, the round's earlier points pending."""
        scal = self.scalarization(state.Y, predicted)
        acqf = self.acquisition_factory(state.model, scal)
        if pending:
            failed = [] if state.failed_X is None else [state.failed_X]
            _set_pending(acqf, torch.cat(failed + [p.x for p in pending]))
        elif state.failed_X is not None:
            self._avoid_failed(acqf, state.failed_X)
        if isinstance(self.optimizer, AvoidingOptimizer):
            self.optimizer.avoid(state.failed_X)
        x = self.optimizer(acqf).reshape(1, -1).to(state.X)
        if state.failed_X is not None and not self._warned_repeat:
            self._warn_failed_repeat(x, state.failed_X.to(x))
        repeat = pending and any(torch.equal(x, p.x) for p in pending)
        if repeat and not self._arms_exhausted(state.X, pending):
            warnings.warn(
                f"Point {len(pending) + 1} of round {t} repeats an earlier point of the round: "
                f"does {type(acqf).__name__} use its pending points (set_X_pending, GP-BUCB)?",
                RuntimeWarning,
                stacklevel=5,  # the caller of run_bo_loop
            )
        return x, scal, acqf

    def _warn_failed_repeat(self, x: Tensor, X_failed: Tensor) -> None:
        """Warn (once per run) when the optimizer returns an input that failed before: one
        that cannot be told to avoid it (no ``avoid``) may, as the pending points only take
        the width there."""
        if bool((X_failed == x).all(dim=-1).any()):
            self._warned_repeat = True
            warnings.warn(
                f"{type(self.optimizer).__name__} proposed an input whose evaluation failed "
                "before; it is evaluated again. The default optimizer (DedupOptimizer) avoids "
                "failed inputs; an optimizer with `avoid(X_failed)` "
                "(acquisition.protocols.AvoidingOptimizer) can too.",
                RuntimeWarning,
                stacklevel=6,  # the caller of run_bo_loop
            )

    def _arms_exhausted(self, X: Tensor, pending: list[Proposal]) -> bool:
        """Whether a finite-arm optimizer's every arm is evaluated or pending (then any point
        repeats one, whatever the acquisition does with its pending points)."""
        arms = getattr(self.optimizer, "choices", None)
        if not isinstance(arms, Tensor):
            return False
        known = torch.cat([X, *[p.x for p in pending]]).to(arms)
        return bool((arms.unsqueeze(-2) == known).all(-1).any(-1).all())

    def _avoid_failed(self, acqf: AcquisitionFunction, X_failed: Tensor) -> None:
        """The failed inputs as ``acqf``'s pending points (GP-BUCB: hallucinated at their
        means, so the acquisition no longer rewards them); one warning per run for an
        acquisition that takes no pending points."""
        try:
            acqf.set_X_pending(X_failed)
        except (NotImplementedError, UnsupportedError, AttributeError):
            if not self._warned_failed:
                self._warned_failed = True
                warnings.warn(
                    f"{type(acqf).__name__} takes no pending points (set_X_pending), so the "
                    f"{X_failed.shape[0]} failed point(s) may be proposed again; use an "
                    "acquisition with pending points or on_failure='raise'.",
                    RuntimeWarning,
                    stacklevel=6,  # the caller of run_bo_loop
                )


@dataclass(frozen=True)
class ModelUpdater:
    """Step 5 of Algorithm 1: update the model with the round's observed points.

    The model is refitted (``model_factory`` on all data) when ``update="refit"`` or the
    ``refit_every`` rule says so; otherwise conditioned on the round's new points
    (``update="condition"``: ``condition_on_observations``) or passed to a user
    ``update(model, X_new, Y_new)``. Failed evaluations never reach it: a round whose every
    point failed leaves the model as it was.

    Attributes:
        model_factory: ``(X, Y) -> Model`` fitted on all data.
        update: ``"condition"``, ``"refit"`` or ``(model, k x d, k x n) -> Model``.
        refit_every: Refit rule (an int k, or ``(t, N, N_fit) -> bool``).
    """

    model_factory: Callable[[Tensor, Tensor], Model]
    update: UpdateRule
    refit_every: RefitRule

    def __call__(self, state: LoopState, t: int, X_new: Tensor, Y_new: Tensor) -> None:
        """Append ``X_new`` (``k x d``) and ``Y_new`` (``k x n``, finite) to ``state`` and
        update its model (nothing when ``k = 0``)."""
        if X_new.shape[0] == 0:
            return
        state.X = torch.cat([state.X, X_new])
        state.Y = torch.cat([state.Y, Y_new.to(state.Y)])
        if (
            self.update == "refit"
            or refit_due(self.refit_every, t, state.X.shape[0], state.N_fit)
            or (self.update == "condition" and has_known_noise(state.model))
        ):  # known noise: only the factory knows the new rows' variances
            state.model = self.model_factory(state.X, state.Y)
            state.N_fit = state.X.shape[0]
        elif self.update == "condition":
            state.model = condition_model(state.model, X_new, Y_new)
        else:
            state.model = self.update(state.model, X_new, Y_new)


def round_records(
    proposals: list[Proposal],
    Y_round: Tensor,
    update_time: float,
    model: Model | None,
    batch: int,
    first_t: int,
    regret: RegretFn | None = None,
    ok: Tensor | None = None,
    error: str | None = None,
) -> list[RoundRecord]:
    """Step 6: one record per point of round ``batch``.

    Args:
        proposals: The round's ``q`` proposals.
        Y_round: ``q x n`` their observations (non-finite where an evaluation failed).
        update_time: Seconds of steps 4–5 (charged to the round's last point).
        model: The updated model (for its Nyström dictionary size).
        batch: Round index, 1-based.
        first_t: Evaluation index of the round's first point, 1-based.
        regret: ``(s_λ, x) -> r_t``, or ``None`` when f is unknown (the regret of a failed
            evaluation is that of its choice x_t).
        ok: ``q`` booleans, ``False`` for a failed evaluation (all ``True`` when ``None``).
        error: Why the round's failed evaluations failed.

    Returns:
        ``q`` :class:`~botorch_mtucb.loop.history.RoundRecord` objects.
    """
    size = dictionary_size(model)
    last = len(proposals) - 1
    failed = [False] * len(proposals) if ok is None else [not bool(v) for v in ok.tolist()]
    return [
        RoundRecord(
            t=first_t + j,
            x=p.x[0],
            y=Y_round[j],
            weights=None if p.scalarization is None else p.scalarization.weights.clone(),
            regret=None if regret is None else regret(p.scalarization, p.x),
            beta=_scalar_beta(p.acqf),
            wall_time=p.wall_time + (update_time if j == last else 0.0),
            dictionary_size=size,
            batch=batch,
            failed=failed[j],
            error=error if failed[j] else None,
        )
        for j, p in enumerate(proposals)
    ]


def dictionary_size(model: Model | None) -> int | None:
    """m_t of a Nyström model (also inside a ModelList: the sum over its members); ``None``
    for a model without a dictionary."""
    if isinstance(model, ModelList):
        sizes = [dictionary_size(m) for m in model.models]
        return None if any(s is None for s in sizes) else sum(sizes)
    return int(model.dictionary_size) if isinstance(model, DictionaryModel) else None


def _scalar_beta(acqf: AcquisitionFunction) -> float | None:
    """The acquisition's β when it exposes a single one."""
    beta = acqf.beta if isinstance(acqf, ConfidenceWidthAcquisition) else None
    if beta is None or torch.as_tensor(beta).numel() != 1:
        return None
    return float(beta)


def _set_pending(acqf: AcquisitionFunction, X_pending: Tensor) -> None:
    """``acqf.set_X_pending(X_pending)`` with a clear error for acquisitions without it."""
    try:
        acqf.set_X_pending(X_pending)
    except (NotImplementedError, UnsupportedError) as err:
        raise ValueError(
            f"`q` > 1 needs an acquisition that takes pending points (GP-BUCB); "
            f"{type(acqf).__name__}.set_X_pending refused them: {err}"
        ) from err
