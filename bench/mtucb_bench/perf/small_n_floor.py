"""The practical model at small N against its floor: the fit and the acquisition call.

**Fit.** For N in ``--sizes`` (DTLZ2, d = 6, n = 2, 1 % noise, inputs uniform in the unit
cube) the practical model ``practical_multitask_gp(X, Y, bounds, fit=False)`` is built once
per repetition (outside the timing) and fitted by ``fit_practical_model`` in two ways,
interleaved A/B in one process:

* ``new``: the default (the closed-form objective ``ICMFitObjective`` under L-BFGS-B);
* ``old``: ``fit_gpytorch_mll`` with the lean autograd closure ``practical_mll_closure``
  (passed as ``fit_kwargs={"closure": ...}``, which bypasses the closed-form path).

Each fit counts its objective evaluations. **The floor** of a fit is ``evaluations x
t_eigh``, ``t_eigh`` the median process CPU time of one bare ``torch.linalg.eigh`` of the
``N x N`` kernel matrix at the fitted hyperparameters (the irreducible linear algebra of one
evaluation of the ICM likelihood); the ratio is fit time / floor.

**Acquisition call.** At ``--acq-size`` (default N = 100) the fitted model's
``ScalarizedMultiTaskUCB`` (Chebyshev scalarization, directional bound, β = 2) is compared
with a plain-torch reference of the same maths written from the hyperparameters (posterior
mean and per-task variances of the ICM posterior from ``eigh(K)`` and ``eigh(B)``, then the
Chebyshev UCB min_i λ_i (μ_i + β σ_i − z_i)), checked equal first: a 256 x 1 x d batch without
gradients (raw samples) and a 4 x 1 x d batch forward + backward (what ``optimize_acqf``'s
restarts evaluate). A third column routes the same maths through
``model.projected_task_posterior`` (the model's input checks and predictor lookup per call).

All times are process CPU time, one thread (torch and BLAS), medians over ``--reps``.

Run: ``python -m mtucb_bench.perf.small_n_floor [--sizes 20 50 100] [--reps 5]``
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from botorch.test_functions.multi_objective import DTLZ2
from gpytorch.mlls import ExactMarginalLogLikelihood
from threadpoolctl import threadpool_limits

from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.multitask import fit_closure
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.multitask.practical_fit import fit_practical_model, practical_mll_closure
from botorch_mtucb.utils.validation import check_test_tensor
from mtucb_bench.perf.provenance import write_summary

DT = torch.float64


def make_data(N: int, d: int = 6, n: int = 2, seed: int = 0):
    """DTLZ2 (maximised) at ``N`` uniform points with 1 % Gaussian noise."""
    g = torch.Generator().manual_seed(seed)
    problem = DTLZ2(dim=d, num_objectives=n, negate=True)
    X = torch.rand(N, d, generator=g, dtype=DT)
    Y = problem(X)
    Y = Y + 0.01 * torch.randn(Y.shape, generator=g, dtype=DT)
    return X, Y, problem.bounds.to(DT)


def cpu_time(fn: Callable[[], object]) -> float:
    """Process CPU time of one call (seconds)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def per_call(fn: Callable[[], object], min_time: float = 0.02) -> float:
    """Process CPU time per call of a fast ``fn``: calls are batched until ``min_time``."""
    fn()
    calls, t = 1, 0.0
    while True:
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        t = time.process_time() - t0
        if t >= min_time:
            return t / calls
        calls *= 2


class ObjectiveCounter:
    """Counts calls of a closed-form objective (wraps ``cls.__call__``; default
    ``ICMFitObjective``) until :meth:`restore`."""

    def __init__(self, cls: type = fit_closure.ICMFitObjective) -> None:
        self.count = 0
        self._cls, self._orig = cls, cls.__call__
        counter = self

        def counted(obj, x):
            counter.count += 1
            return counter._orig(obj, x)

        cls.__call__ = counted

    def restore(self) -> None:
        self._cls.__call__ = self._orig


def fit_new(
    X, Y, bounds, counter: ObjectiveCounter, **model_options
) -> tuple[float, int, object]:
    """Default fit (the closed form) of ``practical_multitask_gp(X, Y, bounds, fit=False,
    **model_options)``: CPU seconds, objective evaluations, the model."""
    model = practical_multitask_gp(X, Y, bounds, fit=False, **model_options)
    counter.count = 0
    t = cpu_time(lambda: fit_practical_model(model))
    return t, counter.count, model


