"""Run an experiment: trials × algorithms through the one BO loop, metrics, files, plot.

Common random numbers: within trial ``k`` (seed ``s_k = 1000·seed + k``) every algorithm gets
the same problem instance, the same initial design (the experiment's
:class:`~.problems.InitialDesign`, drawn from ``s_k + 1``: one random point in the papers'
protocol, scrambled Sobol points of a size that grows with d in the ``mo-*`` suite), the
same λ_t sequence (a generator seeded
with ``s_k + 3``), the same noise stream (``s_k + 2``; noise draws are consumed one per round,
so round t's noise is the same for all algorithms) and the same Monte-Carlo λ sample of the
Bayes regret (``s_k + 4``). Algorithm-internal randomness (Nyström dictionaries, MC samplers)
is seeded with ``s_k`` too. Every (trial, algorithm) unit therefore depends on nothing but its
trial seed: units run serially, on local processes (``workers``) or on Dask (``scheduler``)
give the same trial records, and a killed run continues where it stopped. A unit is a
:class:`TrialUnit`, run by :func:`run_unit` through the engines of :mod:`.parallel`. Within
one process units are serialised by a lock (``run_trial`` seeds torch's global generator and
sets warning filters), so a Dask worker with several threads stays deterministic, just not
faster: start Dask workers with one thread each
(``dask worker ADDRESS --nthreads 1 --nworkers N``).

Files written to ``out_dir`` (one folder per configuration, every file written atomically):

* ``manifest.json`` — the configuration (written first; see :mod:`.manifest`): a later run
  into the folder must have the same one, and then skips the finished trials;
* ``trial<k>_<algorithm>.json`` — settings and per-round arrays (x, y, λ_t, β, regret,
  cumulative and time-average regret, Bayes regret, hypervolume, wall time, Nyström
  dictionary size m_t of MT-BKB / IT-BKB). Bayes regret and hypervolume at round t are those
  of the best points among the queries x_1..x_t, and of the initial design too unless it is
  the papers' (one random point, outside the papers' protocol; their files are unchanged);
* ``rounds.csv`` — one row per (algorithm, trial, round) (every ``csv_stride``-th round);
* ``summary.json`` — final time-average regret mean ± std per algorithm, wall time per round;
* ``time_average_regret.png`` — mean ± std of R_C(t)/t vs t, one line per algorithm.
"""

from __future__ import annotations

import hashlib
import threading
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions.warnings import InputDataWarning
from linear_operator.utils.warnings import NumericalWarning
from tqdm.auto import tqdm

from botorch_mtucb.acquisition.scalarization import (
    ScalarizationSampler,
    sample_scalarization_weights,
)
from botorch_mtucb.loop import BoxOptimizer, FiniteArmOptimizer, run_bo_loop
from mtucb_bench.algorithm_types import AlgorithmSpec
from mtucb_bench.algorithms import RunConfig, get_algorithm
from mtucb_bench.experiments import Experiment, ExperimentOptions, get_experiment
from mtucb_bench.fileio import read_json, write_json
from mtucb_bench.manifest import (
    MANIFEST_FILE,
    check_run_settings,
    claim_run_folder,
    expected_units,
    load_finished_trials,
    make_manifest,
    package_versions,
    trial_file_name,
)
from mtucb_bench.metrics import (
    MAX_HYPERVOLUME_OBJECTIVES,
    bayes_regret,
    hypervolume_curve,
    scalarized_optima,
    time_average_regret,
)
from mtucb_bench.outputs import write_outputs
from mtucb_bench.parallel import execute, require_distributed
from mtucb_bench.problems import (
    HeavyTailedProblem,
    InitialDesign,
    MultiTaskProblem,
)
from mtucb_bench.results import ExperimentResult, TrialResult

__all__ = [
    "TrialUnit",
    "UnitOutcome",
    "resume_experiment",
    "run_experiment",
    "run_trial",
    "run_unit",
]

