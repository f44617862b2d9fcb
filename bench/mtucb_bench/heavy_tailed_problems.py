"""The heavy-tailed problems of paper 001 (§6): synthetic RKHS functions, stocks, light sensors.

Synthetic (100 evenly spaced arms on [0, 1]): f = Σ_{i≤100} a_i k(·, x_i), support points
x_i drawn uniformly from the arms, k SE (or Matérn-2.5) with l = 0.2, normalised by max|f| so
that B = max|f| = 1 (DESIGN.md; the paper sets B = max|f|).

* Student-t(3): y = f(x) + t₃, a_i ~ U[−1, 1]; α = 1, v = B² + 3.
* Pareto: y ~ Pareto(shape 2, scale f(x)/2) (mean f(x)), a_i ~ U[0, 1]; α = 0.9,
  v = B^{1+α} / (2^α (1 − α)) (the (1+α)-th raw moment at f = B).

Real data (paths: :mod:`mtucb_bench.data`), finite arms with the empirical
correlation as kernel (:class:`~botorch_mtucb.kernels.PrecomputedKernel`, float arm indices):

* stocks (29 arms): kernel = correlation of the column-standardised prices; reward = the raw
  price of a uniformly random day; α = 1, v = mean of all squared prices (paper: "the
  empirical average of the squared prices"), B = max mean price. Regret is measured on
  f = mean price / max mean price (the data README), a positive rescaling of the mean reward.
* light sensors (41 arms): kernel = correlation of the standardised 601 train rows; reward =
  the reading of a uniformly random test row at the chosen sensor; f = test means / max;
  α = 1, v = mean squared test reading, B = max test mean. QFF variant: SE kernel with
  l² = 0.1 on min-max scaled sensor coordinates, 16 Gauss–Hermite nodes per dimension.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel
from torch import Tensor

from botorch_mtucb.kernels import PrecomputedKernel
from mtucb_bench.data import load_light_sensor, load_stock_prices
from mtucb_bench.noise_models import NoiseModel, parse_noise, reward_moment_bound
from mtucb_bench.problems import HeavyTailedProblem, QFFSpec

__all__ = [
    "authors_code_synthetic",
    "correlation_matrix",
    "light_sensor_problem",
    "sample_pareto",
    "sample_student_t",
    "stock_problem",
    "synthetic_heavy_tailed_problem",
]

DT = torch.float64


def sample_student_t(shape: tuple[int, ...], df: int, generator: torch.Generator | None) -> Tensor:
    """Student-t draws Z / √(χ²_df / df) built from normals (so a ``generator`` can drive them)."""
    if not isinstance(df, int) or df < 1:
        raise ValueError(f"`df` must be a positive integer, got {df!r}.")
    z = torch.randn(shape, generator=generator, dtype=DT)
    chi2 = torch.randn((*shape, df), generator=generator, dtype=DT).square().sum(dim=-1)
    return z / (chi2 / df).sqrt()


def sample_pareto(scale: Tensor, shape: float, generator: torch.Generator | None) -> Tensor:
    """Pareto(shape, scale) draws scale · U^{−1/shape}, U ~ U(0, 1]; mean shape·scale/(shape−1)."""
    u = 1.0 - torch.rand(scale.shape, generator=generator, dtype=DT)
    return scale.to(DT) * u.pow(-1.0 / shape)


def correlation_matrix(data: Tensor) -> Tensor:
    """Correlation of the columns of ``N x A`` data (PSD by construction, unit diagonal)."""
    Z = (data - data.mean(dim=0)) / data.std(dim=0).clamp_min(1e-12)
    C = Z.T @ Z / (data.shape[0] - 1)
    return 0.5 * (C + C.T)


def _fixed(kernel: Kernel, lengthscale: float) -> Kernel:
    kernel = kernel.to(DT)
    kernel.lengthscale = lengthscale
    kernel.raw_lengthscale.requires_grad_(False)
    return kernel


def authors_code_synthetic(
    seed: int, num_arms: int = 100, lengthscale: float = 0.2
) -> tuple[Tensor, Tensor, torch.Generator]:
    """The synthetic draw of the authors' public code (``main_synthetic.m``), SE kernel.

    Unlike :func:`synthetic_heavy_tailed_problem` (the paper's text: arms on [0, 1], support
    points among the arms), the code puts the arms on [0.01, 1] and draws the 100 support
    points uniformly from [0, 1]; f = Σ_i a_i k(·, x_i), a_i ~ U[−1, 1], normalised by max|f|.
    Used by the heavy-tailed timing benchmark and the regret tests.

    Args:
        seed: Seed of the draw.
        num_arms: Number of arms.
        lengthscale: SE lengthscale.

    Returns:
        ``(arms, f, generator)``: ``A x 1`` arms, ``A`` values of f, and the generator after the
        draw (the caller continues its random stream from it).
    """
    g = torch.Generator().manual_seed(seed)
    arms = torch.linspace(0.01, 1.0, num_arms, dtype=DT).unsqueeze(-1)
    support = torch.rand(100, 1, dtype=DT, generator=g)
    a = 2 * torch.rand(100, dtype=DT, generator=g) - 1
    with torch.no_grad():
        f = _fixed(RBFKernel(), lengthscale)(arms, support).to_dense() @ a
    return arms, f / f.abs().max(), g


def synthetic_heavy_tailed_problem(
    kernel: str = "se",
    noise: str | NoiseModel = "student",
    seed: int = 0,
    num_arms: int = 100,
    num_support: int = 100,
    lengthscale: float = 0.2,
    qff_nodes: int = 32,
) -> HeavyTailedProblem:
    """Synthetic problem of paper 001 §6 (see the module docstring).

    Args:
        kernel: ``"se"`` or ``"matern"`` (ν = 2.5; no QFF variant).
        noise: ``"student"`` (t₃, α = 1) or ``"pareto"`` (shape 2, scale f/2, α = 0.9), the
            paper's; or any model of :mod:`~mtucb_bench.noise_models` (an
            instance or a spec such as ``"student-t:1.5"``, ``"contaminated:0.02x1000"``):
            ``y = f + ε`` with ``a_i ~ U[−1, 1]``, the noise's natural α and the honest
            ``v = 2^α (B^{1+α} + E|ε|^{1+α})`` (:func:`reward_moment_bound`).
        seed: Seed of the draw of f (one function per trial, as the paper).
        num_arms: Grid size (paper: 100).
        num_support: Number of support points p (paper: 100).
        lengthscale: Kernel lengthscale (paper: 0.2).
        qff_nodes: Gauss–Hermite nodes of the QFF variant (paper: m = 32).
    """
    if kernel not in ("se", "matern"):
        raise ValueError(f"`kernel` must be 'se' or 'matern', got {kernel!r}.")
    model = None
    if isinstance(noise, NoiseModel) or (isinstance(noise, str) and ":" in noise):
        model = parse_noise(noise) if isinstance(noise, str) else noise
    elif noise not in ("student", "pareto"):
        raise ValueError(
            f"`noise` must be 'student', 'pareto' or a noise spec (e.g. 'student-t:1.5'), "
            f"got {noise!r}."
        )
    g = torch.Generator().manual_seed(seed)
    grid = torch.linspace(0, 1, num_arms, dtype=DT).unsqueeze(-1)

    def make_kernel() -> Kernel:
        base = RBFKernel() if kernel == "se" else MaternKernel(nu=2.5)
        return _fixed(base, lengthscale)

    idx = torch.randint(0, num_arms, (num_support,), generator=g)
    if noise != "pareto":
        a = 2 * torch.rand(num_support, generator=g, dtype=DT) - 1
    else:
        a = torch.rand(num_support, generator=g, dtype=DT)
    with torch.no_grad():
        K = make_kernel()(grid, grid[idx]).to_dense()
    f = K @ a
    f = f / f.abs().max()
    B = float(f.abs().max())
    if model is not None:
        alpha = model.natural_alpha()
        v = reward_moment_bound(model, alpha, B)

        def sample(arm_idx: Tensor, generator: torch.Generator | None) -> Tensor:
            return f[arm_idx] + model.sample(tuple(arm_idx.shape), generator)

    elif noise == "student":
        alpha, v = 1.0, B**2 + 3.0

        def sample(arm_idx: Tensor, generator: torch.Generator | None) -> Tensor:
            return f[arm_idx] + sample_student_t(tuple(arm_idx.shape), 3, generator)

    else:
        alpha = 0.9
        v = B ** (1 + alpha) / (2**alpha * (1 - alpha))

        def sample(arm_idx: Tensor, generator: torch.Generator | None) -> Tensor:
            return sample_pareto(f[arm_idx] / 2, 2.0, generator)

    qff = QFFSpec(grid, lengthscale, qff_nodes) if kernel == "se" else None
    return HeavyTailedProblem(
        name=f"{kernel}-{noise}" if model is None else f"{kernel}/{model.spec}",
        arms=grid,
        mean_rewards=f,
        regret_f=f,
        kernel=make_kernel,
        sample_rewards=sample,
        alpha=alpha,
        v=v,
        B=B,
        qff=qff,
        notes=f"paper 001 §6 synthetic, {kernel} l={lengthscale}, "
        f"{noise if model is None else model.spec} noise, f / max|f|",
    )


def _finite_arm_problem(
    name: str,
    corr: Tensor,
    rewards_table: Tensor,
    qff: QFFSpec | None,
    notes: str,
) -> HeavyTailedProblem:
    """Arms = columns of ``rewards_table`` (``D x A``); a reward is a uniformly random row."""
    A = rewards_table.shape[1]
    arms = torch.arange(A, dtype=DT).unsqueeze(-1)
    means = rewards_table.mean(dim=0)
    D = rewards_table.shape[0]

    def sample(arm_idx: Tensor, generator: torch.Generator | None) -> Tensor:
        rows = torch.randint(0, D, tuple(arm_idx.shape), generator=generator)
        return rewards_table[rows, arm_idx]

    return HeavyTailedProblem(
        name=name,
        arms=arms,
        mean_rewards=means,
        regret_f=means / means.max(),
        kernel=lambda: PrecomputedKernel(corr),
        sample_rewards=sample,
        alpha=1.0,
        v=float(rewards_table.square().mean()),
        B=float(means.max()),
        qff=qff,
        notes=notes,
    )


def stock_problem(data_dir: str | Path | None = None) -> HeavyTailedProblem:
    """Stock-market problem of paper 001 §6 from ``fin.csv`` (see the module docstring)."""
    data = load_stock_prices(data_dir)
    return _finite_arm_problem(
        "stock",
        correlation_matrix(data.prices),
        data.prices,
        None,
        "paper 001 §6 stocks: 29 arms, correlation kernel, raw-price rewards",
    )


def light_sensor_problem(data_dir: str | Path | None = None) -> HeavyTailedProblem:
    """Light-sensor problem of paper 001 §6 from ``iw_data_all.mat`` (see the module docstring)."""
    data = load_light_sensor(data_dir)
    c = data.coords
    coords = (c - c.min(dim=0).values) / (c.max(dim=0).values - c.min(dim=0).values)
    qff = QFFSpec(coords, math.sqrt(0.1), 16)
    return _finite_arm_problem(
        "light-sensor",
        correlation_matrix(data.train),
        data.test,
        qff,
        "paper 001 §6 light sensors: 41 arms, train correlation kernel, test-row rewards",
    )
