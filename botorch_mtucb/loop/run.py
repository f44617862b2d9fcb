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

**Batches (``q > 1``).** A round then chooses q points before observing any of them: point j
repeats steps 1–3 with the j − 1 points already chosen in the round as pending points
(``acqf.set_X_pending``: GP-BUCB, the model conditioned on hallucinated means, see
:mod:`botorch_mtucb.acquisition.pending`); steps 4–5 then observe and add all q at once.
**One λ per point, not per batch:** every evaluation is an ordinary step of Algorithm 1 with
its own λ_t ~ P_λ, so the scalarized regret Σ_t r_t (and its expectation over P_λ, the Bayes
regret) is defined and bounded evaluation by evaluation exactly as for q = 1 (with GP-BUCB's
inflated β for the hallucinated widths), q = 1 reproduces the sequential loop draw for draw,
and a batch spreads over different parts of the Pareto front instead of q nearby optima of
one s_λ (a shared λ would leave only the width shrinkage to separate the points). Each point
is one :class:`RoundRecord` (``t`` counts evaluations, ``batch`` the rounds).

On a continuous domain the maximiser x*_λ is approximated by the best point of a dense
``regret_X`` set (together with x_t itself, so r_t ≥ 0), optionally polished by a local
ascent of the true objective inside ``regret_bounds``
(:func:`~botorch_mtucb.utils.optimum.polish_maxima`); on a finite arm set it is exact.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Literal

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions import UnsupportedError
from botorch.models.model import Model, ModelList
from torch import Tensor

from botorch_mtucb.acquisition.beta import BetaSchedule
from botorch_mtucb.acquisition.dedup import DedupOptimizer
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.optimizers import BoxOptimizer, FiniteArmOptimizer
from botorch_mtucb.acquisition.pending import PendingInflation, condition_model, resolve_inflation
from botorch_mtucb.acquisition.protocols import ConfidenceWidthAcquisition, ModelAnchoredSampler
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.acquisition.trust_region import TrustRegionOptimizer
from botorch_mtucb.loop.defaults import (
    RefitRule,
    RefitSchedule,
    check_refit_rule,
    default_initial_X,
    default_optimizer,
    default_sampler,
    draw_seed,
    practical_model_factory,
    refit_due,
    resolve_box,
)
from botorch_mtucb.loop.history import LoopHistory, RoundRecord
from botorch_mtucb.protocols import DictionaryModel
from botorch_mtucb.utils.optimum import polish_maxima
from botorch_mtucb.utils.validation import check_finite

__all__ = [
    "BoxOptimizer",
    "DedupOptimizer",
    "FiniteArmOptimizer",
    "LoopHistory",
    "RefitSchedule",
    "RoundRecord",
    "TrustRegionOptimizer",
    "condition_model",
    "gaussian_observer",
    "run_bo_loop",
    "scalarized_ucb_factory",
]


def scalarized_ucb_factory(
    beta: float | BetaSchedule | None = None,
    bound: Literal["spectral", "directional"] = "directional",
    pending_beta_inflation: PendingInflation = 1.0,
) -> Callable[[Model, Scalarization | None], AcquisitionFunction]:
    """Acquisition factory for :func:`run_bo_loop` building :class:`ScalarizedMultiTaskUCB`.

    ``beta=None`` uses :class:`ScalarizedMultiTaskUCB`'s default (practical) width;
    ``pending_beta_inflation`` applies to batch points chosen with pending points (``q > 1``,
    GP-BUCB; :mod:`botorch_mtucb.acquisition.pending`).
    """
    resolve_inflation(pending_beta_inflation)
    width = {} if beta is None else {"beta": beta}

    def factory(model: Model, scalarization: Scalarization | None) -> AcquisitionFunction:
        if scalarization is None:
            raise ValueError("The scalarized UCB needs a `scalarization_sampler`.")
        return ScalarizedMultiTaskUCB(
            model, scalarization, **width, bound=bound,
            pending_beta_inflation=pending_beta_inflation,
        )

    return factory


