"""Experiment registry: the papers' experiments by name, with their default settings.

An experiment draws one problem instance per trial (``make_problem(seed, options)``) and
lists the algorithms, horizon and number of trials of the paper, plus a reduced ``--fast``
version (a few rounds, one or two trials) that CI runs.

**Initial design** (:class:`~.problems.InitialDesign`, a property of the experiment,
overridable with ``ExperimentOptions.initial_design`` / ``run --initial-design``): the points
every algorithm of a trial observes before round 1, the same for all of them (common random
numbers, drawn from the trial seed ``s_k``):

* ``"paper"`` — the papers' protocol: one uniformly random point of the domain (an arm on a
  finite domain) for the multi-task experiments (``ExactMultiTaskGP`` needs data; paper 000
  does not say), no data for the heavy-tailed ones (paper 001). Default of the papers'
  experiments.
* ``"sobol"`` / ``"sobol:N"`` — N scrambled-Sobol points of the box
  (:func:`~botorch_mtucb.utils.initial_design.sobol_initial_design` with seed ``s_k + 1``), N =
  :func:`~botorch_mtucb.utils.initial_design.initial_design_size` (d) = max(5, 2·d) unless
  given (the package's loop and Ax helpers use the same rule). Default of the ``mo-*`` suite
  (issue 16). Continuous domains only.
* ``"random:N"`` — N uniformly random points of the box, or N distinct uniformly random arms.

**Noise** (``ExperimentOptions.noise`` / ``run --noise SPEC``, parsed by
:func:`~mtucb_bench.noise_models.parse_noise`): the synthetic heavy-tailed
experiments take any noise model (``student-t:1.5``, ``pareto:1.6``,
``contaminated:0.02x1000``, ``gaussian:0.1``: ``y = f + ε`` with the noise's natural α and the
honest v, see :func:`~.heavy_tailed_problems.synthetic_heavy_tailed_problem`); the
multi-task experiments take ``gaussian:SIGMA`` (their noise σ, also the σ of the radii) or
``gaussian-range:FRACTION`` (objective i's σ_i = FRACTION · its range over the domain,
:func:`objective_ranges`; the radii take FRACTION); ``stock`` and ``light-sensor`` refuse
one (their rewards are the data). Without it every problem keeps its paper noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.quasirandom import SobolEngine

from mtucb_bench.algorithm_types import is_practical
from mtucb_bench.algorithms import get_algorithm
from mtucb_bench.heavy_tailed_problems import (
    light_sensor_problem,
    stock_problem,
    synthetic_heavy_tailed_problem,
)
from mtucb_bench.many_objective_problems import MANY_SUITE, make_many_problem
from mtucb_bench.mo_suite_problems import MO_SUITE, make_suite_problem
from mtucb_bench.multi_task_problems import (
    branin_problem,
    intel_lab_problem,
    perturbed_sine_problem,
    rkhs_problem,
)
from mtucb_bench.noise_models import GaussianNoise, RangeGaussianNoise, parse_noise
from mtucb_bench.problems import InitialDesign, MultiTaskProblem

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "ExperimentOptions",
    "get_experiment",
    "objective_ranges",
    "paper_settings",
]

MT_ALGORITHMS = (
    "MT-KB", "MT-BKB", "IT-KB", "IT-KB-fair", "IT-BKB", "IT-BKB-fair", "MOBO",
    "qLogNParEGO", "qLogNEHVI",
)
MT_FAST = ("MT-KB", "MT-BKB", "IT-KB", "MOBO")
#: Multi-objective suite (issue 16): practical and paper MT-UCB, IT-UCB and BoTorch's
#: baselines, all with fitted hyperparameters except MT-UCB-paper (qLogNEHVI: n <= 10),
#: and Sobol random search (the floor no method should fall below).
SUITE_ALGORITHMS = (
    "MT-UCB", "MT-UCB-paper", "IT-UCB", "MOBO", "qLogNParEGO", "qLogNEHVI", "Sobol",
)
SUITE_FAST = ("MT-UCB", "qLogNParEGO")
HT_ALGORITHMS = ("TGP-UCB", "ATA-GP-UCB-QFF", "ATA-GP-UCB-Nystrom", "GP-UCB")
HT_FAST = ("TGP-UCB", "ATA-GP-UCB-Nystrom")


@dataclass(frozen=True)
class ExperimentOptions:
    """Problem options from the command line.

    Attributes:
        data_dir: Folder of ``fin.csv`` / ``iw_data_all.mat`` (default: see ``data.py``).
        intel_data: Intel lab ``data.txt``.
        intel_locs: Intel lab ``mote_locs.txt``.
        continuous: Branin on the continuous unit square instead of a grid.
        noise: Noise spec (module docstring); ``None``: the paper's noise.
        initial_design: Initial design spec (:class:`~.problems.InitialDesign`); ``None``: the
            experiment's default.
    """

    data_dir: str | Path | None = None
    intel_data: str | Path | None = None
    intel_locs: str | Path | None = None
    continuous: bool = False
    noise: str | None = None
    initial_design: str | None = None

    def __post_init__(self) -> None:
        if self.noise is not None:
            parse_noise(self.noise)  # a clear error naming the spec and the syntax
        if self.initial_design is not None:
            InitialDesign.parse(self.initial_design)


@dataclass(frozen=True)
class Experiment:
    """A named experiment.

    Attributes:
        name: CLI name.
        kind: ``"multi_task"`` or ``"heavy_tailed"``.
        paper: Where it comes from.
        make_problem: ``(seed, options) -> problem`` (one instance per trial; the registry's
            entries apply ``options.noise`` and stamp the initial design on the problem).
        algorithms: Default algorithms.
        horizon: The paper's horizon T (ours where the paper does not say).
        trials: The paper's number of trials.
        fast_algorithms: Algorithms of ``--fast``.
        fast_horizon: Horizon of ``--fast``.
        fast_trials: Trials of ``--fast``.
        random_instance: Whether each trial draws a new function.
        initial_design: Default initial design spec (:class:`~.problems.InitialDesign`).
    """

    name: str
    kind: str
    paper: str
    make_problem: Callable[[int, ExperimentOptions], Any]
    algorithms: tuple[str, ...]
    horizon: int
    trials: int
    fast_algorithms: tuple[str, ...]
    fast_horizon: int
    fast_trials: int = 1
    random_instance: bool = True
    initial_design: str = "paper"


def _intel(seed: int, opt: ExperimentOptions):
    if opt.intel_data is None or opt.intel_locs is None:
        raise ValueError(
            "The intel-lab experiment needs --intel-data PATH/data.txt and --intel-locs "
            "PATH/mote_locs.txt (the data are no longer distributed; see data.py)."
        )
    return intel_lab_problem(opt.intel_data, opt.intel_locs, seed=seed)


def _gaussian_noise(name: str, opt: ExperimentOptions) -> GaussianNoise | None:
    """The Gaussian ``--noise`` of a multi-task experiment (``None``: paper noise)."""
    if opt.noise is None:
        return None
    model = parse_noise(opt.noise)
    if not isinstance(model, GaussianNoise):
        raise ValueError(
            f"Experiment {name!r} is multi-objective with Gaussian noise (paper 000): --noise "
            f"must be 'gaussian:SIGMA' or 'gaussian-range:FRACTION', got {opt.noise!r}."
        )
    return model


#: Scrambled Sobol points (seed 0) on which :func:`objective_ranges` measures a box's ranges.
RANGE_SAMPLE = 1024
_RANGES: dict[tuple[str, int], tuple[float, ...]] = {}


def objective_ranges(problem: MultiTaskProblem, seed: int = 0) -> tuple[float, ...]:
    """Range (max − min) of each objective of ``problem`` over its domain: its arms, or
    :data:`RANGE_SAMPLE` scrambled Sobol points (seed 0) in its box; cached per
    ``(problem.name, seed)`` (``seed``: the instance's, for problems drawn per seed)."""
    key = (problem.name, int(seed))
    if key not in _RANGES:
        if problem.arms is not None:
            X = problem.arms
        else:
            lo, hi = problem.bounds[0], problem.bounds[1]
            U = SobolEngine(lo.shape[-1], scramble=True, seed=0).draw(RANGE_SAMPLE).to(lo)
            X = lo + (hi - lo) * U
        with torch.no_grad():
            F = problem.f(X)
        _RANGES[key] = tuple(float(v) for v in F.max(0).values - F.min(0).values)
    return _RANGES[key]


def _multi_task(name: str, factory: Callable[[int, ExperimentOptions], MultiTaskProblem],
                default_design: str) -> Callable[[int, ExperimentOptions | None], Any]:
    """``make_problem`` of a multi-task entry: noise override and the initial design stamped."""

    def make(seed: int, opt: ExperimentOptions | None) -> MultiTaskProblem:
        opt = opt or ExperimentOptions()
        problem = factory(seed, opt)
        design = InitialDesign.parse(opt.initial_design or default_design).resolve(problem)
        changes: dict[str, Any] = {}
        notes = problem.notes
        noise = _gaussian_noise(name, opt)
        if noise is not None:
            changes["noise_std"] = float(noise.scale)
            notes += f"; noise {noise.spec} (--noise)"
        if isinstance(noise, RangeGaussianNoise):
            ranges = objective_ranges(problem, seed)
            changes["noise_scale"] = ranges
            notes += " = σ " + ", ".join(f"{noise.scale * r:.3g}" for r in ranges)
        if design.kind != "paper":  # the papers' protocol leaves the instance as it was
            changes["initial_design"] = design.spec
            notes += f"; initial design {design.spec}"
        if not changes:
            return problem
        return dataclasses.replace(problem, notes=notes, **changes)

    return make


def _heavy_tailed(name: str, factory: Callable[[int, ExperimentOptions], Any],
                  takes_noise: bool) -> Callable[[int, ExperimentOptions | None], Any]:
    def make(seed: int, opt: ExperimentOptions | None):
        opt = opt or ExperimentOptions()
        if opt.noise is not None and not takes_noise:
            raise ValueError(
                f"Experiment {name!r} samples its rewards from real data: it takes no --noise "
                f"(got {opt.noise!r})."
            )
        if opt.noise is not None and isinstance(parse_noise(opt.noise), RangeGaussianNoise):
            raise ValueError(
                f"Experiment {name!r} is single-objective: 'gaussian-range:FRACTION' is for "
                f"the multi-objective experiments (got {opt.noise!r})."
            )
        problem = factory(seed, opt)
        InitialDesign.parse(opt.initial_design or "paper").resolve(problem)
        return problem

    return make


def _synthetic(kernel: str, paper_noise: str) -> Callable[[int, ExperimentOptions], Any]:
    def factory(s: int, o: ExperimentOptions):
        return synthetic_heavy_tailed_problem(kernel, o.noise or paper_noise, s)

    return factory


def _mt(name: str, paper: str, factory, algorithms, horizon, trials, fast_algorithms,
        fast_horizon, fast_trials=1, random_instance=True, design="paper") -> Experiment:
    return Experiment(name, "multi_task", paper, _multi_task(name, factory, design), algorithms,
                      horizon, trials, fast_algorithms, fast_horizon, fast_trials,
                      random_instance, design)


def _ht(name: str, paper: str, factory, trials: int, takes_noise: bool = True,
        random_instance: bool = True) -> Experiment:
    return Experiment(name, "heavy_tailed", paper, _heavy_tailed(name, factory, takes_noise),
                      HT_ALGORITHMS, 20_000, trials, HT_FAST, 100,
                      random_instance=random_instance)


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in [
        _mt("rkhs-n2", "000 §5 Fig. 1(b)", lambda s, o: rkhs_problem(2, s), MT_ALGORITHMS, 100,
            10, MT_FAST, 8),
        _mt("rkhs-n20", "000 §5 Fig. 1(c)", lambda s, o: rkhs_problem(20, s), MT_ALGORITHMS,
            100, 10, MT_FAST, 8),
        _mt("perturbed-sine", "000 §5 Fig. 1(d)", lambda s, o: perturbed_sine_problem(),
            MT_ALGORITHMS, 100, 10, MT_FAST, 8, random_instance=False),
        _mt("branin", "000 §5 Fig. 1(e)", lambda s, o: branin_problem(continuous=o.continuous),
            MT_ALGORITHMS, 100, 10, MT_FAST, 6, random_instance=False),
        _mt("intel-lab", "000 §5 Fig. 1(f) (data not shipped)", _intel, MT_ALGORITHMS, 100,
            10, MT_FAST, 6),
        _ht("se-student", "001 §6 Fig. 1(a)", _synthetic("se", "student"), 20),
        _ht("se-pareto", "001 §6 Fig. 1(b)", _synthetic("se", "pareto"), 20),
        _ht("matern-student", "001 §6 Fig. 1(c)", _synthetic("matern", "student"), 20),
        _ht("stock", "001 §6 Fig. 1(d)", lambda s, o: stock_problem(o.data_dir), 10,
            takes_noise=False, random_instance=False),
        _ht("light-sensor", "001 §6 Fig. 1(e)", lambda s, o: light_sensor_problem(o.data_dir),
            10, takes_noise=False, random_instance=False),
    ]
}
EXPERIMENTS.update({
    f"mo-{name}": _mt(
        f"mo-{name}", "issue 16 multi-objective suite",
        lambda s, o, _name=name: make_suite_problem(_name, seed=s), SUITE_ALGORITHMS, 30, 10,
        SUITE_FAST, 3, random_instance=name == "corr-rff", design="sobol",
    )
    for name in MO_SUITE
})
EXPERIMENTS.update({  # many-objective suite (issue 26): qLogNEHVI only where a round fits
    f"many-{name}": _mt(
        f"many-{name}", "issue 26 many-objective suite",
        lambda s, o, _name=name: make_many_problem(_name, seed=s),
        ("MT-UCB", "MT-UCB-HV", "qLogNParEGO", "Sobol"), 40, 10, ("MT-UCB", "Sobol"), 3,
        random_instance=False, design="sobol",
    )
    for name in MANY_SUITE
})


