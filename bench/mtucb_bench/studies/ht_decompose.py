"""Why the heavy-tailed default loses to RRP-LogEI under gross outliers (issue 16): decompose.

For each (cell, method, trial) the suite's BO run is taken from its record when the record
holds the evaluated inputs, else replayed exactly (``run_suite_trial`` is deterministic: same
seeds, one thread; the replayed regrets are checked against the stored record), and on the
run's final data ``(X, y)`` (``n_init + T`` points) the *same* evaluated points are ranked
by different recommendation rules:

* ``own``: the method's own model, posterior-mean argmax (the suite's rule, every method);
* ``clip``: the winsorised TruncatedGP (``practical_truncated_gp(..., clip=True)``);
* ``clip-loo``: the same model's leave-one-out mean ``μ₋ᵢ(xᵢ) = ŷᵢ − [A⁻¹ŷ]ᵢ / [A⁻¹]ᵢᵢ``,
  ``A = K + λI`` (a point's own reward cannot promote it);
* ``stgp``: ``SingleTaskGP`` (BoTorch defaults); ``rrp``: RobustRelevancePursuit;
* ``max-y``: the largest reward; ``oracle``: the best evaluated ``f`` (what no rule beats).

The search (which points a method evaluates) and the recommendation (which of them it names)
are thus separated. For the models it also reports how well each recovers ``f`` at the
observed points: RMSE of ``μ(xᵢ) − f(xᵢ)`` over the inliers and the mean ``|μ − f|`` at the
gross outliers (``|ε| > 10 ×`` median ``|ε|``). Writes ``results/ht_suite/decomposition.{json,md}``.

    python bench/mtucb_bench/studies/ht_decompose.py --cells branin:contaminated:0.02x1000 \\
        --methods TGP-UCB-practical-clip STGP-UCB --trials 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from mtucb_bench.ht_suite_problems import ht_suite_problem
from mtucb_bench.robust_baselines import (
    METHODS,
    fit_rrp_gp,
    fit_single_task_gp,
    practical_truncated_gp,
    run_suite_trial,
)

OUT = Path(__file__).resolve().parent / "results" / "ht_suite"
#: Suite methods whose model predicts ``f − loc`` (``practical_truncated_gp``, centred).
CENTRED = ("TGP-UCB-practical", "TGP-UCB-practical-clip", "TGP-LogEI-clip",
           "TGP-UCB-practical-v", "GP-UCB-practical")
RULES = ("own", "clip", "clip-loo", "stgp", "rrp", "max-y", "oracle")


def _mean(model, X):
    with torch.no_grad():
        return model.posterior(X.unsqueeze(-2)).mean.view(-1)


def loo_mean(model) -> torch.Tensor:
    """Leave-one-out posterior means at the training points of a dense TruncatedGP,
    ``ŷᵢ − [A⁻¹ŷ]ᵢ / [A⁻¹]ᵢᵢ + loc`` with ``A = K + λI`` (Rasmussen & Williams eq. 5.12)."""
    X = model.train_X
    A = model.covar_module(X, X).to_dense() + model.lam * torch.eye(X.shape[0], dtype=X.dtype)
    Ainv = torch.linalg.inv(A)
    y = model.train_targets
    return y - (Ainv @ y) / Ainv.diagonal() + model.location  # in the model's units


def decompose_trial(problem, method: str, seed: int, stored: dict | None, **kw) -> dict:
    if stored is not None and "inputs" in stored:  # the record has the inputs: no replay
        rec = stored
    else:
        rec = run_suite_trial(problem, method, seed=seed, **kw)
        if stored is not None and max(
            abs(a - b) for a, b in zip(rec["regret"], stored["regret"], strict=True)
        ) > 1e-9:
            raise RuntimeError(f"{method} seed {seed}: the replay differs from the record.")
    X = torch.tensor(rec["inputs"], dtype=torch.float64)
    Y = torch.tensor(rec["observations"], dtype=torch.float64).unsqueeze(-1)
    f = problem.f(X).view(-1)
    regret = problem.optimum - f
    eps = (Y.view(-1) - f).abs()
    gross = eps > 10 * eps.median()
    own, _ = METHODS[method][0](problem, X, Y, kw.get("width", 1.0), True)
    clip, loc = practical_truncated_gp(X, Y, clip=True)  # predicts f - loc
    own_shift = float(loc) if method in CENTRED else 0.0
    means = {"own": _mean(own, X) + own_shift, "clip": _mean(clip, X) + loc,
             "clip-loo": loo_mean(clip) + loc,
             "stgp": _mean(fit_single_task_gp(X, Y), X), "rrp": _mean(fit_rrp_gp(X, Y), X)}
    out = {"seed": seed, "gross": int(gross.sum()),
           "gross_positive": int((gross & (Y.view(-1) > f)).sum())}
    for rule in RULES:
        if rule == "max-y":
            i = int(Y.view(-1).argmax())
        elif rule == "oracle":
            i = int(regret.argmin())
        else:
            i = int(means[rule].argmax())
        out[f"regret_{rule}"] = float(regret[i])
        out[f"picks_outlier_{rule}"] = bool(gross[i])
    top = f >= f.quantile(0.75)  # the evaluated points the ranking is about
    for name, m in means.items():
        err = m - f
        out[f"rmse_inliers_{name}"] = float(err[~gross].square().mean().sqrt())
        out[f"rmse_top_{name}"] = float(err[top & ~gross].square().mean().sqrt())
        out[f"abs_err_outliers_{name}"] = float(err[gross].abs().mean()) if gross.any() else None
    if abs(out["regret_own"] - rec["simple_regret"][-1]) > 1e-9:
        raise RuntimeError("the own-model recommendation differs from the run's.")
    return out


def _table(results: dict) -> list[str]:
    lines = ["| cell | method | trials | trials with a gross outlier (> 0) | "
             + " | ".join(f"{r} mean / median" for r in RULES) + " |",
             "|---" * (4 + len(RULES)) + "|"]
    for cell, methods in results.items():
        for m, trials in methods.items():
            cols = []
            for r in RULES:
                v = [t[f"regret_{r}"] for t in trials]
                cols.append(f"{statistics.fmean(v):.3f} / {statistics.median(v):.3f}")
            g = sum(t["gross"] > 0 for t in trials)
            gp = sum(t["gross_positive"] > 0 for t in trials)
            lines.append(f"| {cell} | {m} | {len(trials)} | {g} ({gp}) | " + " | ".join(cols)
                         + " |")
    lines += ["", "Recovery of f at the observed points (mean over trials): RMSE over the "
              "inliers / RMSE over the inliers in the top quartile of the evaluated f / mean "
              "|μ − f| at the gross outliers; and in how many trials the rule names an outlier "
              "point:", "",
              "| cell | method | " + " | ".join(RULES[:5]) + " |", "|---" * 7 + "|"]
    for cell, methods in results.items():
        for m, trials in methods.items():
            cols = []
            for r in RULES[:5]:
                rm = statistics.fmean(t[f"rmse_inliers_{r}"] for t in trials)
                rt = statistics.fmean(t[f"rmse_top_{r}"] for t in trials)
                ao = [t[f"abs_err_outliers_{r}"] for t in trials
                      if t[f"abs_err_outliers_{r}"] is not None]
                po = sum(t[f"picks_outlier_{r}"] for t in trials)
                cols.append(f"{rm:.3f} / {rt:.3f} / "
                            f"{statistics.fmean(ao) if ao else float('nan'):.2f}"
                            f" ({po})")
            lines.append(f"| {cell} | {m} | " + " | ".join(cols) + " |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", nargs="+", default=["branin:contaminated:0.02x1000",
                                                  "hartmann6:contaminated:0.02x1000"])
    p.add_argument("--methods", nargs="+", default=["TGP-UCB-practical-clip", "STGP-UCB"])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--out", type=Path, default=OUT)
    ns = p.parse_args()
    ns.iterations = {"hartmann6": 30}  # the suite's horizons (records say so where present)
    torch.set_num_threads(1)
    ns.out.mkdir(parents=True, exist_ok=True)
    path = ns.out / "decomposition.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for spec in ns.cells:
        function, noise = spec.split(":", 1)
        problem = ht_suite_problem(function, noise)
        cell = f"{function}__{noise.replace(':', '_')}__honest"
        for m in ns.methods:
            done = {t["seed"] for t in results.get(cell, {}).get(m, [])}
            for k in range(ns.trials):
                if k in done:
                    continue
                sp = ns.out / cell / f"{m}_w1_t{k}.json"
                stored = json.loads(sp.read_text()) if sp.exists() else None
                start = time.perf_counter()
                its = stored["iterations"] if stored else ns.iterations.get(function, 20)
                r = decompose_trial(problem, m, k, stored, n_init=10, iterations=its,
                                    num_restarts=2, raw_samples=128)
                results.setdefault(cell, {}).setdefault(m, []).append(r)
                results[cell][m].sort(key=lambda t: t["seed"])
                path.write_text(json.dumps(results, indent=1))
                print(f"{cell} {m} t{k} {time.perf_counter() - start:.1f}s "
                      f"own {r['regret_own']:.3f} rrp {r['regret_rrp']:.3f}", flush=True)
    lines = ["<!-- generated by bench/mtucb_bench/studies/ht_decompose.py -->", "",
             "Simple regret of the point each rule names among the run's evaluated points "
             "(final data: n_init + 20 points on Branin, + 30 on Hartmann6):", "", *_table(results)]
    (ns.out / "decomposition.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
