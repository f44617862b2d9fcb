"""Local polish of a maximiser on a box: the x*_λ of the regret on continuous domains.

On a continuous domain max_x s_λ(f(x)) has no closed form. The loop's regret metric takes the
best point of a dense grid and then *polish* it with a local ascent of the known,
differentiable true objective started there. A Chebyshev scalarization min_i λ_i (f_i(x) − z_i)
is not differentiable where two tasks tie — which is exactly where its maximum usually lies —
so the ascent is written in epigraph form, max_{x, s} s subject to s ≤ p_i(x) for every piece
p_i, and solved by SLSQP: exact at the kink, and the same code for a smooth objective (one
piece). The polished value is kept only where it is higher than the start, so it is never
below the grid maximum and never above the true maximum (it is f at a feasible point): the
regret it gives lies between the true regret and the grid-only regret.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from botorch_mtucb.utils.validation import check_finite

__all__ = ["polish_maxima"]


def polish_maxima(
    pieces: Callable[[Tensor], Tensor],
    X0: Tensor,
    bounds: Tensor,
    maxiter: int = 100,
) -> tuple[Tensor, Tensor]:
    """Maximise ``min_i pieces(X)[m, i]`` locally from ``M`` starts, inside a box.

    Row ``m`` is solved on its own as max_{x, s} s s.t. s ≤ p_{m,i}(x) ∀ i, x ∈ box (SLSQP with
    autograd Jacobians), starting at ``X0[m]``.

    Args:
        pieces: ``M x d -> M x P`` smooth pieces, row ``m`` depending on ``x_m`` only and
            differentiable with torch autograd. The objective of row ``m`` is the minimum of
            its ``P`` pieces: ``P = 1`` for a smooth objective (e.g. a linear scalarization
            s_λ(f(x))), ``P = n`` for a Chebyshev scalarization (pieces λ_i (f_i(x) − z_i)).
        X0: ``M x d`` starting points (e.g. the grid maximisers); clipped into ``bounds``.
        bounds: ``2 x d`` lower and upper corners of the box.
        maxiter: Iteration limit of SLSQP per row.

    Returns:
        ``(X, values)``: ``M x d`` polished points and their ``M`` objective values, with
        ``values[m] >= min_i pieces(X0)[m, i]`` (a start is kept where the ascent did not
        improve on it).

    Example:
        >>> bounds = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
        >>> pieces = lambda X: torch.cat([X, 1 - X], dim=-1)   # min is maximal at x = 0.5
        >>> X, v = polish_maxima(pieces, torch.tensor([[0.1]], dtype=torch.float64), bounds)
        >>> round(float(X[0, 0]), 4), round(float(v[0]), 4)
        (0.5, 0.5)
    """
    if X0.dim() != 2:
        raise ValueError(f"`X0` must be an M x d tensor, got shape {tuple(X0.shape)}.")
    M, d = X0.shape
    if bounds.shape != (2, d):
        raise ValueError(f"`bounds` must be 2 x d = (2, {d}), got {tuple(bounds.shape)}.")
    check_finite(X0, "X0")
    check_finite(bounds, "bounds")
    lo, hi = bounds.to(X0)
    if (hi < lo).any():
        raise ValueError("`bounds` must have lower corner <= upper corner.")
    if not isinstance(maxiter, int) or maxiter < 1:
        raise ValueError(f"`maxiter` must be a positive integer, got {maxiter!r}.")
    start = torch.minimum(torch.maximum(X0.detach(), lo), hi)

    def values(X: Tensor) -> Tensor:
        P = pieces(X)
        if P.dim() == 1:
            P = P.unsqueeze(-1)
        if P.dim() != 2 or P.shape[0] != X.shape[0]:
            raise ValueError(
                f"`pieces` must map {X.shape[0]} x d inputs to {X.shape[0]} x P values, got "
                f"shape {tuple(P.shape)}."
            )
        return P

    with torch.no_grad():
        v0 = values(start).min(dim=-1).values
    X_out, v_out = start.clone(), v0.clone()
    box = [(float(a), float(b)) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
    box.append((None, None))  # the epigraph variable s
    for m in range(M):
        x_m, v_m = _polish_row(values, start, m, box, maxiter)
        if v_m is not None and v_m > float(v_out[m]):
            X_out[m] = torch.as_tensor(x_m, dtype=X0.dtype, device=X0.device)
            v_out[m] = v_m
    return X_out, v_out


def _polish_row(
    values: Callable[[Tensor], Tensor],
    base: Tensor,
    m: int,
    box: list[tuple[float | None, float | None]],
    maxiter: int,
) -> tuple[np.ndarray, float | None]:
    """SLSQP on (x_m, s): maximise s subject to s ≤ every piece of row m."""
    d = base.shape[-1]
    cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def pieces_and_jac(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = z.tobytes()
        if key not in cache:
            x = torch.as_tensor(z[:d], dtype=base.dtype, device=base.device).requires_grad_(True)
            X = torch.cat([base[:m], x.unsqueeze(0), base[m + 1 :]])
            P = values(X)[m]
            J = _jacobian(P, x)
            cache.clear()
            cache[key] = (P.detach().cpu().numpy(), J.detach().cpu().numpy())
        return cache[key]

    def constraint(z: np.ndarray) -> np.ndarray:
        return pieces_and_jac(z)[0] - z[d]

    def constraint_jac(z: np.ndarray) -> np.ndarray:
        J = pieces_and_jac(z)[1]
        return np.concatenate([J, -np.ones((J.shape[0], 1))], axis=1)

    x0 = base[m].cpu().numpy().astype(np.float64)
    s0 = float(pieces_and_jac(np.concatenate([x0, [0.0]]))[0].min())
    grad_s = np.zeros(d + 1)
    grad_s[d] = -1.0
    res = minimize(
        lambda z: -z[d],
        np.concatenate([x0, [s0]]),
        jac=lambda z: grad_s,
        method="SLSQP",
        bounds=box,
        constraints=[{"type": "ineq", "fun": constraint, "jac": constraint_jac}],
        options={"maxiter": maxiter, "ftol": 1e-12},
    )
    x = np.clip(res.x[:d], [b[0] for b in box[:d]], [b[1] for b in box[:d]])
    with torch.no_grad():
        X = torch.cat([base[:m], torch.as_tensor(x, dtype=base.dtype).unsqueeze(0), base[m + 1 :]])
        v = float(values(X.to(base.device))[m].min())
    return x, (v if np.isfinite(v) else None)


def _jacobian(P: Tensor, x: Tensor) -> Tensor:
    """``P x d`` Jacobian of the pieces: one batched backward pass, one per piece as fallback."""
    if not P.requires_grad:
        raise ValueError(
            "`pieces` must be differentiable in X with torch autograd (the true objective is "
            "polished by a gradient method); got values without a gradient path."
        )
    if P.numel() == 1:
        return torch.autograd.grad(P.sum(), x)[0].unsqueeze(0)
    eye = torch.eye(P.numel(), dtype=P.dtype, device=P.device)
    try:
        return torch.autograd.grad(P, x, grad_outputs=eye, is_grads_batched=True)[0]
    except RuntimeError:  # an op of the objective without a batching rule
        return torch.stack([torch.autograd.grad(p, x, retain_graph=True)[0] for p in P.unbind()])
