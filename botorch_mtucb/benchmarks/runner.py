"""Run an experiment: trials × algorithms through the one BO loop, metrics, files, plot.

Common random numbers: within trial ``k`` (seed ``s_k = 1000·seed + k``) every algorithm gets
the same problem instance, the same initial point, the same λ_t sequence (a generator seeded
with ``s_k + 3``), the same noise stream (``s_k + 2``; noise draws are consumed one per round,
so round t's noise is the same for all algorithms) and the same Monte-Carlo λ sample of the
Bayes regret (``s_k + 4``). Algorithm-internal randomness (Nyström dictionaries, MC samplers)
is seeded with ``s_k`` too.

Files written to ``out_dir`` (one folder per run):

* ``trial<k>_<algorithm>.json`` — settings and per-round arrays (x, y, λ_t, β, regret,
  cumulative and time-average regret, Bayes regret, hypervolume, wall time, Nyström
  dictionary size m_t of MT-BKB / IT-BKB);
* ``rounds.csv`` — one row per (algorithm, trial, round) (every ``csv_stride``-th round);
* ``summary.json`` — final time-average regret mean ± std per algorithm, wall time per round;
* ``time_average_regret.png`` — mean ± std of R_C(t)/t vs t, one line per algorithm.
"""

from __future__ import annotations

import csv
import json
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions.warnings import InputDataWarning
from linear_operator.utils.warnings import NumericalWarning
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import (
    ScalarizationSampler,
    sample_scalarization_weights,
)
from botorch_mtucb.benchmarks.algorithms import RunConfig, get_algorithm
from botorch_mtucb.benchmarks.experiments import ExperimentOptions, get_experiment
from botorch_mtucb.benchmarks.metrics import (
    MAX_HYPERVOLUME_OBJECTIVES,
    bayes_regret,
    hypervolume_curve,
    scalarized_optima,
    time_average_regret,
)
from botorch_mtucb.benchmarks.problems import HeavyTailedProblem, MultiTaskProblem
from botorch_mtucb.loop import BoxOptimizer, FiniteArmOptimizer, LoopHistory, run_bo_loop

__all__ = ["ExperimentResult", "TrialResult", "run_experiment", "run_trial", "write_outputs"]

BAYES_SAMPLES = 256


@dataclass
class TrialResult:
    """Metrics of one (algorithm, trial) run; all arrays have one entry per round."""

    algorithm: str
    trial: int
    seed: int
    regret: Tensor
    time_average: Tensor
    wall_time: Tensor
    bayes: Tensor | None = None
    hypervolume: Tensor | None = None
    dictionary_size: Tensor | None = None
    history: LoopHistory | None = None

    def to_json_dict(self) -> dict[str, Any]:
        h = self.history
        out: dict[str, Any] = {
            "algorithm": self.algorithm,
            "trial": self.trial,
            "seed": self.seed,
            "regret": self.regret.tolist(),
            "cumulative_regret": self.regret.cumsum(0).tolist(),
            "time_average_regret": self.time_average.tolist(),
            "wall_time": self.wall_time.tolist(),
            "bayes_regret": None if self.bayes is None else self.bayes.tolist(),
            "hypervolume": None if self.hypervolume is None else self.hypervolume.tolist(),
            "dictionary_size": (
                None if self.dictionary_size is None else self.dictionary_size.tolist()
            ),
        }
        if h is not None:
            out["initial_X"] = h.initial_X.tolist()
            out["x"] = h.X.tolist()
            out["y"] = h.Y.tolist()
            out["weights"] = [None if r.weights is None else r.weights.tolist() for r in h.rounds]
            out["beta"] = [r.beta for r in h.rounds]
        return out


