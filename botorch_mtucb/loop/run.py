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

**Trust.** A run given a ``generator`` is reproducible from it alone, and leaves torch's global
RNG as it found it (:mod:`botorch_mtucb.loop.seeding`). A failed evaluation (``observe`` raises
or returns NaN) is recorded and never given to the model, and its input is a pending point of
every later proposal (``set_X_pending``, hallucinated at its mean) and is avoided by the
default optimizer (``DedupOptimizer.avoid``), so that it is not proposed again (another
optimizer may return it; the loop then warns); ``on_failure`` says whether the loop stops
(:class:`~botorch_mtucb.loop.failures.LoopInterrupted`, carrying the history) or goes on
(:mod:`botorch_mtucb.loop.failures`). Any other exception, ``KeyboardInterrupt`` included,
leaves with the history attached as its ``history`` attribute. A history saved with
:meth:`~botorch_mtucb.loop.history.LoopHistory.save` continues with ``history=``: the initial
design is not observed again, the model is fitted on the history's observed data, and the
seeds and the generator continue where they stopped.

On a continuous domain the maximiser x*_λ is approximated by the best point of a dense
``regret_X`` set (together with x_t itself, so r_t ≥ 0), optionally polished by a local
ascent of the true objective inside ``regret_bounds``
(:func:`~botorch_mtucb.utils.optimum.polish_maxima`); on a finite arm set it is exact.
"""

from __future__ import annotations

import contextlib
import math
import operator
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
    practical_acquisition_factory,
    practical_model_factory,
    resolve_box,
)
from botorch_mtucb.loop.failures import (
    FailurePolicy,
    LoopInterrupted,
    RoundEvaluation,
    check_failure_policy,
    classify,
    evaluate,
)
from botorch_mtucb.loop.history import LoopHistory, RoundRecord
from botorch_mtucb.loop.regret import ScalarizedRegret
from botorch_mtucb.loop.rounds import (
    LoopState,
    ModelUpdater,
    Proposal,
    Proposer,
    UpdateRule,
    round_records,
)
from botorch_mtucb.loop.seeding import peek_seed, seeded_phases
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
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
    minimize: Sequence[int] | None = None,
    on_failure: FailurePolicy = "raise",
    history: LoopHistory | None = None,
) -> LoopHistory:
    """Run T rounds of scalarized (or single-objective) optimistic BO (paper 000,
    Algorithm 1; see the module docstring).

    Each evaluation t maximises an acquisition built from the current model and a fresh
    s_{λ_t}, λ_t ~ P_λ (paper 000, Algorithm 1: a UCB of s_{λ_t}(f(x)), eq. (2), with
    ``acquisition_factory=scalarized_ucb_factory()``), observes y_t = f(x_t) + ε_t and updates
    the model. Every argument but ``observe`` and ``num_rounds`` has a practical default
    (:mod:`botorch_mtucb.loop.defaults`): ``run_bo_loop(observe, num_rounds=30,
    bounds=bounds)`` runs from a Sobol design with the fitted practical model, the scale-free
    Chebyshev sampler and :func:`~botorch_mtucb.loop.defaults.practical_acquisition_factory`:
    the UCB of the hypervolume improvement for n ≤ 4 objectives, the scalarized UCB (MT-UCB)
    for more, both at the default width.

    Args:
        observe: ``N x d -> N x n`` noisy observations (a tensor, or a NumPy array converted
            to ``X``'s dtype and device). Objectives are maximised unless listed in
            ``minimize`` (or marked by the scalarizations). Raising an ``Exception`` or
            returning NaN / inf is a failed evaluation (``on_failure``); on the initial
            design, NaN / inf rows are failed evaluations and an exception propagates
            (nothing is completed yet).
        initial_X: ``N0 x d`` initial design, observed ahead of round 1. ``N0 = 0`` (the
            paper's start with no data) works when ``observe`` maps an empty batch to a
            ``0 x n`` tensor and ``model_factory`` accepts empty data. Default (needs the
            box: ``bounds`` or a :class:`BoxOptimizer`): a scrambled Sobol design of
            :func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2d) points. Not
            given with ``history``.
        num_rounds: Number of rounds T (``T · q`` evaluations; with ``history``, the rounds
            to add); required.
        model_factory: ``(X, Y) -> Model`` fitted on the initial data (and on all data for
            ``update="refit"`` and the refits of ``refit_every``). Default (needs the box):
            :func:`~botorch_mtucb.models.practical_multitask_gp` on ``bounds``.
        acquisition_factory: ``(model, s_λ or None) -> AcquisitionFunction`` (q = 1).
            Default: :func:`~botorch_mtucb.loop.defaults.practical_acquisition_factory` ()
            (:class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB` for n ≤ 4
            objectives, :class:`ScalarizedMultiTaskUCB` with the directional bound for more;
            the default β of each). Paper 000's rule at every n:
            :func:`~botorch_mtucb.loop.defaults.scalarized_ucb_factory` ().
        optimizer: ``acqf -> 1 x d`` maximiser (:class:`BoxOptimizer`,
            :class:`FiniteArmOptimizer`, or any callable). Default (needs ``bounds``):
            ``DedupOptimizer(bounds, num_restarts=4, raw_samples=256)`` (never an evaluated
            point) seeded from ``generator``.
        scalarization_sampler: ``generator -> s_λ`` drawing λ_t ~ P_λ each round (e.g.
            :class:`~botorch_mtucb.acquisition.ScalarizationSampler`); ``None`` for n = 1.
            With the default acquisition (or a factory with ``uses_default_sampler = True``,
            such as :func:`hypervolume_ucb_factory` ()): ``ScalarizationSampler(n, "chebyshev",
            ref_point="data", front="predicted", minimize=...)`` (scale-free, augmented,
            reference point and ranges from the observed and the model-predicted front;
            n ≥ 2; ``front="observed"`` without a box, or for a factory with a known
            ``ref_point`` such as ``log_ehvi_factory(ref_point=z)``, whose acquisition takes
            only the minimised objectives from the scalarization). A sampler with
            ``front="predicted"`` gets the round's payoff table (its ``anchors``, computed
            once per round).
        true_f: Noise-free ``N x d -> N x n`` objective, to record regret.
        regret_X: ``M x d`` points over which max_x s_λ(f(x)) is taken; defaults to the arms of
            a :class:`FiniteArmOptimizer`.
        regret_bounds: ``2 x d`` box of a continuous domain. If given, the best point of
            ``regret_X`` is polished by SLSQP on x ↦ s_λ(f(x)) within the box
            (``true_f`` must then be differentiable with torch autograd), so x*_{λ_t} is not
            limited to the grid's resolution.
        update: ``"condition"`` (``condition_on_observations``; a model with known noise
            variances, ``train_Yvar``, is refitted instead, since only ``model_factory``
            knows the new rows' variances), ``"refit"`` (``model_factory`` on all data), or
            ``(model, X_new, Y_new) -> Model`` (``k x d``, ``k x n``: the round's observed
            points).
        refit_every: When to call ``model_factory`` on all data instead of ``update``
            (condition cheaply, refit hyperparameters now and then): an int ``k > 0`` (after
            every k-th round), 0 (never), or ``(t, N, N_fit) -> bool`` such as
            :class:`~botorch_mtucb.loop.defaults.RefitSchedule`. Default:
            ``RefitSchedule()`` (every round up to N = 20, then when N has grown by a tenth
            since the last fit) with the default model or another practical one
            (:func:`~botorch_mtucb.loop.defaults.practical_model_factory`, e.g. with
            ``per_task=True``), 0 with any other ``model_factory`` (its hyperparameters are
            the caller's).
        generator: ``torch.Generator`` the whole run is reproducible from: the λ_t draws, the
            seeds of the default design, optimizer and payoff tables, and the per-round
            seeds of torch's global RNG, forked so the caller's state is left unchanged
            (:mod:`~botorch_mtucb.loop.seeding`). ``None``: torch's global RNG. With a
            ``history`` that saved a generator state, the generator continues from it (the
            one given is set to it; a new CPU generator when ``None``).
        progress: Show a tqdm progress bar with the running time-average regret
            (:class:`~botorch_mtucb.loop.callbacks.ProgressBar`).
        q: Batch size: points chosen per round ahead of observing them (module docstring;
            the acquisition must support ``set_X_pending`` when ``q > 1``). One λ_t per point.
        bounds: ``2 x d`` box of the domain, for the default design, model and optimizer
            (taken from a :class:`BoxOptimizer` when not given; both must then agree).
        callbacks: ``callback(record)`` for each new
            :class:`~botorch_mtucb.loop.history.RoundRecord`, in order, once per evaluation,
            failed evaluations included (a sequence of callables, or one callable).
        minimize: Indices of the objectives to minimise (``observe``'s outputs as they are,
            the same proposals as negating them): passed to the default
            scalarization sampler, hence to every s_λ_t, the payoff tables and the regret. A
            given ``scalarization_sampler`` must mark the same objectives (its
            ``minimize``). A continued ``history`` keeps its own unless this is given (and
            then must agree with it).
        on_failure: What a failed evaluation does (it is always recorded, flagged
            ``failed``, and never given to the model): ``"raise"`` stops after its round
            with :class:`~botorch_mtucb.loop.failures.LoopInterrupted` (a ``RuntimeError``
            whose ``history`` holds every completed evaluation); ``"skip"`` goes on, with
            the failed inputs as pending points of every later proposal (an acquisition
            without ``set_X_pending`` is warned about once) and avoided by an optimizer
            with ``avoid`` (the default; another one that returns a failed input is warned
            about once).
        history: A :class:`~botorch_mtucb.loop.history.LoopHistory` to continue (e.g.
            :meth:`LoopHistory.load` of a saved run, or a ``LoopInterrupted``'s): its data
            are not observed again, the model is ``model_factory`` on its observed data,
            rounds are numbered on from its last, and its seeds and generator state carry
            on, so k rounds, then ``num_rounds`` more from the saved history, propose what
            one seeded run of k + ``num_rounds`` rounds does when the model factory and
            optimizer are deterministic. Not modified: a new history is returned.

    Returns:
        The :class:`~botorch_mtucb.loop.history.LoopHistory`: the initial data, the ``T · q``
        records (after ``history``'s) and the final model.

    Raises:
        LoopInterrupted: An evaluation failed with ``on_failure="raise"``.
        TypeError: For ``callbacks`` that are not callables or a ``generator`` that is not a
            ``torch.Generator`` (before anything is evaluated).
        ValueError: For other invalid arguments (before anything is evaluated).

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
        >>> more = run_bo_loop(problem, num_rounds=1, bounds=problem.bounds, history=history)
        >>> more.X.shape   # the two rounds, then a third
        torch.Size([3, 2])
    """
    check_failure_policy(on_failure)
    callbacks = _check_callbacks(callbacks)
    minimize = _continue_minimize(_check_minimize(minimize), history)
    generator = _continue_generator(generator, history, initial_X)
    rng_seed = _rng_seed(generator, history)
    setup = _resolve_arguments(
        initial_X, num_rounds, model_factory, acquisition_factory, optimizer, true_f,
        regret_X, regret_bounds, update, refit_every, generator, q, bounds, history,
    )
    with seeded_phases(rng_seed) as seed_phase:
        t0 = 0 if history is None else history.num_rounds
        seed_phase(t0)
        state, out, proposer = _start(observe, setup, scalarization_sampler, generator,
                                      minimize, on_failure, history, rng_seed)
        runner = _Rounds(observe, proposer, setup, state, out, generator, on_failure)
        bar = ProgressBar(t0 + num_rounds) if progress else None
        for record in out.rounds if bar is not None else ():
            bar(record)
        notify = callbacks if bar is None else (*callbacks, bar)
        try:
            for t in range(t0 + 1, t0 + num_rounds + 1):
                seed_phase(t)
                runner.run(t, q, notify)
        except LoopInterrupted:
            raise
        except BaseException as err:  # KeyboardInterrupt included: never lose the history
            _attach(err, runner.finish())
            raise
        finally:
            if bar is not None:
                bar.close()
    return runner.finish()


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
    update: UpdateRule


def _check_minimize(minimize: Sequence[int] | None) -> tuple[int, ...] | None:
    """``minimize`` as a tuple of distinct objective indices (range checked once n is
    known), or a clear error."""
    if minimize is None:
        return None
    message = (
        "`minimize` must be a sequence of distinct objective indices (ints >= 0), got "
        f"{minimize!r}."
    )
    if isinstance(minimize, (str, bytes)) or not hasattr(minimize, "__iter__"):
        raise ValueError(message)
    try:
        indices = tuple(operator.index(i) for i in minimize)
    except TypeError as err:
        raise ValueError(message) from err
    if any(isinstance(i, bool) for i in minimize) or len(set(indices)) != len(indices):
        raise ValueError(message + " Booleans are not accepted: give the indices.")
    if any(i < 0 for i in indices):
        raise ValueError(message)
    return indices


def _continue_minimize(
    minimize: tuple[int, ...] | None, history: LoopHistory | None
) -> tuple[int, ...] | None:
    """``minimize``, or the continued ``history``'s when not given; a clear error when the
    two mark different objectives (the run would change direction half-way)."""
    if history is None or not isinstance(history, LoopHistory):
        return minimize
    previous = history.minimize
    if minimize is None:
        return None if previous is None else tuple(previous)
    if set(minimize) != set(previous or ()):
        raise ValueError(
            f"`minimize` marks objectives {sorted(minimize)} but the continued `history` "
            f"minimised {sorted(previous or ())}: leave `minimize` out to continue as it ran."
        )
    return minimize


def _minimize_mask(minimize: tuple[int, ...] | None, n: int) -> Tensor | None:
    """``n`` booleans marking ``minimize``'s objectives (``None`` when none are)."""
    if minimize is None:
        return None
    if any(i >= n for i in minimize):
        raise ValueError(f"`minimize` indices must be < n = {n} (objectives), got {minimize}.")
    mask = torch.zeros(n, dtype=torch.bool)
    mask[list(minimize)] = True
    return mask


def _continue_generator(
    generator: torch.Generator | None, history: LoopHistory | None, initial_X: Tensor | None
) -> torch.Generator | None:
    """The run's generator: ``generator``, set to ``history``'s saved state when it has one."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"`generator` must be a torch.Generator or None, got {type(generator).__name__} "
            "(e.g. torch.Generator().manual_seed(0))."
        )
    if history is None:
        return generator
    if not isinstance(history, LoopHistory):
        raise ValueError(
            f"`history` must be a LoopHistory (e.g. LoopHistory.load(path)), got "
            f"{type(history).__name__}."
        )
    if initial_X is not None:
        raise ValueError("`initial_X` and `history` are exclusive: the history holds the design.")
    if history.generator_state is None:
        return generator
    if generator is None:
        generator = torch.Generator()
    try:
        generator.set_state(history.generator_state)
    except RuntimeError as err:
        raise ValueError(
            "`generator` cannot take the history's saved state (a generator on another "
            f"device?): {err}"
        ) from err
    return generator


def _check_callbacks(callbacks: object) -> tuple[LoopCallback, ...]:
    """``callbacks`` as a tuple of callables (one callable is taken as one callback)."""
    if callable(callbacks):
        return (callbacks,)
    try:
        out = tuple(callbacks)
    except TypeError:
        out = None
    if out is None or not all(callable(c) for c in out):
        raise TypeError(
            "`callbacks` must be a sequence of callables `(record) -> None` (or one callable), "
            f"got {callbacks!r}."
        )
    return out


def _rng_seed(generator: torch.Generator | None, history: LoopHistory | None) -> int | None:
    """Base of the per-round global-RNG seeds: the history's, else peeked from
    ``generator``; ``None`` without a generator (global RNG left alone)."""
    if generator is None:
        return None
    if history is not None and history.rng_seed is not None:
        return history.rng_seed
    return peek_seed(generator)


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
    history: LoopHistory | None,
) -> _Setup:
    """Validate the arguments of :func:`run_bo_loop` and fill in the defaults, in the order
    that fixes the seeded draws (the seed, then the design and the optimizer from it); a
    continued ``history`` gives the seed and the design."""
    _check_count(num_rounds, "`num_rounds` must be an integer >= 0", minimum=0)
    if initial_X is not None:
        check_finite(initial_X, "initial_X")
    if history is not None:
        initial_X = history.initial_X
    box = resolve_box(bounds, optimizer, initial_X)
    if history is not None and history.seed is not None:
        seed = history.seed
    else:
        seed = draw_seed(generator) if initial_X is None or optimizer is None else 0
    if history is None:
        initial_X = _resolve_initial_X(initial_X, box, seed)
    if update not in ("condition", "refit") and not callable(update):
        raise ValueError(f"`update` must be 'condition', 'refit' or a callable, got {update!r}.")
    if refit_every is None:  # the practical model's factory fits its own hyperparameters
        practical = model_factory is None or isinstance(model_factory, WarmStartPracticalFactory)
        refit_every = RefitSchedule() if practical else 0
    check_refit_rule(refit_every)
    model_factory = _resolve_model_factory(model_factory, box)
    if acquisition_factory is None:
        acquisition_factory = practical_acquisition_factory()
    if optimizer is None:  # call n seeds seed + 1 + n, counting a continued history's calls
        calls = 0 if history is None else len(history.rounds)
        optimizer = default_optimizer(box, seed + 1 + calls)
    _check_count(q, "`q` (batch size) must be a positive integer", minimum=1)
    regret = _resolve_regret(true_f, regret_X, regret_bounds, optimizer, initial_X.shape[-1])
    return _Setup(initial_X, box, seed, model_factory, acquisition_factory, optimizer,
                  refit_every, regret, update)


def _check_count(value: object, message: str, minimum: int) -> None:
    """Raise ``ValueError(message)`` unless ``value`` is an integer (Python or NumPy, not a
    bool) ≥ ``minimum``."""
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if isinstance(value, bool) or number is None or number < minimum:
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
    if regret_X is not None and (
        not torch.is_tensor(regret_X) or regret_X.dim() != 2 or regret_X.shape[-1] != d
    ):
        shape = tuple(regret_X.shape) if torch.is_tensor(regret_X) else type(regret_X).__name__
        raise ValueError(f"`regret_X` must be an M x d = M x {d} tensor, got {shape}.")
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
    minimize: tuple[int, ...] | None,
    on_failure: FailurePolicy,
    history: LoopHistory | None,
    rng_seed: int | None,
) -> tuple[LoopState, LoopHistory, Proposer]:
    """Observe the initial design (or take a continued history's data), pick the default
    sampler for its n, fit the first model."""
    out = _initial_history(observe, setup, history, on_failure)
    out.seed, out.rng_seed = setup.seed, rng_seed
    out.minimize = minimize
    out.generator_state = None if generator is None else generator.get_state()
    try:
        X, Y = out.observed_X, out.observed_Y
        mask = _minimize_mask(minimize, Y.shape[-1])
        # the default acquisition (and hypervolume_ucb_factory) declare uses_default_sampler
        wants_sampler = getattr(setup.acquisition_factory, "uses_default_sampler", False)
        if wants_sampler and sampler is None:
            # a factory with a known reference point uses the scalarization for its
            # minimised objectives only: no model-predicted front (a payoff table per round)
            known_z = getattr(setup.acquisition_factory, "ref_point", None) is not None
            sampler = default_sampler(Y.shape[-1], setup.box is not None and not known_z, mask)
        _check_sampler_minimize(sampler, mask)
        proposer = Proposer(
            setup.acquisition_factory, setup.optimizer, sampler, generator, setup.box,
            setup.seed,
        )
        state = LoopState(X=X, Y=Y, model=setup.model_factory(X, Y), N_fit=X.shape[0])
        state.add_failed(out.failed_X)
    except BaseException as err:  # the initial evaluations are not lost
        _attach(err, out)
        raise
    return state, out, proposer


def _initial_history(
    observe: Callable[[Tensor], Tensor],
    setup: _Setup,
    history: LoopHistory | None,
    on_failure: FailurePolicy,
) -> LoopHistory:
    """A copy of the continued ``history``, or a new one with the initial design observed
    (its failed rows kept, non-finite, in ``initial_Y``)."""
    if history is not None:
        return LoopHistory(initial_X=history.initial_X.clone(),
                           initial_Y=history.initial_Y.clone(), rounds=list(history.rounds))
    X = setup.initial_X.clone()
    evaluation = classify(observe(X), X, None, "observe(initial_X)")  # nothing to lose yet
    out = LoopHistory(initial_X=X.clone(), initial_Y=evaluation.Y.clone())
    if evaluation.failed and on_failure == "raise":
        raise LoopInterrupted(evaluation.error + " (on_failure='raise')", out)
    return out


def _attach(err: BaseException, history: LoopHistory) -> None:
    """Give ``err`` the run's history as its ``history`` attribute (when it takes one)."""
    with contextlib.suppress(AttributeError, TypeError):
        err.history = history


def _check_sampler_minimize(sampler: object, mask: Tensor | None) -> None:
    """A given sampler must mark the objectives of ``minimize`` (when given)."""
    if mask is None:
        return
    if sampler is None:
        raise ValueError(
            "`minimize` acts through the scalarizations; a run without a "
            "`scalarization_sampler` maximises its acquisition: negate `observe` instead."
        )
    own = getattr(sampler, "minimize", None)
    own = torch.zeros_like(mask) if own is None else torch.as_tensor(own, dtype=torch.bool)
    if own.shape != mask.shape or not torch.equal(own.cpu(), mask):
        raise ValueError(
            f"`minimize` marks objectives {mask.nonzero().flatten().tolist()} but the "
            f"`scalarization_sampler` minimises {own.nonzero().flatten().tolist()}: mark them "
            "in one place (the sampler's `minimize`, or run_bo_loop's with the default sampler)."
        )


class _Rounds:
    """The rounds of one run: propose, observe, update, record, notify, apply the policy."""

    def __init__(
        self,
        observe: Callable[[Tensor], Tensor],
        proposer: Proposer,
        setup: _Setup,
        state: LoopState,
        history: LoopHistory,
        generator: torch.Generator | None,
        on_failure: FailurePolicy,
    ) -> None:
        self.observe = observe
        self.proposer = proposer
        self.updater = ModelUpdater(setup.model_factory, setup.update, setup.refit_every)
        self.regret = setup.regret
        self.state = state
        self.history = history
        self.generator = generator
        self.on_failure = on_failure

    def run(self, t: int, q: int, callbacks: Sequence[LoopCallback]) -> None:
        """Round t: propose q points, observe them, update the model with those observed,
        record every point and notify; stop by the policy if one failed."""
        state = self.state
        proposals = self.proposer.propose(state, t, q)
        start = time.perf_counter()
        X_round = torch.cat([p.x for p in proposals])
        evaluation = evaluate(self.observe, X_round, state.Y.shape[-1], "observe(x_t)")
        try:
            self.updater(state, t, X_round[evaluation.ok], evaluation.Y[evaluation.ok])
        except BaseException:  # a fit that fails or is interrupted loses no evaluation
            self._record(proposals, evaluation, time.perf_counter() - start, None, t)
            raise
        state.add_failed(X_round[~evaluation.ok])
        records = self._record(proposals, evaluation, time.perf_counter() - start,
                               state.model, t)
        for record in records:
            for callback in callbacks:
                callback(record)
        if evaluation.failed and self.on_failure == "raise":
            self._stop(t, evaluation)

    def _record(self, proposals: list[Proposal], evaluation: RoundEvaluation,
                update_time: float, model: Model | None, t: int) -> list[RoundRecord]:
        """Append round t's records (every point, observed or failed) to the history."""
        first_t = len(self.history.rounds) + 1
        records = round_records(proposals, evaluation.Y, update_time, model, t, first_t,
                                None, evaluation.ok, evaluation.error)
        self.history.rounds.extend(records)  # before the metric: an evaluation is never lost
        if self.generator is not None:
            self.history.generator_state = self.generator.get_state()
        if self.regret is not None:  # NaN until computed (a metric interrupted leaves NaN)
            for record, proposal in zip(records, proposals, strict=True):
                record.regret = math.nan
                record.regret = self.regret(proposal.scalarization, proposal.x)
        return records

    def _stop(self, t: int, evaluation: RoundEvaluation) -> None:
        """Raise :class:`LoopInterrupted` with the history of the completed evaluations."""
        raise LoopInterrupted(
            f"Round {t}: {evaluation.error}; the loop stopped (on_failure='raise'). "
            "`.history` holds every completed evaluation; continue with "
            "run_bo_loop(..., history=err.history) or use on_failure='skip'.",
            self.finish(),
        ) from evaluation.exception

    def finish(self) -> LoopHistory:
        """The history with the current model."""
        self.history.model = self.state.model
        return self.history
