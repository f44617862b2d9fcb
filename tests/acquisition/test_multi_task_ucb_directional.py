"""ScalarizedMultiTaskUCB's directional bound against the spectral one, and UCB validity.

Split from ``test_multi_task_ucb.py`` (its helpers). The directional width is never above the
spectral one on random (also rank-deficient and diagonal) posteriors, both reduce to s_λ(μ) at
β = 0, and with the Theorem-2 radius both cover s_λ(f) on a grid for an f drawn from the RKHS
of a known ICM kernel (paper 000 §5) in most rounds, where the mean alone does not.
"""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
    TheoremTwoBeta,
    sample_scalarization_weights,
)
from tests.acquisition.test_multi_task_ucb import (
    DT,
    FixedPosteriorModel,
    icm_grid_model,
    make_rkhs_problem,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


@pytest.mark.parametrize("n", [2, 3, 6])
@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_directional_never_above_spectral_on_random_posteriors(n, kind):
    g = torch.Generator().manual_seed(10 + n)
    b = 400
    mean = 3 * torch.randn(b, n, generator=g, dtype=DT)
    A = torch.randn(b, n, n, generator=g, dtype=DT)
    rank = torch.randint(1, n + 1, (b,), generator=g)
    A = A * (torch.arange(n)[None, None, :] < rank[:, None, None])  # some rank-deficient
    cov = A @ A.transpose(-1, -2) * torch.rand(b, 1, 1, generator=g, dtype=DT)
    cov[::5] = torch.diag_embed(torch.rand(len(cov[::5]), n, generator=g, dtype=DT))  # diagonal
    model = FixedPosteriorModel(mean, cov)
    X = torch.zeros(b, 1, 1, dtype=DT)
    W = sample_scalarization_weights(n, 20, kind=kind, generator=g)
    for i, w in enumerate(W):
        minimize = (torch.rand(n, generator=g) < 0.3).tolist()
        if kind == "linear":
            s = LinearScalarization(w, minimize)
        else:
            s = ChebyshevScalarization(w, torch.randn(n, generator=g, dtype=DT), minimize)
        beta = 5 * float(torch.rand((), generator=g, dtype=DT)) if i else 0.0
        spec = ScalarizedMultiTaskUCB(model, s, beta, bound="spectral")(X)
        dire = ScalarizedMultiTaskUCB(model, s, beta, bound="directional")(X)
        assert (dire <= spec + 1e-12 * (1 + spec.abs())).all()
        if beta == 0.0:  # both reduce to s_λ(μ)
            torch.testing.assert_close(dire, s(mean))
            torch.testing.assert_close(spec, s(mean))


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_ucb_validity_on_rkhs_function(kind):
    """Both UCBs with the Theorem-2 radius cover s_λ(f(x)) on the whole grid in most rounds.

    f is drawn from the RKHS of a known ICM kernel (paper 000 §5), noise N(0, 0.1² I), η = 0.1,
    b the exact RKHS norm. Points are chosen by MT-KB with the directional bound.
    """
    n, T = 2, 15
    prob = make_rkhs_problem(n, seed=11)
    g = torch.Generator().manual_seed(12)
    ref = prob.F.min(0).values - 0.1
    sched = TheoremTwoBeta(b=prob.rkhs_norm, sigma=0.1, delta=0.1)
    X = prob.grid[torch.randint(0, 101, (1,), generator=g)]
    Y = prob.f(X) + 0.1 * torch.randn(1, n, generator=g, dtype=DT)
    grid = prob.grid.unsqueeze(-2)
    valid = {"spectral": 0, "directional": 0, "mean only": 0}
    for _ in range(T):
        model = icm_grid_model(prob, X, Y)
        w = sample_scalarization_weights(n, 1, kind=kind, generator=g)[0]
        s = LinearScalarization(w) if kind == "linear" else ChebyshevScalarization(w, ref)
        truth = s(prob.F)
        with torch.no_grad():
            spec = ScalarizedMultiTaskUCB(model, s, sched, bound="spectral")(grid)
            acqf = ScalarizedMultiTaskUCB(model, s, sched, bound="directional")
            dire = acqf(grid)
            mean_only = ScalarizedMultiTaskUCB(model, s, 0.0)(grid)
        assert (dire <= spec + 1e-12).all()
        valid["spectral"] += bool((spec >= truth).all())
        valid["directional"] += bool((dire >= truth).all())
        valid["mean only"] += bool((mean_only >= truth).all())
        x = prob.grid[dire.argmax()].unsqueeze(0)
        X = torch.cat([X, x])
        Y = torch.cat([Y, prob.f(x) + 0.1 * torch.randn(1, n, generator=g, dtype=DT)])
    assert valid["directional"] >= 0.9 * T and valid["spectral"] >= 0.9 * T
    assert valid["mean only"] <= 0.5 * T  # the check can fail: the mean alone is no UCB
