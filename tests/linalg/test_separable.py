"""ProjectedSeparablePredictor against a brute-force dense posterior, in values and gradients."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel

from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.kernels.independent import SumOfSeparableKernel
from botorch_mtucb.linalg.separable import ProjectedSeparablePredictor
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.multitask.practical import practical_multitask_gp

DT = torch.float64


def _data(seed: int, N: int, d: int, n: int, lo: float = -1.0, hi: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    X = lo + (hi - lo) * torch.rand(N, d, generator=g, dtype=DT)
    Y = torch.sin(3.0 * X @ torch.randn(d, n, generator=g, dtype=DT)) + 0.1 * torch.randn(
        N, n, generator=g, dtype=DT)
    return X, 4.0 * Y + 1.0, g


def _brute_force(model, Xs: torch.Tensor, W: torch.Tensor, known_noise=None):
    """Mean and wᵀΓ_t(x, x)w from Σ = Σ_j K_j ⊗ B_j + N built term by term, in the original
    outcome scale (``model`` in eval mode)."""
    x = model.train_inputs[0]  # stored transformed in eval mode
    xs = model.transform_inputs(Xs)
    comps = model.covar_module.separable_components()
    S = sum(torch.kron(k(x, x).to_dense(), B) for k, B in comps).detach()
    tn = S.shape[0]
    if known_noise is None:
        S = S + model.likelihood.noise.detach().reshape(()) * torch.eye(tn, dtype=DT)
    else:
        S = S + torch.diag(known_noise)
    n = model.num_outputs
    tf = getattr(model, "outcome_transform", None)
    sd = tf.stdvs.reshape(-1) if tf is not None else torch.ones(n, dtype=DT)
    mu0 = tf.means.reshape(-1) if tf is not None else torch.zeros(n, dtype=DT)
    means = model.mean_module.base_means if hasattr(model.mean_module, "base_means") else None
    c = (torch.stack([m.constant.reshape(()) for m in means]).detach() if means is not None
         else torch.zeros(n, dtype=DT))
    alpha = torch.linalg.solve(S, (model.train_targets - c).reshape(-1))
    out_mean, out_quad = [], []
    for i in range(xs.shape[0]):
        xi = xs[i : i + 1]
        Kx = sum(torch.kron(k(xi, x).to_dense(), B) for k, B in comps)  # n x tn
        prior = sum(k(xi, xi).to_dense() * B for k, B in comps)
        G = prior - Kx @ torch.linalg.solve(S, Kx.T)
        Gs = sd[:, None] * G * sd[None, :]
        out_mean.append((c + Kx @ alpha) * sd + mu0)
        out_quad.append(torch.einsum("ak,ab,bk->k", W, Gs, W))
    return torch.stack(out_mean), torch.stack(out_quad)


def _models(seed: int):
    """The practical per-task and independent models, and an exact GP whose sum has two terms
    sharing one scalar kernel (merged) and a term of its own."""
    X, Y, g = _data(seed, 14, 2, 3)
    bounds = torch.tensor([[-1.0, -1.0], [2.0, 2.0]], dtype=DT)
    yield practical_multitask_gp(X, Y, bounds, per_task=True), None
    yield practical_multitask_gp(X, Y, bounds, independent=True), None
    shared = ScaleKernel(RBFKernel(ard_num_dims=2))
    shared.outputscale = 1.7
    shared.base_kernel.lengthscale = torch.tensor([0.6, 1.3])
    own = MaternKernel(nu=1.5)
    own.lengthscale = 0.4
    B1 = torch.tensor([[1.0, 0.5, 0.2], [0.5, 1.0, 0.1], [0.2, 0.1, 0.8]], dtype=DT)
    kernel = SumOfSeparableKernel([
        ICMKernel(shared, 3, task_covar=B1),
        ICMKernel(shared, 3, task_covar=0.3 * torch.eye(3, dtype=DT)),
        ICMKernel(own, 3, task_covar=torch.ones(3, 3, dtype=DT) + torch.eye(3, dtype=DT)),
    ])
    Yvar = 0.01 + 0.05 * torch.rand(Y.shape, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y / 4.0, covar_module=kernel.to(DT), train_Yvar=Yvar)
    yield model, Yvar.reshape(-1)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_predictor_equals_brute_force_posterior(seed: int, k: int) -> None:
    for model, known in _models(seed):
        model.eval()
        g = torch.Generator().manual_seed(10 + seed)
        W = torch.randn(3, k, generator=g, dtype=DT)
        predictor = model._projected_predictor(W)
        assert isinstance(predictor, ProjectedSeparablePredictor)
        Xs = -1.0 + 3.0 * torch.rand(6, 2, generator=g, dtype=DT)
        mean, quad = predictor(Xs.reshape(3, 2, 2))  # batch x q x d
        assert mean.shape == (3, 2, 3) and quad.shape == (3, 2, k)
        with torch.no_grad():
            ref_mean, ref_quad = _brute_force(model, Xs, W, known)
        torch.testing.assert_close(mean.reshape(6, 3), ref_mean, atol=1e-9, rtol=1e-9)
        torch.testing.assert_close(quad.reshape(6, k), ref_quad, atol=1e-9, rtol=1e-8)
        # the model's own projected posterior takes the same path and agrees
        m2, q2 = model.projected_task_posterior(Xs.unsqueeze(-2), W)
        torch.testing.assert_close(m2.squeeze(-2), ref_mean, atol=1e-9, rtol=1e-9)
        torch.testing.assert_close(q2.squeeze(-2), ref_quad, atol=1e-9, rtol=1e-8)


def test_predictor_input_gradient_equals_brute_force() -> None:
    model, _ = next(_models(2))
    model.eval()
    W = torch.eye(3, dtype=DT)
    predictor = model._projected_predictor(W)
    Xs = -1.0 + 3.0 * torch.rand(4, 2, generator=torch.Generator().manual_seed(3), dtype=DT)
    X1, X2 = Xs.clone().requires_grad_(True), Xs.clone().requires_grad_(True)
    mean, quad = predictor(X1)
    ref_mean, ref_quad = _brute_force(model, X2, W)
    (g1,) = torch.autograd.grad(mean.sum() + quad.sum(), X1)
    (g2,) = torch.autograd.grad(ref_mean.sum() + ref_quad.sum(), X2)
    torch.testing.assert_close(g1, g2, atol=1e-8, rtol=1e-7)


def test_predictor_after_conditioning_and_its_refusals() -> None:
    model, _ = next(_models(0))
    model.eval()
    g = torch.Generator().manual_seed(5)
    X_new = -1.0 + 3.0 * torch.rand(2, 2, generator=g, dtype=DT)
    new = model.condition_on_observations(X_new, torch.randn(2, 3, generator=g, dtype=DT))
    W = torch.eye(3, dtype=DT)
    predictor = new._projected_predictor(W)
    assert isinstance(predictor, ProjectedSeparablePredictor)
    Xs = -1.0 + 3.0 * torch.rand(5, 2, generator=g, dtype=DT)
    mean, quad = predictor(Xs)
    with torch.no_grad():
        post = new.posterior(Xs.unsqueeze(-2))
    torch.testing.assert_close(mean, post.mean.squeeze(-2), atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(quad, post.variance.squeeze(-2), atol=1e-9, rtol=1e-8)
    # at the new points the conditioned variance is below the unconditioned one
    _, before = model._projected_predictor(W)(X_new)
    _, after = predictor(X_new)
    assert bool((after < before).all())
    # a kernel that is not stationary RBF / Matérn has no frozen path
    from gpytorch.kernels import LinearKernel

    kernel = SumOfSeparableKernel([
        ICMKernel(LinearKernel(), 2, task_covar=torch.eye(2, dtype=DT)),
        ICMKernel(RBFKernel(), 2, task_covar=torch.ones(2, 2, dtype=DT)),
    ]).to(DT)
    X = torch.rand(6, 2, generator=g, dtype=DT)
    other = ExactMultiTaskGP(X, torch.randn(6, 2, generator=g, dtype=DT), covar_module=kernel)
    other.eval()
    assert other._projected_predictor(torch.eye(2, dtype=DT)) is None
