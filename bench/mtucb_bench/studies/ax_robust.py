"""Ax: the robust default strategy against Ax's default generation strategy, with outliers.

Arms, each driving an ``ax.api.client.Client(random_seed=seed)`` for ``--trials`` one-arm
trials (completed one at a time, in order):

* ``ax_default``: no strategy set (what ``Client`` chooses: Sobol, then its modular BoTorch
  generator with ``SingleTaskGP`` and qLogNEI);
* ``robust``: ``heavy_tailed_generation_strategy(seed=seed)`` (its default,
  ``model="robust"``: the screened ``AxRobustGP`` and the robust acquisition of the default
  kind, best point by ``recommend``).

Problems (inputs are the unit cube, the BoTorch function negated to be maximised and divided
by its standard deviation ``s`` over the box as in :mod:`mtucb_bench.robust_suite_problems`;
readings through :mod:`mtucb_bench.noise_models`, drawn from a generator seeded by the seed):

* ``sixhump/gross``: ``SixHumpCamel`` (d = 2), ``gross:0.04x5-20@0.1`` (``f + 0.1 Z``; with
  probability 4 % plus ``±U(5, 20)``);
* ``hartmann6/failure``: ``Hartmann`` (d = 6), ``failure:0.05+10@0.1`` (``f + 0.1 Z``; with
  probability 5 % the constant ``f* + 10``).

Per run: the regret ``f* − f(x)`` (noise-free, units of ``s``) of the arm returned by
``client.get_best_parameterization()``, whether Ax fell back to the best raw reading (its
cross-validation judged the fit bad, or the model gave no best point), the regret of the
best raw reading's arm and of ``argmax client.predict`` over the evaluated arms, the wall
time per trial and of the best-point call; the regret of the arm
``recommended_parameterization(client)`` returns. For ``robust`` also: the arm ``recommend`` picks
on the adapter's model (the agreement check) and the flagged readings.

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.ax_robust --seeds 10 --trials 25 \\
        [--problems sixhump/gross hartmann6/failure] [--arms ax_default robust] [--report-only]

Each run is cached as ``benchmark-runs/studies/ax_robust/T<trials>/<problem>/<arm>/
seed<k>.json`` (existing ones are reused); the summary goes to
``docs/results/studies/ax_robust.json`` and ``.md`` and the table is printed.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from botorch.test_functions import Hartmann, SixHumpCamel
from torch import Tensor

from mtucb_bench.fileio import write_json, write_text
from mtucb_bench.ht_suite_problems import sobol_unit_design
from mtucb_bench.noise_models import parse_noise
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.robust_suite_problems import RobustSuiteProblem

OUT = RUNS / "studies" / "ax_robust"
DT = torch.float64
ARMS = ("ax_default", "robust")
PROBLEMS = {
    "sixhump/gross": (lambda: SixHumpCamel(negate=True), "gross:0.04x5-20@0.1"),
    "hartmann6/failure": (lambda: Hartmann(dim=6, negate=True), "failure:0.05+10@0.1"),
}
NOISE_SEED = 1000  # readings of seed k come from a generator seeded NOISE_SEED + k


def problem(name: str) -> RobustSuiteProblem:
    """The normalised problem (module docstring)."""
    make, spec = PROBLEMS[name]
    g = make().to(DT)
    lo, hi = g.bounds.to(DT)
    vals = g.forward(lo + (hi - lo) * sobol_unit_design(2**12, g.dim, 0), noise=False)
    scale = float(vals.std())
    noise = parse_noise(spec)
    optimum = float(g.optimal_value) / scale
    return RobustSuiteProblem(
        name=name, function=g, scale=scale, noise=noise, alpha=noise.natural_alpha(),
        B=max(abs(optimum), float(vals.abs().max()) / scale), optimum=optimum,
        kind=name.split("/")[1],
    )


def _client(arm: str, dim: int, seed: int) -> Any:
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    from botorch_mtucb.integrations.ax import heavy_tailed_generation_strategy

    client = Client(random_seed=seed)
    client.configure_experiment(parameters=[
        RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
        for i in range(dim)
    ])
    client.configure_optimization(objective="y")
    if arm == "robust":
        client.set_generation_strategy(heavy_tailed_generation_strategy(seed=seed))
    return client


def _point(parameters: dict[str, float], dim: int) -> Tensor:
    return torch.tensor([[parameters[f"x{i}"] for i in range(dim)]], dtype=DT)


def run_one(name: str, arm: str, seed: int, trials: int) -> dict[str, Any]:
    """One run (module docstring); returns the JSON-able record."""
    p = problem(name)
    client = _client(arm, p.dim, seed)
    g = torch.Generator().manual_seed(NOISE_SEED + seed)
    X, Y, t0 = [], [], time.perf_counter()
    for _ in range(trials):
        ((index, parameters),) = client.get_next_trials(max_trials=1).items()
        x = _point(parameters, p.dim)
        y = float(p.observe(x, g)[0, 0])
        client.complete_trial(index, raw_data={"y": y})
        X.append(x[0])
        Y.append(y)
    per_trial = (time.perf_counter() - t0) / trials
    X_all, Y_all = torch.stack(X), torch.tensor(Y, dtype=DT)
    t1 = time.perf_counter()
    with _AxWarnings("ax.service.utils.best_point") as caught:
        best, _, best_trial, _ = client.get_best_parameterization()
    best_time = time.perf_counter() - t1
    regret = lambda x: float(p.regret(x.reshape(1, -1))[0])  # noqa: E731
    preds = client.predict(points=[{f"x{i}": float(v) for i, v in enumerate(x)} for x in X_all])
    mu = torch.tensor([pr["y"][0] for pr in preds], dtype=DT)
    record: dict[str, Any] = {
        "problem": name, "arm": arm, "seed": seed, "trials": trials,
        "regret": regret(_point(best, p.dim)), "best_trial": int(best_trial),
        "raw_best_trial": int(Y_all.argmax()), "raw_best_regret": regret(X_all[Y_all.argmax()]),
        "predict_argmax_trial": int(mu.argmax()), "predict_argmax_regret": regret(
            X_all[mu.argmax()]),
        "corrupted_readings": int((Y_all - p.f(X_all)).abs().gt(1.0).sum()),
        "raw_fallback": any("falling back on raw data" in m for m in caught.messages),
        "time_per_trial_s": per_trial, "best_point_time_s": best_time,
        "final_regret_simple": float(p.regret(X_all).min()),
    }
    record.update(_model_checks(client, X_all, best_trial))
    from botorch_mtucb.integrations.ax import recommended_parameterization

    t2 = time.perf_counter()
    params, _, rec_trial, _ = recommended_parameterization(client)
    record.update({"recommended_regret": regret(_point(params, p.dim)),
                   "recommended_trial": int(rec_trial),
                   "recommended_time_s": time.perf_counter() - t2})
    return record


class _AxWarnings(logging.Handler):
    """Collects the messages an Ax logger emits inside a ``with`` block."""

    def __init__(self, logger: str) -> None:
        super().__init__(logging.WARNING)
        self.logger, self.messages = logging.getLogger(logger), []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> _AxWarnings:
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)


def _model_checks(client: Any, X_all: Tensor, best_trial: int) -> dict[str, Any]:
    """The adapter's model: its training arms, flags, and the arm ``recommend`` picks."""
    from botorch_mtucb.integrations.ax.input_constructors import reading_flags
    from botorch_mtucb.models import recommend

    adapter = client._generation_strategy.adapter
    model = getattr(getattr(adapter, "generator", None), "surrogate", None)
    model = None if model is None else model.model
    out: dict[str, Any] = {"model": type(model).__name__}
    train_X = getattr(model, "train_X", None)
    if train_X is None:
        return out
    n = train_X.shape[0]  # the model's arms: trials 0..n-1 (Ax fits before the last report)
    flags = reading_flags(model)
    rec = recommend(model, train_X)
    rec_trial = int((train_X == rec).all(dim=-1).nonzero()[0])
    out.update({
        "model_rows": n,
        "flagged": [] if flags is None else flags.nonzero().view(-1).tolist(),
        "recommend_trial": rec_trial,
        "agrees_with_recommend": rec_trial == best_trial,
    })
    return out


