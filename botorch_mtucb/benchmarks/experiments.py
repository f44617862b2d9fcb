"""Experiment registry: the papers' experiments by name, with their default settings.

An experiment draws one problem instance per trial (``make_problem(seed, options)``) and
lists the algorithms, horizon and number of trials of the paper, plus a reduced ``--fast``
version (a few rounds, one or two trials) that CI runs.

**Initial design** (:class:`InitialDesign`, a property of the experiment, overridable with
``ExperimentOptions.initial_design`` / ``run --initial-design``): the points every algorithm
of a trial observes before round 1, the same for all of them (common random numbers, drawn
from the trial seed ``s_k``):

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
:func:`~botorch_mtucb.benchmarks.noise_models.parse_noise`): the synthetic heavy-tailed
experiments take any noise model (``student-t:1.5``, ``pareto:1.6``,
``contaminated:0.02x1000``, ``gaussian:0.1``: ``y = f + ε`` with the noise's natural α and the
honest v, see :func:`~.heavy_tailed_problems.synthetic_heavy_tailed_problem`); the
multi-task experiments take ``gaussian:SIGMA`` (their noise σ, also the σ of the radii);
``stock`` and ``light-sensor`` refuse one (their rewards are the data). Without it every
problem keeps its paper noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from botorch_mtucb.benchmarks.heavy_tailed_problems import (
    light_sensor_problem,
    stock_problem,
    synthetic_heavy_tailed_problem,
)
from botorch_mtucb.benchmarks.mo_suite_problems import MO_SUITE, make_suite_problem
from botorch_mtucb.benchmarks.multi_task_problems import (
    branin_problem,
    intel_lab_problem,
    perturbed_sine_problem,
    rkhs_problem,
)
from botorch_mtucb.benchmarks.noise_models import GaussianNoise, parse_noise
from botorch_mtucb.benchmarks.problems import MultiTaskProblem
from botorch_mtucb.utils.initial_design import initial_design_size, sobol_initial_design

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "ExperimentOptions",
    "InitialDesign",
    "get_experiment",
]

MT_ALGORITHMS = (
    "MT-KB", "MT-BKB", "IT-KB", "IT-KB-fair", "IT-BKB", "IT-BKB-fair", "MOBO",
    "qLogNParEGO", "qLogNEHVI",
)
MT_FAST = ("MT-KB", "MT-BKB", "IT-KB", "MOBO")
#: Multi-objective suite (issue 16): practical and paper MT-UCB, IT-UCB and BoTorch's
#: baselines, all with fitted hyperparameters except MT-UCB-paper (qLogNEHVI: n <= 4 only),
#: and Sobol random search (the floor no method should fall below).
SUITE_ALGORITHMS = (
    "MT-UCB", "MT-UCB-paper", "IT-UCB", "MOBO", "qLogNParEGO", "qLogNEHVI", "Sobol",
)
SUITE_FAST = ("MT-UCB", "qLogNParEGO")
HT_ALGORITHMS = ("TGP-UCB", "ATA-GP-UCB-QFF", "ATA-GP-UCB-Nystrom", "GP-UCB")
HT_FAST = ("TGP-UCB", "ATA-GP-UCB-Nystrom")


@dataclass(frozen=True)
class InitialDesign:
    """The initial design of an experiment (module docstring).

    Attributes:
        kind: ``"paper"``, ``"sobol"`` or ``"random"``.
        size: Number of points (``None``: one for ``"paper"``,
            :func:`~botorch_mtucb.utils.initial_design.initial_design_size` for ``"sobol"``;
            required for ``"random"``).
    """

    kind: str = "paper"
    size: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("paper", "sobol", "random"):
            raise ValueError(
                f"`initial_design` must be 'paper', 'sobol', 'sobol:N' or 'random:N', got "
                f"kind {self.kind!r}."
            )
        if self.size is not None and (
            isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1
        ):
            raise ValueError(f"The initial design size must be an integer >= 1, got {self.size!r}.")
        if self.kind == "paper" and self.size is not None:
            raise ValueError("The 'paper' initial design has no size (one point, or none).")
        if self.kind == "random" and self.size is None:
            raise ValueError("The 'random' initial design needs a size: 'random:N'.")

    @classmethod
    def parse(cls, spec: str | InitialDesign) -> InitialDesign:
        """From ``"paper"``, ``"sobol"``, ``"sobol:N"`` or ``"random:N"``."""
        if isinstance(spec, InitialDesign):
            return spec
        if not isinstance(spec, str):
            raise ValueError(f"`initial_design` must be a string, got {type(spec).__name__}.")
        kind, _, size = spec.strip().lower().partition(":")
        if size and not size.isdigit():
            raise ValueError(
                f"Malformed initial design {spec!r}: expected 'paper', 'sobol', 'sobol:N' or "
                f"'random:N' with N a positive integer."
            )
        return cls(kind, int(size) if size else None)

    @property
    def spec(self) -> str:
        """The spec string (``"paper"``, ``"sobol"``, ``"sobol:8"``, ``"random:5"``)."""
        return self.kind if self.size is None else f"{self.kind}:{self.size}"

    def resolve(self, problem: Any) -> InitialDesign:
        """The design with its size fixed for ``problem`` (what the manifest records).

        Raises:
            ValueError: For a Sobol design on a finite domain, or a design other than
                ``"paper"`` on a heavy-tailed problem (those start with no data).
        """
        if not isinstance(problem, MultiTaskProblem):
            if self.kind != "paper":
                raise ValueError(
                    f"Heavy-tailed experiments start with no data (paper 001): initial design "
                    f"{self.spec!r} is not supported, use 'paper'."
                )
            return self
        if self.kind == "sobol":
            if problem.is_finite:
                raise ValueError(
                    f"A Sobol initial design needs a continuous domain; {problem.name!r} has "
                    f"{problem.arms.shape[0]} arms: use 'random:N' (N distinct arms)."
                )
            return InitialDesign("sobol", self.size or initial_design_size(problem.dim))
        if self.kind == "random" and problem.is_finite and self.size > problem.arms.shape[0]:
            raise ValueError(
                f"Initial design {self.spec!r} asks for more points than the "
                f"{problem.arms.shape[0]} arms of {problem.name!r}."
            )
        return self

    def draw(self, problem: MultiTaskProblem, seed: int) -> Tensor:
        """``N0 x d`` initial points of trial seed ``seed`` (float64 like the problem).

        ``"paper"``: exactly the papers' protocol of this runner (one point from
        ``torch.Generator().manual_seed(seed + 1)``); ``"sobol"``:
        ``sobol_initial_design(bounds, N, seed + 1)``; ``"random"``: uniform points from the
        same generator, or distinct arms (``randperm``).
        """
        design = self.resolve(problem)
        g = torch.Generator().manual_seed(seed + 1)
        if problem.is_finite:
            if design.kind == "paper":
                idx = torch.randint(0, problem.arms.shape[0], (1,), generator=g)
            else:
                idx = torch.randperm(problem.arms.shape[0], generator=g)[: design.size]
            return problem.arms[idx].clone()
        if design.kind == "sobol":
            return sobol_initial_design(problem.bounds, design.size, seed + 1)
        lo, hi = problem.bounds
        n = 1 if design.kind == "paper" else design.size
        return lo + (hi - lo) * torch.rand(n, problem.dim, generator=g, dtype=lo.dtype)


@dataclass(frozen=True)
class ExperimentOptions:
    """Problem options from the command line.

    Attributes:
        data_dir: Folder of ``fin.csv`` / ``iw_data_all.mat`` (default: see ``data.py``).
        intel_data: Intel lab ``data.txt``.
        intel_locs: Intel lab ``mote_locs.txt``.
        continuous: Branin on the continuous unit square instead of a grid.
        noise: Noise spec (module docstring); ``None``: the paper's noise.
        initial_design: Initial design spec (:class:`InitialDesign`); ``None``: the
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
        initial_design: Default initial design spec (:class:`InitialDesign`).
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