@dataclass
class ExperimentResult:
    """All trials of a run, the settings, and where the files went."""

    experiment: str
    settings: dict[str, Any]
    trials: list[TrialResult] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    out_dir: Path | None = None

    def algorithms(self) -> list[str]:
        seen: list[str] = []
        for tr in self.trials:
            if tr.algorithm not in seen:
                seen.append(tr.algorithm)
        return seen

    def curves(self, metric: str = "time_average") -> dict[str, Tensor]:
        """``algorithm -> trials x T`` stacked metric curves."""
        out = {}
        for alg in self.algorithms():
            rows = [getattr(tr, metric) for tr in self.trials if tr.algorithm == alg]
            if all(r is not None for r in rows):
                out[alg] = torch.stack(rows)
        return out

    def summary(self) -> dict[str, dict[str, float]]:
        """Per algorithm: final time-average regret mean / std, trials, wall time per round,
        final Bayes regret and hypervolume (multi-task), final Nyström dictionary size m_T."""
        out = {}
        for alg, curve in self.curves().items():
            final = curve[:, -1] if curve.shape[-1] else curve.new_zeros(curve.shape[0])
            walls = torch.cat([tr.wall_time for tr in self.trials if tr.algorithm == alg])
            entry = {
                "final_time_average_regret_mean": float(final.mean()),
                "final_time_average_regret_std": float(final.std()) if len(final) > 1 else 0.0,
                "trials": int(curve.shape[0]),
                "horizon": int(curve.shape[-1]),
                "wall_time_per_round_s": float(walls.mean()) if walls.numel() else 0.0,
            }
            bayes = self.curves("bayes").get(alg)
            if bayes is not None and bayes.shape[-1]:
                entry["final_bayes_regret_mean"] = float(bayes[:, -1].mean())
            hv = self.curves("hypervolume").get(alg)
            if hv is not None and hv.shape[-1]:
                entry["final_hypervolume_mean"] = float(hv[:, -1].mean())
            sizes = self.curves("dictionary_size").get(alg)
            if sizes is not None and sizes.shape[-1]:
                entry["final_dictionary_size_mean"] = float(sizes[:, -1].mean())
            out[alg] = entry
        return out


def _initial_X(problem: MultiTaskProblem, seed: int) -> Tensor:
    """One random initial point (ExactMultiTaskGP needs data), the same for every algorithm."""
    g = torch.Generator().manual_seed(seed + 1)
    if problem.is_finite:
        idx = torch.randint(0, problem.arms.shape[0], (1,), generator=g)
        return problem.arms[idx].clone()
    lo, hi = problem.bounds
    return lo + (hi - lo) * torch.rand(1, problem.dim, generator=g, dtype=lo.dtype)


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
) -> TrialResult:
    """One algorithm on one problem instance with the trial's common random numbers."""
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
        if problem.is_finite:
            optimizer = FiniteArmOptimizer(problem.arms)
        else:
            optimizer = BoxOptimizer(problem.bounds, num_restarts=4, raw_samples=256, seed=seed)
        observe = problem.observer(noise_gen)
        X0 = _initial_X(problem, seed)
        true_f, regret_X = problem.f, problem.regret_X
    else:
        sampler = None
        arms = problem.arm_points(setup.representation)
        optimizer = FiniteArmOptimizer(arms)
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
            regret_bounds=None if not is_mt or problem.is_finite else problem.bounds,
            generator=lam_gen,
            progress=progress,
        )
    history.model = None
    regret = history.regrets if history.rounds else torch.zeros(0, dtype=torch.float64)
    wall = torch.tensor([r.wall_time for r in history.rounds], dtype=torch.float64)
    bayes = hv = None
    if is_mt and history.rounds:
        F_ref = true_f(regret_X).detach()
        F_q = true_f(history.X).detach()
        W = sample_scalarization_weights(
            problem.num_objectives, BAYES_SAMPLES, scalarization,
            torch.Generator().manual_seed(seed + 4),
        )
        optima = None
        if not problem.is_finite:  # grid maximiser of each Monte-Carlo λ, polished
            optima = scalarized_optima(
                true_f, regret_X, W, scalarization, problem.ref_point, problem.bounds
            )
        bayes = bayes_regret(F_ref, F_q, W, scalarization, problem.ref_point, optima)
        if problem.num_objectives <= MAX_HYPERVOLUME_OBJECTIVES:
            hv = hypervolume_curve(F_q, problem.ref_point)
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
) -> ExperimentResult:
    """Run ``experiment`` (see :data:`~botorch_mtucb.benchmarks.experiments.EXPERIMENTS`).

    Args:
        experiment: Experiment name.
        algorithms: Algorithm names (default: the experiment's, or its fast subset).
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
        options: Problem options (data paths, continuous Branin).
        progress: tqdm progress bars.
        csv_stride: Write every k-th round to ``rounds.csv`` (default: 1 up to T = 2000,
            else T // 1000).
        plot: Write the PNG.
    """
    exp = get_experiment(experiment)
    if bound not in ("spectral", "directional"):
        raise ValueError(f"`bound` must be 'spectral' or 'directional', got {bound!r}.")
    if scalarization not in ("chebyshev", "linear"):
        raise ValueError(f"`scalarization` must be 'chebyshev' or 'linear', got {scalarization!r}.")
    options = options or ExperimentOptions()
    algs = list(algorithms) if algorithms else list(exp.fast_algorithms if fast else exp.algorithms)
    specs = [get_algorithm(a) for a in algs]
    for s in specs:
        if s.kind != exp.kind:
            raise ValueError(f"Algorithm {s.name!r} ({s.kind}) does not apply to {exp.name!r}.")
    T = int(horizon if horizon is not None else (exp.fast_horizon if fast else exp.horizon))
    N = int(trials if trials is not None else (exp.fast_trials if fast else exp.trials))
    if T < 1 or N < 1:
        raise ValueError(f"`horizon` and `trials` must be >= 1, got {T} and {N}.")
    if not isinstance(first_trial, int) or first_trial < 0 or first_trial + N > 1000:
        raise ValueError(
            f"`first_trial` must be an integer >= 0 with first_trial + trials <= 1000 (trial "
            f"seeds 1000·seed + k), got {first_trial!r} with {N} trials."
        )
    settings = {
        "experiment": exp.name, "paper": exp.paper, "algorithms": [s.name for s in specs],
        "trials": N, "first_trial": first_trial, "horizon": T, "seed": seed, "fast": fast,
        "bound": bound,
        "scalarization": scalarization if exp.kind == "multi_task" else None,
        "constants": constants if exp.kind == "heavy_tailed" else None,
    }
    result = ExperimentResult(experiment=exp.name, settings=settings)
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        result.out_dir = out
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=N * len(specs), desc=exp.name)
    start = time.perf_counter()
    for k in range(first_trial, first_trial + N):
        trial_seed = 1000 * seed + k
        problem = exp.make_problem(trial_seed, options)
        settings.setdefault("problem_notes", getattr(problem, "notes", ""))
        for spec in specs:
            reason = spec.available(problem)
            if reason is not None:
                result.skipped[spec.name] = reason
                warnings.warn(f"Skipping {spec.name}: {reason}.", stacklevel=2)
                if bar is not None:
                    bar.update(1)
                continue
            tr = run_trial(
                problem, spec.name, T, trial_seed, trial=k, bound=bound,
                scalarization=scalarization, constants=constants,
                progress=progress and T >= 1000,
            )
            result.trials.append(tr)
            if out is not None:
                path = out / f"trial{k:02d}_{spec.name}.json"
                path.write_text(json.dumps({"settings": settings, **tr.to_json_dict()}))
            tr.history = None  # keep memory flat over long runs
            if bar is not None:
                bar.set_postfix(alg=spec.name, avg_regret=f"{float(tr.time_average[-1]):.4g}")
                bar.update(1)
    if bar is not None:
        bar.close()
    settings["total_wall_time_s"] = time.perf_counter() - start
    if out is not None:
        write_outputs(result, out, csv_stride, plot)
    return result