def fit_old(X, Y, bounds, **model_options) -> tuple[float, int, object]:
    """``fit_gpytorch_mll`` with the lean autograd closure (bypassing the closed form) on the
    same model: CPU seconds, closure evaluations, the model."""
    model = practical_multitask_gp(X, Y, bounds, fit=False, **model_options)
    closure = practical_mll_closure(ExactMarginalLogLikelihood(model.likelihood, model))
    calls = [0]

    def counted(**kwargs):
        calls[0] += 1
        return closure(**kwargs)

    t = cpu_time(lambda: fit_practical_model(model, fit_kwargs={"closure": counted}))
    return t, calls[0], model


def mll_value(model) -> float:
    """The normalised marginal log likelihood of a fitted model (ExactMarginalLogLikelihood)."""
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    with torch.no_grad():
        value = float(mll(model(*model.train_inputs), model.train_targets))
    mll.eval()
    return value


def kernel_matrix(model) -> torch.Tensor:
    with torch.no_grad():
        x = model.transform_inputs(model.train_inputs[0])
        return model.covar_module.data_covar_module(x, x).to_dense()


def bench_fit(sizes: list[int], reps: int) -> list[dict]:
    rows = []
    counter = ObjectiveCounter()
    try:
        for N in sizes:
            X, Y, bounds = make_data(N)
            new_t, old_t, new_e, old_e = [], [], [], []
            for _ in range(reps):  # interleaved A/B
                t, e, m_new = fit_new(X, Y, bounds, counter)
                new_t.append(t)
                new_e.append(e)
                t, e, m_old = fit_old(X, Y, bounds)
                old_t.append(t)
                old_e.append(e)
            K = kernel_matrix(m_new)
            t_eigh = statistics.median(per_call(lambda K=K: torch.linalg.eigh(K)) for _ in range(5))
            evals = statistics.median(new_e)
            floor = evals * t_eigh
            row = {
                "N": N,
                "new_ms": 1e3 * statistics.median(new_t),
                "old_ms": 1e3 * statistics.median(old_t),
                "new_evals": evals,
                "old_evals": statistics.median(old_e),
                "eigh_us": 1e6 * t_eigh,
                "floor_ms": 1e3 * floor,
                "new_mll": mll_value(m_new),
                "old_mll": mll_value(m_old),
            }
            row["new_ratio"] = row["new_ms"] / row["floor_ms"]
            row["old_ratio"] = row["old_ms"] / (1e3 * statistics.median(old_e) * t_eigh)
            rows.append(row)
            print(
                f"fit N={N:4d}: new {row['new_ms']:7.1f} ms ({evals:.0f} evals, "
                f"{row['new_ratio']:5.1f}x floor)  old {row['old_ms']:7.1f} ms "
                f"({row['old_evals']:.0f} evals, {row['old_ratio']:5.1f}x)  eigh "
                f"{row['eigh_us']:6.1f} us  floor {row['floor_ms']:5.2f} ms  "
                f"mll new {row['new_mll']:.6f} old {row['old_mll']:.6f}",
                flush=True,
            )
    finally:
        counter.restore()
    return rows


def plain_ucb_reference(model, weights: torch.Tensor, ref_point: torch.Tensor, beta: float):
    """The Chebyshev directional UCB of the fitted ICM model in plain torch.

    Everything that does not depend on ``X`` is precomputed from the hyperparameters:
    ``K = W diag(a) Wᵀ``, ``B = U diag(ξ) Uᵀ``, ``Λ = a ξᵀ + η``; then per call
    ``G = k(x) W``, ``μ = m + σ ∘ (c + G (ξ Λ⁻¹ ∘ WᵀRU) Uᵀ)``,
    ``σ_i² = σ_i² Σ_j U_ij² (ξ_j − Σ_p G_p² ξ_j² / Λ_pj)``,
    ``u = min_i λ_i (μ_i + β σ_i − z_i)``.
    """
    with torch.no_grad():
        tf_in, tf_out = model.input_transform, model.outcome_transform
        kern = model.covar_module
        k = kern.data_covar_module
        x = model.transform_inputs(model.train_inputs[0])
        ell = k.lengthscale.reshape(-1)
        Zs = (x - x.mean(0)) / ell  # any centring: distances are invariant
        center = x.mean(0)
        K = k(x, x).to_dense()
        B = kern.task_covar_matrix
        eta = model.likelihood.noise.reshape(())
        a, W = torch.linalg.eigh(K)
        xi, U = torch.linalg.eigh(B)
        a, xi = a.clamp_min(0), xi.clamp_min(0)
        lam = a[:, None] * xi[None, :] + eta
        c = torch.stack([m.constant.reshape(()) for m in model.mean_module.base_means])
        R = model.train_targets - c
        coef = xi / lam * (W.T @ R @ U)  # t x n
        sd = tf_out.stdvs.reshape(-1)
        mu0 = tf_out.means.reshape(-1)
        mean_map = (W @ coef @ U.T) * sd  # μ = k(x) mean_map + shift
        shift = c * sd + mu0
        wvar = (xi**2 / lam)  # t x n, in the rotated basis
        proj = (U**2) * (sd**2)[:, None]  # n (tasks) x n (directions): σ_i² U_ij²
        off, coeff = tf_in.offset.reshape(-1), tf_in.coefficient.reshape(-1)
        in_shift = off + coeff * center  # u = ((x − o)/c − center)/ℓ = (x − in_shift)/in_div
        in_div = coeff * ell
        Zs_sq = (Zs * Zs).sum(-1)
        ZsT = Zs.T.contiguous()
        sw = weights
        nz = -weights * ref_point
        bw = beta * weights
        s5 = math.sqrt(5.0)

    def ucb(X: torch.Tensor) -> torch.Tensor:
        u = (X.reshape(-1, X.shape[-1]) - in_shift) / in_div
        sq = torch.addmm(Zs_sq, u, ZsT, alpha=-2.0).add(u.pow(2).sum(-1, keepdim=True))
        sq = sq.clamp_min(0.0)
        r = sq.clamp_min(1e-30).sqrt()
        kx = torch.exp(-s5 * r) * (1.0 + s5 * r + (5.0 / 3.0) * sq)
        mean = torch.addmm(shift, kx, mean_map)
        G = kx @ W
        s = torch.addmm(xi, G * G, wvar, alpha=-1.0).clamp_min(0.0)  # rotated, k(x, x) = 1
        var = s @ proj.T
        pieces = torch.addcmul(torch.addcmul(nz, sw, mean), bw, var.clamp_min(1e-30).sqrt())
        return pieces.min(-1).values.reshape(X.shape[:-2])

    return ucb


