"""Should the loop's default optimizer skip evaluated points? (issue 26: re-evaluation).

``run_bo_loop(observe, num_rounds=T, bounds=...)`` with its default optimizer
(``BoxOptimizer(bounds, 4, 256)``) against the same call with
``optimizer=DedupOptimizer(bounds, 4, 256, seed=...)`` seeded exactly as the default one
(the loop's seed, drawn from the same ``generator``, plus one), so both arms share the Sobol
initial design and propose the same points until the default re-proposes an evaluated one.
A third arm, ``gated``, skips evaluated points only while the model's learned noise variance
η (standardised units) is at most ``--eta-max`` (noise negligible), else it is the default.
A placebo arm, ``reseeded``, is the default with other optimizer seeds (same design): its
paired differences to ``default`` measure how far trajectories drift apart by chance alone.

Problems: noise-free DTLZ7 (d = 4, n = 3), DTLZ2 (d = 6, n = 2), BraninCurrin, and
BraninCurrin with Gaussian noise of sd 5 % of each objective's range (``bc-noisy``).
Per run: hypervolume of the noise-free f values of every evaluated point (initial design
included) with BoTorch's ``Hypervolume`` and the problem's ``ref_point``, as % of the
maximum (BoTorch's ``max_hv``; DTLZ7: :func:`~mtucb_bench.many_objective_problems.dtlz7_max_hv`);
the number of repeated proposals (within ``1e-6`` of an evaluated point in the box-relative
sup-norm; also ``1e-3``); the mean wall time per round; η at each round.

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.dedup_default --seeds 10 --rounds 20 \\
        [--problems dtlz7 dtlz2 bc bc-noisy] [--arms default dedup gated] [--report-only]

Each run is cached as ``benchmark-runs/studies/dedup_default/T<rounds>/<problem>/<arm>/
seed<k>.json`` (existing ones are reused, so runs can be split over processes); the summary
goes to ``benchmark-runs/studies/dedup_default/T<rounds>/summary.json`` and ``summary.md``
and the markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from botorch.test_functions.multi_objective import DTLZ2, DTLZ7, BraninCurrin
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_mtucb.loop import BoxOptimizer, DedupOptimizer, run_bo_loop
from botorch_mtucb.loop.defaults import DEFAULT_NUM_RESTARTS, DEFAULT_RAW_SAMPLES, draw_seed
from mtucb_bench.fileio import write_json, write_text
from mtucb_bench.many_objective_problems import dtlz7_max_hv
from mtucb_bench.perf.provenance import RUNS, write_summary

OUT = RUNS / "studies" / "dedup_default"
DT = torch.float64
ARMS = ("default", "dedup", "gated", "reseeded")
TOLS = (1e-6, 1e-3)
RESEED = 7919  # the placebo arm's optimizer seed offset


@dataclass(frozen=True)
class Spec:
    """A study problem: the BoTorch problem (maximised), its max HV and the noise fraction."""

    make: Callable[[], object]
    max_hv: Callable[[object], float]
    noise_frac: float = 0.0


PROBLEMS: dict[str, Spec] = {
    "dtlz7": Spec(lambda: DTLZ7(dim=4, num_objectives=3, negate=True),
                  lambda p: dtlz7_max_hv(3, ref=15.0)),
    "dtlz2": Spec(lambda: DTLZ2(dim=6, num_objectives=2, negate=True), lambda p: p.max_hv),
    "bc": Spec(lambda: BraninCurrin(negate=True), lambda p: p.max_hv),
    "bc-noisy": Spec(lambda: BraninCurrin(negate=True), lambda p: p.max_hv, noise_frac=0.05),
}


def noise_sd(problem, frac: float) -> Tensor:
    """``frac`` × each objective's range (max − min over 4096 Sobol points of the box)."""
    U = SobolEngine(problem.dim, scramble=True, seed=0).draw(4096, dtype=DT)
    F = problem(problem.bounds[0] + (problem.bounds[1] - problem.bounds[0]) * U, noise=False)
    return frac * (F.max(dim=0).values - F.min(dim=0).values)


def hv_percent(problem, max_hv: float, F: Tensor) -> float:
    """HV (BoTorch ``Hypervolume``, ``problem.ref_point``) of the rows of ``F`` as % of
    ``max_hv``."""
    ref = problem.ref_point.to(F)
    front = F[is_non_dominated(F)]
    front = front[(front > ref).all(dim=-1)]
    hv = Hypervolume(ref).compute(front) if len(front) else 0.0
    return 100.0 * hv / max_hv


