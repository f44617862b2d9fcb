"""Command line: ``mtucb-bench {list,run,summarize,table} ...``.

``mtucb-bench`` is the console script of the package; ``python -m mtucb_bench`` is the same
command. Examples::

    mtucb-bench list
    mtucb-bench run rkhs-n2 --trials 5 --horizon 100 --out runs/rkhs-n2
    mtucb-bench run se-student --fast --out /tmp/ht
    mtucb-bench run se-student --noise student-t:1.5 --out runs/t15
    mtucb-bench run se-pareto --noise contaminated:0.02x1000 --out runs/c
    mtucb-bench run mo-branin-currin --trials 10 --out runs/bc  # Sobol start
    mtucb-bench run mo-branin-currin --paper --out runs/bc-paper
    mtucb-bench run mo-zdt1 --initial-design sobol:16 --out runs/zdt1-16
    mtucb-bench run se-pareto --trials 10 --workers 2 --out runs/sp
    mtucb-bench run --resume --out runs/sp     # after a kill
    mtucb-bench run rkhs-n20 --scheduler tcp://head:8786 --out runs/r20
    mtucb-bench summarize runs/rkhs-n2 runs/sine
    mtucb-bench summarize runs/rkhs-n20_a runs/rkhs-n20_b --merge runs/rkhs-n20
    mtucb-bench table --seeds 5 --horizon 100 --out runs/table
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from mtucb_bench.algorithms import ALGORITHMS, get_algorithm, with_width
from mtucb_bench.bound_table import TABLE_PROBLEMS, bound_table, format_bound_table
from mtucb_bench.experiments import (
    EXPERIMENTS,
    ExperimentOptions,
    get_experiment,
    paper_settings,
)
from mtucb_bench.fileio import read_json
from mtucb_bench.manifest import MANIFEST_FILE, canonical_noise
from mtucb_bench.problems import InitialDesign
from mtucb_bench.results import ExperimentResult
from mtucb_bench.runner import resume_experiment, run_experiment
from mtucb_bench.summarize import (
    DerivedFileWarning,
    format_results_table,
    load_run,
    merge_runs,
    paired_comparison,
)

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``mtucb-bench``."""
    p = argparse.ArgumentParser(
        prog="mtucb-bench",
        description="Reproduce the experiments of the MT-KB and heavy-tailed BO papers.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list experiments and algorithms")

    r = sub.add_parser(
        "run", help="run one experiment",
        description="Run one experiment into a run folder owned by its configuration "
                    "(manifest.json): rerunning the same command continues it, skipping "
                    "finished trials; another configuration is refused.",
    )
    r.add_argument("experiment", nargs="?", choices=sorted(EXPERIMENTS),
                   help="experiment (optional with --resume)")
    r.add_argument("--algorithms", nargs="+", default=None, metavar="ALG",
                   help="algorithms, each once (default: the experiment's; see `list`)")
    r.add_argument("--trials", type=int, default=None)
    r.add_argument("--horizon", type=int, default=None)
    r.add_argument("--seed", type=int, default=None, help="base seed (default 0)")
    r.add_argument("--first-trial", type=int, default=None,
                   help="index of the first trial, default 0 (split a protocol by hand; pool "
                        "with summarize --merge)")
    r.add_argument("--out", default=None, help="output folder (default: benchmark-runs/<exp>)")
    r.add_argument("--fast", action="store_true", help="reduced version (CI)")
    r.add_argument("--bound", choices=("spectral", "directional"), default=None,
                   help="scalarized UCB of MT-*/IT-* (default spectral = paper 000 eq. (2))")
    r.add_argument("--scalarization", choices=("chebyshev", "linear"), default=None,
                   help="default chebyshev")
    r.add_argument("--constants", choices=("authors", "theory"), default=None,
                   help="heavy-tailed schedules: the authors' code (default) or the theorems")
    r.add_argument("--initial-design", default=None, metavar="SPEC",
                   help="points every algorithm of a trial starts from (the same for all): "
                        "'paper' (one random point; the papers' experiments' default), "
                        "'sobol' (scrambled Sobol, max(5, 2d) points; the mo-* default), "
                        "'sobol:N', or 'random:N' (N random points or distinct arms)")
    r.add_argument("--noise", default=None, metavar="SPEC",
                   help="noise model instead of the paper's: 'student-t:NU[@SCALE]', "
                        "'pareto:SHAPE[@SCALE]', 'contaminated:RATExMULT[@SIGMA]' or "
                        "'gaussian:SIGMA' (e.g. student-t:1.5, pareto:1.6, "
                        "contaminated:0.02x1000) for se-student / se-pareto / matern-student "
                        "(y = f + noise, its natural alpha, honest v); only gaussian:SIGMA for "
                        "the multi-objective experiments; stock and light-sensor take none")
    r.add_argument("--beta", type=float, default=None, metavar="B",
                   help="width of the entries with a tunable practical width (MT-UCB, "
                        "IT-UCB; default 1): runs them as NAME@beta=B (also accepted in "
                        "--algorithms, e.g. MT-UCB@beta=2 MT-UCB@beta=0.5 in one run)")
    r.add_argument("--paper", action="store_true",
                   help="the papers' settings in one flag: spectral bound, Chebyshev "
                        "scalarization, the authors' constants, each method's paper radius, "
                        "the papers' initial design and noise, no practical-defaults "
                        "algorithms (MT-UCB, IT-UCB, *-practical); conflicting options are "
                        "refused")
    _data_args(r)
    r.add_argument("--workers", type=int, default=0, metavar="N",
                   help="run the trials on N local processes (results identical to serial)")
    r.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the trials on a Dask cluster (pip install 'mtucb-bench[dask]')")
    r.add_argument("--resume", action="store_true",
                   help="continue the run in --out with the configuration of its manifest")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--threads", type=int, default=1,
                   help="torch threads (default 1: the problems are small, threads only contend)")

    m = sub.add_parser(
        "summarize", help="Markdown table of finished runs; merge runs",
        description="Read run folders from their trial files and manifest.json; an unreadable "
                    "summary.json is warned about and rewritten with rounds.csv and the figure.",
    )
    m.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders written by `run`")
    m.add_argument("--algorithms", nargs="+", default=None, metavar="ALG",
                   help="table columns (default: every algorithm found)")
    m.add_argument("--merge", default=None, metavar="OUT",
                   help="pool the runs (same experiment, seed, horizon, options) into OUT, "
                        "a new folder")
    m.add_argument("--paired", nargs=2, default=None, metavar=("A", "B"),
                   help="also compare A and B trial by trial (common random numbers)")

    t = sub.add_parser(
        "table", help="directional vs spectral scalarized UCB on the paper-000 problems"
    )
    t.add_argument("--problems", nargs="+", default=None)
    t.add_argument("--scalarizations", nargs="+", default=["chebyshev", "linear"],
                   choices=("chebyshev", "linear"))
    t.add_argument("--seeds", type=int, default=5)
    t.add_argument("--horizon", type=int, default=100)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", default="benchmark-runs/bound-table")
    t.add_argument("--no-progress", action="store_true")
    t.add_argument("--threads", type=int, default=1)
    return p


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None,
                   help="folder with fin.csv / iw_data_all.mat (default: $BOTORCH_MTUCB_DATA "
                        "or ../shared/data next to the repository)")
    p.add_argument("--intel-data", default=None, help="Intel lab data.txt")
    p.add_argument("--intel-locs", default=None, help="Intel lab mote_locs.txt")
    p.add_argument("--continuous", action="store_true",
                   help="Branin on the continuous unit square (default: 21x21 grid)")


