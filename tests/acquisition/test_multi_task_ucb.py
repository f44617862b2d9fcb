"""Tests for ScalarizedMultiTaskUCB (paper 000 eq. (2)) and its directional bound.

The directional bound against the spectral one and the UCB validity on an RKHS function are in
``test_multi_task_ucb_directional.py``; input validation in ``test_multi_task_ucb_inputs.py``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.model import Model
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from botorch.posteriors import GPyTorchPosterior
from gpytorch.distributions import MultitaskMultivariateNormal
from gpytorch.kernels import MaternKernel, RBFKernel
from linear_operator.operators import to_linear_operator

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    ConstantBeta,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
    TheoremTwoBeta,
)
from botorch_mtucb.kernels import ICMKernel, SumOfSeparableKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


# ----------------------------------------------------------------------------- helpers


def _rbf(lengthscale: float) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def make_rkhs_problem(n: int, seed: int, num_centers: int = 50) -> SimpleNamespace:
    """Paper 000 §5 RKHS problem: f = Σ_{i≤50} Γ(·, x_i) c_i on the 0.01-net of [0, 1].

    Γ = k·B, k SE with lengthscale 0.2, B = AᵀA with A_ij ~ U[0, 1], c_i ~ U[−1, 1]ⁿ, x_i drawn
    from the grid. Returns the grid (101 x 1), B, F = f(grid) (101 x n), the paper's
    b = max_x ‖f(x)‖₂ / κ (κ = λ_max(B)) and the exact RKHS norm ‖f‖_Γ.
    """
    g = torch.Generator().manual_seed(seed)
    grid = torch.linspace(0, 1, 101, dtype=DT).unsqueeze(-1)
    A = torch.rand(n, n, generator=g, dtype=DT)
    B = A.T @ A
    idx = torch.randint(0, 101, (num_centers,), generator=g)
    C = 2 * torch.rand(num_centers, n, generator=g, dtype=DT) - 1
    centers = grid[idx]
    K = torch.exp(-0.5 * (grid - centers.T) ** 2 / 0.2**2)  # 101 x num_centers
    F = K @ C @ B  # row x: Σ_i k(x, x_i) B c_i (B symmetric)
    Kcc = torch.exp(-0.5 * (centers - centers.T) ** 2 / 0.2**2)
    rkhs_norm = float((Kcc * (C @ B @ C.T)).sum().sqrt())  # Σ_ij k(x_i,x_j) c_iᵀ B c_j
    kappa = float(torch.linalg.eigvalsh(B)[-1])
    return SimpleNamespace(
        grid=grid,
        B=B,
        F=F,
        b_paper=float(F.norm(dim=-1).max()) / kappa,
        rkhs_norm=rkhs_norm,
        f=lambda X: F[(X[..., 0] * 100).round().long()],
    )


def icm_grid_model(problem: SimpleNamespace, X, Y, eta: float = 0.1) -> ExactMultiTaskGP:
    kern = ICMKernel(_rbf(0.2), num_tasks=problem.B.shape[0], task_covar=problem.B)
    return ExactMultiTaskGP(X, Y, covar_module=kern, noise=eta)


class FixedPosteriorModel(Model):
    """A model whose q = 1 posterior at the b-th t-batch is N(means[b], covs[b])."""

    def __init__(self, means, covs) -> None:
        super().__init__()
        self.means, self.covs = means, covs

    @property
    def num_outputs(self) -> int:
        return self.means.shape[-1]

    def posterior(self, X, **kwargs) -> GPyTorchPosterior:
        assert X.shape[-2] == 1 and X.shape[:-2] == self.means.shape[:-1]
        # a LinearOperator covariance: no Cholesky (covariances may be singular here)
        mvn = MultitaskMultivariateNormal(self.means.unsqueeze(-2), to_linear_operator(self.covs))
        return GPyTorchPosterior(mvn)


def _train_data(t=10, d=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, d, generator=g, dtype=DT)
    Y = torch.stack(
        [torch.sin(3 * X).sum(-1), torch.cos(2 * X[:, 0]) * X[:, 1]], dim=-1
    ) + 0.05 * torch.randn(t, 2, generator=g, dtype=DT)
    return X, Y


def _model_list(X, Y):
    models = []
    for i, ls in enumerate((0.3, 0.5)):
        m = SingleTaskGP(X, Y[:, i : i + 1])  # default Standardize outcome transform
        m.covar_module.lengthscale = ls
        m.likelihood.noise = 0.05
        models.append(m)
    model = ModelListGP(*models)
    model.eval()
    return model


def _icm(X, Y):
    B = torch.tensor([[1.0, 0.8], [0.8, 1.5]], dtype=DT)
    return ExactMultiTaskGP(X, Y, ICMKernel(_rbf(0.3), 2, task_covar=B), noise=0.1)


def _icm_standardized(X, Y):
    B = torch.tensor([[1.0, -0.5], [-0.5, 0.7]], dtype=DT)
    return ExactMultiTaskGP(
        X, Y, ICMKernel(_rbf(0.3), 2, task_covar=B), noise=0.1, outcome_transform=Standardize(2)
    )


def _lmc(X, Y):
    m = MaternKernel(nu=2.5).to(DT)
    m.lengthscale = 0.6
    kern = SumOfSeparableKernel(
        [
            ICMKernel(_rbf(0.25), 2, task_covar=torch.tensor([[1.0, 0.9], [0.9, 1.0]], dtype=DT)),
            ICMKernel(m, 2, task_covar=torch.tensor([[0.2, -0.1], [-0.1, 0.6]], dtype=DT)),
        ]
    )
    return ExactMultiTaskGP(X, Y, kern, noise=0.1)


def _nystrom(X, Y):
    B = torch.tensor([[1.0, 0.8], [0.8, 1.5]], dtype=DT)
    return NystromMultiTaskGP(
        X, Y, ICMKernel(_rbf(0.3), 2, task_covar=B), noise=0.1, q=2.0, generator=0
    )


MODEL_FACTORIES = {
    "model_list": _model_list,
    "exact_icm": _icm,
    "exact_icm_standardized": _icm_standardized,
    "exact_lmc": _lmc,
    "nystrom_icm": _nystrom,
}


def _scalarization(kind: str, weights):
    if kind == "linear":
        return LinearScalarization(weights)
    return ChebyshevScalarization(weights, ref_point=torch.tensor([-2.0, -1.5], dtype=DT))


def _reference_ucb(model, s, beta: float, bound: str, X):
    """u(x) from the model's *posterior* MVN, written out by hand (SVD for the norm)."""
    post = model.posterior(X)
    mean = post.mean[..., 0, :]
    cov = post.distribution.covariance_matrix  # q = 1: the n x n block
    lam = s.weights
    if isinstance(s, LinearScalarization):
        value = mean @ lam
        if bound == "directional":
            return value + beta * torch.einsum("i,...ij,j->...", lam, cov, lam).sqrt()
        L = lam.norm()
    else:
        z = s.ref_point
        if bound == "directional":
            sig = torch.diagonal(cov, dim1=-2, dim2=-1).sqrt()
            return (lam * (mean + beta * sig - z)).min(-1).values
        value = (lam * (mean - z)).min(-1).values
        L = lam.max()
    spec = torch.linalg.matrix_norm(cov, ord=2)  # largest singular value
    return value + L * beta * spec.sqrt()


