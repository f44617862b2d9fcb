"""ProjectedICMPredictor against the dense ICM posterior, in values and input gradients."""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.multitask.practical import practical_multitask_gp

DT = torch.float64


def _model(seed: int, N: int, d: int, n: int, with_bounds: bool):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (-1.0, 2.0) if with_bounds else (0.0, 1.0)
    X = lo + (hi - lo) * torch.rand(N, d, generator=g, dtype=DT)
    Y = torch.sin(3.0 * X @ torch.randn(d, n, generator=g, dtype=DT)) + 0.1 * torch.randn(
        N, n, generator=g, dtype=DT)
    bounds = torch.tensor([[lo] * d, [hi] * d], dtype=DT) if with_bounds else None
    return practical_multitask_gp(X, Y, bounds), g


def _dense(model, Xs: torch.Tensor, W: torch.Tensor):
    """Mean and wᵀΓw from Σ = K ⊗ B + ηI (interleaved), in the original outcome scale
    (``model`` in eval mode)."""
    assert not model.training
    x = model.train_inputs[0]  # stored transformed in eval mode
    xs = model.transform_inputs(Xs)
    k = model.covar_module.data_covar_module
    B = model.covar_module.task_covar_matrix.detach()
    eta = model.likelihood.noise.detach().reshape(())
    n = B.shape[-1]
    K = k(x, x).to_dense().detach()
    S = torch.kron(K, B) + eta * torch.eye(K.shape[0] * n, dtype=DT)
    c = torch.stack([m.constant.reshape(()) for m in model.mean_module.base_means]).detach()
    r = (model.train_targets - c).reshape(-1)
    alpha = torch.linalg.solve(S, r)
    sd = model.outcome_transform.stdvs.reshape(-1)
    mu0 = model.outcome_transform.means.reshape(-1)
    means, quads = [], []
    for i in range(xs.shape[0]):
        kx = k(xs[i : i + 1], x).to_dense()  # 1 x t
        Kx = torch.kron(kx, B)  # n x tn
        mean = c + Kx @ alpha
        kxx = k(xs[i : i + 1], xs[i : i + 1]).to_dense()
        G = kxx * B - Kx @ torch.linalg.solve(S, Kx.T)
        Gs = sd[:, None] * G * sd[None, :]
        means.append(mean * sd + mu0)
        quads.append(torch.einsum("ak,ab,bk->k", W, Gs, W))
    return torch.stack(means), torch.stack(quads)


@pytest.mark.parametrize("with_bounds", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_predictor_equals_dense_posterior(with_bounds: bool, seed: int) -> None:
    n, d = 2 + seed, 2 + seed
    model, g = _model(seed, 15 + 5 * seed, d, n, with_bounds)
    W = torch.randn(n, 3, generator=g, dtype=DT)
    predictor = model._projected_predictor(W)
    assert predictor is not None
    lo, hi = (-1.0, 2.0) if with_bounds else (0.0, 1.0)
    Xs = lo + (hi - lo) * torch.rand(6, d, generator=g, dtype=DT)
    mean, quad = predictor(Xs.reshape(3, 2, d))  # batch x q x d
    ref_mean, ref_quad = _dense(model, Xs, W)
    assert mean.shape == (3, 2, n) and quad.shape == (3, 2, 3)
    torch.testing.assert_close(mean.reshape(6, n), ref_mean.detach(), atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(quad.reshape(6, 3), ref_quad.detach(), atol=1e-9, rtol=1e-8)
    flat_mean, flat_quad = predictor(Xs)  # batch x d: batch x n and batch x k
    assert flat_mean.shape == (6, n) and flat_quad.shape == (6, 3)
    torch.testing.assert_close(flat_mean, mean.reshape(6, n), atol=0, rtol=0)


def test_predictor_input_gradient_equals_dense() -> None:
    model, g = _model(3, 18, 2, 2, True)
    W = torch.eye(2, dtype=DT)
    predictor = model._projected_predictor(W)
    Xs = -1.0 + 3.0 * torch.rand(4, 2, generator=g, dtype=DT)
    X1, X2 = Xs.clone().requires_grad_(True), Xs.clone().requires_grad_(True)
    mean, quad = predictor(X1)
    ref_mean, ref_quad = _dense(model, X2, W)
    weights = torch.tensor([0.7, -0.4], dtype=DT)
    ((mean @ weights).sum() + quad.sqrt().sum()).backward()
    ((ref_mean @ weights).sum() + ref_quad.sqrt().sum()).backward()
    torch.testing.assert_close(X1.grad, X2.grad, atol=1e-8, rtol=1e-7)
