"""Would a robust first fit remove the masking of ``robust_gp`` at small N? (issue 27).

The variant: readings farther than ``K`` robust spreads from the median
(``|y − med(y)| > K σ_y``, ``σ_y`` the flag rule's spread) are left out of the first kernel fit
and of the first pass's conditioning (judged by the prediction of the others); passes and
cleaning as in :class:`botorch_mtucb.models.RobustGP`. Compared with the current rule on

1. the masking reproducer of the studies page (15 uniform points of sin(5x) on [0, 1], three
   readings replaced by 100, 90 and 80, ``torch.manual_seed(seed)`` before the inputs), and
2. the recorded designs of the robust suite (``ROBUST-UCB@1`` runs, every cell, trials 0–9,
   the first 15 and 25 readings and all 38–42): readings whose noise ``y − f(x)`` exceeds 2
   in absolute value (gross outliers, failures, the tails of ν = 1.5) are corrupted; counted
   are corrupted readings flagged, clean readings flagged, and designs whose best clean
   reading is flagged.

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.robust_first_fit \\
        [--runs benchmark-runs/robust_suite] [--spread 6]
"""

from __future__ import annotations

import argparse
import glob
import json
import warnings
from pathlib import Path

import torch
from torch import Tensor

import botorch_mtucb.heavy_tailed.robust as robust
from botorch_mtucb.heavy_tailed.moments import fit_gp_on_targets

_COUNTS = ("caught", "false", "best_flag")


def variant_flags(X: Tensor, y: Tensor, spread_multiple: float) -> Tensor:
    """The variant's flags (``t`` bools) on unit-cube inputs ``X`` and readings ``y``."""
    dev = (y - y.median()).abs()
    spread = robust._MAD_TO_SD * dev.median()
    spread = torch.where(spread > 0, spread, robust._MEAN_AD_TO_SD * dev.mean())
    extreme = dev > spread_multiple * spread
    if not bool(extreme.any()) or 2 * int(extreme.sum()) >= y.shape[0]:
        return robust.RobustGP(X, y.unsqueeze(-1)).suspicious
    fit = fit_gp_on_targets(X[~extreme], y[~extreme])
    flags = extreme
    for _ in range(robust.ROBUST_PASSES):
        flags, targets, _ = robust._screen(
            fit, X, y, flags, robust.SUSPICION_THRESHOLD, robust.SPREAD_THRESHOLD
        )
        fit = fit_gp_on_targets(X, targets)
    return flags


def reproducer(spread_multiple: float) -> list[dict]:
    """Flags of both rules on the masking reproducer, seeds 1–4."""
    rows = []
    for seed in range(1, 5):
        torch.manual_seed(seed)
        X = torch.rand(15, 1, dtype=torch.float64)
        y = torch.sin(5 * X[:, 0])
        y[[2, 7, 11]] = torch.tensor([100.0, 90.0, 80.0], dtype=torch.float64)
        current = robust.RobustGP(X, y.unsqueeze(-1)).suspicious
        rows.append({"seed": seed, "current": current.nonzero().flatten().tolist(),
                     "variant": variant_flags(X, y, spread_multiple).nonzero().flatten().tolist()})
    return rows


def suite_cell(files: list[str], spread_multiple: float) -> dict:
    """Counts of both rules (``[current, variant]``) over a cell's recorded designs."""
    counts = {k: [0, 0] for k in _COUNTS}
    corrupted = designs = 0
    for path in files:
        record = json.loads(Path(path).read_text())
        X = torch.tensor(record["inputs"], dtype=torch.float64)
        y = torch.tensor(record["observations"], dtype=torch.float64)
        regret = torch.tensor(record["regret"], dtype=torch.float64)
        f_star = (y + regret).median()  # most readings carry noise of sd 0.1 only
        corrupt = (y - (f_star - regret)).abs() > 2.0
        for N in (15, 25, y.shape[0]):
            c = corrupt[:N]
            best = torch.where(c, torch.inf, regret[:N]).argmin()
            rules = (robust.RobustGP(X[:N], y[:N].unsqueeze(-1)).suspicious,
                     variant_flags(X[:N], y[:N], spread_multiple))
            for j, flags in enumerate(rules):
                counts["caught"][j] += int((flags & c).sum())
                counts["false"][j] += int((flags & ~c).sum())
                counts["best_flag"][j] += int(flags[best])
            corrupted += int(c.sum())
            designs += 1
    return {"corrupted": corrupted, "designs": designs, **counts}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="benchmark-runs/robust_suite")
    parser.add_argument("--spread", type=float, default=6.0, help="K of the variant")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print(json.dumps({"reproducer": reproducer(args.spread)}))
    for cell in sorted(glob.glob(f"{args.runs}/*")):
        files = sorted(glob.glob(f"{cell}/ROBUST-UCB@1_r30_t*.json"))
        if files:
            print(json.dumps({"cell": Path(cell).name, **suite_cell(files, args.spread)}),
                  flush=True)


if __name__ == "__main__":
    main()