def bench_acquisition(N: int, reps: int) -> dict:
    X, Y, bounds = make_data(N)
    model = practical_multitask_gp(X, Y, bounds)
    weights = torch.tensor([0.3, 0.7], dtype=DT)
    ref_point = Y.min(0).values - 0.1
    beta = 2.0
    acqf = ScalarizedMultiTaskUCB(model, ChebyshevScalarization(weights, ref_point), beta=beta)
    plain = plain_ucb_reference(model, weights, ref_point, beta)
    g = torch.Generator().manual_seed(1)
    raw = torch.rand(256, 1, X.shape[-1], generator=g, dtype=DT)
    restart = torch.rand(4, 1, X.shape[-1], generator=g, dtype=DT)
    with torch.no_grad():
        err = (acqf(raw) - plain(raw)).abs().max().item()
    if err > 1e-8:
        raise AssertionError(f"plain reference differs from the acquisition by {err:.3g}")

    def with_grad(fn):
        def call():
            Xg = restart.clone().requires_grad_(True)
            fn(Xg).sum().backward()
        return call

    def no_grad(fn):
        def call():
            with torch.no_grad():
                fn(raw)
        return call

    scalarization = acqf.scalarization

    def via_model(X: torch.Tensor) -> torch.Tensor:
        """The acquisition's maths through ``model.projected_task_posterior`` (its checks and
        its predictor lookup on every call)."""
        check_test_tensor(X, "X")
        mean, var = model.projected_task_posterior(X, acqf._projection)
        return scalarization.directional_ucb_from_variances(
            mean.squeeze(-2), var.squeeze(-2), beta
        )

    out = {"N": N, "max_abs_diff": err}
    for label, wrap in (("raw256", no_grad), ("restart4_grad", with_grad)):
        ours, ref, routed = [], [], []
        for _ in range(reps):  # interleaved A/B
            ours.append(per_call(wrap(acqf)))
            ref.append(per_call(wrap(plain)))
            routed.append(per_call(wrap(via_model)))
        o, p, v = (statistics.median(x) for x in (ours, ref, routed))
        out[label] = {"acqf_us": 1e6 * o, "plain_us": 1e6 * p, "ratio": o / p,
                      "via_model_us": 1e6 * v, "via_model_ratio": v / p}
        print(
            f"acqf N={N}: {label:14s} ScalarizedMultiTaskUCB {1e6 * o:8.1f} us  plain torch "
            f"{1e6 * p:8.1f} us  ratio {o / p:4.2f}  (via projected_task_posterior "
            f"{1e6 * v:8.1f} us, {v / p:4.2f})",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100])
    parser.add_argument("--acq-size", type=int, default=100)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--skip-acq", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="summary JSON (none: print only)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result: dict = {}
    with threadpool_limits(limits=1):
        if not args.skip_fit:
            result["fit"] = bench_fit(args.sizes, args.reps)
        if not args.skip_acq:
            result["acquisition"] = bench_acquisition(args.acq_size, args.reps)
    if args.out is not None:
        print(f"wrote {write_summary(args.out, {'reps': args.reps, **result})}")
    return result


if __name__ == "__main__":
    main()
