"""How often does the robust default's screening flag clean readings, and what does it cost?

`RobustGP` (``botorch_mtucb.models.robust_gp``) flags a reading when its leave-one-out
residual is far out, and ``recommend`` never returns a point whose only reading is flagged.
A false flag on the best clean reading therefore costs the whole recommendation. This study
measures, over BO-like designs (the points a ``SingleTaskGP`` + LogEI loop evaluated on the
clean version of each robust-suite function, 30 rounds), with readings drawn afresh for every
corruption kind of the suite:

* the false-flag rate (flagged clean readings / clean readings),
* how often the best clean reading is flagged,
* the recall (flagged corrupted readings / corrupted readings; a reading is corrupted when it
  is more than 1 from f, in f's standard deviations),
* the recommendation's excess regret: regret of ``recommend(model, X)`` minus the regret of
  the best evaluated point,

at t = 11, 20 and 40 readings and for the given thresholds ``c`` and ``k`` of the flag rule's
two conditions.

    OMP_NUM_THREADS=1 python -m mtucb_bench.studies.robust_screening --seeds 2 \\
        [--functions branin ackley3 ...] [--thresholds 3] [--spread-thresholds 3 1]

The designs are the suite's own ``STGP-LogEI`` units of the clean cells when they exist
(``benchmark-runs/robust_suite``), otherwise they are run here (about 20 s each). The summary
goes to ``docs/results/studies/robust_screening.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import warnings
from pathlib import Path

import torch

from botorch_mtucb.models import RobustGP, recommend
from mtucb_bench.noise_models import parse_noise
from mtucb_bench.perf.provenance import RESULTS, RUNS, write_summary
from mtucb_bench.robust_methods import run_robust_trial
from mtucb_bench.robust_suite_problems import FUNCTIONS, KINDS, robust_suite_problem

DT = torch.float64
SIZES = (11, 20, 40)
UNITS = RUNS / "robust_suite"


def design(function: str, seed: int = 0) -> tuple[torch.Tensor, str]:
    """The inputs a ``STGP-LogEI`` loop evaluated on ``<function>/clean`` (trial ``seed``)."""
    path = UNITS / f"{function}__clean" / f"STGP-LogEI_r30_t{seed}.json"
    if path.exists():
        rec = json.loads(path.read_text())
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec = run_robust_trial(robust_suite_problem(f"{function}/clean"), "STGP-LogEI", seed)
    return torch.tensor(rec["inputs"], dtype=DT), f"{function}/clean"


def screen_once(X: torch.Tensor, Y: torch.Tensor, F: torch.Tensor, optimum: float,
                problem, threshold: float, spread: float = 3.0) -> dict[str, float]:
    """The four measures of one model on readings ``Y`` (``t x 1``) at ``X``."""
    bad = (Y.squeeze(-1) - F).abs() > 1.0
    unit = torch.stack([torch.zeros(X.shape[1], dtype=DT), torch.ones(X.shape[1], dtype=DT)])
    model = RobustGP(X, Y, unit, threshold=threshold, spread_threshold=spread)
    flags = model.suspicious
    clean = (~bad).nonzero().view(-1)
    best = int(clean[F[clean].argmax()])
    x_rec = recommend(model, X)
    return {
        "false": int((flags & ~bad).sum()), "clean": int((~bad).sum()),
        "best_flagged": int(flags[best]), "caught": int((flags & bad).sum()),
        "corrupted": int(bad.sum()),
        "excess": float(F.max() - problem.f(x_rec).squeeze()),
    }


def run(functions: list[str], seeds: int, thresholds: list[float],
        spreads: tuple[float, ...] = (3.0,)) -> dict:
    """The measures per threshold and corruption kind, summed over designs, sizes and seeds."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for function in functions:
        X_all, cell = design(function)
        problem = robust_suite_problem(cell)
        F_all = problem.f(X_all)
        for kind in KINDS:
            noise = parse_noise(KINDS[kind])
            for s in range(seeds):
                g = torch.Generator().manual_seed(1000 * s + 7)
                Y_all = noise.readings(F_all, g, problem.optimum).unsqueeze(-1)
                for t in SIZES:
                    if t > X_all.shape[0]:
                        continue
                    for c, k in itertools.product(thresholds, spreads):
                        row = out.setdefault(f"c={c:g}, k={k:g}", {}).setdefault(
                            kind, {"fits": 0})
                        m = screen_once(X_all[:t], Y_all[:t], F_all[:t], problem.optimum,
                                        problem, c, k)
                        row["fits"] += 1
                        for k, v in m.items():
                            row[k] = row.get(k, 0) + v
        print(f"{function}: done", flush=True)
    return out


def table(out: dict) -> str:
    lines = ["| c, k | kind | false-flag rate | best clean reading flagged | recall | "
             "recommendation excess regret |", "|---|---|---|---|---|---|"]
    for c, kinds in out.items():
        for kind, r in kinds.items():
            recall = f"{r['caught']}/{r['corrupted']}" if r["corrupted"] else "—"
            lines.append(f"| {c} | {kind} | {r['false'] / max(r['clean'], 1):.3f} | "
                         f"{r['best_flagged']}/{r['fits']} | {recall} | "
                         f"{r['excess'] / r['fits']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[3.0])
    parser.add_argument("--spread-thresholds", type=float, nargs="+", default=[3.0])
    parser.add_argument("--out", type=Path, default=RESULTS / "studies" / "robust_screening.json")
    ns = parser.parse_args(argv)
    torch.set_num_threads(1)
    out = run(ns.functions, ns.seeds, ns.thresholds, tuple(ns.spread_thresholds))
    text = table(out)
    print(text)
    write_summary(ns.out, {"settings": {"functions": ns.functions, "seeds": ns.seeds,
                                        "thresholds": ns.thresholds,
                                        "spread_thresholds": ns.spread_thresholds,
                                        "sizes": SIZES},
                           "results": out, "table": text})


if __name__ == "__main__":
    main()
