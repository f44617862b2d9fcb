"""Regret and Pareto metrics of the benchmarks (paper 000, §2 and Appendix E; paper 001, §6).

With a true objective ``f: X → Rⁿ`` known on a reference set ``X_ref`` (the arms of a finite
domain, or a dense grid of a continuous one) and queries ``x_1, …, x_T``:

* instantaneous scalarized regret  r_t = max_{x ∈ X_ref ∪ {x_t}} s_{λ_t}(f(x)) − s_{λ_t}(f(x_t));
* cumulative regret                R_C(T) = Σ_{t ≤ T} r_t, and the time average R_C(T) / T
  (what paper 000 Fig. 1 and paper 001 Fig. 1 plot);
* Bayes regret (paper 000 §2)      R_B(T) = E_λ[ max_x s_λ(f(x)) − max_{t ≤ T} s_λ(f(x_t)) ],
  estimated by Monte Carlo over a fixed sample of λ ~ P_λ;
* hypervolume of {f(x_t)}_{t ≤ T} above a reference point (BoTorch's exact box decomposition,
  so only for a few objectives), and as % of a problem's maximum (:func:`hypervolume_percent`,
  :func:`suite_metrics`: the multi-objective suite of issue 16,
  :mod:`~mtucb_bench.mo_suite_problems`); these are defined in
  :mod:`~mtucb_bench.hypervolume` and re-exported here.

For n = 1 (heavy-tailed BO) the "scalarization" is the identity and r_t = max f − f(x_t).
On a continuous domain max_x s_λ(f(x)) is taken over a dense grid and then polished by a local
SLSQP ascent of the true objective (:func:`scalarized_optima`, used by the runner for the
Bayes regret and by the loop for r_t). The result is still a lower bound on the true maximum
(a local ascent from the grid's best point), so the regrets can only be slightly optimistic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from botorch_mtucb.acquisition.scalarization import (
    ChebyshevScalarization,
    LinearScalarization,
    Scalarization,
    sample_scalarization_weights,
)
from botorch_mtucb.utils import check_finite, polish_maxima
from mtucb_bench.hypervolume import (
    DT,
    MAX_HYPERVOLUME_OBJECTIVES,  # noqa: F401  (runner imports it from here)
    check_matrix,
    dominated_hypervolume,
    hypervolume_curve,
    hypervolume_percent,
    hypervolume_percent_curve,
)

__all__ = [
    "bayes_regret",
    "cumulative_regret",
    "dominated_hypervolume",
    "hypervolume_curve",
    "hypervolume_percent",
    "hypervolume_percent_curve",
    "instantaneous_regret",
    "make_scalarization",
    "scalarized_optima",
    "scalarized_values",
    "suite_metrics",
    "time_average_regret",
]


def make_scalarization(
    kind: str, weights: Tensor, ref_point: Tensor | Sequence[float] | None = None
) -> Scalarization:
    """s_λ for one ``n`` weight vector: ``"linear"`` or ``"chebyshev"`` (needs ``ref_point``)."""
    if kind == "linear":
        return LinearScalarization(weights)
    if kind == "chebyshev":
        if ref_point is None:
            raise ValueError("`ref_point` is required for the Chebyshev scalarization.")
        return ChebyshevScalarization(weights, ref_point)
    raise ValueError(f"`kind` must be 'linear' or 'chebyshev', got {kind!r}.")


def scalarized_values(
    Y: Tensor, weights: Tensor, kind: str, ref_point: Tensor | None = None
) -> Tensor:
    """s_λ(y) for every weight vector and every outcome, vectorised.

    Args:
        Y: ``N x n`` outcomes (all maximised).
        weights: ``M x n`` weight vectors λ.
        kind: ``"linear"`` (Σ λ_i y_i) or ``"chebyshev"`` (min_i λ_i (y_i − z_i)).
        ref_point: ``n`` Chebyshev reference point z.

    Returns:
        ``M x N`` values s_{λ_m}(y_j).
    """
    check_matrix(Y, "Y")
    check_matrix(weights, "weights")
    if weights.shape[-1] != Y.shape[-1]:
        raise ValueError(
            f"`weights` must have {Y.shape[-1]} columns (one per objective of `Y`), got "
            f"shape {tuple(weights.shape)}."
        )
    W = weights.to(Y)
    if kind == "linear":
        return W @ Y.T
    if kind == "chebyshev":
        if ref_point is None:
            raise ValueError("`ref_point` is required for the Chebyshev scalarization.")
        z = torch.as_tensor(ref_point).to(Y)
        return (W[:, None, :] * (Y - z)[None, :, :]).min(dim=-1).values
    raise ValueError(f"`kind` must be 'linear' or 'chebyshev', got {kind!r}.")


def instantaneous_regret(
    F_ref: Tensor,
    F_query: Tensor,
    weights: Tensor | None = None,
    kind: str = "chebyshev",
    ref_point: Tensor | None = None,
) -> Tensor:
    """r_t = max_{x ∈ X_ref ∪ {x_t}} s_{λ_t}(f(x)) − s_{λ_t}(f(x_t)), one per round.

    Args:
        F_ref: ``M x n`` true values on the reference set.
        F_query: ``T x n`` true values at the queries x_1, …, x_T.
        weights: ``T x n`` weights λ_t (``None`` for a single objective, n = 1).
        kind: Scalarization kind.
        ref_point: Chebyshev reference point.

    Returns:
        ``T`` non-negative regrets (float64).
    """
    check_matrix(F_ref, "F_ref")
    check_matrix(F_query, "F_query")
    if F_ref.shape[-1] != F_query.shape[-1]:
        raise ValueError("`F_ref` and `F_query` must have the same number of objectives.")
    F_ref = F_ref.to(torch.float64)
    F_query = F_query.to(torch.float64)
    if weights is None:
        if F_ref.shape[-1] != 1:
            raise ValueError("`weights` are required for more than one objective.")
        v_ref = F_ref[:, 0].max().expand(F_query.shape[0])
        v_x = F_query[:, 0]
    else:
        if weights.shape != F_query.shape:
            raise ValueError(
                f"`weights` must be T x n = {tuple(F_query.shape)}, got {tuple(weights.shape)}."
            )
        W = weights.to(torch.float64)
        v_ref = scalarized_values(F_ref, W, kind, ref_point).max(dim=-1).values  # T
        v_x = _rowwise_values(F_query, W, kind, ref_point)
    return torch.maximum(v_ref, v_x) - v_x


def _rowwise_values(Y: Tensor, W: Tensor, kind: str, ref_point: Tensor | None) -> Tensor:
    """s_{λ_t}(y_t) for matching rows of ``T x n`` outcomes and weights."""
    return _rowwise_pieces(Y, W, kind, ref_point).min(dim=-1).values


def _rowwise_pieces(Y: Tensor, W: Tensor, kind: str, ref_point: Tensor | None) -> Tensor:
    """``T x P`` smooth pieces whose row minimum is s_{λ_t}(y_t): P = 1 (linear) or n."""
    if kind == "linear":
        return (W * Y).sum(dim=-1, keepdim=True)
    if kind == "chebyshev":
        if ref_point is None:
            raise ValueError("`ref_point` is required for the Chebyshev scalarization.")
        return W * (Y - torch.as_tensor(ref_point).to(Y))
    raise ValueError(f"`kind` must be 'linear' or 'chebyshev', got {kind!r}.")


def cumulative_regret(regrets: Tensor) -> Tensor:
    """R_C(t) = Σ_{s ≤ t} r_s along the last dimension (``... x T``)."""
    check_finite(regrets, "regrets")
    return regrets.cumsum(dim=-1)


def time_average_regret(regrets: Tensor) -> Tensor:
    """R_C(t) / t along the last dimension (``... x T``)."""
    cum = cumulative_regret(regrets)
    t = torch.arange(1, cum.shape[-1] + 1, dtype=cum.dtype, device=cum.device)
    return cum / t


def scalarized_optima(
    f: Callable[[Tensor], Tensor],
    X_ref: Tensor,
    weights: Tensor,
    kind: str = "chebyshev",
    ref_point: Tensor | None = None,
    bounds: Tensor | None = None,
) -> Tensor:
    """max_x s_{λ_m}(f(x)) for each weight vector: best point of ``X_ref``, then polished.

    Args:
        f: True objective ``N x d -> N x n`` (differentiable with autograd if ``bounds``).
        X_ref: ``M x d`` reference set (the arms of a finite domain, a dense grid otherwise).
        weights: ``K x n`` weight vectors.
        kind: Scalarization kind.
        ref_point: Chebyshev reference point.
        bounds: ``2 x d`` box of a continuous domain: each λ's grid maximiser is then polished
            by SLSQP on x ↦ s_λ(f(x)) (:func:`~botorch_mtucb.utils.optimum.polish_maxima`);
            ``None`` on a finite domain (the grid maximum is exact).

    Returns:
        ``K`` values, each ≥ the grid maximum and ≤ the true maximum.
    """
    with torch.no_grad():
        V = scalarized_values(f(X_ref).to(torch.float64), weights, kind, ref_point)  # K x M
    best, idx = V.max(dim=-1)
    if bounds is None:
        return best
    W = weights.to(torch.float64)

    polished = torch.empty_like(best)
    for k in range(W.shape[0]):  # one λ at a time: each evaluation of f is then on one point

        def pieces(X: Tensor, w: Tensor = W[k : k + 1]) -> Tensor:  # 1 x P (linear: P = 1)
            return _rowwise_pieces(f(X).to(torch.float64), w, kind, ref_point)

        polished[k] = polish_maxima(pieces, X_ref[idx[k]].unsqueeze(0), bounds)[1][0]
    return torch.maximum(best, polished)


def bayes_regret(
    F_ref: Tensor,
    F_query: Tensor,
    weights: Tensor,
    kind: str = "chebyshev",
    ref_point: Tensor | None = None,
    optima: Tensor | None = None,
) -> Tensor:
    """Monte-Carlo Bayes regret R_B(t) = mean_m [max_x s_{λ_m}(f(x)) − max_{s ≤ t} s_{λ_m}(f(x_s))].

    Args:
        F_ref: ``M x n`` true values on the reference set.
        F_query: ``T x n`` true values at the queries (in round order).
        weights: ``K x n`` Monte-Carlo sample λ_1, …, λ_K ~ P_λ (fixed across algorithms).
        kind: Scalarization kind.
        ref_point: Chebyshev reference point.
        optima: ``K`` values max_x s_{λ_m}(f(x)) when known better than the reference set
            gives them (e.g. :func:`scalarized_optima` with a polish on a continuous domain);
            the larger of the two is used.

    Returns:
        ``T`` non-increasing, non-negative values R_B(1), …, R_B(T).
    """
    check_matrix(F_query, "F_query")
    if F_query.shape[0] == 0:
        return F_query.new_zeros(0, dtype=torch.float64)
    W = weights.to(torch.float64)
    best = scalarized_values(F_ref.to(torch.float64), W, kind, ref_point).max(dim=-1).values
    if optima is not None:
        if optima.shape != best.shape:
            raise ValueError(
                f"`optima` must hold one value per weight vector ({best.shape[0]}), got "
                f"shape {tuple(optima.shape)}."
            )
        check_finite(optima, "optima")
        best = torch.maximum(best, optima.to(best))
    S = scalarized_values(F_query.to(torch.float64), W, kind, ref_point)  # K x T
    running = S.cummax(dim=-1).values
    return (torch.maximum(best[:, None], running) - running).mean(dim=0)


def suite_metrics(
    problem: Any,
    X: Tensor,
    weights: Tensor | None = None,
    wall_time: Tensor | None = None,
    num_initial: int = 0,
    bayes_samples: int = 64,
    seed: int = 0,
) -> dict[str, object]:
    """The suite's metrics of one run, from its evaluated points.

    Args:
        problem: The suite problem.
        X: ``N x d`` evaluated points in order: ``num_initial`` initial ones, then one per round.
        weights: ``T x n`` Chebyshev weights λ_t of the rounds (``T = N − num_initial``), for
            the scalarised regret r_t (paper 000 §2; z = ``problem.ref_point``); ``None``
            skips it.
        wall_time: ``T`` seconds per round (including refits), averaged.
        num_initial: Size of the initial design.
        bayes_samples: Monte-Carlo λ ~ P_λ (paper 000 §5 sampler, seeded with ``seed``) of
            the Bayes regret over all N points.
        seed: Seed of those λ.

    Returns:
        ``hv_pct`` (final), ``hv_pct_curve`` (N), ``time_average_regret`` (R_C(T)/T, T values,
        or ``None``), ``bayes_regret`` (N values), ``wall_time_per_round`` (or ``None``). Maxima
        max_x s_λ(f(x)) are the best point of ``regret_X`` polished by SLSQP when
        ``problem.polish_regret`` (:func:`~mtucb_bench.metrics.scalarized_optima`).
    """
    if X.dim() != 2 or X.shape[-1] != problem.dim:
        raise ValueError(f"`X` must be N x d = N x {problem.dim}, got {tuple(X.shape)}.")
    N, n = X.shape[0], problem.num_objectives
    if not 0 <= num_initial <= N:
        raise ValueError(f"`num_initial` must lie in [0, {N}], got {num_initial!r}.")
    with torch.no_grad():
        F = problem.f(X.to(DT)).to(DT)
        F_ref = problem.f(problem.regret_X).to(DT)
    ref = problem.ref_point.to(DT)
    bounds = problem.bounds if problem.polish_regret else None
    out: dict[str, object] = {"hv_pct_curve": hypervolume_percent_curve(problem, F)}
    out["hv_pct"] = float(out["hv_pct_curve"][-1]) if N else 0.0
    out["time_average_regret"] = None
    if weights is not None:
        F_q = F[num_initial:]
        if weights.shape != F_q.shape:
            raise ValueError(
                f"`weights` must be T x n = {tuple(F_q.shape)} (one λ per round), got "
                f"{tuple(weights.shape)}."
            )
        r = instantaneous_regret(F_ref, F_q, weights, "chebyshev", ref)
        if bounds is not None and F_q.shape[0]:
            opt = scalarized_optima(problem.f, problem.regret_X, weights, "chebyshev", ref, bounds)
            v_x = (weights.to(DT) * (F_q - ref)).min(dim=-1).values
            r = torch.maximum(r, opt - v_x)
        out["time_average_regret"] = time_average_regret(r)
    gen = torch.Generator().manual_seed(seed)
    W = sample_scalarization_weights(n, bayes_samples, "chebyshev", gen)
    opt = scalarized_optima(problem.f, problem.regret_X, W, "chebyshev", ref, bounds)
    out["bayes_regret"] = bayes_regret(F_ref, F, W, "chebyshev", ref, opt)
    out["wall_time_per_round"] = None if wall_time is None else float(wall_time.double().mean())
    return out