def gaussian_observer(
    f: Callable[[Tensor], Tensor], noise_std: float, generator: torch.Generator | None = None
) -> Callable[[Tensor], Tensor]:
    """``observe(X) = f(X) + noise_std · N(0, I)``, seedable with ``generator``."""

    def observe(X: Tensor) -> Tensor:
        F = f(X)
        eps = torch.randn(F.shape, generator=generator, dtype=torch.float64).to(F)
        return F + noise_std * eps

    return observe


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
    update: Literal["condition", "refit"] | Callable[[Model, Tensor, Tensor], Model] = "condition",
    refit_every: RefitRule | None = None,
    generator: torch.Generator | None = None,
    progress: bool = False,
    q: int = 1,
    bounds: Tensor | None = None,
) -> LoopHistory:
    """Run T rounds of scalarized (or single-objective) optimistic BO; see the module docstring.

    Every argument but ``observe`` and ``num_rounds`` has a practical default
    (:mod:`botorch_mtucb.loop.defaults`): ``run_bo_loop(observe, num_rounds=30,
    bounds=bounds)`` runs MT-UCB from a Sobol design with the fitted practical model, the
    scale-free Chebyshev scalarization and the default width.

    Args:
        observe: ``N x d -> N x n`` noisy observations (objectives maximised unless the
            scalarizations say otherwise).
        initial_X: ``N0 x d`` initial design, observed before round 1. ``N0 = 0`` (the
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
            :class:`~botorch_mtucb.loop.defaults.RefitSchedule` (its docstring has the
            measured refit cost). Default: ``RefitSchedule()`` (every round up to N = 20, then
            when N has grown 10 % since the last fit) with the default model, 0 with a given
            ``model_factory`` (its hyperparameters are the caller's).
        generator: ``torch.Generator`` for the λ_t draws (and the seed of the default design
            and optimizer).
        progress: Show a tqdm progress bar with the running time-average regret.
        q: Batch size: points chosen per round before observing them (module docstring; the
            acquisition must support ``set_X_pending`` when ``q > 1``). One λ_t per point.
        bounds: ``2 x d`` box of the domain, for the default design, model and optimizer
            (taken from a :class:`BoxOptimizer` when not given; both must then agree).

    Returns:
        The :class:`LoopHistory`.
    """
    if isinstance(num_rounds, bool) or not isinstance(num_rounds, int) or num_rounds < 0:
        raise ValueError(f"`num_rounds` must be an integer >= 0, got {num_rounds!r}.")
    if initial_X is not None:
        check_finite(initial_X, "initial_X")
    box = resolve_box(bounds, optimizer, initial_X)
    seed = draw_seed(generator) if initial_X is None or optimizer is None else 0
    if initial_X is None:
        initial_X = default_initial_X(box, seed)
    check_finite(initial_X, "initial_X")
    if initial_X.dim() != 2 or not initial_X.is_floating_point():
        raise ValueError(
            f"`initial_X` must be a floating N0 x d tensor, got shape {tuple(initial_X.shape)}."
        )
    if update not in ("condition", "refit") and not callable(update):
        raise ValueError(f"`update` must be 'condition', 'refit' or a callable, got {update!r}.")
    if refit_every is None:
        refit_every = RefitSchedule() if model_factory is None else 0
    check_refit_rule(refit_every)
    if model_factory is None:
        if box is None:
            raise ValueError(
                "`model_factory=None` (practical_multitask_gp on the box) needs `bounds=` "
                "(2 x d) or a BoxOptimizer."
            )
        model_factory = practical_model_factory(box)
    default_acquisition = acquisition_factory is None
    if default_acquisition:
        acquisition_factory = scalarized_ucb_factory()
    if optimizer is None:
        optimizer = default_optimizer(box, seed + 1)
    if isinstance(q, bool) or not isinstance(q, int) or q < 1:
        raise ValueError(f"`q` (batch size) must be a positive integer, got {q!r}.")
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
        if regret_bounds.shape != (2, initial_X.shape[-1]):
            raise ValueError(
                f"`regret_bounds` must be 2 x d = (2, {initial_X.shape[-1]}), got "
                f"{tuple(regret_bounds.shape)}."
            )
    F_ref = None if true_f is None else true_f(regret_X).detach()

    X_all = initial_X.clone()
    Y_all = observe(X_all).detach()
    check_finite(Y_all, "observe(initial_X)")
    if Y_all.dim() != 2 or Y_all.shape[0] != X_all.shape[0]:
        raise ValueError(f"`observe` must return an N x n tensor, got shape {tuple(Y_all.shape)}.")
    history = LoopHistory(initial_X=X_all.clone(), initial_Y=Y_all.clone())
    if default_acquisition and scalarization_sampler is None:
        scalarization_sampler = default_sampler(Y_all.shape[-1], predicted_front=box is not None)
    anchored = isinstance(scalarization_sampler, ModelAnchoredSampler) and bool(
        scalarization_sampler.uses_model
    )
    if anchored and box is None:
        raise ValueError(
            "A scalarization sampler with a predicted front (front='predicted') needs the "
            "search box for the model's payoff table: pass `bounds=` (2 x d)."
        )
    model = model_factory(X_all, Y_all)
    N_fit = X_all.shape[0]

    rounds = range(1, num_rounds + 1)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(rounds, desc="BO loop")
        rounds = bar
    cum_regret = 0.0
    evals = 0
    for t in rounds:
        points: list[tuple[Tensor, Scalarization | None, AcquisitionFunction, float]] = []
        start = time.perf_counter()
        predicted = None
        if anchored:  # the model's payoff table, once per round (its time: the first point's)
            predicted = scalarization_sampler.anchors(model, box, Y_all, seed=seed + 2 + t)
        anchor_time = time.perf_counter() - start
        for j in range(q):
            start = time.perf_counter()
            scal = None
            if anchored:
                scal = scalarization_sampler(generator, Y_all, predicted=predicted)
            elif getattr(scalarization_sampler, "uses_data", False):  # scale-free, from data
                scal = scalarization_sampler(generator, Y_all)
            elif scalarization_sampler is not None:
                scal = scalarization_sampler(generator)
            acqf = acquisition_factory(model, scal)
            if j > 0:
                _set_pending(acqf, torch.cat([p[0] for p in points]))
            x = optimizer(acqf).reshape(1, -1).to(X_all)
            if j > 0 and any(torch.equal(x, p[0]) for p in points):
                warnings.warn(
                    f"Point {j + 1} of round {t} repeats an earlier point of the round: does "
                    f"{type(acqf).__name__} use its pending points (set_X_pending, GP-BUCB)?",
                    RuntimeWarning,
                    stacklevel=2,
                )
            points.append((x, scal, acqf, time.perf_counter() - start
                           + (anchor_time if j == 0 else 0.0)))
        start = time.perf_counter()
        X_round = torch.cat([p[0] for p in points])
        Y_round = observe(X_round).detach()
        check_finite(Y_round, "observe(x_t)")
        X_all = torch.cat([X_all, X_round])
        Y_all = torch.cat([Y_all, Y_round])
        if update == "refit" or refit_due(refit_every, t, X_all.shape[0], N_fit):
            model = model_factory(X_all, Y_all)
            N_fit = X_all.shape[0]
        elif update == "condition":
            model = condition_model(model, X_round, Y_round)
        else:
            model = update(model, X_round, Y_round)
        update_time = time.perf_counter() - start
        size = _dictionary_size(model)

        for j, (x, scal, acqf, wall) in enumerate(points):
            evals += 1
            regret = None
            if F_ref is not None:
                regret = _instant_regret(scal, F_ref, true_f(x).detach(), true_f, regret_X,
                                         regret_bounds)
                cum_regret += regret
            beta = acqf.beta if isinstance(acqf, ConfidenceWidthAcquisition) else None
            if beta is not None and torch.as_tensor(beta).numel() != 1:
                beta = None
            history.rounds.append(
                RoundRecord(
                    t=evals,
                    x=x[0],
                    y=Y_round[j],
                    weights=None if scal is None else scal.weights.clone(),
                    regret=regret,
                    beta=None if beta is None else float(beta),
                    wall_time=wall + (update_time if j == q - 1 else 0.0),
                    dictionary_size=size,
                    batch=t,
                )
            )
        if bar is not None and F_ref is not None:
            bar.set_postfix(avg_regret=f"{cum_regret / evals:.4g}")
    history.model = model
    return history


