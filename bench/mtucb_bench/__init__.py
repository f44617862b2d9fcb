"""mtucb-bench: the benchmark harness of botorch-mtucb.

The experiments of the two papers (multi-task scalarized UCB, paper 000; heavy-tailed
TGP-UCB / ATA-GP-UCB, paper 001) and the suites beside them: their problems, the baselines,
the regret and hypervolume metrics, a runner with common random numbers and resumable run
folders, and a command line. Installed with ``pip install ./bench`` (``./bench[dask]`` for
Dask clusters); it imports ``botorch_mtucb`` and is never imported by it.

Command line (``mtucb-bench``, the same as ``python -m mtucb_bench``; see
:mod:`mtucb_bench.cli`)::

    mtucb-bench list
    mtucb-bench run rkhs-n2 --trials 5 --horizon 100 --out runs/rkhs-n2
    mtucb-bench summarize runs/rkhs-n2

``list`` shows the experiments and algorithms, ``run`` runs one experiment into a run folder
(rerunning the command continues it), ``summarize`` tabulates finished runs or merges them.
The same from Python: :func:`run_experiment`, :func:`load_run`, :func:`format_results_table`.
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
from mtucb_bench.results import ExperimentResult
from mtucb_bench.runner import resume_experiment, run_experiment, run_trial
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
