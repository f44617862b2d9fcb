"""TheoremThreeBeta (paper 000, Theorem 3) against the formula written out by hand."""

import math

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import TheoremThreeBeta, TheoremTwoBeta
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DT = torch.float64


def _data(seed=0, t=40, n=2):
    g = torch.Generator().manual_seed(seed)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.2
    kernel = ICMKernel(k, n, task_covar=torch.tensor([[1.0, 0.3], [0.3, 0.7]], dtype=DT))
    X = torch.rand(t, 1, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    return kernel, X, Y


def test_matches_hand_formula_on_nystrom_model():
    kernel, X, Y = _data()
    model = NystromMultiTaskGP(X, Y, covar_module=kernel, noise=0.1, epsilon=0.3, delta=0.05,
                               generator=0)
    model = model.condition_on_observations(X[:2] + 0.01, Y[:2])
    b, sigma = 2.0, 0.1
    eps, delta, eta = 0.3, 0.05, 0.1
    rho = (1 + eps) / (1 - eps)
    S = float(model.log_det_variance_sum)
    expected = b * (1 + 1 / math.sqrt(1 - eps)) + sigma / math.sqrt(eta) * math.sqrt(
        2 * math.log(2 / delta) + rho * S
    )
    beta = TheoremThreeBeta(b=b, sigma=sigma)(model)  # ε, δ, η read from the model
    assert beta.dim() == 0 and float(beta) == pytest.approx(expected, rel=1e-12)
    explicit = TheoremThreeBeta(b=b, sigma=sigma, epsilon=eps, delta=delta, eta=eta)(model)
    assert float(explicit) == pytest.approx(expected, rel=1e-12)
    # grows with the data (one more round adds a positive log-det term)
    nxt = model.condition_on_observations(X[:1] + 0.5, Y[:1])
    assert float(TheoremThreeBeta(b=b, sigma=sigma)(nxt)) > float(beta)


def test_exact_model_uses_lemma_4_sum_and_exceeds_theorem_two():
    kernel, X, Y = _data(1)
    exact = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=0.1)
    with pytest.raises(ValueError, match="epsilon"):
        TheoremThreeBeta(b=1.0, sigma=0.1)(exact)
    beta3 = TheoremThreeBeta(b=1.0, sigma=0.1, epsilon=0.5, delta=0.1)(exact)
    logdet = 2 * float(exact.information_gain())
    expected = (1 + 1 / math.sqrt(0.5)) + 0.1 / math.sqrt(0.1) * math.sqrt(
        2 * math.log(20) + 3 * logdet
    )
    assert float(beta3) == pytest.approx(expected, rel=1e-10)
    assert float(beta3) > float(TheoremTwoBeta(b=1.0, sigma=0.1, delta=0.1)(exact))


def test_bad_input():
    for kw, match in [
        ({"b": -1.0, "sigma": 0.1}, "b"),
        ({"b": 1.0, "sigma": float("nan")}, "sigma"),
        ({"b": 1.0, "sigma": 0.1, "epsilon": 1.0}, "epsilon"),
        ({"b": 1.0, "sigma": 0.1, "delta": 0.0}, "delta"),
        ({"b": 1.0, "sigma": 0.1, "eta": 0.0}, "eta"),
    ]:
        with pytest.raises(ValueError, match=match):
            TheoremThreeBeta(**kw)
    kernel, X, Y = _data(2)
    model = NystromMultiTaskGP(X, Y, covar_module=kernel, noise=0.1, generator=0)
    with pytest.raises(ValueError, match="eta"):
        TheoremThreeBeta(b=1.0, sigma=0.1, eta=0.2)(model)