# ----------------------------------------------------------------------------- values


def test_hand_computed_values_fixed_posterior():
    mu = torch.tensor([[1.0, 2.0]], dtype=DT)
    cov = torch.tensor([[[2.0, 1.0], [1.0, 2.0]]], dtype=DT)  # eigenvalues 3 and 1
    model = FixedPosteriorModel(mu, cov)
    X = torch.zeros(1, 1, 1, dtype=DT)
    w = torch.tensor([0.25, 0.75], dtype=DT)
    z = torch.tensor([0.0, 1.0], dtype=DT)
    cases = [
        # (scalarization, bound, value)
        (LinearScalarization(w), "spectral", 1.75 + 2 * math.sqrt(0.625) * math.sqrt(3)),
        (LinearScalarization(w), "directional", 1.75 + 2 * math.sqrt(1.625)),
        (ChebyshevScalarization(w, z), "spectral", 0.25 + 0.75 * 2 * math.sqrt(3)),
        (ChebyshevScalarization(w, z), "directional", 0.25 * (1 + 2 * math.sqrt(2))),
        # objective 2 minimised: μ̃ = (1, −2), z̃ = (0, −1), w̃ = (0.25, −0.75)
        (LinearScalarization(w, [False, True]), "spectral", -1.25 + 2 * math.sqrt(1.875)),
        (LinearScalarization(w, [False, True]), "directional", -1.25 + 2 * math.sqrt(0.875)),
        (ChebyshevScalarization(w, z, [False, True]), "spectral", -0.75 + 1.5 * math.sqrt(3)),
        (
            ChebyshevScalarization(w, z, [False, True]),
            "directional",
            min(0.25 * (1 + 2 * math.sqrt(2)), 0.75 * (-1 + 2 * math.sqrt(2))),
        ),
    ]
    for s, bound, value in cases:
        acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0, bound=bound)
        out = acqf(X)
        assert out.shape == (1,)
        assert math.isclose(float(out), value, rel_tol=1e-12), (s, bound)