BAYES_SAMPLES = 256
_LOCK = threading.Lock()
_LOCK_OPTIMA = threading.Lock()
_OPTIMA: OrderedDict[str, torch.Tensor] = OrderedDict()  # fingerprint -> max_x s_λ(f(x))
_OPTIMA_SIZE = 32


def _optima_key(*parts: object) -> str:
    """A fingerprint of everything the polished optima depend on: tensors by their bytes."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, torch.Tensor):
            t = part.detach().to("cpu", torch.float64).contiguous()
            h.update(repr(tuple(t.shape)).encode())
            h.update(t.numpy().tobytes())
        else:
            h.update(repr(part).encode())
        h.update(b"|")
    return h.hexdigest()


def _cached_optima(problem: MultiTaskProblem, F_ref: torch.Tensor, W: torch.Tensor,
                   scalarization: str) -> torch.Tensor:
    """:func:`scalarized_optima` of the trial's Monte-Carlo λ, computed once per process for
    all the algorithms of a trial: the optima depend on the problem instance and the λ's, not
    on the algorithm, and the polish is most of a short trial's metric time."""
    polish = getattr(problem, "polish_regret", True)
    bounds = problem.bounds if polish else None
    key = _optima_key(type(problem).__qualname__, problem.name, problem.regret_X, F_ref, W,
                      scalarization, problem.ref_point, bounds)
    with _LOCK_OPTIMA:
        if key in _OPTIMA:
            _OPTIMA.move_to_end(key)
            return _OPTIMA[key].clone()
    optima = scalarized_optima(problem.f, problem.regret_X, W, scalarization, problem.ref_point,
                               bounds)
    with _LOCK_OPTIMA:
        _OPTIMA[key] = optima.clone()
        while len(_OPTIMA) > _OPTIMA_SIZE:
            _OPTIMA.popitem(last=False)
    return optima


def _design(problem: MultiTaskProblem, design: str | None) -> InitialDesign:
    """The initial design of a trial: ``design``, else the problem's, else the papers'."""
    return InitialDesign.parse(design or getattr(problem, "initial_design", "paper"))


