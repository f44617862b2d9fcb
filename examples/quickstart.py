"""Quickstart: the exact multi-task GP on a toy problem, then a short MT-KB loop.

1. Two correlated objectives on [0, 1]: f1(x) = sin(6x), f2(x) = 0.8 sin(6x) + 0.3x. The
   model learns the task covariance B of an ICM kernel Γ = k·B and predicts both tasks jointly.
2. MT-KB (scalarized multi-task UCB with random Chebyshev scalarizations) for a few rounds on
   BoTorch's 2-objective Branin-Currin problem, against random search
   (``examples/mtkb_branin_currin.py``; it prints progress and saves a PNG plot).

Run: ``python examples/quickstart.py [--rounds 10] [--out mtkb_branin_currin.png]``
"""

import argparse
import sys
from pathlib import Path

import torch
from botorch.fit import fit_gpytorch_mll
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.models import ExactMultiTaskGP


def fit_toy_model() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(15, 1, generator=g, dtype=torch.float64)
    f = torch.cat([torch.sin(6 * X), 0.8 * torch.sin(6 * X) + 0.3 * X], dim=-1)
    Y = f + 0.05 * torch.randn(15, 2, generator=g, dtype=torch.float64)

    model = ExactMultiTaskGP(X, Y, learn_noise=True)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))

    B = model.covar_module.task_covar_matrix.detach()
    print(f"learned task covariance B =\n{B.numpy().round(3)}")
    print(f"task correlation = {(B[0, 1] / (B[0, 0] * B[1, 1]).sqrt()).item():.3f}")
    print(f"noise eta = {model.noise.item():.4f}, information gain = "
          f"{model.information_gain().item():.2f}\n")

    Xs = torch.linspace(0, 1, 5, dtype=torch.float64).reshape(-1, 1, 1)  # 5 x q=1 x d=1
    with torch.no_grad():
        mean, task_cov = model.task_posterior(Xs)
    print("   x    mu_1    mu_2   sd_1   sd_2   corr   (true f1, f2)")
    rows = zip(Xs.reshape(-1), mean.reshape(-1, 2), task_cov.reshape(-1, 2, 2), strict=True)
    for x, m, S in rows:
        sd = S.diagonal().sqrt()
        truth = (torch.sin(6 * x).item(), (0.8 * torch.sin(6 * x) + 0.3 * x).item())
        print(f"{x.item():5.2f} {m[0].item():7.3f} {m[1].item():7.3f} {sd[0].item():6.3f} "
              f"{sd[1].item():6.3f} {(S[0, 1] / (sd[0] * sd[1])).item():6.3f}   "
              f"({truth[0]:.3f}, {truth[1]:.3f})")


def main(rounds: int = 10, out: str = "mtkb_branin_currin.png") -> None:
    fit_toy_model()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from mtkb_branin_currin import main as mtkb_loop

    print(f"\n--- MT-KB on Branin-Currin, {rounds} rounds ---")
    mtkb_loop(rounds=rounds, out=out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--out", default="mtkb_branin_currin.png")
    args = parser.parse_args()
    main(args.rounds, args.out)
