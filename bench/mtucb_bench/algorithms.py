"""Algorithm registry: name → (model factory, acquisition factory) for the one BO loop.

Every algorithm is run by :func:`botorch_mtucb.loop.run_bo_loop`; an entry only says which
model is fitted on the data, which acquisition is maximised, and which radius it uses.

Multi-task (paper 000; all with η = δ = 0.1, ε = 0.5, fixed kernel hyperparameters):

=================  =========================================================================
``MT-KB``          ExactMultiTaskGP with the problem's Γ = k·B; Theorem-2 radius.
``MT-BKB``         NystromMultiTaskGP (same Γ); Theorem-3 radius.
``IT-KB``          B replaced by diag(B) (independent tasks); radius as Appendix E: the
                   single-task GP-UCB radius blown up by √n (:class:`AppendixEBeta`).
``IT-KB-fair``     same model; the Theorem-2 radius of MT-KB (same rule, own information gain).
``IT-BKB``         Nyström model with diag(B); √n × single-task Theorem-3 (BKB) radius.
``IT-BKB-fair``    same model; Theorem-3 radius.
``MOBO``           Paria et al.: ModelListGP of independent GPs (k scaled by B_ii, noise η),
                   s_λ(μ + √β_t σ) with the finite-domain GP-UCB β_t of Srinivas et al.
``qLogNParEGO``    BoTorch, same ModelListGP, the round's λ_t as ParEGO weights.
``qLogNEHVI``      BoTorch, same ModelListGP, reference point = the problem's z (n ≤ 10).
``MT-UCB``         practical (issue 16): :func:`~botorch_mtucb.models.practical_multitask_gp`
                   (also importable from here) refitted on the loop's default
                   :class:`~botorch_mtucb.loop.defaults.RefitSchedule` (conditioned in between),
                   each refit warm-started from the previous fit with the lean likelihood
                   closure (:class:`~botorch_mtucb.multitask.practical.WarmStartPracticalFactory`),
                   the round's λ_t applied scale-free (the loop's default sampler,
                   ``ScalarizationSampler(..., ref_point="data", front="predicted")``:
                   augmented, ρ = 0.05, z and the ranges from the observed non-dominated
                   points and the model's payoff table; on finite arms the observed
                   points only, as the loop without a box), β = 1.
``MT-UCB-HV``      ``MT-UCB`` (same model, refit schedule, maximiser and β) with the
                   scale-free hypervolume scalarization of Zhang & Golovin
                   (``ScalarizationSampler(..., kind="hypervolume", ref_point="data")``:
                   :meth:`~botorch_mtucb.acquisition.HypervolumeScalarization.from_data`, z and
                   the ranges as ``MT-UCB``'s, no augmentation), λ_t uniform on the positive
                   unit sphere drawn per round from its own stream, seeded by the trial seed
                   and the number of observations (the runner's λ_t follows the run's
                   Chebyshev or linear law, which is not the hypervolume law).
``MT-TS``          ``MT-UCB`` (same model, refit schedule, sampler and maximiser) with
                   :class:`~botorch_mtucb.acquisition.thompson.ScalarizedThompsonSampling`:
                   s_λ of one Matheron posterior path drawn per round, seeded by the trial
                   seed and the number of observations, instead of the UCB.
``MT-UCB-refit``   ``MT-UCB`` as it was before: a cold refit of the practical model after every
                   round (``update="refit"``), same acquisition.
``MT-UCB-TR``      ``MT-UCB`` with its per-round maximiser confined to TuRBO's trust region
                   (:class:`~botorch_mtucb.acquisition.trust_region.TrustRegionOptimizer`,
                   isotropic, same restarts / raw samples / seed; continuous domains).
``MT-UCB-paper``   the paper's settings (same as ``MT-KB``).
``IT-UCB``         ``MT-UCB`` with independent tasks (one Matérn-5/2 per task), same width and
                   schedule (``IT-UCB-refit``: refitted every round).
``Sobol``          random search: the trial's scrambled Sobol sequence continued after the
                   initial design (continuous domains; no model).
=================  =========================================================================

``MT-*`` and ``IT-*`` maximise :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` with
``bound="spectral"`` (paper 000 eq. (2)) or ``"directional"`` (:class:`RunConfig`).

**Model schedule** (:class:`AlgorithmSetup` ``update`` / ``refit_every``, explicit per entry):

* the papers' entries (``MT-KB``, ``MT-BKB``, ``IT-*``, ``MT-UCB-paper``) and the baselines on
  the papers' problems keep fixed hyperparameters: ``update="condition"`` (exact
  conditioning on each new observation, or the Nyström model's own resampling);
* ``MT-UCB`` / ``MT-UCB-HV`` / ``IT-UCB``: ``update="condition"`` with
  ``refit_every=RefitSchedule()`` (the documented default of
  :func:`~botorch_mtucb.loop.run_bo_loop`: a refit after every round while N ≤ 20, then
  whenever N has grown 10 % since the last fit), warm-started refits;
* ``MT-UCB-refit`` / ``IT-UCB-refit`` and, on the suite's problems (:class:`SuiteProblem`),
  ``MOBO``, ``qLogNParEGO`` and ``qLogNEHVI``: ``update="refit"``, every hyperparameter
  refitted by ``fit_gpytorch_mll`` from its initial values on all data after every round
  (BoTorch's default practice), so the per-round wall time includes the refit;
* ``Sobol``: no model.

The initial design is not the algorithm's: the runner starts every algorithm of a trial from
the experiment's (:class:`~mtucb_bench.problems.InitialDesign`).

Heavy-tailed entries live in :mod:`mtucb_bench.ht_algorithms`; the registry
merges both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB, TheoremThreeBeta, TheoremTwoBeta
from botorch_mtucb.acquisition.scalarization import (
    ChebyshevScalarization,
    HypervolumeScalarization,
    Scalarization,
    ScalarizationSampler,
    sample_scalarization_weights,
)
from botorch_mtucb.acquisition.thompson import ScalarizedThompsonSampling
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.loop import (
    RefitSchedule,
    TrustRegionOptimizer,
    hypervolume_ucb_factory,
    log_ehvi_factory,
)
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP, practical_multitask_gp
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
from botorch_mtucb.utils import training_data
from mtucb_bench.algorithm_types import AlgorithmSetup, AlgorithmSpec, RunConfig
from mtucb_bench.baselines import (
    AppendixEBeta,
    build_mobo,
    build_nehvi,
    build_parego,
    nehvi_available,
)
from mtucb_bench.ht_algorithms import HT_ALGORITHMS
from mtucb_bench.problems import MultiTaskProblem

__all__ = [
    "ALGORITHMS",
    "AlgorithmSetup",
    "AlgorithmSpec",
    "RunConfig",
    "get_algorithm",
]

# ----------------------------------------------------------------------------- multi-task
def _icm(problem: MultiTaskProblem, independent: bool) -> ICMKernel:
    B = problem.task_covar
    if independent:
        B = torch.diag(torch.diagonal(B))
    return ICMKernel(problem.scalar_kernel(), num_tasks=problem.num_objectives, task_covar=B)


def _ucb_factory(beta, bound: str):
    def factory(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
        return ScalarizedMultiTaskUCB(model, scal, beta, bound=bound)

    return factory


_Builder = Callable[[MultiTaskProblem, RunConfig], AlgorithmSetup]


def _exact(independent: bool, radius: str) -> _Builder:
    def build(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
        def model_factory(X: Tensor, Y: Tensor) -> Model:
            kern = _icm(problem, independent)
            return ExactMultiTaskGP(X, Y, covar_module=kern, noise=problem.eta)

        if radius == "theorem2":
            beta = TheoremTwoBeta(b=problem.b, sigma=problem.noise_std, delta=problem.delta)
        else:
            beta = AppendixEBeta(
                problem.b, problem.noise_std, problem.num_objectives, "gp-ucb", problem.delta
            )
        return AlgorithmSetup(model_factory, _ucb_factory(beta, cfg.bound))

    return build


def _nystrom(independent: bool, radius: str) -> _Builder:
    def build(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
        gen = torch.Generator().manual_seed(cfg.seed)

        def model_factory(X: Tensor, Y: Tensor) -> Model:
            return NystromMultiTaskGP(
                X,
                Y,
                covar_module=_icm(problem, independent),
                noise=problem.eta,
                epsilon=cfg.epsilon_mt,
                delta=problem.delta,
                horizon=cfg.horizon,
                generator=gen,
            )

        if radius == "theorem3":
            beta = TheoremThreeBeta(b=problem.b, sigma=problem.noise_std)
        else:
            beta = AppendixEBeta(
                problem.b,
                problem.noise_std,
                problem.num_objectives,
                "bkb",
                problem.delta,
                cfg.epsilon_mt,
            )
        return AlgorithmSetup(model_factory, _ucb_factory(beta, cfg.bound))

    return build


# ------------------------------------------------------- practical defaults (issue 16)
#: Practical width of MT-UCB / IT-UCB (the ScalarizedMultiTaskUCB default; see its docstring).
PRACTICAL_BETA = 1.0

#: Multiplier of the trial seed in the seed of MT-UCB-HV's per-round λ stream.
_HV_STREAM = 2_000_003


def hypervolume_weights(n: int, seed: int, num_observations: int) -> Tensor:
    """MT-UCB-HV's λ_t: one draw uniform on the positive unit sphere (``n``), from the stream
    keyed by the trial seed and the number of observations N (reproducible per round)."""
    g = torch.Generator().manual_seed(_HV_STREAM * seed + num_observations)
    return sample_scalarization_weights(n, 1, "hypervolume", generator=g)[0]


def _scale_free(model: Model, scal: Scalarization | None, bounds: Tensor | None, seed: int,
                hypervolume: bool) -> Scalarization | None:
    """The round's scale-free s_λ from the data and the model's payoff table (the loop's
    default sampler; on finite arms, ``bounds=None``, the observed front only).

    A Chebyshev s_λ keeps its λ and becomes ``ChebyshevScalarization.from_data`` (augmented),
    a hypervolume one ``HypervolumeScalarization.from_data``; a linear s_λ is kept as is.
    ``hypervolume``: always the hypervolume s_λ, λ from :func:`hypervolume_weights`.
    """
    _, Y = training_data(model)
    if hypervolume:
        kind, lam = "hypervolume", hypervolume_weights(Y.shape[-1], seed, Y.shape[0]).to(Y)
    elif isinstance(scal, HypervolumeScalarization):
        kind, lam = "hypervolume", scal.sphere_weights
    elif isinstance(scal, ChebyshevScalarization):
        kind, lam = "chebyshev", scal.weights
    else:
        return scal
    front = "observed" if bounds is None else "predicted"  # finite arms: observed
    data = ScalarizationSampler(Y.shape[-1], kind, ref_point="data",
                                minimize=None if scal is None else scal.minimize, front=front)
    predicted = None
    if bounds is not None:
        predicted = data.anchors(model, bounds, Y, seed=seed + Y.shape[0])
    return data.scalarize(lam, Y, predicted)


def _practical(independent: bool, every_round: bool = False,
               trust_region: bool = False, thompson: bool = False,
               hypervolume: bool = False, improvement: bool = False,
               expected: bool = False, known_ref: bool = False,
               per_task: bool = False, log_space_priors: bool = False) -> _Builder:
    """MT-UCB / IT-UCB: scale-free augmented Chebyshev, β = 1; warm-started refits on the
    loop's :class:`RefitSchedule` (``every_round``: a cold refit after every round, the
    entries' behaviour before the schedule, ``MT-UCB-refit`` / ``IT-UCB-refit``;
    ``trust_region``: the maximiser is TuRBO's isotropic trust region, ``MT-UCB-TR``;
    ``thompson``: s_λ of one Matheron posterior path instead of the UCB, seeded per round,
    ``MT-TS``; ``hypervolume``: the scale-free hypervolume s_λ with λ uniform on the
    positive unit sphere, ``MT-UCB-HV``; ``improvement``: the hypervolume improvement of the
    per-objective UCBs over the model's front, reference point from the round's scale-free
    s_λ, ``MT-UCB-HVI``; ``expected``: the log expected hypervolume improvement over the
    model's front, same reference point, ``MT-LogEHVI``; ``known_ref``: with ``improvement``
    or ``expected``, the problem's reference point instead, the one its hypervolume is
    measured above and ``qLogNEHVI`` gets, ``MT-UCB-HVI-z`` / ``MT-LogEHVI-z``;
    ``per_task``: the practical model with one scaled Matérn-5/2 per objective added to the ICM
    term, ``practical_multitask_gp(..., per_task=True)``, ``LMC-LogEHVI-z``, ``LMC-UCB`` and,
    with ``improvement``, ``LMC-UCB-HVI``; ``log_space_priors``: the practical model's priors as
    densities of log θ, ``practical_multitask_gp(..., log_space_priors=True)``, with
    ``improvement`` ``MT-UCB-HVI-logprior``)."""

    def build(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
        bounds = problem.bounds
        ref_point = problem.ref_point if known_ref else None  # qLogNEHVI's z
        if every_round:
            def model_factory(X: Tensor, Y: Tensor) -> Model:
                return practical_multitask_gp(X, Y, bounds, independent, per_task=per_task,
                                              log_space_priors=log_space_priors)
        else:
            model_factory = WarmStartPracticalFactory(bounds, independent, per_task=per_task,
                                                      log_space_priors=log_space_priors)

        def acq(model: Model, scal: Scalarization | None) -> AcquisitionFunction:
            if ref_point is None:  # with the problem's z the acquisition ignores λ and z
                scal = _scale_free(model, scal, bounds, cfg.seed, hypervolume)
            if thompson:  # a fresh path each round, reproducible per (trial seed, N)
                n_obs = training_data(model)[1].shape[0]
                return ScalarizedThompsonSampling(model, scal, seed=1_000_003 * cfg.seed + n_obs)
            if expected:
                return log_ehvi_factory(ref_point)(model, scal)
            beta = PRACTICAL_BETA if cfg.beta is None else cfg.beta
            if improvement:
                return hypervolume_ucb_factory(beta, ref_point)(model, scal)
            return ScalarizedMultiTaskUCB(model, scal, beta, bound="directional")

        optimizer = None
        if trust_region:  # the runner's BoxOptimizer settings, inside the region
            optimizer = TrustRegionOptimizer(bounds, num_restarts=4, raw_samples=256,
                                             seed=cfg.seed, shape="isotropic")
        if every_round:
            return AlgorithmSetup(model_factory, acq, update="refit", optimizer=optimizer)
        return AlgorithmSetup(model_factory, acq, update="condition",
                              refit_every=RefitSchedule(), optimizer=optimizer)

    return build


class _NextSobolPoint:
    """The 'acquisition' of random search: nothing to maximise, the next point is drawn."""


def _build_sobol(problem: MultiTaskProblem, cfg: RunConfig) -> AlgorithmSetup:
    """Random search: the trial's scrambled Sobol sequence (``SobolEngine(d, scramble=True,
    seed=s_k + 1)``, the sequence of the ``"sobol"`` initial design,
    :func:`~botorch_mtucb.utils.initial_design.sobol_initial_design`) continued after the N0
    initial points, so a run is the Sobol design of N0 + T points."""
    lo, hi = problem.bounds
    engine = SobolEngine(problem.dim, scramble=True, seed=cfg.seed + 1)
    state = {"started": False}

    def model_factory(X: Tensor, Y: Tensor) -> None:
        if not state["started"]:  # skip the points of the initial design
            engine.fast_forward(X.shape[0])
            state["started"] = True

    def optimizer(acqf: _NextSobolPoint) -> Tensor:
        return lo + (hi - lo) * engine.draw(1, dtype=torch.float64).to(lo)

    return AlgorithmSetup(model_factory, lambda model, scal: _NextSobolPoint(),
                          update=lambda model, X, Y: model, optimizer=optimizer)


def _continuous_only(problem: MultiTaskProblem) -> str | None:
    if problem.is_finite:
        return "Sobol random search needs a continuous domain (the problem has finite arms)"
    return None


#: The multi-task registry entries.
MT_ALGORITHMS: list[AlgorithmSpec] = [
    AlgorithmSpec("MT-KB", "multi_task", "exact multi-task GP, Theorem-2 radius",
                  _exact(False, "theorem2")),
    AlgorithmSpec("MT-BKB", "multi_task", "Nystrom multi-task GP, Theorem-3 radius",
                  _nystrom(False, "theorem3")),
    AlgorithmSpec("IT-KB", "multi_task",
                  "independent tasks, single-task GP-UCB radius x sqrt(n) (Appendix E)",
                  _exact(True, "appendix-e")),
    AlgorithmSpec("IT-KB-fair", "multi_task", "independent tasks, Theorem-2 radius",
                  _exact(True, "theorem2")),
    AlgorithmSpec("IT-BKB", "multi_task",
                  "independent-task Nystrom, single-task BKB radius x sqrt(n) (Appendix E)",
                  _nystrom(True, "appendix-e")),
    AlgorithmSpec("IT-BKB-fair", "multi_task", "independent-task Nystrom, Theorem-3 radius",
                  _nystrom(True, "theorem3")),
    AlgorithmSpec("MT-UCB", "multi_task",
                  "practical: fitted ICM (Matern-5/2), scale-free augmented Chebyshev, beta=1",
                  _practical(False), practical=True, tunable_width=True),
    AlgorithmSpec("MT-UCB-HV", "multi_task",
                  "MT-UCB with the scale-free hypervolume scalarization (Zhang & Golovin; "
                  "lambda uniform on the positive unit sphere)",
                  _practical(False, hypervolume=True), practical=True, tunable_width=True),
    AlgorithmSpec("MT-UCB-HVI", "multi_task",
                  "MT-UCB with the hypervolume improvement of the per-objective UCBs over the "
                  "model's front (HypervolumeImprovementUCB) instead of the scalarized UCB",
                  _practical(False, improvement=True), practical=True, tunable_width=True),
    AlgorithmSpec("MT-UCB-HVI-logprior", "multi_task",
                  "MT-UCB-HVI with the practical model's priors as densities of log theta "
                  "(practical_multitask_gp(log_space_priors=True))",
                  _practical(False, improvement=True, log_space_priors=True), practical=True,
                  tunable_width=True),
    AlgorithmSpec("MT-LogEHVI", "multi_task",
                  "the practical model with the log expected hypervolume improvement over the "
                  "model's front (LogExpectedHypervolumeImprovement; reference point as "
                  "MT-UCB-HVI)", _practical(False, expected=True), practical=True),
    AlgorithmSpec("MT-UCB-HVI-z", "multi_task",
                  "MT-UCB-HVI with the problem's reference point (qLogNEHVI's) instead of the "
                  "scale-free one", _practical(False, improvement=True, known_ref=True),
                  practical=True, tunable_width=True),
    AlgorithmSpec("MT-LogEHVI-z", "multi_task",
                  "MT-LogEHVI with the problem's reference point (qLogNEHVI's)",
                  _practical(False, expected=True, known_ref=True), practical=True),
    AlgorithmSpec("IT-LogEHVI-z", "multi_task",
                  "MT-LogEHVI-z on independent tasks (one Matern-5/2 per objective, as IT-UCB)",
                  _practical(True, expected=True, known_ref=True), practical=True),
    AlgorithmSpec("LMC-LogEHVI-z", "multi_task",
                  "MT-LogEHVI-z on the ICM plus one scaled Matern-5/2 per objective (a linear "
                  "model of coregionalisation, practical_multitask_gp(per_task=True))",
                  _practical(False, expected=True, known_ref=True, per_task=True),
                  practical=True),
    AlgorithmSpec("LMC-UCB-HVI", "multi_task",
                  "MT-UCB-HVI (the loop's default for n <= 4) on the ICM plus one scaled "
                  "Matern-5/2 per objective (practical_multitask_gp(per_task=True))",
                  _practical(False, improvement=True, per_task=True), practical=True,
                  tunable_width=True),
    AlgorithmSpec("LMC-UCB", "multi_task",
                  "MT-UCB (the loop's default for n >= 5) on the ICM plus one scaled "
                  "Matern-5/2 per objective (practical_multitask_gp(per_task=True))",
                  _practical(False, per_task=True), practical=True, tunable_width=True),
    AlgorithmSpec("MT-TS", "multi_task",
                  "MT-UCB with scalarized Thompson sampling (one Matheron posterior path per "
                  "round) instead of the UCB", _practical(False, thompson=True), practical=True),
    AlgorithmSpec("MT-UCB-refit", "multi_task",
                  "MT-UCB with a cold refit after every round (its behaviour before issue 16's "
                  "refit schedule)", _practical(False, True), practical=True, tunable_width=True),
    AlgorithmSpec("MT-UCB-TR", "multi_task",
                  "MT-UCB maximised inside TuRBO's trust region (isotropic; opt-in)",
                  _practical(False, trust_region=True), _continuous_only, practical=True,
                  tunable_width=True),
    AlgorithmSpec("MT-UCB-paper", "multi_task",
                  "paper 000 settings: fixed kernel, Theorem-2 radius (= MT-KB)",
                  _exact(False, "theorem2")),
    AlgorithmSpec("IT-UCB", "multi_task", "as MT-UCB with independent tasks (same width)",
                  _practical(True), practical=True, tunable_width=True),
    AlgorithmSpec("IT-UCB-refit", "multi_task", "IT-UCB with a cold refit after every round",
                  _practical(True, True), practical=True, tunable_width=True),
    AlgorithmSpec("MOBO", "multi_task",
                  "Paria et al.: independent GPs, scalarized per-objective UCB",
                  build_mobo),
    AlgorithmSpec("qLogNParEGO", "multi_task", "BoTorch qLogNParEGO (round's lambda)",
                  build_parego),
    AlgorithmSpec("qLogNEHVI", "multi_task", "BoTorch qLogNEHVI (n <= 10)", build_nehvi,
                  nehvi_available),
    AlgorithmSpec("Sobol", "multi_task", "random search: scrambled Sobol points, no model",
                  _build_sobol, _continuous_only),
]

ALGORITHMS: dict[str, AlgorithmSpec] = {s.name: s for s in [*MT_ALGORITHMS, *HT_ALGORITHMS]}


def get_algorithm(name: str) -> AlgorithmSpec:
    """Registry lookup (case-insensitive); unknown names list the valid ones.

    ``NAME@beta=B`` is entry ``NAME`` with width B (``RunConfig.beta``), for the entries with
    a tunable width (``MT-UCB``, ``IT-UCB`` and the heavy-tailed UCB entries such as
    ``TGP-UCB-practical``); its canonical name is ``NAME@beta=<B:g>``, which
    the manifest and the trial files carry, so runs of several widths can share a folder and
    be compared trial by trial.
    """
    if not isinstance(name, str):
        raise ValueError(f"An algorithm name must be a string, got {type(name).__name__}.")
    base, sep, option = name.partition("@")
    for key, spec in ALGORITHMS.items():
        if key.lower() == base.lower():
            return _with_width(spec, option) if sep else spec
    raise ValueError(f"Unknown algorithm {name!r}; known: {', '.join(ALGORITHMS)}.")


def with_width(name: str, beta: float) -> str:
    """``NAME@beta=B`` for an entry with a tunable width (its canonical name)."""
    base = get_algorithm(name.partition("@")[0])
    return _with_width(base, f"beta={beta!r}").name


def _with_width(spec: AlgorithmSpec, option: str) -> AlgorithmSpec:
    key, _, value = option.partition("=")
    try:
        beta = float(value) if key.strip().lower() == "beta" else float("nan")
    except ValueError:
        beta = float("nan")
    if not (beta >= 0 and beta < float("inf")):
        raise ValueError(
            f"Malformed algorithm option {option!r} of {spec.name}: expected 'beta=B' with B a "
            f"finite number >= 0 (e.g. {spec.name}@beta=2)."
        )
    if not spec.tunable_width:
        takes = ", ".join(s.name for s in ALGORITHMS.values() if s.tunable_width)
        raise ValueError(f"{spec.name} has no tunable width (@beta=B); entries with one: {takes}.")

    def build(problem, cfg: RunConfig) -> AlgorithmSetup:
        return spec.build(problem, dataclasses.replace(cfg, beta=beta))

    text = f"{beta:g}" if float(f"{beta:g}") == beta else repr(beta)  # exact, short
    return dataclasses.replace(spec, name=f"{spec.name}@beta={text}", build=build,
                               description=f"{spec.description} (beta = {text})")