def run_trial(
    problem: MultiTaskProblem | HeavyTailedProblem,
    algorithm: str,
    horizon: int,
    seed: int,
    trial: int = 0,
    bound: str = "spectral",
    scalarization: str = "chebyshev",
    constants: str = "authors",
    progress: bool = False,
    keep_history: bool = True,
    initial_design: str | None = None,
) -> TrialResult:
    """One algorithm on one problem instance with the trial's common random numbers.

    ``initial_design`` (an :class:`~.problems.InitialDesign` spec) overrides the design
    the experiment stamped on ``problem`` (``problem.initial_design``; ``"paper"`` if none).
    """
    spec = get_algorithm(algorithm)
    is_mt = isinstance(problem, MultiTaskProblem)
    if spec.kind != ("multi_task" if is_mt else "heavy_tailed"):
        raise ValueError(
            f"Algorithm {spec.name!r} is a {spec.kind} algorithm; problem {problem.name!r} is "
            f"{'multi_task' if is_mt else 'heavy_tailed'}."
        )
    reason = spec.available(problem)
    if reason is not None:
        raise ValueError(f"{spec.name} cannot run on {problem.name}: {reason}.")
    cfg = RunConfig(horizon=horizon, bound=bound, constants=constants, seed=seed)
    setup = spec.build(problem, cfg)
    torch.manual_seed(seed)
    lam_gen = torch.Generator().manual_seed(seed + 3)
    noise_gen = torch.Generator().manual_seed(seed + 2)
    if is_mt:
        n = problem.num_objectives
        ref = problem.ref_point if scalarization == "chebyshev" else None
        sampler = ScalarizationSampler(n, scalarization, ref_point=ref)
        if setup.optimizer is not None:
            optimizer = setup.optimizer
        elif problem.is_finite:
            optimizer = FiniteArmOptimizer(problem.arms)
        else:
            optimizer = BoxOptimizer(problem.bounds, num_restarts=4, raw_samples=256, seed=seed)
        observe = problem.observer(noise_gen)
        X0 = _design(problem, initial_design).draw(problem, seed)
        true_f, regret_X = problem.f, problem.regret_X
    else:
        if initial_design not in (None, "paper"):
            InitialDesign.parse(initial_design).resolve(problem)  # refuses: no data in 001
        sampler = None
        arms = problem.arm_points(setup.representation)
        optimizer = FiniteArmOptimizer(arms) if setup.optimizer is None else setup.optimizer
        observe = problem.observer(noise_gen, setup.representation)
        X0 = arms[:0]
        true_f, regret_X = problem.true_f(setup.representation), arms
    with warnings.catch_warnings():
        # fixed-hyperparameter baselines on unscaled data: BoTorch's advice does not apply
        warnings.simplefilter("ignore", InputDataWarning)
        warnings.simplefilter("ignore", NumericalWarning)
        history = run_bo_loop(
            observe=observe,
            initial_X=X0,
            num_rounds=horizon,
            model_factory=setup.model_factory,
            acquisition_factory=setup.acquisition_factory,
            optimizer=optimizer,
            scalarization_sampler=sampler,
            true_f=true_f,
            regret_X=regret_X,
            regret_bounds=(problem.bounds if is_mt and not problem.is_finite
                           and getattr(problem, "polish_regret", True) else None),
            update=setup.update,
            refit_every=setup.refit_every,
            generator=lam_gen,
            progress=progress,
        )
    history.model = None
    regret = history.regrets if history.rounds else torch.zeros(0, dtype=torch.float64)
    wall = torch.tensor([r.wall_time for r in history.rounds], dtype=torch.float64)
    bayes = hv = None
    if is_mt and history.rounds:
        F_ref = true_f(regret_X).detach()
        # the best point so far: of the queries in the papers' protocol (one random point,
        # not part of it), of the initial design and the queries otherwise
        n0 = 0 if _design(problem, initial_design).kind == "paper" else X0.shape[0]
        F_q = true_f(torch.cat([X0[:n0], history.X])).detach()
        W = sample_scalarization_weights(
            problem.num_objectives, BAYES_SAMPLES, scalarization,
            torch.Generator().manual_seed(seed + 4),
        )
        optima = None
        if not problem.is_finite:  # grid maximiser of each Monte-Carlo λ, polished where
            # f is cheap and differentiable (not a simulator: SuiteProblem.polish_regret)
            optima = _cached_optima(problem, F_ref, W, scalarization)
        bayes = bayes_regret(F_ref, F_q, W, scalarization, problem.ref_point, optima)[n0:]
        if problem.num_objectives <= MAX_HYPERVOLUME_OBJECTIVES:
            hv = hypervolume_curve(F_q, problem.ref_point)[n0:]
    sizes = [r.dictionary_size for r in history.rounds]
    dict_size = None
    if sizes and all(m is not None for m in sizes):
        dict_size = torch.tensor(sizes, dtype=torch.float64)
    return TrialResult(
        algorithm=spec.name,
        trial=trial,
        seed=seed,
        regret=regret,
        time_average=time_average_regret(regret),
        wall_time=wall,
        bayes=bayes,
        hypervolume=hv,
        dictionary_size=dict_size,
        history=history if keep_history else None,
    )


@dataclass(frozen=True)
class TrialUnit:
    """One (trial, algorithm) pair of a run, with everything needed to run it anywhere.

    Attributes:
        experiment: Experiment name (looked up in the worker).
        trial: Trial index k.
        trial_seed: ``1000·seed + k``.
        algorithm: Algorithm name.
        horizon: Rounds T.
        bound: ``"spectral"`` or ``"directional"``.
        scalarization: ``"chebyshev"`` or ``"linear"``.
        constants: ``"authors"`` or ``"theory"``.
        options: Problem options.
        threads: torch threads while the unit runs (``None``: leave as is).
        progress: Per-round progress bar (serial runs with long horizons only).
    """

    experiment: str
    trial: int
    trial_seed: int
    algorithm: str
    horizon: int
    bound: str
    scalarization: str
    constants: str
    options: ExperimentOptions
    threads: int | None = None
    progress: bool = False


