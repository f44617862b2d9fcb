"""TGP's data-driven ``level="current"`` on a finite arm set: the cost of following the level.

With ``level="current"`` every reward is truncated at the latest level ``b_t``, so each
``condition_on_observations`` used to re-truncate all ``t`` rewards and re-sum them per arm
(``O(t)``); the per-arm sums now follow the growing level incrementally
(``models/_truncated_arms.py``, ``_LevelSums``). Measured per TGP-UCB round (HeavyTailedUCB over
all arms, argmax, one conditioning) at t observations, A = 100 arms, Student-t(2) rewards:

* ``per-round``: Algorithm 1's own levels (nothing to re-truncate; the anchor, same run);
* ``current``: the data-driven level, incremental sums;
* ``current-O(t)``: the same with the sums rebuilt from all ``t`` rewards every round (the
  code before the change).

Best of ``--repeats`` runs of 100 rounds each, one thread; ratios against ``per-round``.
Writes ``results/tgp_current_level.json``.

    python bench/mtucb_bench/studies/tgp_current_level.py
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.models import TruncatedGP
from mtucb_bench.measure import best_time

DT = torch.float64


def _rounds(model, arms, rewards, rebuild: bool):
    cand = arms.unsqueeze(-2)
    for y in rewards:
        with torch.no_grad():
            a = int(HeavyTailedUCB(model)(cand).argmax())
        if rebuild:
            model.__dict__["_level_sums"] = None  # the O(t) re-truncation (the old code)
        model = model.condition_on_observations(arms[a : a + 1], y)
    return model


def measure(t: int, rounds: int, repeats: int) -> list[dict]:
    g = torch.Generator().manual_seed(t)
    arms = torch.linspace(0, 1, 100, dtype=DT).unsqueeze(-1)
    kern = RBFKernel().to(DT)
    kern.lengthscale = 0.2
    idx = torch.randint(0, 100, (t,), generator=g)
    noise = torch.distributions.StudentT(2.0).sample((t + rounds, 1)).to(DT)
    X, Y = arms[idx], torch.sin(6 * arms[idx]) + noise[:t]
    rewards = [noise[t + i : t + i + 1] for i in range(rounds)]
    rows, means = [], {}
    for name, level, rebuild in (("per-round", "per-round", False), ("current", "current", False),
                                 ("current-O(t)", "current", True)):
        model = TruncatedGP(X, Y, 1.0, 4.0, kern, arms=arms, level=level, clip=True)
        sec = best_time(lambda m=model, r=rebuild: _rounds(m, arms, rewards, r), repeats)
        means[name] = _rounds(model, arms, rewards, rebuild).mean_and_variance(
            arms.unsqueeze(-2))[0]
        rows.append({"variant": name, "t": t, "rounds": rounds, "us_per_round": 1e6 * sec / rounds})
    err = float((means["current"] - means["current-O(t)"]).abs().max())
    if err > 1e-10:
        raise RuntimeError(f"incremental and rebuilt sums differ by {err:.2e}")
    for r in rows:
        r["ratio_vs_per_round"] = r["us_per_round"] / rows[0]["us_per_round"]
        r["max_abs_diff_incremental_vs_rebuilt"] = err
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--t", type=int, nargs="+", default=[1000, 10000, 20000])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path,
                   default=Path(__file__).parent / "results" / "tgp_current_level.json")
    ns = p.parse_args()
    torch.set_num_threads(1)
    rows = [r for t in ns.t for r in measure(t, ns.rounds, ns.repeats)]
    print("| t | variant | µs per round (× per-round) |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r['t']} | {r['variant']} | {r['us_per_round']:.0f} "
              f"({r['ratio_vs_per_round']:.2f}×) |")
    meta = {"torch": torch.__version__, "python": platform.python_version(), "threads": 1,
            "repeats": ns.repeats, "arms": 100}
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
