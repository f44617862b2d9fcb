"""The multi-objective problems of paper 000 (§5 and Appendix E).

All use η = δ = 0.1 and an ICM kernel Γ = k·B with a fixed scalar SE kernel. Where the paper
is silent, the choice made here is stated in the problem's ``notes`` and in the docstrings:

* Chebyshev reference point z (also the hypervolume reference): the componentwise minimum of
  f over the reference set (so every term λ_i (f_i − z_i) is ≥ 0).
* The RKHS-norm bound b of the non-RKHS problems: the paper's RKHS-problem rule
  b = max_x ‖f(x)‖₂ / κ, κ = λ_max(B), applied to them too.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from gpytorch.kernels import Kernel, RBFKernel
from torch import Tensor

from mtucb_bench.data import load_intel_lab
from mtucb_bench.problems import ArmLookup, MultiTaskProblem

__all__ = [
    "PERTURBED_SINE_WEIGHTS",
    "branin",
    "branin_problem",
    "intel_lab_problem",
    "perturbed_sine_problem",
    "rkhs_problem",
    "task_similarity_matrix",
]

DT = torch.float64


def _se_kernel(lengthscale: float) -> Kernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    k.raw_lengthscale.requires_grad_(False)
    return k


def _se_matrix(X1: Tensor, X2: Tensor, lengthscale: float) -> Tensor:
    return torch.exp(-0.5 * torch.cdist(X1, X2).square() / lengthscale**2)


def task_similarity_matrix(n: int, omega: float) -> Tensor:
    """B_ω = ω I_n + (1 − ω) 1 1ᵀ / n (paper 000 §2, Evgeniou et al.)."""
    if not 0.0 <= omega <= 1.0:
        raise ValueError(f"`omega` must lie in [0, 1], got {omega}.")
    return omega * torch.eye(n, dtype=DT) + (1 - omega) * torch.ones(n, n, dtype=DT) / n


def _table_function(points: Tensor, values: Tensor):
    """f(X) = values[arm of X] on a finite domain."""
    lookup = ArmLookup(points)

    def f(X: Tensor) -> Tensor:
        return values[lookup(X)].to(X)

    return f


def _paper_b(F: Tensor, B: Tensor) -> float:
    return float(F.norm(dim=-1).max()) / float(torch.linalg.eigvalsh(B)[-1])

def _finite_problem(
    name: str, X: Tensor, F: Tensor, B: Tensor, lengthscale: float, noise_std: float,
    notes: str, **extra,
) -> MultiTaskProblem:
    """A problem on the finite set ``X`` with noise-free values ``F`` (``len(X) x n``).

    Derives what the finite problems share: f as a table, the paper's b, the Chebyshev
    reference point z = componentwise min of ``F``, and ``X`` as both arms and regret set.
    """
    return MultiTaskProblem(
        name=name,
        f=_table_function(X, F),
        noise_std=noise_std,
        scalar_kernel=lambda: _se_kernel(lengthscale),
        task_covar=B,
        b=_paper_b(F, B),
        ref_point=F.min(dim=0).values,
        regret_X=X,
        arms=X,
        notes=notes,
        **extra,
    )



def rkhs_problem(
    n: int, seed: int, num_centers: int = 50, lengthscale: float = 0.2
) -> MultiTaskProblem:
    """RKHS function (paper 000 §5): f = Σ_{i≤50} Γ(·, x_i) c_i on the 0.01-net of [0, 1].

    Γ = k·B with k SE (l = 0.2), B = AᵀA with A_ij ~ U[0, 1]; x_i drawn uniformly from the
    grid, c_i ~ U[−1, 1]ⁿ; σ = 0.1; b = max_x ‖f(x)‖₂ / λ_max(B) (the paper's rule).

    Args:
        n: Number of tasks (paper: 2 and 20).
        seed: Seed of the draw of A, x_i and c_i (one instance per trial).
        num_centers: Number of kernel centres (paper: 50).
        lengthscale: SE lengthscale (paper: 0.2).
    """
    g = torch.Generator().manual_seed(seed)
    grid = torch.linspace(0, 1, 101, dtype=DT).unsqueeze(-1)
    A = torch.rand(n, n, generator=g, dtype=DT)
    B = A.T @ A
    idx = torch.randint(0, grid.shape[0], (num_centers,), generator=g)
    C = 2 * torch.rand(num_centers, n, generator=g, dtype=DT) - 1
    F = _se_matrix(grid, grid[idx], lengthscale) @ C @ B  # row x: Σ_i k(x, x_i) B c_i
    return _finite_problem(
        f"rkhs-n{n}", grid, F, B, lengthscale, noise_std=0.1,
        notes="paper 000 §5 RKHS protocol; z = componentwise min of f on the grid",
    )


#: Perturbation weights of the four tasks (rows) on the Gaussians at 0.05, 0.4, 0.7 (columns).
#: The paper (after Baldassarre et al. 2012) does not give its weights; these are ours: each
#: task moves a different bump up or down, so the tasks share sin(2πx) but differ locally and
#: have different maximisers.
PERTURBED_SINE_WEIGHTS = torch.tensor(
    [
        [1.0, 0.0, -0.5],
        [0.0, 1.0, 0.5],
        [-0.5, 0.0, 1.0],
        [0.5, -1.0, 0.0],
    ],
    dtype=DT,
)


def perturbed_sine_problem(omega: float = 0.4, lengthscale: float = 0.1) -> MultiTaskProblem:
    """Perturbed sine (paper 000 §5): f_i(x) = sin(2πx) + 0.6 f_i^pert(x), n = 4, on the 0.01-net.

    f_i^pert(x) = Σ_j W_ij exp(−(x − c_j)² / (2 · 0.1²)), c = (0.05, 0.4, 0.7), with
    :data:`PERTURBED_SINE_WEIGHTS` (ours; the paper does not list its weights). Noise variance
    0.01 (σ = 0.1); kernel Γ_ω = k·B_ω, ω = 0.4, k SE with l = 0.1 (the bump width; the paper
    does not give k's lengthscale).
    """
    grid = torch.linspace(0, 1, 101, dtype=DT).unsqueeze(-1)
    centers = torch.tensor([0.05, 0.4, 0.7], dtype=DT)
    bumps = torch.exp(-0.5 * (grid - centers).square() / 0.1**2)  # 101 x 3
    F = torch.sin(2 * math.pi * grid) + 0.6 * bumps @ PERTURBED_SINE_WEIGHTS.T  # 101 x 4
    B = task_similarity_matrix(4, omega)
    return _finite_problem(
        "perturbed-sine", grid, F, B, lengthscale, noise_std=0.1,
        notes=(
            "perturbation weights chosen here (PERTURBED_SINE_WEIGHTS); SE l = 0.1; "
            "b = max ||f||_2 / lambda_max(B)"
        ),
    )


def branin(x1: Tensor, x2: Tensor) -> Tensor:
    """The Branin function (to be minimised) at ``(x1, x2)`` in [−5, 10] x [0, 15]."""
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1.square() + c * x1 - 6).square() + 10 * (1 - t) * torch.cos(x1) + 10


def _shifted_branin_values(U: Tensor, shifts: Tensor, mean: float, std: float) -> Tensor:
    """``N x 2`` unit-square points → ``N x n`` standardised −Branin of the shifted tasks."""
    lo = torch.tensor([-5.0, 0.0], dtype=DT)
    span = torch.tensor([15.0, 15.0], dtype=DT)
    Z = (U[:, None, :].to(DT) + shifts[None, :, :]) * span + lo  # N x n x 2
    return -(branin(Z[..., 0], Z[..., 1]) - mean) / std


def branin_problem(
    num_tasks: int = 9,
    omega: float = 0.5,
    grid_size: int = 21,
    continuous: bool = False,
    regret_grid_size: int = 101,
    lengthscale: float = 0.2,
    noise_std: float = 0.1,
) -> MultiTaskProblem:
    """Shifted Branin-Hoo (paper 000 §5): 9 tasks, task i = Branin translated by i % of the domain.

    Inputs live in the unit square mapped affinely onto Branin's usual box
    [−5, 10] × [0, 15]. Task i (i = 1, …, 9) is translated by i/100 of the box side along
    x₁ for odd i and along x₂ for even i ("along either axis"; the paper does not say which).
    Objectives are −Branin, standardised by the mean and standard deviation of Branin on a
    101 × 101 grid of the box, maximised. Kernel Γ_ω = k·B_ω, ω = 0.5, k SE (l = 0.2 on the
    unit square), σ = 0.1 (the paper gives neither).

    Args:
        num_tasks: Number of shifted copies (paper: 9).
        omega: Task similarity ω (paper: 0.5).
        grid_size: Side of the finite arm grid (default domain: 21 × 21 arms).
        continuous: Use the continuous unit square instead (BoTorch ``optimize_acqf``); the
            regret then takes x*_λ over a dense ``regret_grid_size²`` grid (no polish).
        regret_grid_size: Side of that dense grid.
        lengthscale: SE lengthscale on the unit square.
        noise_std: Noise σ on the standardised objectives.
    """
    shifts = torch.zeros(num_tasks, 2, dtype=DT)
    for i in range(1, num_tasks + 1):
        shifts[i - 1, 0 if i % 2 else 1] = i / 100
    lin = torch.linspace(0, 1, 101, dtype=DT)
    G = torch.cartesian_prod(lin, lin)
    base = branin(G[:, 0] * 15 - 5, G[:, 1] * 15)
    mean, std = float(base.mean()), float(base.std())

    def f(X: Tensor) -> Tensor:
        return _shifted_branin_values(X, shifts, mean, std).to(X)

    def grid(m: int) -> Tensor:
        s = torch.linspace(0, 1, m, dtype=DT)
        return torch.cartesian_prod(s, s)

    B = task_similarity_matrix(num_tasks, omega)
    ref_X = grid(regret_grid_size) if continuous else grid(grid_size)
    F = f(ref_X)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    return MultiTaskProblem(
        name="branin",
        f=f,
        noise_std=noise_std,
        scalar_kernel=lambda: _se_kernel(lengthscale),
        task_covar=B,
        b=_paper_b(F, B),
        ref_point=F.min(dim=0).values,
        regret_X=ref_X,
        arms=None if continuous else ref_X,
        bounds=bounds if continuous else None,
        notes=(
            "shift i% along x1 (odd i) / x2 (even i); -Branin standardised; SE l = 0.2; "
            + (
                "continuous, x*_lambda = dense grid + SLSQP polish"
                if continuous
                else f"{grid_size}^2 grid"
            )
        ),
    )


def intel_lab_problem(
    data_path: str | Path,
    locs_path: str | Path,
    seed: int = 0,
    lengthscale: float | None = None,
    eta: float = 0.1,
) -> MultiTaskProblem:
    """Intel Berkeley lab sensors (paper 000 §5): 3 tasks (temperature, humidity, light).

    Following the paper: at each mote the readings are split at random into two halves;
    f_i(x) is the mean of the first half at mote x; the second half estimates the ICM kernel —
    an SE kernel on the (min-max scaled) mote locations and B = (1/m) Rᵀ K⁻¹ R; σ² is the
    largest per-task empirical variance of the readings. Deviations, for tractability and
    scale: each task is standardised (by the mean / std over motes of the first-half means);
    R holds the per-mote means of the second half (m = number of motes), K gets a jitter η I;
    the SE lengthscale, when not given, maximises the GP marginal likelihood of those means
    over a grid of 20 values in [0.02, 1].

    Args:
        data_path: ``data.txt`` of the Intel lab data (see :func:`load_intel_lab`).
        locs_path: ``mote_locs.txt``.
        seed: Seed of the random split.
        lengthscale: SE lengthscale on the unit square; ``None`` fits it.
        eta: Regulariser η (also the jitter of K).
    """
    data = load_intel_lab(data_path, locs_path)
    g = torch.Generator().manual_seed(seed)
    A = len(data.mote_ids)
    half = torch.rand(data.readings.shape[0], generator=g) < 0.5
    first, second = [], []
    keep = []
    for a in range(A):
        mask = data.mote_index == a
        r1 = data.readings[mask & half]
        r2 = data.readings[mask & ~half]
        if r1.shape[0] == 0 or r2.shape[0] == 0:
            continue
        keep.append(a)
        first.append(r1.mean(dim=0))
        second.append(r2.mean(dim=0))
    if len(keep) < 2:
        raise ValueError("The Intel lab data need at least two motes with readings in both halves.")
    F_raw = torch.stack(first)
    R_raw = torch.stack(second)
    mu, sd = F_raw.mean(dim=0), F_raw.std(dim=0).clamp_min(1e-12)
    F = (F_raw - mu) / sd
    R = (R_raw - mu) / sd
    loc = data.locations[keep]
    lo, hi = loc.min(dim=0).values, loc.max(dim=0).values
    X = (loc - lo) / (hi - lo).clamp_min(1e-12)
    if lengthscale is None:
        lengthscale = _fit_se_lengthscale(X, R, eta)
    K = _se_matrix(X, X, lengthscale) + eta * torch.eye(X.shape[0], dtype=DT)
    B = R.T @ torch.linalg.solve(K, R) / R.shape[0]
    B = 0.5 * (B + B.T)
    idx_keep = torch.tensor(keep)
    reading_mask = torch.isin(data.mote_index, idx_keep)
    sigma = float(((data.readings[reading_mask] - mu) / sd).var(dim=0).max().sqrt())
    return _finite_problem(
        "intel-lab", X, F, B, lengthscale, noise_std=sigma, eta=eta,
        notes=f"Intel lab; SE l = {lengthscale:.3g}; standardised tasks; sigma = {sigma:.3g}",
    )


def _fit_se_lengthscale(X: Tensor, R: Tensor, eta: float) -> float:
    """SE lengthscale maximising Σ_i log N(R[:, i] | 0, K_l + η I) over a grid."""
    best, best_ll = 0.2, -float("inf")
    for ls in torch.logspace(math.log10(0.02), 0.0, 20, dtype=DT).tolist():
        K = _se_matrix(X, X, ls) + eta * torch.eye(X.shape[0], dtype=DT)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(R, L)
        ll = float(-0.5 * (R * alpha).sum() - R.shape[1] * L.diagonal().log().sum())
        if ll > best_ll:
            best, best_ll = ls, ll
    return best