@dataclass(frozen=True)
class UnitOutcome:
    """What a unit sends back: the trial record, or why the algorithm was skipped.

    Attributes:
        trial: Trial index k.
        algorithm: Canonical algorithm name.
        record: :meth:`~.results.TrialResult.to_json_dict` (plain lists), or ``None`` if
            skipped.
        skipped: The reason the algorithm cannot run on this problem, or ``None``.
        versions: :func:`~.manifest.package_versions` of the process that ran it (a Dask
            worker may have another environment than the client).
    """

    trial: int
    algorithm: str
    record: dict[str, Any] | None
    skipped: str | None = None
    versions: dict[str, str] | None = None


def run_unit(unit: TrialUnit) -> UnitOutcome:
    """Run one unit in this process: trial k's problem instance, then :func:`run_trial`.

    Module-level, so worker processes and Dask import it by reference
    (:func:`~.parallel.execute`).
    """
    with _LOCK:
        previous = torch.get_num_threads()
        if unit.threads is not None:
            torch.set_num_threads(unit.threads)
        try:
            problem = get_experiment(unit.experiment).make_problem(unit.trial_seed, unit.options)
            spec = get_algorithm(unit.algorithm)
            reason = spec.available(problem)
            if reason is not None:
                return UnitOutcome(unit.trial, spec.name, None, reason, package_versions())
            tr = run_trial(
                problem, spec.name, unit.horizon, unit.trial_seed, trial=unit.trial,
                bound=unit.bound, scalarization=unit.scalarization, constants=unit.constants,
                progress=unit.progress,
            )
            return UnitOutcome(unit.trial, spec.name, tr.to_json_dict(), None, package_versions())
        finally:
            if unit.threads is not None:
                torch.set_num_threads(previous)