@pytest.mark.parametrize("family", list(MODEL_FACTORIES))
@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
@pytest.mark.parametrize("bound", ["spectral", "directional"])
def test_values_match_posterior_by_hand(family, kind, bound):
    X, Y = _train_data()
    model = MODEL_FACTORIES[family](X, Y)
    s = _scalarization(kind, torch.tensor([0.35, 0.65], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.7, bound=bound)
    Xt = torch.rand(7, 1, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    with torch.no_grad():
        out = acqf(Xt)
        ref = _reference_ucb(model, s, 1.7, bound, Xt)
    assert out.shape == (7,)
    torch.testing.assert_close(out, ref, rtol=1e-8, atol=1e-10)


def test_model_list_spectral_width_is_max_variance():
    X, Y = _train_data()
    model = _model_list(X, Y)
    s = LinearScalarization(torch.tensor([0.5, 0.5], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.0, bound="spectral")
    Xt = torch.rand(5, 1, 2, dtype=DT)
    with torch.no_grad():
        post = model.posterior(Xt)
        width = post.variance[..., 0, :].max(-1).values.sqrt()
        torch.testing.assert_close(acqf(Xt), post.mean[..., 0, :] @ s.weights + s.lipschitz * width)


def test_model_list_chebyshev_bounds_differ():
    X, Y = _train_data()
    model = _model_list(X, Y)
    s = _scalarization("chebyshev", torch.tensor([0.3, 0.7], dtype=DT))
    Xt = torch.rand(50, 1, 2, generator=torch.Generator().manual_seed(2), dtype=DT)
    with torch.no_grad():
        spec = ScalarizedMultiTaskUCB(model, s, 2.0, bound="spectral")(Xt)
        dire = ScalarizedMultiTaskUCB(model, s, 2.0, bound="directional")(Xt)
    assert (dire <= spec + 1e-12).all() and (spec - dire).max() > 1e-3


def test_beta_schedule_evaluated_on_model():
    X, Y = _train_data()
    model = _icm(X, Y)
    sched = TheoremTwoBeta(b=1.0, sigma=0.1, delta=0.1)
    s = _scalarization("linear", torch.tensor([0.5, 0.5], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, sched)
    assert math.isclose(float(acqf.beta), float(sched(model)))
    assert float(ScalarizedMultiTaskUCB(model, s, ConstantBeta(0.7)).beta) == 0.7
    assert acqf.bound == "directional"  # the documented default


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("family", ["model_list", "exact_icm", "exact_lmc", "nystrom_icm"])
@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
@pytest.mark.parametrize("bound", ["spectral", "directional"])
def test_gradients_match_finite_differences(family, kind, bound):
    X, Y = _train_data()
    model = MODEL_FACTORIES[family](X, Y)
    s = _scalarization(kind, torch.tensor([0.45, 0.55], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.3, bound=bound)
    Xt = torch.rand(6, 1, 2, generator=torch.Generator().manual_seed(3), dtype=DT)
    Xg = Xt.clone().requires_grad_(True)
    acqf(Xg).sum().backward()
    h = 1e-6
    fd = torch.zeros_like(Xt)
    with torch.no_grad():
        for j in range(2):
            E = torch.zeros_like(Xt)
            E[..., j] = h
            fd[:, 0, j] = (acqf(Xt + E) - acqf(Xt - E)) / (2 * h)
    torch.testing.assert_close(Xg.grad, fd, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- optimisation


@pytest.mark.parametrize("family", ["model_list", "exact_icm"])
@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_optimize_acqf_beats_random_points(family, kind):
    X, Y = _train_data(seed=4)
    model = MODEL_FACTORIES[family](X, Y)
    s = _scalarization(kind, torch.tensor([0.6, 0.4], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.0)
    bounds = torch.tensor([[-0.5, 0.0], [1.0, 2.0]], dtype=DT)
    torch.manual_seed(0)
    cand, val = optimize_acqf(acqf, bounds, q=1, num_restarts=8, raw_samples=256)
    assert cand.shape == (1, 2)
    assert ((cand >= bounds[0]) & (cand <= bounds[1])).all()
    U = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
        1000, 1, 2, generator=torch.Generator().manual_seed(5), dtype=DT
    )
    with torch.no_grad():
        best_random = acqf(U).max()
        assert float(acqf(cand.unsqueeze(0))) >= float(best_random) - 1e-9


@pytest.mark.parametrize("bound", ["spectral", "directional"])
def test_discrete_path_returns_true_argmax(bound):
    X, Y = _train_data(seed=6)
    model = _icm(X, Y)
    s = _scalarization("chebyshev", torch.tensor([0.2, 0.8], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0, bound=bound)
    arms = torch.rand(300, 2, generator=torch.Generator().manual_seed(7), dtype=DT)
    cand, _ = optimize_acqf_discrete(acqf, q=1, choices=arms, max_batch_size=64)
    with torch.no_grad():
        values = torch.stack([acqf(a.view(1, 1, 2))[0] for a in arms])  # one arm at a time
    assert torch.equal(cand[0], arms[values.argmax()])


def test_default_beta_is_the_practical_width_one():
    from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
    from botorch_mtucb.models import ExactMultiTaskGP

    g = torch.Generator().manual_seed(0)
    X = torch.rand(8, 2, generator=g, dtype=torch.float64)
    model = ExactMultiTaskGP(X, torch.randn(8, 2, generator=g, dtype=torch.float64))
    s = ChebyshevScalarization(torch.tensor([0.5, 0.5]), torch.zeros(2, dtype=torch.float64))
    a = ScalarizedMultiTaskUCB(model, s)
    b = ScalarizedMultiTaskUCB(model, s, beta=1.0)
    Xt = torch.rand(5, 1, 2, generator=g, dtype=torch.float64)
    assert float(a.beta) == 1.0
    torch.testing.assert_close(a(Xt), b(Xt))
    assert not torch.allclose(a(Xt), ScalarizedMultiTaskUCB(model, s, beta=2.0)(Xt))
