"""Benchmarks: the papers' experiments, baselines, regret metrics, runner and CLI.

``python -m mtucb_bench list`` shows the experiments; ``run <experiment>`` runs
one, ``summarize <run dirs>`` tabulates finished runs or merges them (see
:mod:`mtucb_bench.cli`).
"""

from mtucb_bench.algorithms import ALGORITHMS, AlgorithmSpec, RunConfig, get_algorithm
from mtucb_bench.experiments import (
    EXPERIMENTS,
    Experiment,
    ExperimentOptions,
    get_experiment,
)
from mtucb_bench.metrics import (
    bayes_regret,
    cumulative_regret,
    hypervolume_curve,
    instantaneous_regret,
    scalarized_optima,
    time_average_regret,
)
from mtucb_bench.problems import HeavyTailedProblem, MultiTaskProblem
from mtucb_bench.runner import (
    ExperimentResult,
    resume_experiment,
    run_experiment,
    run_trial,
)
from mtucb_bench.summarize import (
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