def run_experiment(
    experiment: str,
    algorithms: list[str] | None = None,
    trials: int | None = None,
    horizon: int | None = None,
    seed: int = 0,
    first_trial: int = 0,
    out_dir: str | Path | None = None,
    fast: bool = False,
    bound: str = "spectral",
    scalarization: str = "chebyshev",
    constants: str = "authors",
    options: ExperimentOptions | None = None,
    progress: bool = True,
    csv_stride: int | None = None,
    plot: bool = True,
    workers: int = 0,
    scheduler: Any = None,
    threads: int | None = None,
) -> ExperimentResult:
    """Run ``experiment`` (see :data:`~mtucb_bench.experiments.EXPERIMENTS`).

    With ``out_dir``, the folder is claimed for this configuration first (``manifest.json``,
    created atomically, see :func:`~.manifest.claim_run_folder`): a folder of another
    configuration, or one that cannot be written into, is refused; a folder of the same one is
    continued, its finished trial files read back and not rewritten.

    Args:
        experiment: Experiment name.
        algorithms: Algorithm names (default: the experiment's, or its fast subset); each once.
        trials: Number of trials (default: the paper's, or 1 with ``fast``).
        horizon: Rounds T (default: the paper's, or the fast horizon).
        seed: Base seed; trial k uses 1000·seed + k.
        first_trial: Index of the first trial: trials ``first_trial, …, first_trial + N − 1``
            are run, so a long protocol can be split over processes or machines and pooled
            with ``summarize --merge`` (trial k is the same whichever run it is in).
        out_dir: Folder for the files (nothing written when ``None``).
        fast: Reduced version (CI).
        bound: ``"spectral"`` (paper 000 eq. (2)) or ``"directional"`` for MT-* / IT-*.
        scalarization: ``"chebyshev"`` (paper 000 §5) or ``"linear"`` (Appendix E).
        constants: ``"authors"`` or ``"theory"`` for the heavy-tailed models.
        options: Problem options (data paths, continuous Branin, ``noise``, ``initial_design``;
            the manifest records the noise and the resolved initial design).
        progress: One tqdm bar over the (trial, algorithm) units.
        csv_stride: Write every k-th round to ``rounds.csv`` (default: 1 up to T = 2000,
            else T // 1000).
        plot: Write the PNG.
        workers: Run the units on this many local processes (``0``: serially, here).
        scheduler: Dask scheduler address or ``distributed.Client`` (instead of ``workers``).
        threads: torch threads per unit (default: unchanged serially, 1 in workers). The
            trial records do not depend on ``workers`` / ``scheduler``; keep ``threads``
            equal (the CLI's default is 1) when comparing runs bit for bit.

    Raises:
        ValueError: Bad arguments (an algorithm listed twice, one of another kind, ...).
        RunFolderError: ``out_dir`` holds another configuration, or cannot be written into
            (checked before any trial is computed; a ``ValueError``).
    """
    exp = get_experiment(experiment)
    check_run_settings(bound, scalarization, constants, threads, workers, scheduler)
    options = options or ExperimentOptions()
    names = [s.name for s in _algorithm_specs(exp, algorithms, fast)]
    T, N = _protocol_size(exp, trials, horizon, first_trial, fast)
    if scheduler is not None:
        require_distributed()  # before anything is written
    # build one instance before writing anything: missing data files, a noise or an initial
    # design the experiment does not take fail here
    problem = exp.make_problem(1000 * seed + first_trial, options)
    manifest = make_manifest(
        experiment=exp.name, paper=exp.paper, algorithms=names, trials=N,
        first_trial=first_trial, horizon=T, seed=seed, fast=fast, bound=bound,
        scalarization=scalarization if exp.kind == "multi_task" else None,
        constants=constants if exp.kind == "heavy_tailed" else None, options=options,
        initial_design=getattr(problem, "initial_design", "paper"),
    )
    settings = {**manifest, "problem_notes": getattr(problem, "notes", "")}
    units = expected_units(manifest)
    out = Path(out_dir) if out_dir is not None else None
    done: dict[tuple[int, str], TrialResult] = {}
    if out is not None and claim_run_folder(out, manifest):
        done = load_finished_trials(out, settings, units)
    parallel = bool(workers) or scheduler is not None
    unit_threads = threads if threads is not None else (1 if parallel else None)
    todo = [
        TrialUnit(exp.name, k, 1000 * seed + k, alg, T, bound, scalarization, constants,
                  options, unit_threads, progress and not parallel and T >= 1000)
        for k, alg in units if (k, alg) not in done
    ]
    result = ExperimentResult(experiment=exp.name, settings=settings, out_dir=out)
    bar = None
    if progress:
        bar = tqdm(total=len(units), initial=len(done), desc=exp.name, unit="trial")
    start = time.perf_counter()
    try:
        execute(run_unit, todo, _Recorder(result, manifest["versions"], done, bar),
                workers=workers, scheduler=scheduler)
    finally:
        if bar is not None:
            bar.close()
    result.trials = [done[u] for u in units if u in done]
    result.settings = {
        **settings, "total_wall_time_s": time.perf_counter() - start,
        "resumed_trials": len(units) - len(todo), "workers": workers,
        "scheduler": None if scheduler is None else str(scheduler), "threads": unit_threads,
    }
    if out is not None:
        write_outputs(result, out, csv_stride, plot)
    return result


def _algorithm_specs(
    exp: Experiment, algorithms: list[str] | None, fast: bool
) -> list[AlgorithmSpec]:
    """The run's algorithms (default: the experiment's, or its fast subset), each once and
    of the experiment's kind."""
    algs = list(algorithms) if algorithms else list(exp.fast_algorithms if fast else exp.algorithms)
    specs = [get_algorithm(a) for a in algs]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"`algorithms` lists {', '.join(twice)} more than once: give each once.")
    for s in specs:
        if s.kind != exp.kind:
            raise ValueError(f"Algorithm {s.name!r} ({s.kind}) does not apply to {exp.name!r}.")
    return specs