def repeats(initial_X: Tensor, X: Tensor, bounds: Tensor, tol: float) -> int:
    """Number of rows x_t of ``X`` within ``tol`` (box-relative sup-norm) of an earlier
    evaluated point (``initial_X`` or x_1..x_{t−1})."""
    Z = (torch.cat([initial_X, X]) - bounds[0]) / (bounds[1] - bounds[0])
    n0 = initial_X.shape[0]
    gap = (Z[n0:, None, :] - Z[None]).abs().amax(dim=-1)  # T x (n0 + T)
    earlier = torch.arange(Z.shape[0])[None] < (n0 + torch.arange(X.shape[0]))[:, None]
    return int(((gap <= tol) & earlier).any(dim=-1).sum())


def _eta(acqf) -> float:
    """The largest learned noise variance η of ``acqf.model`` (standardised units)."""
    try:
        return float(acqf.model.likelihood.noise.detach().max())
    except AttributeError:
        return math.nan


class _RecordingBox(BoxOptimizer):
    """The default ``BoxOptimizer`` that records η at each call."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.etas: list[float] = []

    def __call__(self, acqf):
        self.etas.append(_eta(acqf))
        return super().__call__(acqf)


class _RecordingDedup(DedupOptimizer):
    """``DedupOptimizer`` that records η at each call; with ``eta_max`` it skips evaluated
    points only while η ≤ ``eta_max`` (else it is ``BoxOptimizer``)."""

    def __init__(self, *args, eta_max: float = math.inf, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.etas: list[float] = []
        self.eta_max = eta_max

    def __call__(self, acqf):
        eta = _eta(acqf)
        self.etas.append(eta)
        if eta <= self.eta_max:
            return super().__call__(acqf)
        self.sources.append("plain")
        return BoxOptimizer.__call__(self, acqf)


def make_optimizer(arm: str, bounds: Tensor, seed: int, eta_max: float):
    """The arm's optimizer, seeded as the loop seeds its default (``seed + 1``)."""
    common = dict(num_restarts=DEFAULT_NUM_RESTARTS, raw_samples=DEFAULT_RAW_SAMPLES,
                  seed=seed + 1)
    if arm == "default":
        return _RecordingBox(bounds, **common)
    if arm == "reseeded":  # placebo: the default with other optimizer seeds
        return _RecordingBox(bounds, **{**common, "seed": seed + 1 + RESEED})
    return _RecordingDedup(bounds, **common, eta_max=eta_max if arm == "gated" else math.inf)


def run_one(name: str, arm: str, seed: int, rounds: int, eta_max: float) -> dict:
    """One run of ``arm`` on problem ``name`` with ``generator`` seed ``seed``."""
    spec = PROBLEMS[name]
    problem = spec.make().to(DT)
    bounds = problem.bounds.to(DT)
    sd = noise_sd(problem, spec.noise_frac) if spec.noise_frac else None
    noise_gen = torch.Generator().manual_seed(10_000 + seed)

    def observe(X: Tensor) -> Tensor:
        F = problem(X, noise=False)
        if sd is None:
            return F
        return F + sd.to(F) * torch.randn(F.shape, generator=noise_gen, dtype=F.dtype)

    loop_seed = draw_seed(torch.Generator().manual_seed(seed))  # the loop's first draw
    optimizer = make_optimizer(arm, bounds, loop_seed, eta_max)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = run_bo_loop(observe, num_rounds=rounds, bounds=bounds, optimizer=optimizer,
                        generator=torch.Generator().manual_seed(seed))
    total = time.perf_counter() - t0
    X = h.X
    F = problem(torch.cat([h.initial_X, X]), noise=False)
    n0 = h.initial_X.shape[0]
    max_hv = spec.max_hv(problem)
    return dict(
        problem=name, arm=arm, seed=seed, rounds=rounds, n0=n0, loop_seed=h.seed,
        hv_pct=hv_percent(problem, max_hv, F),
        hv_pct_curve=[hv_percent(problem, max_hv, F[: n0 + t]) for t in range(rounds + 1)],
        repeats={str(tol): repeats(h.initial_X, X, bounds, tol) for tol in TOLS},
        wall_per_round=sum(r.wall_time for r in h.rounds) / rounds,
        total_seconds=total, etas=optimizer.etas,
        sources=getattr(optimizer, "sources", None),
        noise_sd=None if sd is None else sd.tolist(), X=X.tolist(),
        initial_X=h.initial_X.tolist(),
    )


def run_path(rounds: int, name: str, arm: str, seed: int) -> Path:
    return OUT / f"T{rounds}" / name / arm / f"seed{seed}.json"


def _mean_se(v: list[float]) -> tuple[float, float]:
    m = sum(v) / len(v)
    if len(v) < 2:
        return m, math.nan
    var = sum((x - m) ** 2 for x in v) / (len(v) - 1)
    return m, math.sqrt(var / len(v))