def _list() -> None:
    print("Experiments:")
    for e in EXPERIMENTS.values():
        print(f"  {e.name:<20} {e.kind:<13} T={e.horizon:<6} trials={e.trials:<3} "
              f"start={e.initial_design:<6} {e.paper}")
    print("\nAlgorithms:")
    for a in ALGORITHMS.values():
        print(f"  {a.name:<20} {a.kind:<13} {a.description}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "list":
        _list()
        return 0
    if args.command == "summarize":
        return _summarize(args)
    previous = torch.get_num_threads()
    torch.set_num_threads(max(int(args.threads), 1))
    try:
        return _dispatch(args)
    finally:
        torch.set_num_threads(previous)


def _summarize(args: argparse.Namespace) -> int:
    # the trial files are the record: an unreadable summary.json is warned about and rebuilt
    error: Exception | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DerivedFileWarning)
        try:
            if args.merge:  # the names are checked before the merged folder is written
                results = [merge_runs(args.runs)]
                error = _unknown_algorithms(results, args)
                if error is None:
                    results = [merge_runs(args.runs, out_dir=args.merge)]
            else:
                results = [load_run(p, repair=True) for p in args.runs]
        except (ValueError, FileNotFoundError) as err:
            error = err
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    if error is None:
        error = _unknown_algorithms(results, args)
    if error is not None:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_results_table(results, args.algorithms))
    for res in results:
        if res.missing:
            k, alg = res.missing[0]
            print(
                f"note: {res.out_dir or res.experiment} is incomplete: {len(res.missing)} "
                f"(trial, algorithm) pair(s) missing, e.g. trial {k} of {alg}; rerun its `run` "
                f"command (or `run --resume --out DIR`) to finish it.", file=sys.stderr,
            )
    status = 0
    if args.paired:
        a, b = args.paired
        for res in results:
            try:
                c = paired_comparison(res, a, b)
            except ValueError as err:  # a name that only some of the runs have
                print(f"error: --paired: {res.experiment}: {err}", file=sys.stderr)
                status = 2
                continue
            print(
                f"{res.experiment}: {a} lower than {b} in {c['first_better']}/{c['trials']} "
                f"trials; final R_C(T)/T difference {a} - {b} = {c['mean_difference']:.3g} "
                f"± {c['std_difference']:.2g} (mean ± std over trials)"
            )
    if args.merge:
        print(f"merged run in {args.merge}")
    return status


