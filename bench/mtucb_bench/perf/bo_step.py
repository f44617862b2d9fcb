"""One BO step of MT-KB: the package's ScalarizedMultiTaskUCB vs a minimal plain-torch version.

A BO step here is what a round costs once the model is fitted (fixed hyperparameters): build
the acquisition on the current model, then ``optimize_acqf(q=1, num_restarts=10,
raw_samples=512)`` with the directional bound, for the Chebyshev and the linear
scalarization, at (t, n) ∈ {(20, 2), (100, 4), (500, 10)} (d = 4).

* ``package``: ``ScalarizedMultiTaskUCB(ExactMultiTaskGP(...), s_λ, beta)`` with an ICM kernel
  (RBF data kernel, fixed B), η = 0.1 and a ``Standardize`` outcome transform. The model's
  factorisation is built before timing (it is cached across rounds with fixed
  hyperparameters); the acquisition is built inside the timed step.
* ``minimal``: an ``AcquisitionFunction`` written below in plain torch with the same maths
  (eigen-rotation of K_t and B, paper 000 §3.3 / App. A), precomputed from the raw data and
  the same hyperparameters, also before timing. It is checked to give the same values and
  input gradients as the package to 1e-10 (relative) on random X before anything is timed.

Both use the same seeds for the initial conditions (``torch.manual_seed`` before each
``optimize_acqf``; its raw samples use the global RNG). Reported: the median step time of
each, their ratio (package / minimal, target ≤ 1.3), the number of acquisition evaluations
(the same when both follow the same L-BFGS path), the ratio of time per evaluation, and one
acquisition call at 10 points (forward + backward) split into the model's
``projected_task_posterior`` and the acquisition's own work. Single-threaded.

Run: ``python -m mtucb_bench.perf.bo_step [--repeats 5] [--out docs/results/perf/bo_step.json]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from gpytorch.kernels import RBFKernel
from torch import Tensor

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    LinearScalarization,
    Scalarization,
    ScalarizedMultiTaskUCB,
)
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP
from mtucb_bench.perf.provenance import RESULTS, write_summary

DT = torch.float64
ETA = 0.1
BETA = 2.0
D = 4
SIZES = ((20, 2), (100, 4), (500, 10))


class MinimalMTUCB(AcquisitionFunction):
    """Directional scalarized MT-UCB in plain torch (ICM kernel k·B, RBF k, Standardize).

    Precomputes, from the raw data: Y_s = (Y − m)/s; B = U diag(ξ) Uᵀ; K_t = W diag(a) Wᵀ;
    C = ξ ∘ (Wᵀ Y_s U) / (ξ a + η) and M = ξ² / (ξ a + η) (t x n). At x with p = Wᵀ k_t(x):
    μ(x) = s ∘ (U (Cᵀ p)) + m and the eigen-variances v_i = ξ_i − (p²)ᵀ M_i (k(x, x) = 1),
    Γ(x, x) = diag(s) U diag(v) Uᵀ diag(s).
    """

    def __init__(
        self, X: Tensor, Y: Tensor, B: Tensor, lengthscale: Tensor, s: Scalarization,
        beta: float,
    ) -> None:
        super().__init__(model=None)
        m, sd = Y.mean(0), Y.std(0)
        Ys = (Y - m) / sd
        xi, U = torch.linalg.eigh(B)
        xi = xi.clamp_min(0.0)
        self.Xl = X / lengthscale
        self.ls = lengthscale
        a, W = torch.linalg.eigh(_rbf(self.Xl, self.Xl))
        a = a.clamp_min(0.0)
        inv = 1.0 / (a[:, None] * xi[None, :] + ETA)
        self.WT = W.T.contiguous()
        self.coef_U = (xi * inv * (W.T @ (Ys @ U))) @ U.T * sd  # t x n: mean map, scaled
        self.M = xi**2 * inv  # t x n
        self.xi, self.m, self.beta = xi, m, beta
        lam = s.weights.to(X)
        if isinstance(s, ChebyshevScalarization):
            self.kind = "chebyshev"
            self.U2s = (U**2).T * sd**2  # n x n: diag Γ = v @ U2s
            self.lam, self.z = lam, s.ref_point.to(X)
        else:
            self.kind = "linear"
            self.lam = lam
            self.Uw2 = ((lam * sd) @ U) ** 2  # n: wᵀΓw = v @ Uw2

    def forward(self, X: Tensor) -> Tensor:
        x = X.reshape(-1, X.shape[-1]) / self.ls
        P = _rbf(x, self.Xl) @ self.WT.T  # N x t
        mean = P @ self.coef_U + self.m
        v = (self.xi - (P * P) @ self.M).clamp_min(0.0)
        if self.kind == "chebyshev":
            sigma = (v @ self.U2s).clamp_min(1e-30).sqrt()
            out = (self.lam * (mean + self.beta * sigma - self.z)).min(dim=-1).values
        else:
            out = mean @ self.lam + self.beta * (v @ self.Uw2).clamp_min(1e-30).sqrt()
        return out.reshape(X.shape[:-2])


def _rbf(A: Tensor, B: Tensor) -> Tensor:
    """exp(−½‖a − b‖²) for pre-scaled inputs."""
    sq = (A * A).sum(-1)[:, None] + (B * B).sum(-1)[None, :] - 2.0 * A @ B.T
    return torch.exp(-0.5 * sq.clamp_min(0.0))


def make_problem(t: int, n: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, D, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT) * 2.0 + 1.0
    A = torch.randn(n, n, generator=g, dtype=DT)
    B = A.T @ A / n + 0.05 * torch.eye(n, dtype=DT)
    ls = 0.2 + 0.3 * torch.rand(D, generator=g, dtype=DT)
    lam = torch.rand(n, generator=g, dtype=DT) + 0.1
    lam = lam / lam.sum()
    return {"X": X, "Y": Y, "B": B, "ls": ls, "lam": lam, "z": Y.min(0).values - 0.5}


def package_model(p: dict) -> ExactMultiTaskGP:
    k = RBFKernel(ard_num_dims=D).to(DT)
    k.lengthscale = p["ls"]
    kernel = ICMKernel(k, num_tasks=p["Y"].shape[-1], task_covar=p["B"])
    n = p["Y"].shape[-1]
    model = ExactMultiTaskGP(
        p["X"], p["Y"], covar_module=kernel, noise=ETA, outcome_transform=Standardize(m=n)
    ).eval()
    for prm in model.parameters():
        prm.requires_grad_(False)
    return model


def scalarization(kind: str, p: dict) -> Scalarization:
    if kind == "chebyshev":
        return ChebyshevScalarization(p["lam"], p["z"])
    return LinearScalarization(p["lam"])


class Counted:
    """Counts forward calls of an acquisition (wraps ``forward``)."""

    def __init__(self, acqf: AcquisitionFunction) -> None:
        self.calls = 0
        inner = acqf.forward

        def forward(X: Tensor) -> Tensor:
            self.calls += 1
            return inner(X)

        acqf.forward = forward


def check_agreement(pkg: AcquisitionFunction, mini: AcquisitionFunction) -> dict:
    """Max relative differences of values and input gradients on random X (N x 1 x d)."""
    X = torch.rand(64, 1, D, dtype=DT, generator=torch.Generator().manual_seed(7))
    X1 = X.clone().requires_grad_(True)
    X2 = X.clone().requires_grad_(True)
    v1, v2 = pkg(X1), mini(X2)
    (g1,) = torch.autograd.grad(v1.sum(), X1)
    (g2,) = torch.autograd.grad(v2.sum(), X2)
    v1, v2 = v1.detach(), v2.detach()
    rel_v = float(((v1 - v2).abs() / v2.abs().clamp_min(1e-12)).max())
    rel_g = float((g1 - g2).abs().max() / g2.abs().max().clamp_min(1e-12))
    if rel_v > 1e-10 or rel_g > 1e-10:
        raise AssertionError(f"package and minimal disagree: values {rel_v:.2e}, grads {rel_g:.2e}")
    return {"max_rel_value_diff": rel_v, "max_rel_grad_diff": rel_g}


def per_call_us(fns: dict, X0: Tensor, rounds: int = 150, calls: int = 5) -> dict:
    """Time (µs) of one forward + backward of each ``fns[name]`` at fresh leaf copies of X0.

    The functions are timed in interleaved rounds of ``calls`` calls (so load changes on a
    shared machine hit all of them alike); the minimum over rounds is reported.
    """
    best = dict.fromkeys(fns, float("inf"))
    for r in range(rounds + 2):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                X = X0.clone().requires_grad_(True)
                fn(X).sum().backward()
            if r >= 2:  # two warm-up rounds
                best[name] = min(best[name], (time.perf_counter() - t0) / calls * 1e6)
    return best


def _summed(moments: tuple[Tensor, Tensor]) -> Tensor:
    """mean.sum(-1) + var.sum(-1): backpropagates through both outputs of the model call."""
    return moments[0].sum(-1) + moments[1].sum(-1)


def step(build, bounds: Tensor, seed: int) -> tuple[float, int, Tensor]:
    t0 = time.perf_counter()
    acqf = build()
    counter = Counted(acqf)
    torch.manual_seed(seed)
    x, _ = optimize_acqf(acqf, bounds=bounds, q=1, num_restarts=10, raw_samples=512)
    return time.perf_counter() - t0, counter.calls, x


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "perf" / "bo_step.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    bounds = torch.stack([torch.zeros(D, dtype=DT), torch.ones(D, dtype=DT)])
    rows = []
    for t, n in SIZES:
        p = make_problem(t, n, seed=t + n)
        model = package_model(p)
        for kind in ("chebyshev", "linear"):
            s = scalarization(kind, p)

            def build_pkg(s=s, model=model):
                return ScalarizedMultiTaskUCB(model, s, beta=BETA)

            mini = MinimalMTUCB(p["X"], p["Y"], p["B"], p["ls"], s, BETA)
            agree = check_agreement(build_pkg(), mini)

            def build_min(mini=mini):
                return mini

            step(build_pkg, bounds, 0)  # warm-up (solver cache, allocator)
            step(build_min, bounds, 0)
            tp, tm, cp, cm, same = [], [], [], [], True
            for r in range(args.repeats):
                a = step(build_pkg, bounds, 100 + r)
                b = step(build_min, bounds, 100 + r)
                tp.append(a[0])
                tm.append(b[0])
                cp.append(a[1])
                cm.append(b[1])
                same = same and bool(torch.allclose(a[2], b[2], atol=1e-6))
            row = {
                "t": t, "n": n, "d": D, "scalarization": kind, **agree,
                "package_s": statistics.median(tp), "minimal_s": statistics.median(tm),
                "package_evals": statistics.median(cp), "minimal_evals": statistics.median(cm),
                "same_candidates": same,
            }
            row["ratio"] = row["package_s"] / row["minimal_s"]
            # One acquisition call at 10 points (an L-BFGS iteration), split into the model's
            # projected_task_posterior and the acquisition's own work.
            X0 = torch.rand(10, 1, D, dtype=DT, generator=torch.Generator().manual_seed(9))
            acqf = build_pkg()
            W = acqf._projection
            calls = per_call_us({
                "call_package_us": acqf,
                "call_model_only_us": lambda X, m=model, W=W: _summed(
                    m.projected_task_posterior(X, W)
                ),
                "call_minimal_us": mini,
            }, X0)
            row.update(calls)
            row["ratio_per_eval"] = (sum(tp) / sum(cp)) / (sum(tm) / sum(cm))
            rows.append(row)
            print(
                f"t={t:4d} n={n:2d} {kind:9s}  package {row['package_s'] * 1e3:7.1f} ms  "
                f"minimal {row['minimal_s'] * 1e3:7.1f} ms  ratio {row['ratio']:.2f}  "
                f"per-eval ratio {row['ratio_per_eval']:.2f}  evals {row['package_evals']:.0f}/"
                f"{row['minimal_evals']:.0f}  same x* {same}  agree "
                f"{agree['max_rel_value_diff']:.1e}/{agree['max_rel_grad_diff']:.1e}",
                flush=True,
            )
            print(
                f"{'':26s}one call (10 points, fwd+bwd): package {row['call_package_us']:.0f} µs"
                f" = model {row['call_model_only_us']:.0f} µs + acquisition "
                f"{row['call_package_us'] - row['call_model_only_us']:.0f} µs; minimal "
                f"{row['call_minimal_us']:.0f} µs",
                flush=True,
            )
    out = Path(args.out)
    meta = {"torch": torch.__version__, "threads": torch.get_num_threads(), "repeats": args.repeats,
            "beta": BETA, "eta": ETA, "raw_samples": 512, "num_restarts": 10}
    write_summary(out, {"meta": meta, "rows": rows}, indent=2)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