def _gaussian_sigma(name: str, opt: ExperimentOptions) -> float | None:
    """σ of ``--noise gaussian:SIGMA`` for a multi-task experiment (``None``: paper noise)."""
    if opt.noise is None:
        return None
    model = parse_noise(opt.noise)
    if not isinstance(model, GaussianNoise):
        raise ValueError(
            f"Experiment {name!r} is multi-objective with Gaussian noise (paper 000): --noise "
            f"must be 'gaussian:SIGMA', got {opt.noise!r}."
        )
    return float(model.scale)


def _multi_task(name: str, factory: Callable[[int, ExperimentOptions], MultiTaskProblem],
                default_design: str) -> Callable[[int, ExperimentOptions | None], Any]:
    """``make_problem`` of a multi-task entry: noise override and the initial design stamped."""

    def make(seed: int, opt: ExperimentOptions | None) -> MultiTaskProblem:
        opt = opt or ExperimentOptions()
        problem = factory(seed, opt)
        design = InitialDesign.parse(opt.initial_design or default_design).resolve(problem)
        changes: dict[str, Any] = {}
        notes = problem.notes
        sigma = _gaussian_sigma(name, opt)
        if sigma is not None:
            changes["noise_std"] = sigma
            notes += f"; noise gaussian:{sigma:g} (--noise)"
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


def get_experiment(name: str) -> Experiment:
    """Registry lookup; unknown names list the valid ones."""
    if name not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}.")
    return EXPERIMENTS[name]