def _sign_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def paired(a: dict[int, dict], b: dict[int, dict]) -> dict:
    """HV of ``a`` against ``b`` on the common seeds: higher / lower / tied (|Δ| ≤ 1e-9)."""
    common = sorted(set(a) & set(b))
    d = [a[s]["hv_pct"] - b[s]["hv_pct"] for s in common]
    if not d:
        return dict(trials=0)
    wins, losses = sum(x > 1e-9 for x in d), sum(x < -1e-9 for x in d)
    m, se = _mean_se(d)
    return dict(trials=len(d), higher=wins, lower=losses, tied=len(d) - wins - losses,
                mean_diff=m, se_diff=se, sign_p=_sign_p(wins, losses))


def _fmt(m: float, se: float, digits: int = 1) -> str:
    return f"{m:.{digits}f} ± {se:.{digits}f}" if math.isfinite(se) else f"{m:.{digits}f}"


def _arm_row(res: list[dict], bounds: Tensor) -> tuple[dict, list[str]]:
    hv = _mean_se([r["hv_pct"] for r in res])
    rep = _mean_se([r["repeats"]["1e-06"] for r in res])
    near = _mean_se([repeats(torch.tensor(r["initial_X"], dtype=DT), torch.tensor(r["X"], dtype=DT),
                             bounds, 1e-2) for r in res])
    wall = _mean_se([r["wall_per_round"] for r in res])
    etas = [e for r in res for e in r["etas"]]
    row = dict(trials=len(res), hv_pct=hv, repeats=rep, near_repeats_1e2=near,
               wall_per_round=wall, eta_median=sorted(etas)[len(etas) // 2],
               runs_with_repeat=sum(r["repeats"]["1e-06"] > 0 for r in res))
    cells = [_fmt(*hv, 2), f"{rep[0]:.1f} ({row['runs_with_repeat']}/{len(res)})",
             f"{near[0]:.1f}", f"{wall[0]:.2f}", f"{row['eta_median']:.1e}"]
    return row, cells


def report(rounds: int, problems: list[str], arms: list[str], seeds: list[int]) -> str:
    """Summary JSON + markdown table from the cached runs."""
    summary: dict = {"rounds": rounds, "seeds": seeds, "arms": arms, "problems": {}}
    lines = ["| problem | arm | HV % (mean ± se) | repeats/run (runs with one) | "
             "within 1e-2 | s/round | median η | vs default: higher/lower/tied, "
             "mean ΔHV ± se (sign p) |", "|---" * 8 + "|"]
    for name in problems:
        by_arm = {arm: {s: json.loads(p.read_text()) for s in seeds
                        if (p := run_path(rounds, name, arm, s)).is_file()}
                  for arm in {*arms, "default"}}  # the pairs' anchor even when not run
        entry: dict = {}
        for arm in arms:
            res = list(by_arm[arm].values())
            if not res:
                continue
            row, cells = _arm_row(res, PROBLEMS[name].make().bounds.to(DT))
            if arm != "default":
                pr = paired(by_arm[arm], by_arm.get("default", {}))
                row["vs_default"] = pr
                if pr["trials"]:
                    cells.append(f"{pr['higher']}/{pr['lower']}/{pr['tied']}, "
                                 f"{_fmt(pr['mean_diff'], pr['se_diff'], 2)} "
                                 f"(p = {pr['sign_p']:.2f})")
            else:
                cells.append("—")
            entry[arm] = row
            lines.append(f"| {name} | {arm} | " + " | ".join(cells) + " |")
        summary["problems"][name] = entry
    text = (f"T = {rounds} rounds after the loop's Sobol design; HV of the noise-free f values "
            "of all evaluated points as % of the max; repeats: proposals within 1e-6 "
            "(box-relative sup-norm) of an evaluated point; within 1e-2: the same at 1e-2.\n\n"
            + "\n".join(lines) + "\n")
    write_summary(OUT / f"T{rounds}" / "summary.json", summary)
    write_text(OUT / f"T{rounds}" / "summary.md", text)
    return text


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="seeds 0 .. seeds-1")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--eta-max", type=float, default=1e-3,
                    help="gated arm: skip evaluated points while η <= this")
    ap.add_argument("--report-only", action="store_true")
    ns = ap.parse_args(argv)
    seeds = list(range(ns.seeds))
    if not ns.report_only:
        for name in ns.problems:
            for seed in seeds:
                for arm in ns.arms:
                    path = run_path(ns.rounds, name, arm, seed)
                    if path.is_file():
                        continue
                    res = run_one(name, arm, seed, ns.rounds, ns.eta_max)
                    res["eta_max"] = ns.eta_max if arm == "gated" else None
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_json(path, res)
                    print(f"{name} {arm} seed {seed}: HV {res['hv_pct']:.2f} %, repeats "
                          f"{res['repeats']['1e-06']}, {res['wall_per_round']:.2f} s/round",
                          flush=True)
    print(report(ns.rounds, ns.problems, ns.arms, seeds))


if __name__ == "__main__":
    main()