def _set_pending(acqf: AcquisitionFunction, X_pending: Tensor) -> None:
    """``acqf.set_X_pending(X_pending)`` with a clear error for acquisitions without it."""
    try:
        acqf.set_X_pending(X_pending)
    except (NotImplementedError, UnsupportedError) as err:
        raise ValueError(
            f"`q` > 1 needs an acquisition that takes pending points (GP-BUCB); "
            f"{type(acqf).__name__}.set_X_pending refused them: {err}"
        ) from err


def _dictionary_size(model: Model | None) -> int | None:
    """m_t of a Nyström model (also inside a ModelListGP: the sum over its members)."""
    if isinstance(model, ModelList):
        sizes = [_dictionary_size(m) for m in model.models]
        return None if any(s is None for s in sizes) else sum(sizes)
    return int(model.dictionary_size) if isinstance(model, DictionaryModel) else None


def _instant_regret(
    scal: Scalarization | None,
    F_ref: Tensor,
    f_x: Tensor,
    true_f: Callable[[Tensor], Tensor],
    regret_X: Tensor,
    regret_bounds: Tensor | None,
) -> float:
    """max over {reference points, x_t} (polished in ``regret_bounds``) of s_λ(f) − s_λ(f(x_t))."""
    if scal is None:
        if F_ref.shape[-1] != 1:
            raise ValueError("Single-objective regret needs a 1-output `true_f`.")

        def pieces(F: Tensor) -> Tensor:
            return F[..., :1]
    else:
        pieces = scal.pieces
    v_ref = pieces(F_ref).min(dim=-1).values
    v_x = pieces(f_x).min(dim=-1).values
    best = torch.maximum(v_ref.max(), v_x.max())
    if regret_bounds is not None:
        start = regret_X[v_ref.argmax()].unsqueeze(0).to(regret_bounds)
        _, v_pol = polish_maxima(lambda X: pieces(true_f(X)), start, regret_bounds)
        best = torch.maximum(best, v_pol[0].to(best))
    return float(best - v_x[0])
