"""Batch MT-KB (GP-BUCB pending points): regret per evaluation and per round, q ∈ {1, 2, 4}.

Paper 000's RKHS protocol with n = 2 (``rkhs_problem(2, seed)``: ICM, B = AᵀA, SE l = 0.2,
σ = η = δ = 0.1, 101-point grid), MT-KB with the Theorem-2 radius (the paper's b) and the
directional bound, run by :func:`botorch_mtucb.loop.run_bo_loop` with ``q`` points per round
(one λ_t per point, the earlier points of the round pending: GP-BUCB). Every configuration
gets the same budget of evaluations E (so q = 4 has E/4 rounds), the same instances, initial
point, noise stream and λ stream (common random numbers: the λ of evaluation t is the same
for every q). ``q=4, gp-bucb`` additionally inflates β by GP-BUCB's exp(C_p) while points are
pending (:mod:`botorch_mtucb.acquisition.pending`).

Reported per configuration (mean ± std over trials): the time-average scalarized regret
R_C(t)/t at t = E evaluations (regret against the number of evaluations), and R_C(t)/t at the
end of round R = E/4, the last round every configuration reaches (t = R·q: regret against
the number of rounds, what a batch buys when a round of parallel evaluations is the unit of
wall time).
Single-threaded. Writes ``docs/results/perf/batch_loop.json`` and ``batch_loop.png``.

Run: ``python -m mtucb_bench.perf.batch_loop [--trials 20] [--evals 96]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from botorch_mtucb.acquisition import ScalarizationSampler, TheoremTwoBeta
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.loop import (
    FiniteArmOptimizer,
    gaussian_observer,
    run_bo_loop,
    scalarized_ucb_factory,
)
from botorch_mtucb.models import ExactMultiTaskGP
from mtucb_bench.multi_task_problems import rkhs_problem
from mtucb_bench.perf.provenance import RESULTS, write_summary

CONFIGS = (("q=1", 1, 1.0), ("q=2", 2, 1.0), ("q=4", 4, 1.0), ("q=4, gp-bucb", 4, "gp-bucb"))


def run_trial(seed: int, q: int, inflation, evals: int) -> dict:
    prob = rkhs_problem(2, seed=seed)
    arms = prob.arms
    X0 = arms[torch.randint(0, arms.shape[0], (1,), generator=torch.Generator().manual_seed(seed))]

    def model_factory(X, Y):
        kern = ICMKernel(prob.scalar_kernel(), num_tasks=2, task_covar=prob.task_covar)
        return ExactMultiTaskGP(X, Y, covar_module=kern, noise=prob.eta)

    beta = TheoremTwoBeta(b=prob.b, sigma=prob.noise_std, delta=prob.delta)
    t0 = time.perf_counter()
    h = run_bo_loop(
        observe=gaussian_observer(prob.f, prob.noise_std, torch.Generator().manual_seed(seed + 1)),
        initial_X=X0,
        num_rounds=evals // q,
        model_factory=model_factory,
        acquisition_factory=scalarized_ucb_factory(beta, "directional", inflation),
        optimizer=FiniteArmOptimizer(arms),
        scalarization_sampler=ScalarizationSampler(2, "chebyshev", ref_point=prob.ref_point),
        true_f=prob.f,
        regret_X=prob.regret_X,
        generator=torch.Generator().manual_seed(seed + 3),
        q=q,
    )
    r = h.regrets
    avg = r.cumsum(0) / torch.arange(1, r.numel() + 1)
    return {
        "seed": seed,
        "avg_regret_by_eval": [round(v, 6) for v in avg.tolist()],
        # R_C(t)/t at the end of each round
        "avg_regret_by_round": [round(v, 6) for v in avg[q - 1::q].tolist()],
        "wall_s": time.perf_counter() - t0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--evals", type=int, default=96)
    parser.add_argument("--out", default=str(RESULTS / "perf" / "batch_loop.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.evals % 4:
        raise SystemExit("--evals must be a multiple of 4")
    R = args.evals // 4
    out: dict = {"meta": {"problem": "rkhs-n2", "evals": args.evals, "trials": args.trials,
                          "common_rounds": R}, "configs": {}}
    for name, q, inflation in CONFIGS:
        trials = [run_trial(1000 + k, q, inflation, args.evals) for k in range(args.trials)]
        A = torch.tensor([tr["avg_regret_by_eval"] for tr in trials], dtype=torch.float64)
        C = torch.tensor([tr["avg_regret_by_round"] for tr in trials], dtype=torch.float64)
        row = {
            "q": q, "inflation": inflation,
            "avg_regret_at_E_mean": float(A[:, -1].mean()),
            "avg_regret_at_E_std": float(A[:, -1].std()),
            "avg_regret_after_R_rounds_mean": float(C[:, R - 1].mean()),
            "avg_regret_after_R_rounds_std": float(C[:, R - 1].std()),
            "wall_s_mean": sum(tr["wall_s"] for tr in trials) / len(trials),
            "trials": trials,
        }
        base = out["configs"].get("q=1")
        if base is not None:  # paired over the same instances / noise / λ streams
            d = A[:, -1] - torch.tensor([tr["avg_regret_by_eval"][-1] for tr in base["trials"]])
            row["paired_diff_vs_q1_at_E_mean"] = float(d.mean())
            row["paired_diff_vs_q1_at_E_std"] = float(d.std())
            row["trials_not_worse_than_q1_at_E"] = int((d <= 0).sum())
        out["configs"][name] = row
        print(
            f"{name:13s} R_C(E)/E = {row['avg_regret_at_E_mean']:.4f} ± "
            f"{row['avg_regret_at_E_std']:.4f}   R_C(t)/t after {R} rounds = "
            f"{row['avg_regret_after_R_rounds_mean']:.4f} ± "
            f"{row['avg_regret_after_R_rounds_std']:.4f}   ({row['wall_s_mean']:.1f} s/trial)",
            flush=True,
        )
        if base is not None:
            print(
                f"{'':13s} paired vs q=1 at E: {row['paired_diff_vs_q1_at_E_mean']:+.4f} ± "
                f"{row['paired_diff_vs_q1_at_E_std']:.4f}, not worse in "
                f"{row['trials_not_worse_than_q1_at_E']}/{len(trials)} trials",
                flush=True,
            )
    path = Path(args.out)
    write_summary(path, out, indent=None)
    _plot(out, path.with_suffix(".png"))
    print(f"wrote {path} and {path.with_suffix('.png')}")


def _plot(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for name, row in out["configs"].items():
        A = torch.tensor([tr["avg_regret_by_eval"] for tr in row["trials"]])
        C = torch.tensor([tr["avg_regret_by_round"] for tr in row["trials"]])
        for ax, M in ((a1, A), (a2, C)):
            m, s = M.mean(0), M.std(0)
            x = torch.arange(1, M.shape[1] + 1)
            ax.plot(x, m, label=name)
            ax.fill_between(x, m - s, m + s, alpha=0.15)
    a1.set(xlabel="evaluations t", ylabel="R_C(t) / t", title="regret per evaluation")
    a2.set(xlabel="rounds", ylabel="R_C(t) / t at the end of the round", title="regret per round",
           xlim=(1, out["meta"]["common_rounds"] * 4))
    a1.legend()
    fig.suptitle(f"Batch MT-KB on rkhs-n2 ({out['meta']['trials']} trials, mean ± std)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
