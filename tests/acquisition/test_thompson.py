"""ScalarizedThompsonSampling: s_λ of one Matheron path, seeded, differentiable, q = 1."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.sampling.pathwise import draw_matheron_paths

from botorch_mtucb.acquisition.scalarization import (
    ChebyshevScalarization,
    LinearScalarization,
)
from botorch_mtucb.acquisition.thompson import ScalarizedThompsonSampling
from botorch_mtucb.models import ExactMultiTaskGP

DT = torch.float64


def _model(seed: int = 0, N: int = 8) -> ExactMultiTaskGP:
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(N, 2, dtype=DT, generator=gen)
    Y = torch.stack([torch.sin(3 * X[:, 0]) + X[:, 1], torch.cos(2 * X.sum(-1))], dim=-1)
    return ExactMultiTaskGP(X, Y, noise=1e-2)


def _test_points(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(5), dtype=DT)


@pytest.mark.parametrize(
    "scal",
    [
        LinearScalarization([0.3, 0.7], minimize=[False, True]),
        ChebyshevScalarization([0.6, 0.4], ref_point=[-2.0, -2.0], minimize=[True, False]),
    ],
)
def test_value_is_the_scalarized_path(scal):
    model = _model()
    acqf = ScalarizedThompsonSampling(model, scal, seed=3)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        paths = draw_matheron_paths(model, torch.Size([1]))
    X = _test_points((4, 3, 1, 2))
    direct = paths(X.reshape(-1, 2))[0].transpose(-1, -2)  # 12 x n
    expected = scal(direct).reshape(4, 3)
    torch.testing.assert_close(acqf(X), expected)
    assert acqf(X[0, 0]).shape == (1,)  # a 1 x d input is one point


def test_average_over_seeds_approaches_the_scalarized_mean():
    # E[λᵀ f̃(x)] = λᵀ μ(x) for a linear s_λ (the Matheron path's mean is the posterior mean
    # whatever the random features); the mean over S seeds has standard error
    # sd(λᵀ f(x)) / √S: a 5-standard-error band (plus a small allowance) can fail.
    model = _model(1)
    scal = LinearScalarization([0.4, 0.6])
    X = _test_points((6, 1, 2))
    S = 200
    draws = torch.stack([ScalarizedThompsonSampling(model, scal, seed=s)(X) for s in range(S)])
    with torch.no_grad():
        post = model.posterior(X)
        mean = scal(post.mean.squeeze(-2))
        w = scal.weights.to(DT)
        cov = post.distribution.covariance_matrix  # 6 x n x n (q = 1)
        sd = (w @ cov @ w).clamp_min(0).sqrt()
    err = (draws.detach().mean(0) - mean).abs()
    assert (err <= 5 * sd / S**0.5 + 1e-6).all(), (err, sd)
    assert (draws.std(0) > 0.5 * sd).all()  # one path per seed: a random function
    averaged = ScalarizedThompsonSampling(model, scal, num_paths=S, seed=0)(X)
    assert ((averaged - mean).abs() <= 5 * sd / S**0.5 + 1e-6).all()  # k paths averaged


def test_optimize_acqf_runs_with_gradients():
    model = _model()
    scal = ChebyshevScalarization([0.5, 0.5], ref_point=[-2.0, -2.0])
    acqf = ScalarizedThompsonSampling(model, scal, seed=0)
    X = _test_points((5, 1, 2)).requires_grad_(True)
    acqf(X).sum().backward()
    assert X.grad is not None and torch.isfinite(X.grad).all() and X.grad.abs().sum() > 0
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    torch.manual_seed(0)
    cand, value = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=32)
    assert cand.shape == (1, 2) and ((cand >= 0) & (cand <= 1)).all()
    grid = _test_points((64, 1, 2))
    assert float(value) >= float(acqf(grid).detach().max()) - 1e-6


def test_seed_reproducibility_and_global_rng_untouched():
    model = _model()
    scal = LinearScalarization([0.5, 0.5])
    X = _test_points((7, 1, 2))
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = ScalarizedThompsonSampling(model, scal, seed=4)
    assert torch.equal(torch.get_rng_state(), state)
    b = ScalarizedThompsonSampling(model, scal, seed=4)
    c = ScalarizedThompsonSampling(model, scal, seed=5)
    torch.testing.assert_close(a(X), b(X), rtol=0, atol=0)
    assert not torch.allclose(a(X), c(X))


def test_x_pending_and_bad_arguments_refused():
    model = _model()
    scal = LinearScalarization([0.5, 0.5])
    pending = torch.rand(2, 2, dtype=DT)
    with pytest.raises(ValueError, match="X_pending"):
        ScalarizedThompsonSampling(model, scal, X_pending=pending)
    acqf = ScalarizedThompsonSampling(model, scal, seed=0)
    with pytest.raises(ValueError, match="X_pending"):
        acqf.set_X_pending(pending)
    acqf.set_X_pending(None)  # none pending is fine
    with pytest.raises(ValueError, match="q = 1"):
        acqf(torch.rand(3, 2, 2, dtype=DT))
    with pytest.raises(ValueError, match="3 weights"):
        ScalarizedThompsonSampling(model, LinearScalarization([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError, match="num_paths"):
        ScalarizedThompsonSampling(model, scal, num_paths=0)
    with pytest.raises(ValueError, match="seed"):
        ScalarizedThompsonSampling(model, scal, seed=1.5)
    with pytest.raises(ValueError, match="scalarization"):
        ScalarizedThompsonSampling(model, torch.tensor([0.5, 0.5]))
    with pytest.raises(TypeError, match="X"):
        acqf(torch.zeros(3, 1, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="num_outputs >= 2"):
        ScalarizedThompsonSampling(SingleTaskGP(torch.rand(6, 2, dtype=DT),
                                                torch.rand(6, 1, dtype=DT)), scal)
    with pytest.raises(ValueError, match="batch shape"):
        ScalarizedThompsonSampling(SingleTaskGP(torch.rand(3, 6, 2, dtype=DT),
                                                torch.rand(3, 6, 2, dtype=DT)), scal)


def test_moved_acquisition_draws_its_paths_on_the_moved_model():
    """``.to(float32)`` draws the paths again on the moved model (BoTorch's drawn paths do not
    move): float32 values, the same seed gives the same paths, and they are the float32
    model's seeded Matheron paths."""
    scal = LinearScalarization([0.3, 0.7])
    acqf = ScalarizedThompsonSampling(_model(), scal, seed=3).to(torch.float32)
    X = _test_points((4, 1, 2)).float()
    out = acqf(X)
    assert out.dtype == torch.float32 and bool(out.isfinite().all())
    again = ScalarizedThompsonSampling(_model(), scal, seed=3).to(torch.float32)
    torch.testing.assert_close(again(X), out)
    model32 = _model().to(torch.float32)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        paths = draw_matheron_paths(model32, torch.Size([1]))
    torch.testing.assert_close(out, scal(paths(X.reshape(-1, 2))[0].transpose(-1, -2)))
