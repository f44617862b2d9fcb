"""MT-KB on BoTorch's 2-objective Branin-Currin problem, against random search.

Signs and scales. Branin-Currin is a *minimisation* problem. BoTorch's ``negate=True`` turns
both objectives into ones to maximise, which is this package's convention (every objective and
every scalarization is maximised). The two objectives live on very different scales (Branin up to
~300, Currin up to ~14), and a scalarization weighs raw numbers, so each objective is rescaled to
[0, 1] with its range on a dense grid: 1 is the best value on the grid, 0 the worst. The
Chebyshev reference point z = (0, 0) is then below every outcome, so s_λ(y) = min_i λ_i y_i
rewards the weaker of the two (weighted) objectives. (Equivalently one could keep the raw
objectives and pass ``minimize=[True, True]`` to the scalarization sampler.)

The loop runs with the package's practical defaults (``run_bo_loop(..., bounds=...)``): a
scrambled Sobol design of max(5, 2d) points, the fitted ``practical_multitask_gp`` (Matérn-5/2
ICM kernel with a learned task matrix B, constant mean, learned noise), conditioned on each new
point and refitted on ``RefitSchedule()``, and the scalarized multi-task UCB with its default
width β = 1 (the Theorem-2 radius needs a bound b on the RKHS norm, unknown for
Branin-Currin). Each round draws λ_t (paper 000 §5 distribution); the scalarization is given
explicitly here so that the regret is the paper's, with a fixed reference point.

Run: ``python examples/mtkb_branin_currin.py [--rounds 20] [--out mtkb_branin_currin.png]``
(about a minute on two CPU cores).
"""

from __future__ import annotations

import argparse
import time
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from botorch.test_functions.multi_objective import BraninCurrin  # noqa: E402

from botorch_mtucb.acquisition import ScalarizationSampler  # noqa: E402
from botorch_mtucb.loop import BoxOptimizer, gaussian_observer, run_bo_loop  # noqa: E402

DT = torch.float64


def main(rounds: int, out: str, seed: int = 0) -> None:
    warnings.filterwarnings("ignore", category=UserWarning)  # fitting / optimiser chatter
    # The tensors here are tiny (≤ 25 training points): one intra-op thread avoids thread-pool
    # overhead, which dominates on small or busy machines.
    torch.set_num_threads(1)
    problem = BraninCurrin(negate=True).to(DT)  # both objectives maximised
    g = torch.linspace(0, 1, 101, dtype=DT)
    grid = torch.cartesian_prod(g, g)  # dense set for the regret's max_x s_λ(f(x))
    F_grid = problem(grid)
    lo, hi = F_grid.min(0).values, F_grid.max(0).values

    def f(X: torch.Tensor) -> torch.Tensor:
        """Both objectives, maximised, rescaled to [0, 1] on the grid."""
        return (problem(X) - lo) / (hi - lo)

    common = dict(
        num_rounds=rounds,
        scalarization_sampler=ScalarizationSampler(2, "chebyshev", ref_point=[0.0, 0.0]),
        true_f=f,
        regret_X=grid,
    )
    start = time.perf_counter()
    mtkb = run_bo_loop(  # Sobol design, practical model and refit schedule, default width
        observe=gaussian_observer(f, 0.01, torch.Generator().manual_seed(seed + 1)),
        optimizer=BoxOptimizer(  # the default's restarts, fewer L-BFGS steps (quick example)
            problem.bounds, num_restarts=4, raw_samples=256, seed=seed, options={"maxiter": 50}
        ),
        generator=torch.Generator().manual_seed(seed + 2),
        progress=True,
        **common,
    )
    print(f"MT-KB: {rounds} rounds in {time.perf_counter() - start:.1f} s")

    # Random search through the same loop: no model, the "optimizer" ignores the acquisition.
    rs_gen = torch.Generator().manual_seed(seed + 3)
    random = run_bo_loop(
        observe=gaussian_observer(f, 0.01, torch.Generator().manual_seed(seed + 1)),
        initial_X=mtkb.initial_X,  # the same Sobol design
        model_factory=lambda X, Y: None,
        acquisition_factory=lambda model, s: None,
        optimizer=lambda acqf: torch.rand(1, 2, generator=rs_gen, dtype=DT),
        update=lambda model, x, y: None,
        generator=torch.Generator().manual_seed(seed + 2),
        **common,
    )

    for name, h in (("MT-KB", mtkb), ("random search", random)):
        avg = h.time_average_regret()
        print(f"{name:>13}: time-average scalarized regret after {rounds} rounds = {avg[-1]:.4f}")
        for t in sorted({5, 10, rounds}):
            if t <= rounds:
                print(f"{'':>15}round {t:3d}: R_C(t)/t = {avg[t - 1]:.4f}")

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name, h in (("MT-KB", mtkb), ("random search", random)):
        ax1.plot(range(1, rounds + 1), h.time_average_regret(), label=name)
    ax1.set(xlabel="round t", ylabel="R_C(t) / t", title="Time-average Chebyshev regret")
    ax1.legend()
    ax2.scatter(*f(grid).T, s=1, c="lightgray", label="f(grid)")
    for name, h, marker in (("MT-KB", mtkb, "o"), ("random search", random, "x")):
        ax2.scatter(*f(h.X).T, s=18, marker=marker, label=name)
    ax2.set(xlabel="Branin (negated, scaled)", ylabel="Currin (negated, scaled)",
            title="Queried points in objective space (both maximised)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"saved {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default="mtkb_branin_currin.png")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.rounds, args.out, args.seed)
