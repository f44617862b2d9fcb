"""The one Bayesian-optimisation loop: MT-KB / MT-BKB / IT-KB / MOBO and, with n = 1, TGP / ATA.

Paper 000, Algorithm 1, written once. Each round t = 1, …, T:

1. draw a random scalarization s_{λ_t}, λ_t ~ P_λ (skipped for single-objective problems);
2. build the acquisition on the current model (``acquisition_factory(model, s_{λ_t})``; the
   scalarized UCB evaluates its β schedule on the model here, giving β_{t−1});
3. x_t = argmax of the acquisition (``optimizer``: ``optimize_acqf`` on a box, or exhaustive
   over a finite arm set);
4. observe y_t = f(x_t) + ε_t (``observe``);
5. update the model with (x_t, y_t) (``condition_on_observations`` by default, or a refit);
6. record x_t, y_t, λ_t, β_{t−1}, the wall time of steps 1–5, and — when the true f is
   known — the instantaneous scalarized regret r_t = s_{λ_t}(f(x*_{λ_t})) − s_{λ_t}(f(x_t)).

Steps 1–3 are :class:`~botorch_mtucb.loop.rounds.Proposer`, steps 4–5
:class:`~botorch_mtucb.loop.rounds.ModelUpdater`, step 6
:func:`~botorch_mtucb.loop.rounds.round_records` with
:class:`~botorch_mtucb.loop.regret.ScalarizedRegret`; this module resolves the arguments
(:mod:`botorch_mtucb.loop.defaults` for the ones not given) and runs the rounds.

**Batches (``q > 1``).** A round then chooses q points ahead of observing any of them: point
j repeats steps 1–3 with the j − 1 points already chosen in the round as pending points
(``acqf.set_X_pending``: GP-BUCB, the model conditioned on hallucinated means, see
:mod:`botorch_mtucb.acquisition.pending`); steps 4–5 then observe and add all q at once.
**One λ per point, not per batch:** every evaluation is an ordinary step of Algorithm 1 with
its own λ_t ~ P_λ, so the scalarized regret Σ_t r_t (and its expectation over P_λ, the Bayes
regret) is defined and bounded evaluation by evaluation exactly as for q = 1 (with GP-BUCB's
inflated β for the hallucinated widths), q = 1 reproduces the sequential loop draw for draw,
and a batch spreads over different parts of the Pareto front instead of q nearby optima of
one s_λ (a shared λ would leave only the width shrinkage to separate the points). Each point
is one :class:`~botorch_mtucb.loop.history.RoundRecord` (``t`` counts evaluations, ``batch``
the rounds).

On a continuous domain the maximiser x*_λ is approximated by the best point of a dense
``regret_X`` set (together with x_t itself, so r_t ≥ 0), optionally polished by a local
ascent of the true objective inside ``regret_bounds``
(:func:`~botorch_mtucb.utils.optimum.polish_maxima`); on a finite arm set it is exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.optimizers import FiniteArmOptimizer
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.loop.callbacks import LoopCallback, ProgressBar
from botorch_mtucb.loop.defaults import (
    RefitRule,
    RefitSchedule,
    check_refit_rule,
    default_initial_X,
    default_optimizer,
    default_sampler,
    draw_seed,
    practical_model_factory,
    resolve_box,
    scalarized_ucb_factory,
)
from botorch_mtucb.loop.history import LoopHistory
from botorch_mtucb.loop.regret import ScalarizedRegret
from botorch_mtucb.loop.rounds import (
    LoopState,
    ModelUpdater,
    Proposer,
    UpdateRule,
    round_records,
)
from botorch_mtucb.utils.validation import check_finite

__all__ = ["run_bo_loop"]


def run_bo_loop(
    observe: Callable[[Tensor], Tensor],
    initial_X: Tensor | None = None,
    num_rounds: int | None = None,
    model_factory: Callable[[Tensor, Tensor], Model] | None = None,
    acquisition_factory: Callable[[Model, Scalarization | None], AcquisitionFunction]
    | None = None,
    optimizer: Callable[[AcquisitionFunction], Tensor] | None = None,
    scalarization_sampler: Callable[[torch.Generator | None], Scalarization] | None = None,
    true_f: Callable[[Tensor], Tensor] | None = None,
    regret_X: Tensor | None = None,
    regret_bounds: Tensor | None = None,
    update: UpdateRule = "condition",
    refit_every: RefitRule | None = None,
    generator: torch.Generator | None = None,
    progress: bool = False,
    q: int = 1,
    bounds: Tensor | None = None,
    callbacks: Sequence[LoopCallback] = (),
) -> LoopHistory:
    """Run T rounds of scalarized (or single-objective) optimistic BO (paper 000,
    Algorithm 1; see the module docstring).

    Each evaluation t maximises a UCB of s_{λ_t}(f(x)) with a fresh λ_t ~ P_λ (paper 000,
    eq. (2) with the default acquisition), observes y_t = f(x_t) + ε_t and updates the
    model. Every argument but ``observe`` and ``num_rounds`` has a practical default
    (:mod:`botorch_mtucb.loop.defaults`): ``run_bo_loop(observe, num_rounds=30,
    bounds=bounds)`` runs MT-UCB from a Sobol design with the fitted practical model, the
    scale-free Chebyshev scalarization and the default width.

    Args:
        observe: ``N x d -> N x n`` noisy observations (objectives maximised unless the
            scalarizations say otherwise).
        initial_X: ``N0 x d`` initial design, observed ahead of round 1. ``N0 = 0`` (the
            paper's start with no data) works when ``observe`` maps an empty batch to a
            ``0 x n`` tensor and ``model_factory`` accepts empty data. Default (needs the
            box: ``bounds`` or a :class:`BoxOptimizer`): a scrambled Sobol design of
            :func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2d) points.
        num_rounds: Number of rounds T (``T · q`` evaluations); required.
        model_factory: ``(X, Y) -> Model`` fitted on the initial data (and on all data for
            ``update="refit"`` and the refits of ``refit_every``). Default (needs the box):
            :func:`~botorch_mtucb.models.practical_multitask_gp` on ``bounds``.
        acquisition_factory: ``(model, s_λ or None) -> AcquisitionFunction`` (q = 1).
            Default: :func:`scalarized_ucb_factory` () (directional bound, the default β of
            :class:`ScalarizedMultiTaskUCB`).
        optimizer: ``acqf -> 1 x d`` maximiser (:class:`BoxOptimizer`,
            :class:`FiniteArmOptimizer`, or any callable). Default (needs ``bounds``):
            ``BoxOptimizer(bounds, num_restarts=4, raw_samples=256)`` seeded from
            ``generator``.
        scalarization_sampler: ``generator -> s_λ`` drawing λ_t ~ P_λ each round (e.g.
            :class:`~botorch_mtucb.acquisition.ScalarizationSampler`); ``None`` for n = 1.
            With the default acquisition: ``ScalarizationSampler(n, "chebyshev",
            ref_point="data", front="predicted")`` (scale-free, augmented, reference point
            and ranges from the observed and the model-predicted front; n ≥ 2;
            ``front="observed"`` without a box). A sampler with ``front="predicted"`` gets the
            round's payoff table (its ``anchors``, computed once per round).
        true_f: Noise-free ``N x d -> N x n`` objective, to record regret.
        regret_X: ``M x d`` points over which max_x s_λ(f(x)) is taken; defaults to the arms of
            a :class:`FiniteArmOptimizer`.
        regret_bounds: ``2 x d`` box of a continuous domain. If given, the best point of
            ``regret_X`` is polished by SLSQP on x ↦ s_{λ_t}(f(x)) within the box
            (``true_f`` must then be differentiable with torch autograd), so x*_{λ_t} is not
            limited to the grid's resolution.
        update: ``"condition"`` (``condition_on_observations``), ``"refit"``
            (``model_factory`` on all data), or ``(model, X_round, Y_round) -> Model`` (``q x d``,
            ``q x n``: the round's points).
        refit_every: When to call ``model_factory`` on all data instead of ``update``
            (condition cheaply, refit hyperparameters now and then): an int ``k > 0`` (after
            every k-th round), 0 (never), or ``(t, N, N_fit) -> bool`` such as
            :class:`~botorch_mtucb.loop.defaults.RefitSchedule`. Default:
            ``RefitSchedule()`` (every round up to N = 20, then when N has grown by a tenth
            since the last fit) with the default model, 0 with a given ``model_factory``
            (its hyperparameters are the caller's).
        generator: ``torch.Generator`` for the λ_t draws (and the seed of the default design
            and optimizer).
        progress: Show a tqdm progress bar with the running time-average regret
            (:class:`~botorch_mtucb.loop.callbacks.ProgressBar`).
        q: Batch size: points chosen per round ahead of observing them (module docstring;
            the acquisition must support ``set_X_pending`` when ``q > 1``). One λ_t per point.
        bounds: ``2 x d`` box of the domain, for the default design, model and optimizer
            (taken from a :class:`BoxOptimizer` when not given; both must then agree).
        callbacks: ``callback(record)`` for each new
            :class:`~botorch_mtucb.loop.history.RoundRecord`, in order, once per evaluation.

    Returns:
        The :class:`~botorch_mtucb.loop.history.LoopHistory`: the initial data, ``T · q``
        records and the final model.

    Example:
        >>> from botorch.test_functions.multi_objective import BraninCurrin
        >>> problem = BraninCurrin(negate=True).to(torch.float64)
        >>> history = run_bo_loop(problem, num_rounds=2, bounds=problem.bounds,
        ...                       generator=torch.Generator().manual_seed(0),
        ...                       callbacks=[lambda r: print(r.t, tuple(r.x.shape))])
        1 (2,)
        2 (2,)
        >>> history.X.shape, history.Y.shape   # T x d, T x n
        (torch.Size([2, 2]), torch.Size([2, 2]))
    """
    setup = _resolve_arguments(
        initial_X, num_rounds, model_factory, acquisition_factory, optimizer, true_f,
        regret_X, regret_bounds, update, refit_every, generator, q, bounds,
    )
    state, history, proposer = _start(observe, setup, scalarization_sampler, generator)
    updater = ModelUpdater(observe, setup.model_factory, update, setup.refit_every)
    bar = ProgressBar(num_rounds) if progress else None
    notify = tuple(callbacks) if bar is None else (*callbacks, bar)
    try:
        for t in range(1, num_rounds + 1):
            _run_round(t, q, state, proposer, updater, setup.regret, history, notify)
    finally:
        if bar is not None:
            bar.close()
    history.model = state.model
    return history


@dataclass
class _Setup:
    """The resolved arguments of one run (defaults filled in, everything validated)."""

    initial_X: Tensor
    box: Tensor | None
    seed: int
    model_factory: Callable[[Tensor, Tensor], Model]
    acquisition_factory: Callable[[Model, Scalarization | None], AcquisitionFunction]
    optimizer: Callable[[AcquisitionFunction], Tensor]
    refit_every: RefitRule
    regret: ScalarizedRegret | None
    default_acquisition: bool


def _resolve_arguments(
    initial_X: Tensor | None,
    num_rounds: int | None,
    model_factory: Callable[[Tensor, Tensor], Model] | None,
    acquisition_factory: Callable[[Model, Scalarization | None], AcquisitionFunction] | None,
    optimizer: Callable[[AcquisitionFunction], Tensor] | None,
    true_f: Callable[[Tensor], Tensor] | None,
    regret_X: Tensor | None,
    regret_bounds: Tensor | None,
    update: UpdateRule,
    refit_every: RefitRule | None,
    generator: torch.Generator | None,
    q: int,
    bounds: Tensor | None,
) -> _Setup:
    """Validate the arguments of :func:`run_bo_loop` and fill in the defaults, in the order
    that fixes the seeded draws (the seed, then the design and the optimizer from it)."""
    _check_count(num_rounds, "`num_rounds` must be an integer >= 0", minimum=0)
    if initial_X is not None:
        check_finite(initial_X, "initial_X")
    box = resolve_box(bounds, optimizer, initial_X)
    seed = draw_seed(generator) if initial_X is None or optimizer is None else 0
    initial_X = _resolve_initial_X(initial_X, box, seed)
    if update not in ("condition", "refit") and not callable(update):
        raise ValueError(f"`update` must be 'condition', 'refit' or a callable, got {update!r}.")
    if refit_every is None:
        refit_every = RefitSchedule() if model_factory is None else 0
    check_refit_rule(refit_every)
    model_factory = _resolve_model_factory(model_factory, box)
    default_acquisition = acquisition_factory is None
    if default_acquisition:
        acquisition_factory = scalarized_ucb_factory()
    if optimizer is None:
        optimizer = default_optimizer(box, seed + 1)
    _check_count(q, "`q` (batch size) must be a positive integer", minimum=1)
    regret = _resolve_regret(true_f, regret_X, regret_bounds, optimizer, initial_X.shape[-1])
    return _Setup(initial_X, box, seed, model_factory, acquisition_factory, optimizer,
                  refit_every, regret, default_acquisition)


def _check_count(value: object, message: str, minimum: int) -> None:
    """Raise ``ValueError(message)`` unless ``value`` is an int (not a bool) ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{message}, got {value!r}.")


def _resolve_initial_X(initial_X: Tensor | None, box: Tensor | None, seed: int) -> Tensor:
    """``initial_X``, or the Sobol design on ``box``; checked to be a finite ``N0 x d``."""
    if initial_X is None:
        initial_X = default_initial_X(box, seed)
    check_finite(initial_X, "initial_X")
    if initial_X.dim() != 2 or not initial_X.is_floating_point():
        raise ValueError(
            f"`initial_X` must be a floating N0 x d tensor, got shape {tuple(initial_X.shape)}."
        )
    return initial_X


def _resolve_model_factory(
    model_factory: Callable[[Tensor, Tensor], Model] | None, box: Tensor | None
) -> Callable[[Tensor, Tensor], Model]:
    """``model_factory``, or the practical model on ``box``."""
    if model_factory is not None:
        return model_factory
    if box is None:
        raise ValueError(
            "`model_factory=None` (practical_multitask_gp on the box) needs `bounds=` "
            "(2 x d) or a BoxOptimizer."
        )
    return practical_model_factory(box)


def _resolve_regret(
    true_f: Callable[[Tensor], Tensor] | None,
    regret_X: Tensor | None,
    regret_bounds: Tensor | None,
    optimizer: Callable[[AcquisitionFunction], Tensor],
    d: int,
) -> ScalarizedRegret | None:
    """The regret metric when ``true_f`` is known (reference points default to the arms of
    a :class:`FiniteArmOptimizer`), else ``None``."""
    if true_f is not None and regret_X is None:
        regret_X = optimizer.choices if isinstance(optimizer, FiniteArmOptimizer) else None
        if regret_X is None:
            raise ValueError(
                "`regret_X` (a dense set of points to approximate max_x s_λ(f(x))) is needed to "
                "record regret with a continuous optimizer."
            )
    if regret_bounds is not None:
        if true_f is None:
            raise ValueError("`regret_bounds` needs `true_f` (the objective to polish x*_λ on).")
        if regret_bounds.shape != (2, d):
            raise ValueError(
                f"`regret_bounds` must be 2 x d = (2, {d}), got {tuple(regret_bounds.shape)}."
            )
    return None if true_f is None else ScalarizedRegret(true_f, regret_X, regret_bounds)


def _start(
    observe: Callable[[Tensor], Tensor],
    setup: _Setup,
    sampler: Callable[..., Scalarization] | None,
    generator: torch.Generator | None,
) -> tuple[LoopState, LoopHistory, Proposer]:
    """Observe the initial design, pick the default sampler for its n, fit the first model."""
    X = setup.initial_X.clone()
    Y = observe(X).detach()
    check_finite(Y, "observe(initial_X)")
    if Y.dim() != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"`observe` must return an N x n tensor, got shape {tuple(Y.shape)}.")
    history = LoopHistory(initial_X=X.clone(), initial_Y=Y.clone())
    if setup.default_acquisition and sampler is None:
        sampler = default_sampler(Y.shape[-1], predicted_front=setup.box is not None)
    proposer = Proposer(
        setup.acquisition_factory, setup.optimizer, sampler, generator, setup.box, setup.seed
    )
    state = LoopState(X=X, Y=Y, model=setup.model_factory(X, Y), N_fit=X.shape[0])
    return state, history, proposer


def _run_round(
    t: int,
    q: int,
    state: LoopState,
    proposer: Proposer,
    updater: ModelUpdater,
    regret: ScalarizedRegret | None,
    history: LoopHistory,
    callbacks: Sequence[LoopCallback],
) -> None:
    """Round t: propose q points, observe them, update the model, record and notify."""
    proposals = proposer.propose(state, t, q)
    start = time.perf_counter()
    Y_round = updater(state, t, torch.cat([p.x for p in proposals]))
    update_time = time.perf_counter() - start
    first_t = len(history.rounds) + 1
    for record in round_records(proposals, Y_round, update_time, state.model, t, first_t, regret):
        history.rounds.append(record)
        for callback in callbacks:
            callback(record)
