"""Benchmarks: the papers' experiments, baselines, regret metrics, runner and CLI.

``python -m botorch_mtucb.benchmarks list`` shows the experiments; ``run <experiment>`` runs
one, ``summarize <run dirs>`` tabulates finished runs or merges them (see
:mod:`botorch_mtucb.benchmarks.cli`).
"""

from botorch_mtucb.benchmarks.algorithms import ALGORITHMS, AlgorithmSpec, RunConfig, get_algorithm
from botorch_mtucb.benchmarks.experiments import (
    EXPERIMENTS,
    Experiment,
    ExperimentOptions,
    get_experiment,
)
from botorch_mtucb.benchmarks.metrics import (
    bayes_regret,
    cumulative_regret,
    hypervolume_curve,
    instantaneous_regret,
    scalarized_optima,
    time_average_regret,
)
from botorch_mtucb.benchmarks.problems import HeavyTailedProblem, MultiTaskProblem
from botorch_mtucb.benchmarks.runner import (
    ExperimentResult,
    resume_experiment,
    run_experiment,
    run_trial,
)
from botorch_mtucb.benchmarks.summarize import (
    format_results_table,
    load_run,
    merge_runs,
    paired_comparison,
)

__all__ = [
    "ALGORITHMS",
    "EXPERIMENTS",
    "AlgorithmSpec",
    "Experiment",
    "ExperimentOptions",
    "ExperimentResult",
    "HeavyTailedProblem",
    "MultiTaskProblem",
    "RunConfig",
    "bayes_regret",
    "cumulative_regret",
    "format_results_table",
    "get_algorithm",
    "get_experiment",
    "hypervolume_curve",
    "instantaneous_regret",
    "load_run",
    "merge_runs",
    "paired_comparison",
    "resume_experiment",
    "run_experiment",
    "run_trial",
    "scalarized_optima",
    "time_average_regret",
]