def _unknown_algorithms(results: Sequence[ExperimentResult], args: argparse.Namespace
                        ) -> str | None:
    """Why ``--algorithms`` / ``--paired`` name an algorithm that none of the runs has, or
    ``None`` when they do not."""
    have = list(dict.fromkeys(a for res in results for a in [
        *res.settings.get("algorithms", []), *res.algorithms(), *res.skipped]))
    for option, names in (("--algorithms", args.algorithms), ("--paired", args.paired)):
        unknown = [a for a in names or [] if a not in have]
        if unknown:
            return (f"argument {option}: {', '.join(unknown)} not in the run(s); they have "
                    f"{', '.join(have) or 'no algorithm'}.")
    return None


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        try:
            return _run(args)
        except KeyboardInterrupt:
            print("interrupted: finished trials are kept; rerun the same command (or "
                  "`run --resume --out DIR`) to continue.", file=sys.stderr)
            return 130
    try:  # each cell is a run folder under --out: another configuration there is refused
        rows = bound_table(
            problems=tuple(args.problems or TABLE_PROBLEMS),
            scalarizations=tuple(args.scalarizations), seeds=args.seeds, horizon=args.horizon,
            seed=args.seed, out_dir=args.out, progress=not args.no_progress,
        )
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_bound_table(rows))
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.experiment is None and not args.resume:
        print("error: name an experiment (see `list`), or use --resume --out DIR.",
              file=sys.stderr)
        return 2
    execution = dict(workers=args.workers, scheduler=args.scheduler, threads=args.threads,
                     progress=not args.no_progress)
    try:
        if args.resume:
            if args.out is None and args.experiment is None:
                print("error: --resume needs --out DIR (the run folder).", file=sys.stderr)
                return 2
            out = args.out or f"benchmark-runs/{args.experiment}"
            _check_resume(args, out)
            res = resume_experiment(out, **execution)
        else:
            out = args.out or f"benchmark-runs/{args.experiment}"
            opts = ExperimentOptions(args.data_dir, args.intel_data, args.intel_locs,
                                     args.continuous, args.noise, args.initial_design)
            config = dict(algorithms=args.algorithms, bound=args.bound or "spectral",
                          scalarization=args.scalarization or "chebyshev",
                          constants=args.constants or "authors", options=opts)
            if args.paper:
                if args.beta is not None:
                    raise ValueError("--paper runs each method's paper radius: drop --beta.")
                config = paper_settings(args.experiment, args.algorithms, args.bound,
                                        args.scalarization, args.constants, opts, args.fast)
            if args.beta is not None:
                config["algorithms"] = _with_beta(args, config["algorithms"])
            res = run_experiment(
                args.experiment, trials=args.trials, horizon=args.horizon, seed=args.seed or 0,
                first_trial=args.first_trial or 0, out_dir=out, fast=args.fast, **config,
                **execution,
            )
    except (ValueError, FileNotFoundError, ImportError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(res.summary(), indent=2))
    for name, reason in res.skipped.items():
        print(f"skipped {name}: {reason}", file=sys.stderr)
    if res.settings.get("resumed_trials"):
        print(f"continued: {res.settings['resumed_trials']} finished trial(s) were kept",
              file=sys.stderr)
    print(f"results in {out}")
    return 0