def _protocol_size(
    exp: Experiment, trials: int | None, horizon: int | None, first_trial: int, fast: bool
) -> tuple[int, int]:
    """Horizon T and number of trials N (default: the paper's, or the fast version's)."""
    T = int(horizon if horizon is not None else (exp.fast_horizon if fast else exp.horizon))
    N = int(trials if trials is not None else (exp.fast_trials if fast else exp.trials))
    if T < 1 or N < 1:
        raise ValueError(f"`horizon` and `trials` must be >= 1, got {T} and {N}.")
    if not isinstance(first_trial, int) or first_trial < 0 or first_trial + N > 1000:
        raise ValueError(
            f"`first_trial` must be an integer >= 0 with first_trial + trials <= 1000 (trial "
            f"seeds 1000·seed + k), got {first_trial!r} with {N} trials."
        )
    return T, N


class _Recorder:
    """Takes the units' outcomes in the calling process, as they arrive: refuses a worker
    with other package versions, writes each trial file (into ``result.out_dir``), keeps the
    trial in ``done``, records skipped algorithms in ``result.skipped``, moves the bar."""

    def __init__(
        self,
        result: ExperimentResult,
        versions: dict[str, str],
        done: dict[tuple[int, str], TrialResult],
        bar: Any = None,
    ) -> None:
        self.result, self.versions, self.done, self.bar = result, versions, done, bar

    def __call__(self, o: UnitOutcome) -> None:
        if o.versions is not None and o.versions != self.versions:
            raise ValueError(
                f"A worker runs other package versions ({o.versions}) than this run "
                f"({self.versions}): its trials would not be those of a serial run."
            )
        if o.record is None:
            if o.algorithm not in self.result.skipped:
                warnings.warn(f"Skipping {o.algorithm}: {o.skipped}.", stacklevel=3)
            self.result.skipped[o.algorithm] = str(o.skipped)
        else:
            self._keep(o)
        if self.bar is not None:
            self.bar.update(1)

    def _keep(self, o: UnitOutcome) -> None:
        out = self.result.out_dir
        if out is not None:
            write_json(out / trial_file_name(o.trial, o.algorithm),
                       {"settings": self.result.settings, **o.record})
        tr = TrialResult.from_json_dict(o.record)
        self.done[(o.trial, o.algorithm)] = tr
        if self.bar is not None:
            self.bar.set_postfix(alg=o.algorithm, avg_regret=f"{float(tr.time_average[-1]):.4g}")


def resume_experiment(out_dir: str | Path, **kwargs: Any) -> ExperimentResult:
    """Continue the run recorded in ``out_dir/manifest.json`` with its own configuration.

    Args:
        out_dir: A run folder written by :func:`run_experiment`.
        **kwargs: Execution options only: ``progress``, ``csv_stride``, ``plot``, ``workers``,
            ``scheduler``, ``threads``.

    Raises:
        FileNotFoundError: If ``out_dir`` has no manifest.
        ValueError: If ``kwargs`` holds a configuration option, or ``out_dir`` is a merged run.
    """
    allowed = {"progress", "csv_stride", "plot", "workers", "scheduler", "threads"}
    bad = sorted(set(kwargs) - allowed)
    if bad:
        raise ValueError(
            f"resume_experiment takes the configuration from the manifest; got {bad}, "
            f"expected only {sorted(allowed)}."
        )
    path = Path(out_dir) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"Nothing to resume: {str(path)!r} does not exist.")
    m = read_json(path)
    if "merged_from" in m or "trials" not in m:
        raise ValueError(
            f"{str(out_dir)!r} holds a merged run (summarize --merge): resume its pieces "
            f"({', '.join(m.get('merged_from', [])) or 'unknown'}) and merge them again."
        )
    o = m.get("options", {})
    return run_experiment(
        m["experiment"], algorithms=m["algorithms"], trials=m["trials"], horizon=m["horizon"],
        seed=m["seed"], first_trial=m["first_trial"], out_dir=out_dir, fast=m["fast"],
        bound=m["bound"], scalarization=m.get("scalarization") or "chebyshev",
        constants=m.get("constants") or "authors",
        options=ExperimentOptions(o.get("data_dir"), o.get("intel_data"), o.get("intel_locs"),
                                  bool(o.get("continuous", False)), o.get("noise"),
                                  m.get("initial_design", "paper")),
        **kwargs,
    )

