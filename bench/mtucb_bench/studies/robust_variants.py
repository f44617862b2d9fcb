"""Two changes to the robust default, measured in the robust suite against the default.

* ``ROBUST-UCB-k<k>``: ``RobustGP(X, Y, bounds, spread_threshold=k)`` (the second flag
  condition ``|y_i − m_i| > k · σ_y``; the default is ``k = 3``) with the robust UCB and
  ``recommend``, as the suite's ``ROBUST-UCB``.
* ``ROBUST-UCB-k<k>-out``: the same, with the flagged readings *left out* of the model instead
  of replaced by their leave-one-out means: the refits between and after the passes use the
  unflagged readings only, and a flagged reading gets the noise variance
  ``1e8 · (k(x_i, x_i) + λ)`` in the final model (``TruncatedGP``'s per-reading noise), so
  that the posterior is that of a GP conditioned on the unflagged readings.

Units go to ``benchmark-runs/robust_variants/`` in the suite's layout. ``compare`` pairs
them trial by trial with the suite's ``ROBUST-UCB`` units (the default) on the trials both
have, per cell and per corruption kind, and writes
``docs/results/studies/robust_variants.json``.

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.robust_variants run --trials 10 \\
        --methods ROBUST-UCB-k2 --workers 1
    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.robust_variants run --trials 5 \\
        --methods ROBUST-UCB-k3-out --workers 1
    python -m mtucb_bench.studies.robust_variants compare --methods ROBUST-UCB-k2 \\
        ROBUST-UCB-k3-out
"""

from __future__ import annotations

import json
import math
import statistics
import sys

import torch

from botorch_mtucb.acquisition import robust_acquisition
from botorch_mtucb.heavy_tailed import robust as R
from botorch_mtucb.heavy_tailed.moments import fit_gp_on_targets
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.models import RobustGP, recommend
from mtucb_bench import robust_methods
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.suites import robust_suite

OUT = RUNS / "robust_variants"
LEFT_OUT_NOISE = 1e8


class LeaveOutRobustGP(RobustGP):
    """``RobustGP`` whose flagged readings are left out of the fits and the conditioning."""

    def __init__(self, train_X, train_Y, bounds=None, *, spread_threshold=R.SPREAD_THRESHOLD):
        X, y = R.check_training_data(train_X, train_Y)
        lower, width = R._normalising_box(X, bounds)
        U = (X - lower) / width
        fit, flags = fit_gp_on_targets(U, y), None
        for _ in range(R.ROBUST_PASSES):
            flags, targets, residuals = R._screen(fit, U, y, flags, R.SUSPICION_THRESHOLD,
                                                  spread_threshold)
            fit = fit_gp_on_targets(U[~flags], targets[~flags])
        TruncatedGP.__init__(
            self, X, targets.unsqueeze(-1), v=1.0,
            covar_module=R._raw_input_kernel(fit.kernel, width), lam=fit.lam,
            constants="practical", truncate=False, centre=True,
            moment_estimator=R._FixedLocation(fit.mean),
        )
        self.threshold, self.spread_threshold = R.SUSPICION_THRESHOLD, spread_threshold
        self._suspicious, self._residuals, self._raw_y = flags, residuals, y.clone()
        if bool(flags.any()):
            with torch.no_grad():
                prior = self.covar_module(X, diag=True).to(y)
                self._obs_noise = torch.where(flags, LEFT_OUT_NOISE * (prior + fit.lam),
                                              torch.full_like(y, fit.lam))
                self._build()


def _builder(k: float, leave_out: bool):
    cls = LeaveOutRobustGP if leave_out else RobustGP

    def build(X, Y, bounds, seed):
        model = cls(X, Y, bounds, spread_threshold=k)
        return robust_methods.Fitted(model, robust_acquisition(model, kind="ucb"),
                                     lambda Xe: recommend(model, Xe).reshape(1, -1))

    return build


def register() -> None:
    """Add the variants (k ∈ {1, 1.5, 2, 3}, kept or left out) to the suite's methods."""
    for k in (1.0, 1.5, 2.0, 3.0):
        robust_methods.METHODS[f"ROBUST-UCB-k{k:g}"] = _builder(k, False)
        robust_methods.METHODS[f"ROBUST-UCB-k{k:g}-out"] = _builder(k, True)


def _finals(folder, method: str) -> dict[int, float]:
    return {int(p.stem.rsplit("_t", 1)[1]): json.loads(p.read_text())["simple_regret"][-1]
            for p in folder.glob(f"{method}_r30_t*.json")}


def compare(methods: list[str]) -> dict:
    """Each variant against the suite's ``ROBUST-UCB`` on common trials: per cell the means,
    paired wins / losses (lower final regret wins); per kind and overall the counts and the
    geometric mean of the cells' ratios of mean regret."""
    out = {}
    for method in methods:
        cells, kinds, logs = {}, {}, []
        for folder in sorted(OUT.iterdir()):
            var = _finals(folder, method)
            ref = _finals(robust_suite.OUT / folder.name, "ROBUST-UCB")
            seeds = sorted(set(var) & set(ref))
            if not seeds:
                continue
            v, r = (statistics.fmean(d[k] for k in seeds) for d in (var, ref))
            w, lo = sum(var[k] < ref[k] for k in seeds), sum(var[k] > ref[k] for k in seeds)
            cells[folder.name] = {"trials": len(seeds), "variant": v, "default": r,
                                  "wins": w, "losses": lo}
            kind = kinds.setdefault(folder.name.split("__")[1], {"wins": 0, "losses": 0})
            kind["wins"] += w
            kind["losses"] += lo
            logs.append(math.log(v / r))
        out[method] = {"cells": cells, "kinds": kinds,
                       "wins": sum(k["wins"] for k in kinds.values()),
                       "losses": sum(k["losses"] for k in kinds.values()),
                       "geo_mean_ratio": math.exp(statistics.fmean(logs)) if logs else None}
        print(method, {k: f"{d['wins']}-{d['losses']}" for k, d in kinds.items()},
              f"all {out[method]['wins']}-{out[method]['losses']}",
              f"geo-mean ratio {out[method]['geo_mean_ratio']}")
    write_summary(RESULTS / "studies" / "robust_variants.json", {"methods": out})
    return out


def main(argv: list[str] | None = None) -> None:
    """``robust_suite``'s command line (in-process workers) with the variants and ``OUT``;
    ``compare --methods ...`` writes the comparison."""
    register()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        compare(argv[argv.index("--methods") + 1:] if "--methods" in argv else
                ["ROBUST-UCB-k2", "ROBUST-UCB-k3-out"])
        return
    if argv and argv[0] == "run" and "--out" not in argv:
        argv += ["--out", str(OUT)]
    robust_suite.main(argv)


if __name__ == "__main__":
    main()
