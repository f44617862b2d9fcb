"""What a data-driven (α, v) does, and why TruncatedGP must centre (issue 16, item 3).

For each suite noise model and function, rewards ``y_s = f(x_s) + ε_s`` at ``t`` scrambled
Sobol points (no optimisation: the exchangeable case the estimate assumes), 20 repetitions:

* ``v_hat``: median-of-means estimate of ``E|y − median|²`` (α = 1, the practical default,
  :func:`robust_location_and_moment`) against the honest ``v`` of the problem (its declared α);
* ``trunc_all``: fraction of rewards TGP zeroes at ``b_s = √v̂ s^{1/4}`` (each reward at its
  own round's level, Algorithm 1); ``trunc_outliers``: fraction of gross noise draws
  (``|ε| > 10·`` the median ``|ε|``) zeroed; ``trunc_top``: fraction of the best 10 % of
  ``f`` values zeroed (signal lost); ``*_current``: the same at the current level
  ``b_t = √v̂ t^{1/4}`` for every reward (the practical model's default);
* the same three without centring (``loc = 0``, moment about 0);
* ``hill_alpha``: the Hill estimate of the tail index from the top 10 % of ``|y − median|``,
  turned into ``α̂ = min(1, ξ̂ − 1.1)`` (the rule of ``natural_alpha``), median and 10–90 %
  range over repetitions, against the true α.

Writes ``results/ht_moment_estimates.json`` and prints a Markdown table.

``--models`` measures instead what each suite model makes of such data: the RMSE of its
posterior mean against ``f`` on 512 held-out Sobol points (t = 30 rewards, 5 repetitions;
TGP-practical zeroing, -clip, no truncation, ATA-practical, SingleTaskGP) and writes
``results/ht_model_accuracy.{json,md}``.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import torch

from botorch_mtucb.theory.heavy_tailed import tgp_truncation_levels
from mtucb_bench.ht_suite_problems import (
    SUITE_NOISES,
    ht_suite_problem,
    sobol_unit_design,
)
from mtucb_bench.robust_baselines import robust_location_and_moment

OUT = Path(__file__).resolve().parent / "results" / "ht_moment_estimates.json"
REPS = 20


def _fractions(y: torch.Tensor, eps: torch.Tensor, f: torch.Tensor, centre: bool) -> dict:
    loc, v = robust_location_and_moment(y, 1.0, centre=centre)
    t = y.shape[0]
    s = torch.arange(1, t + 1, dtype=y.dtype)
    gross = eps.abs() > 10 * eps.abs().median()
    top = f >= f.quantile(0.9)
    out = {"v_hat": float(v)}
    for tag, rounds in (("", s), ("_current", torch.full_like(s, float(t)))):
        cut = (y - loc).abs() > tgp_truncation_levels(rounds, 1.0, float(v))
        out["trunc_all" + tag] = float(cut.double().mean())
        out["trunc_outliers" + tag] = (
            float(cut[gross].double().mean()) if gross.any() else float("nan")
        )
        out["trunc_top" + tag] = float(cut[top].double().mean())
    return out


def _hill_alpha(y: torch.Tensor) -> float:
    a = (y - y.median()).abs().sort(descending=True).values
    k = max(5, y.shape[0] // 10)
    xi = 1.0 / float((a[:k].log() - a[k].log()).mean())  # tail index estimate
    return min(1.0, xi - 1.1)


def model_accuracy(t: int = 30, reps: int = 5) -> None:
    """RMSE of each suite model's posterior mean against ``f`` (module docstring)."""
    from botorch_mtucb.heavy_tailed.adaptive import AdaptiveTruncationGP
    from mtucb_bench.robust_baselines import (
        fit_single_task_gp,
        practical_truncated_gp,
    )

    def tgp(**kw):
        def build(X, Y):
            model, loc = practical_truncated_gp(X, Y, **kw)
            return model, float(loc)
        return build

    models = {
        "TGP-practical (zero)": tgp(),
        "TGP-practical-clip": tgp(clip=True),
        "GP-practical (no truncation)": tgp(truncate=False),
        "ATA-practical": lambda X, Y: (
            AdaptiveTruncationGP(X, Y, generator=torch.Generator().manual_seed(t)), 0.0),
        "SingleTaskGP": lambda X, Y: (fit_single_task_gp(X, Y), 0.0),
    }
    noises = ("contaminated:0.02x1000", "contaminated:0.1x100", "student-t:2")
    out, rows = [], []
    for function in ("branin", "hartmann6"):
        for spec in noises:
            p = ht_suite_problem(function, spec)
            X_test = sobol_unit_design(512, p.dim, seed=99)
            f_test = p.f(X_test)
            rmse: dict[str, list[float]] = {m: [] for m in models}
            for rep in range(reps):
                X = sobol_unit_design(t, p.dim, seed=100 + rep)
                Y = p.observe(X, torch.Generator().manual_seed(rep))
                for name, build in models.items():
                    model, loc = build(X, Y)
                    with torch.no_grad():
                        mean = model.posterior(X_test.unsqueeze(-2)).mean.view(-1) + loc
                    rmse[name].append(float((mean - f_test).square().mean().sqrt()))
            rec = {"function": function, "noise": spec, "t": t, "reps": reps,
                   "f_std": float(f_test.std()),
                   **{m: statistics.fmean(v) for m, v in rmse.items()}}
            out.append(rec)
            rows.append(f"| {function} | {spec} | " + " | ".join(
                f"{rec[m]:.2f}" for m in models) + f" | {rec['f_std']:.2f} |")
            print(rows[-1], flush=True)
    lines = ["<!-- generated by bench/mtucb_bench/studies/ht_moment_estimates.py --models -->", "",
             f"RMSE of the posterior mean against f (t = {t} Sobol rewards, {reps} "
             "repetitions, 512 held-out points):", "",
             "| function | noise | " + " | ".join(models) + " | std of f |",
             "|---" * (len(models) + 3) + "|", *rows]
    res = OUT.parent
    (res / "ht_model_accuracy.json").write_text(json.dumps(out, indent=1))
    (res / "ht_model_accuracy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    import sys

    if "--models" in sys.argv[1:]:
        torch.set_num_threads(1)
        model_accuracy()
        return
    torch.set_num_threads(1)
    rows, out = [], []
    for function in ("branin", "hartmann6"):
        for spec in SUITE_NOISES:
            p = ht_suite_problem(function, spec)
            for t in (30, 100, 1000):
                acc: dict[str, list[float]] = {}
                for rep in range(REPS):
                    X = sobol_unit_design(t, p.dim, seed=100 + rep)
                    f = p.f(X)
                    eps = p.noise.sample((t,), torch.Generator().manual_seed(rep))
                    y = f + eps
                    for centre in (True, False):
                        tag = "" if centre else "_uncentred"
                        for k, val in _fractions(y, eps, f, centre).items():
                            acc.setdefault(k + tag, []).append(val)
                    acc.setdefault("hill_alpha", []).append(_hill_alpha(y))
                rec = {"function": function, "noise": spec, "t": t,
                       "true_alpha": p.alpha, "honest_v": p.v_declared()}
                for k, vals in acc.items():
                    vals = [v for v in vals if not math.isnan(v)]
                    if not vals:
                        rec[k] = None
                        continue
                    q = statistics.quantiles(vals, n=10) if len(vals) > 1 else [vals[0]] * 9
                    rec[k] = {"median": statistics.median(vals), "p10": q[0], "p90": q[-1]}
                out.append(rec)

                def m(key: str, rec=rec) -> str:
                    return "—" if rec[key] is None else f"{rec[key]['median']:.2f}"

                h = rec["hill_alpha"]
                rows.append(
                    f"| {function} | {spec} | {t} | {rec['honest_v']:.3g} | {m('v_hat')} | "
                    f"{m('trunc_all')} | {m('trunc_outliers')} | {m('trunc_top')} | "
                    f"{m('trunc_all_current')} | {m('trunc_outliers_current')} | "
                    f"{m('trunc_top_current')} | "
                    f"{m('trunc_all_uncentred')} | {m('trunc_top_uncentred')} | "
                    f"{p.alpha:.2f} | {h['median']:.2f} [{h['p10']:.2f}, {h['p90']:.2f}] |"
                )
    OUT.write_text(json.dumps(out, indent=1))
    print("| function | noise | t | honest v | v̂ (MoM) | zeroed at b_s: all | gross outliers | "
          "top-10% f | at b_t: all | gross | top-10% f | uncentred (b_s): all | top-10% f | "
          "α | Hill α̂ [10%, 90%] |")
    print("|---" * 15 + "|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