def write_outputs(
    result: ExperimentResult, out: Path, csv_stride: int | None = None, plot: bool = True
) -> None:
    """Write ``summary.json``, ``rounds.csv`` and (``plot``) the PNG of a run into ``out``."""
    summary = {"settings": result.settings, "skipped": result.skipped, "results": result.summary()}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    T = result.settings["horizon"]
    stride = csv_stride or (1 if T <= 2000 else max(T // 1000, 1))
    with open(out / "rounds.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([
            "experiment", "algorithm", "trial", "t", "regret", "cumulative_regret",
            "time_average_regret", "bayes_regret", "hypervolume", "wall_time_s",
            "dictionary_size",
        ])
        for tr in result.trials:
            cum = tr.regret.cumsum(0)
            for i in range(0, tr.regret.numel(), stride):
                w.writerow([
                    result.experiment, tr.algorithm, tr.trial, i + 1,
                    _fmt(tr.regret[i]), _fmt(cum[i]), _fmt(tr.time_average[i]),
                    "" if tr.bayes is None else _fmt(tr.bayes[i]),
                    "" if tr.hypervolume is None else _fmt(tr.hypervolume[i]),
                    _fmt(tr.wall_time[i]),
                    "" if tr.dictionary_size is None else int(tr.dictionary_size[i]),
                ])
    if plot and result.trials:
        from botorch_mtucb.benchmarks.plotting import plot_time_average_regret

        st = result.settings
        n = len({tr.trial for tr in result.trials})
        plot_time_average_regret(
            result.curves(), out / "time_average_regret.png",
            title=f"{result.experiment} ({st.get('paper', '')}), {n} trial(s), T = {T}",
        )


def _fmt(x: Tensor | float) -> str:
    v = float(x)
    return repr(v) if math.isfinite(v) else ""