def _cached(name: str, arm: str, seed: int, trials: int) -> dict[str, Any]:
    path = OUT / f"T{trials}" / name / arm / f"seed{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = run_one(name, arm, seed, trials)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)
    return record


def _mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, float("nan")
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1) / n)


def summarise(records: list[dict[str, Any]], arms: list[str]) -> tuple[dict[str, Any], str]:
    """Per problem and arm: mean ± s.e. and median regret, fallbacks, times; paired counts."""
    rows, lines = [], [
        "| problem | arm | runs | mean regret ± s.e. | median | fell back to raw | "
        "s / trial | best-point call s | `recommended_parameterization` regret |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    paired = []
    for name in PROBLEMS:
        by_arm = {a: {r["seed"]: r for r in records if r["problem"] == name and r["arm"] == a}
                  for a in arms}
        for a in arms:
            rs = list(by_arm[a].values())
            if not rs:
                continue
            reg = [r["regret"] for r in rs]
            m, se = _mean_se(reg)
            fallback = sum(bool(r["raw_fallback"]) for r in rs)
            row = {"problem": name, "arm": a, "runs": len(rs), "mean_regret": m, "se": se,
                   "median_regret": sorted(reg)[(len(reg) - 1) // 2],
                   "raw_fallbacks": fallback,
                   "time_per_trial_s": sum(r["time_per_trial_s"] for r in rs) / len(rs),
                   "best_point_time_s": sum(r["best_point_time_s"] for r in rs) / len(rs)}
            if a == "robust":
                row["agrees_with_recommend"] = sum(r.get("agrees_with_recommend", False)
                                                   for r in rs)
            helper = [r["recommended_regret"] for r in rs if "recommended_regret" in r]
            cell = "—"
            if len(helper) == len(rs):
                hm, hse = _mean_se(helper)
                row.update({"recommended_mean_regret": hm, "recommended_se": hse})
                cell = f"{hm:.3f} ± {hse:.3f}"
            rows.append(row)
            lines.append(
                f"| {name} | {a} | {len(rs)} | {m:.3f} ± {se:.3f} | {row['median_regret']:.3f} "
                f"| {fallback} | {row['time_per_trial_s']:.2f} | "
                f"{row['best_point_time_s']:.2f} | {cell} |"
            )
        if "robust" in by_arm and "ax_default" in by_arm:
            seeds = sorted(set(by_arm["robust"]) & set(by_arm["ax_default"]))
            d = [by_arm["robust"][s]["regret"] - by_arm["ax_default"][s]["regret"]
                 for s in seeds]
            if d:
                m, se = _mean_se(d)
                paired.append({"problem": name, "seeds": len(d), "robust_better": sum(
                    x < -1e-12 for x in d), "ties": sum(abs(x) <= 1e-12 for x in d),
                    "ax_better": sum(x > 1e-12 for x in d), "mean_diff": m, "se_diff": se})
    lines += ["", "| problem | seeds | robust better | ties | Ax default better | "
              "mean diff (robust − Ax) ± s.e. |", "|---|---|---|---|---|---|"]
    for q in paired:
        lines.append(f"| {q['problem']} | {q['seeds']} | {q['robust_better']} | {q['ties']} | "
                     f"{q['ax_better']} | {q['mean_diff']:+.3f} ± {q['se_diff']:.3f} |")
    return {"rows": rows, "paired": paired}, "\n".join(lines) + "\n"


_HEADER = """# Ax: the robust default strategy vs Ax's default generation strategy

`heavy_tailed_generation_strategy()` (default `model="robust"`) against a `Client` with no
strategy set, {trials} one-arm trials, seeds 0 to {last} (`Client(random_seed=seed)`, readings
from a generator seeded 1000 + seed). Regret `f* − f(x)` of the arm
`client.get_best_parameterization()` returns, on the noise-free f divided by its standard
deviation over the box (so the base noise sd is 0.1). `sixhump/gross`: SixHumpCamel (d = 2),
4 % readings `± U(5, 20)`; `hartmann6/failure`: Hartmann6, 5 % readings the constant f* + 10.
"fell back to raw": Ax's leave-one-out check judged the model's fit poor and returned the arm
of the best raw reading. "best-point call s": the `get_best_parameterization()` call (Ax's
cross-validation rebuilds the model once per observation). Last column: the regret of the
arm `botorch_mtucb.integrations.ax.recommended_parameterization(client)` returns (the
model's best point, never Ax's raw fallback; "—" where the runs predate it). Both strategies
answer from the model fitted when the last trial was generated (the last reading is not in
it). Command:
`OMP_NUM_THREADS=1 python -m mtucb_bench.studies.ax_robust --seeds {seeds} --trials {trials}`
(from `bench/`), one process, 2 shared cores. Raw runs: `benchmark-runs/studies/ax_robust/`.

"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=25)
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    logging.getLogger("ax").setLevel(logging.ERROR)
    records = []
    for name in args.problems:
        for seed in range(args.seeds):
            for arm in args.arms:
                path = OUT / f"T{args.trials}" / name / arm / f"seed{seed}.json"
                if args.report_only:
                    if path.exists():
                        records.append(json.loads(path.read_text()))
                    continue
                records.append(_cached(name, arm, seed, args.trials))
                r = records[-1]
                print(f"{name} {arm} seed {seed}: regret {r['regret']:.3f} "
                      f"({r['time_per_trial_s']:.2f} s/trial)", flush=True)
    summary, text = summarise(records, args.arms)
    summary.update({"trials": args.trials, "seeds": args.seeds, "problems": {
        k: PROBLEMS[k][1] for k in args.problems}, "noise_seed_base": NOISE_SEED,
        "runs": str(Path("benchmark-runs") / "studies" / "ax_robust" / f"T{args.trials}")})
    write_summary(RESULTS / "studies" / "ax_robust.json", summary)
    write_text(RESULTS / "studies" / "ax_robust.md", _HEADER.format(
        trials=args.trials, seeds=args.seeds, last=args.seeds - 1) + text)
    print(text)


if __name__ == "__main__":
    main()
