"""Multi-task problems of paper 000 against independent evaluations of their definitions."""

from __future__ import annotations

import math

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.kernels import ICMKernel
from mtucb_bench.multi_task_problems import (
    PERTURBED_SINE_WEIGHTS,
    branin,
    branin_problem,
    perturbed_sine_problem,
    rkhs_problem,
    task_similarity_matrix,
)

DT = torch.float64


def test_rkhs_problem_is_the_kernel_expansion():
    """f = Σ_i Γ(·, x_i) c_i, recomputed with the package's ICMKernel (interleaved Gram)."""
    n, seed = 3, 5
    p = rkhs_problem(n, seed)
    # redraw A, x_i, c_i exactly as the paper's recipe, in the documented order
    g = torch.Generator().manual_seed(seed)
    A = torch.rand(n, n, generator=g, dtype=DT)
    idx = torch.randint(0, 101, (50,), generator=g)
    C = 2 * torch.rand(50, n, generator=g, dtype=DT) - 1
    torch.testing.assert_close(p.task_covar, A.T @ A)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.2
    kern = ICMKernel(k, num_tasks=n, task_covar=A.T @ A)
    grid = torch.linspace(0, 1, 101, dtype=DT).unsqueeze(-1)
    G = kern(grid, grid[idx]).to_dense()  # (101·n) x (50·n), interleaved
    F = (G @ C.reshape(-1)).reshape(101, n)
    torch.testing.assert_close(p.f(grid), F)
    # the paper's b = max ||f(x)||_2 / λ_max(B); z = componentwise min
    F = F.detach()
    b_paper = float(F.norm(dim=-1).max() / torch.linalg.eigvalsh(A.T @ A)[-1])
    assert math.isclose(p.b, b_paper, rel_tol=1e-6), (p.b, b_paper)
    torch.testing.assert_close(p.ref_point, F.min(dim=0).values)
    assert p.is_finite and p.num_objectives == n and p.eta == 0.1 and p.noise_std == 0.1
    # one instance per seed
    torch.testing.assert_close(rkhs_problem(n, seed).f(grid), F)
    assert not torch.allclose(rkhs_problem(n, seed + 1).f(grid), F)


def test_observer_noise_is_gaussian_and_reproducible():
    p = rkhs_problem(2, 0)
    X = p.arms[torch.zeros(4000, dtype=torch.long) + 7]
    y1 = p.observer(torch.Generator().manual_seed(1))(X)
    y2 = p.observer(torch.Generator().manual_seed(1))(X)
    torch.testing.assert_close(y1, y2)
    resid = y1 - p.f(X)
    assert abs(float(resid.std()) - 0.1) < 0.005 and abs(float(resid.mean())) < 0.005


def test_perturbed_sine_by_hand():
    p = perturbed_sine_problem()
    x = 0.4
    bumps = [math.exp(-0.5 * (x - c) ** 2 / 0.01) for c in (0.05, 0.4, 0.7)]
    expected = [
        math.sin(2 * math.pi * x) + 0.6 * sum(w * b for w, b in zip(row, bumps, strict=True))
        for row in PERTURBED_SINE_WEIGHTS.tolist()
    ]
    got = p.f(torch.tensor([[x]], dtype=DT))[0]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=DT))
    torch.testing.assert_close(p.task_covar, task_similarity_matrix(4, 0.4))
    # related but different tasks: distinct maximisers on the grid
    F = p.f(p.arms)
    assert F.argmax(dim=0).unique().numel() >= 3


def test_task_similarity_matrix():
    B = task_similarity_matrix(3, 0.25)
    torch.testing.assert_close(torch.diagonal(B), torch.full((3,), 0.25 + 0.75 / 3, dtype=DT))
    assert math.isclose(float(B[0, 1]), 0.25)
    torch.testing.assert_close(task_similarity_matrix(3, 1.0), torch.eye(3, dtype=DT))
    with pytest.raises(ValueError, match="omega"):
        task_similarity_matrix(3, 1.5)


def test_branin_tasks_are_shifted_copies():
    # Branin's known minimum value 0.397887 at (π, 2.275)
    val = branin(torch.tensor(math.pi, dtype=DT), torch.tensor(2.275, dtype=DT))
    assert abs(float(val) - 0.397887) < 1e-5
    p = branin_problem(num_tasks=9, grid_size=11)
    assert p.num_objectives == 9 and p.arms.shape == (121, 2)
    U = torch.tensor([[0.3, 0.4], [0.7, 0.1]], dtype=DT)
    F = p.f(U)
    # task 1 (shift 1% along x1) at u equals task 2 (shift 2% along x2) at u + (0.01, -0.02)
    F2 = p.f(U + torch.tensor([0.01, -0.02], dtype=DT))
    torch.testing.assert_close(F[:, 0], F2[:, 1])
    # objective = -Branin (standardised): larger where Branin is smaller
    raw = branin(U[:, 0] * 15 - 5 + 0.15, U[:, 1] * 15)  # task 1: x1 + 1% of 15
    assert (F[:, 0].argsort() == (-raw).argsort()).all()
    cont = branin_problem(continuous=True, regret_grid_size=21)
    assert not cont.is_finite and cont.regret_X.shape == (441, 2)
    torch.testing.assert_close(cont.bounds, torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT))