def paper_settings(
    experiment: str,
    algorithms: list[str] | None = None,
    bound: str | None = None,
    scalarization: str | None = None,
    constants: str | None = None,
    options: ExperimentOptions | None = None,
    fast: bool = False,
) -> dict[str, Any]:
    """The papers' settings for ``experiment`` (``run --paper``), refusing conflicting ones.

    The papers' protocol: the spectral scalarized UCB of paper 000 eq. (2), the Chebyshev
    scalarization of its §5, the authors' constants of paper 001 (the schedules that
    reproduce its figures), each method's paper radius (Theorem 2 / 3, Appendix E, the
    authors' β), the papers' initial design (one random point, none in paper 001) and the
    papers' noise, and no practical-defaults entry (``MT-UCB``, ``IT-UCB``, ``*-practical``;
    baselines and Sobol stay).

    Args:
        experiment: Experiment name.
        algorithms: Algorithms asked for (default: the experiment's, practical ones left out).
        bound: ``bound`` asked for, or ``None``.
        scalarization: ``scalarization`` asked for, or ``None``.
        constants: ``constants`` asked for, or ``None``.
        options: Problem options asked for.
        fast: Whether the ``--fast`` algorithm list is the default.

    Returns:
        ``run_experiment`` keyword arguments: ``algorithms``, ``bound``, ``scalarization``,
        ``constants``, ``options``.

    Raises:
        ValueError: Naming each setting that is not the papers' (a practical algorithm, a
            directional bound, a linear scalarization, the theorems' constants, another
            initial design, a noise model).
    """
    exp = get_experiment(experiment)
    options = options or ExperimentOptions()
    paper = {"bound": "spectral", "scalarization": "chebyshev", "constants": "authors"}
    asked = {"bound": bound, "scalarization": scalarization, "constants": constants}
    bad = [f"--{k} {v}" for k, v in asked.items() if v is not None and v != paper[k]]
    if options.initial_design not in (None, "paper"):
        bad.append(f"--initial-design {options.initial_design}")
    if options.noise is not None:
        bad.append(f"--noise {options.noise}")
    if algorithms:
        bad += [f"algorithm {a} (practical defaults)" for a in algorithms
                if is_practical(get_algorithm(a))]
    if bad:
        raise ValueError(f"--paper runs the papers' settings; these are not: {', '.join(bad)}.")
    default = exp.fast_algorithms if fast else exp.algorithms
    algs = list(algorithms) if algorithms else [
        a for a in default if not is_practical(get_algorithm(a))
    ]
    if not algs:
        raise ValueError(f"--paper leaves no algorithm of {experiment!r}'s default list.")
    return dict(algorithms=algs, **paper,
                options=dataclasses.replace(options, initial_design="paper"))


def get_experiment(name: str) -> Experiment:
    """Registry lookup; unknown names list the valid ones."""
    if name not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}.")
    return EXPERIMENTS[name]