def _with_beta(args: argparse.Namespace, algorithms: list[str] | None) -> list[str]:
    """The algorithm list with ``--beta`` applied to the entries with a tunable width."""
    if algorithms is None:
        exp = get_experiment(args.experiment)
        algorithms = list(exp.fast_algorithms if args.fast else exp.algorithms)
    specs = [get_algorithm(a) for a in algorithms]
    if not any(s.tunable_width for s in specs):
        raise ValueError(
            f"--beta sets the width of MT-UCB / IT-UCB; none of {[s.name for s in specs]} has "
            f"a tunable width."
        )
    return [with_width(s.name, args.beta) if s.tunable_width else s.name for s in specs]


def _check_resume(args: argparse.Namespace, out: str) -> None:
    """With --resume, options given on the command line must agree with the manifest."""
    path = Path(out) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"Nothing to resume: {str(path)!r} does not exist.")
    m = read_json(path)
    given = {
        "experiment": args.experiment, "trials": args.trials, "horizon": args.horizon,
        "seed": args.seed, "first_trial": args.first_trial, "bound": args.bound,
        "scalarization": args.scalarization, "constants": args.constants,
        "fast": True if args.fast else None,
        "algorithms": None if args.algorithms is None else [
            get_algorithm(a).name for a in args.algorithms
        ],
    }
    opts = {"continuous": True if args.continuous else None, "data_dir": args.data_dir,
            "intel_data": args.intel_data, "intel_locs": args.intel_locs}
    bad = [f"{k} {v!r} (the run has {m.get(k)!r})" for k, v in given.items()
           if v is not None and m.get(k) is not None and v != m.get(k)]
    if args.beta is not None:
        want = _with_beta(argparse.Namespace(**{**vars(args), "experiment": m["experiment"]}),
                          m["algorithms"])
        if want != m["algorithms"]:
            bad.append(f"beta {args.beta:g} (the run has {', '.join(m['algorithms'])})")
    theirs = m.get("options", {}).get("noise")
    if args.noise is not None and canonical_noise(args.noise) != theirs:
        bad.append(f"noise {canonical_noise(args.noise)!r} (the run has {theirs!r})")
    if args.paper:
        try:
            paper_settings(m["experiment"], m["algorithms"], m["bound"], m.get("scalarization"),
                           m.get("constants"), ExperimentOptions(
                               noise=theirs, initial_design=m.get("initial_design")))
        except ValueError as err:
            bad.append(f"--paper (the run does not use the papers' settings: {err})")
    if args.initial_design is not None:
        want, have = InitialDesign.parse(args.initial_design), m.get("initial_design", "paper")
        # 'sobol' matches the run's 'sobol:N' (its size resolved from d)
        if want.spec != have and not (want.size is None and want.kind == have.split(":")[0]):
            bad.append(f"initial_design {want.spec!r} (the run has {have!r})")
    for k, v in opts.items():
        theirs = m.get("options", {}).get(k)
        if v is not None and k != "continuous":
            v = str(Path(v).expanduser().resolve())
        if v is not None and v != theirs:
            bad.append(f"{k} {v!r} (the run has {theirs!r})")
    if bad:
        raise ValueError(
            f"--resume continues the run in {out!r} as its {MANIFEST_FILE} records it; these "
            f"options differ: {'; '.join(bad)}. Drop them, or choose another --out."
        )
