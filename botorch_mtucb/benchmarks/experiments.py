"""Experiment registry: the papers' experiments by name, with their default settings.

An experiment draws one problem instance per trial (``make_problem(seed, options)``) and
lists the algorithms, horizon and number of trials of the paper, plus a reduced ``--fast``
version (a few rounds, one or two trials) that CI runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

__all__ = ["EXPERIMENTS", "Experiment", "ExperimentOptions", "get_experiment"]

MT_ALGORITHMS = (
    "MT-KB", "MT-BKB", "IT-KB", "IT-KB-fair", "IT-BKB", "IT-BKB-fair", "MOBO",
    "qLogNParEGO", "qLogNEHVI",
)
MT_FAST = ("MT-KB", "MT-BKB", "IT-KB", "MOBO")
#: Multi-objective suite (issue 16): practical and paper MT-UCB, IT-UCB and BoTorch's
#: baselines, all with fitted hyperparameters except MT-UCB-paper (qLogNEHVI: n <= 4 only).
SUITE_ALGORITHMS = ("MT-UCB", "MT-UCB-paper", "IT-UCB", "MOBO", "qLogNParEGO", "qLogNEHVI")
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
    """

    data_dir: str | Path | None = None
    intel_data: str | Path | None = None
    intel_locs: str | Path | None = None
    continuous: bool = False


@dataclass(frozen=True)
class Experiment:
    """A named experiment.

    Attributes:
        name: CLI name.
        kind: ``"multi_task"`` or ``"heavy_tailed"``.
        paper: Where it comes from.
        make_problem: ``(seed, options) -> problem`` (one instance per trial).
        algorithms: Default algorithms.
        horizon: The paper's horizon T (ours where the paper does not say).
        trials: The paper's number of trials.
        fast_algorithms: Algorithms of ``--fast``.
        fast_horizon: Horizon of ``--fast``.
        fast_trials: Trials of ``--fast``.
        random_instance: Whether each trial draws a new function.
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


def _intel(seed: int, opt: ExperimentOptions):
    if opt.intel_data is None or opt.intel_locs is None:
        raise ValueError(
            "The intel-lab experiment needs --intel-data PATH/data.txt and --intel-locs "
            "PATH/mote_locs.txt (the data are no longer distributed; see data.py)."
        )
    return intel_lab_problem(opt.intel_data, opt.intel_locs, seed=seed)


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in [
        Experiment("rkhs-n2", "multi_task", "000 §5 Fig. 1(b)",
                   lambda s, o: rkhs_problem(2, s), MT_ALGORITHMS, 100, 10, MT_FAST, 8),
        Experiment("rkhs-n20", "multi_task", "000 §5 Fig. 1(c)",
                   lambda s, o: rkhs_problem(20, s), MT_ALGORITHMS, 100, 10, MT_FAST, 8),
        Experiment("perturbed-sine", "multi_task", "000 §5 Fig. 1(d)",
                   lambda s, o: perturbed_sine_problem(), MT_ALGORITHMS, 100, 10, MT_FAST, 8,
                   random_instance=False),
        Experiment("branin", "multi_task", "000 §5 Fig. 1(e)",
                   lambda s, o: branin_problem(continuous=o.continuous), MT_ALGORITHMS, 100, 10,
                   MT_FAST, 6, random_instance=False),
        Experiment("intel-lab", "multi_task", "000 §5 Fig. 1(f) (data not shipped)",
                   _intel, MT_ALGORITHMS, 100, 10, MT_FAST, 6),
        Experiment("se-student", "heavy_tailed", "001 §6 Fig. 1(a)",
                   lambda s, o: synthetic_heavy_tailed_problem("se", "student", s),
                   HT_ALGORITHMS, 20_000, 20, HT_FAST, 100),
        Experiment("se-pareto", "heavy_tailed", "001 §6 Fig. 1(b)",
                   lambda s, o: synthetic_heavy_tailed_problem("se", "pareto", s),
                   HT_ALGORITHMS, 20_000, 20, HT_FAST, 100),
        Experiment("matern-student", "heavy_tailed", "001 §6 Fig. 1(c)",
                   lambda s, o: synthetic_heavy_tailed_problem("matern", "student", s),
                   HT_ALGORITHMS, 20_000, 20, HT_FAST, 100),
        Experiment("stock", "heavy_tailed", "001 §6 Fig. 1(d)",
                   lambda s, o: stock_problem(o.data_dir), HT_ALGORITHMS, 20_000, 10, HT_FAST,
                   100, random_instance=False),
        Experiment("light-sensor", "heavy_tailed", "001 §6 Fig. 1(e)",
                   lambda s, o: light_sensor_problem(o.data_dir), HT_ALGORITHMS, 20_000, 10,
                   HT_FAST, 100, random_instance=False),
    ]
}
EXPERIMENTS.update({
    f"mo-{name}": Experiment(
        f"mo-{name}", "multi_task", "issue 16 multi-objective suite",
        lambda s, o, _name=name: make_suite_problem(_name, seed=s), SUITE_ALGORITHMS, 30, 10,
        SUITE_FAST, 3, random_instance=name == "corr-rff",
    )
    for name in MO_SUITE
})


def get_experiment(name: str) -> Experiment:
    """Registry lookup; unknown names list the valid ones."""
    if name not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}.")
    return EXPERIMENTS[name]
