"""The confidence-radius schedules (paper 000, Theorems 2 and 3, Lemma 4) against hand formulas."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import ModelListGP, SingleTaskGP
from gpytorch.kernels import MaternKernel, RBFKernel

from botorch_mtucb.acquisition import (
    ConstantBeta,
    TheoremThreeBeta,
    TheoremTwoBeta,
    log_det_information,
)
from botorch_mtucb.kernels import ICMKernel, SumOfSeparableKernel, kron_interleaved
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DT = torch.float64
pytestmark = pytest.mark.filterwarnings("ignore::botorch.exceptions.warnings.InputDataWarning")


def _rbf(lengthscale: float) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def _data(t: int = 7, d: int = 2, n: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, d, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    return X, Y


def _icm_model(X, Y, B, eta=0.1, lengthscale=0.3):
    kern = ICMKernel(_rbf(lengthscale), num_tasks=B.shape[0], task_covar=B)
    return ExactMultiTaskGP(X, Y, covar_module=kern, noise=eta)


def _lmc_model(X, Y, eta=0.1):
    B1 = torch.tensor([[1.0, 0.6], [0.6, 0.5]], dtype=DT)
    B2 = torch.tensor([[0.3, -0.1], [-0.1, 0.8]], dtype=DT)
    m = MaternKernel(nu=2.5).to(DT)
    m.lengthscale = 0.4
    kern = SumOfSeparableKernel(
        [ICMKernel(_rbf(0.3), 2, task_covar=B1), ICMKernel(m, 2, task_covar=B2)]
    )
    return ExactMultiTaskGP(X, Y, covar_module=kern, noise=eta)


def _lemma4_sum(make_model, X, Y, prior_block, eta):
    """Σ_s log det(I_n + Γ_{s−1}(x_s, x_s)/η) by conditioning on the first s−1 points."""
    n = Y.shape[-1]
    eye = torch.eye(n, dtype=DT)
    total = torch.logdet(eye + prior_block(X[:1]) / eta)
    for s in range(1, X.shape[0]):
        model = make_model(X[:s], Y[:s])
        _, cov = model.task_posterior(X[s : s + 1].unsqueeze(0))
        total = total + torch.logdet(eye + cov[0, 0] / eta)
    return total


def test_constant_beta():
    assert float(ConstantBeta(2.5)(None)) == 2.5
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="beta"):
            ConstantBeta(bad)


def test_theorem_two_beta_icm_matches_dense_logdet_and_lemma4():
    X, Y = _data()
    B = torch.tensor([[1.0, 0.7], [0.7, 0.9]], dtype=DT)
    eta, b, sigma, delta = 0.1, 1.3, 0.2, 0.05
    model = _icm_model(X, Y, B, eta)
    # brute-force dense G_t in the interleaved order
    G = kron_interleaved(_rbf(0.3)(X).to_dense(), B)
    logdet = torch.logdet(torch.eye(G.shape[0], dtype=DT) + G / eta).detach()
    torch.testing.assert_close(log_det_information(model), logdet)
    # Lemma 4: the same number as the sequential sum of per-round log-determinants
    seq = _lemma4_sum(
        lambda X_, Y_: _icm_model(X_, Y_, B, eta),
        X,
        Y,
        lambda x: _rbf(0.3)(x).to_dense()[0, 0] * B,
        eta,
    )
    torch.testing.assert_close(seq, logdet)
    expected = b + sigma / math.sqrt(eta) * math.sqrt(2 * math.log(1 / delta) + float(logdet))
    beta = TheoremTwoBeta(b=b, sigma=sigma, eta=eta, delta=delta)(model)
    assert math.isclose(float(beta), expected, rel_tol=1e-10)
    # eta read from the model gives the same value
    beta_from_model = TheoremTwoBeta(b, sigma, None, delta)(model)
    assert math.isclose(float(beta_from_model), expected, rel_tol=1e-10)


def test_theorem_two_beta_dense_lmc_matches_lemma4():
    X, Y = _data(seed=1)
    model = _lmc_model(X, Y)
    kern = model.covar_module

    def prior_block(x):
        return kern(x).to_dense()

    seq = _lemma4_sum(_lmc_model, X, Y, prior_block, 0.1)
    torch.testing.assert_close(log_det_information(model), seq)


def _single_task(X, y, noise, lengthscale=0.3):
    m = SingleTaskGP(X, y, outcome_transform=None)
    m.likelihood.noise = noise
    m.covar_module.lengthscale = lengthscale
    return m


def test_model_list_logdet_is_sum_of_sequential_variance_terms():
    X, Y = _data(t=6, seed=2)
    noises = (0.1, 0.05)
    models = [_single_task(X, Y[:, i : i + 1], noises[i]) for i in range(2)]
    model = ModelListGP(*models)
    model.eval()
    # independent reference: Lemma 4 per task, conditioning GPs on prefixes of the data
    total = torch.zeros((), dtype=DT)
    for i, full in enumerate(models):
        state = full.state_dict()
        prior_var = full.covar_module(X[:1]).to_dense()[0, 0]
        total = total + torch.log1p(prior_var / noises[i])
        for s in range(1, X.shape[0]):
            sub = SingleTaskGP(X[:s], Y[:s, i : i + 1], outcome_transform=None)
            sub.load_state_dict(state, strict=False)
            sub.eval()
            var = sub.posterior(X[s : s + 1]).variance.reshape(())
            total = total + torch.log1p(var / noises[i])
    torch.testing.assert_close(log_det_information(model).detach(), total.detach())
    # different noises: eta is not a single scalar, so it must be given
    with pytest.raises(ValueError, match="pass `eta`"):
        TheoremTwoBeta(1.0, 0.1)(model)


def test_model_list_shared_noise_reads_eta():
    X, Y = _data(t=5, seed=3)
    model = ModelListGP(*[_single_task(X, Y[:, i : i + 1], 0.2) for i in range(2)])
    ld = float(log_det_information(model))
    expected = 0.5 + 0.1 / math.sqrt(0.2) * math.sqrt(2 * math.log(10.0) + ld)
    assert math.isclose(float(TheoremTwoBeta(0.5, 0.1, delta=0.1)(model)), expected, rel_tol=1e-8)


def test_eta_mismatch_and_bad_arguments():
    X, Y = _data()
    model = _icm_model(X, Y, torch.eye(2, dtype=DT), eta=0.1)
    with pytest.raises(ValueError, match="differs from the model's noise"):
        TheoremTwoBeta(1.0, 0.1, eta=0.5)(model)
    with pytest.raises(ValueError, match="delta"):
        TheoremTwoBeta(1.0, 0.1, delta=0.0)
    with pytest.raises(ValueError, match="`b`"):
        TheoremTwoBeta(-1.0, 0.1)
    with pytest.raises(ValueError, match="sigma"):
        TheoremTwoBeta(1.0, float("nan"))
    with pytest.raises(ValueError, match="eta"):
        TheoremTwoBeta(1.0, 0.1, eta=0.0)
    with pytest.raises(ValueError, match="Cannot compute"):
        log_det_information(torch.nn.Linear(2, 2))


def test_beta_grows_with_data():
    X, Y = _data(t=12, seed=4)
    B = torch.eye(2, dtype=DT)
    sched = TheoremTwoBeta(1.0, 0.1, delta=0.1)
    betas = [float(sched(_icm_model(X[:t], Y[:t], B))) for t in (1, 4, 12)]
    assert betas[0] < betas[1] < betas[2]


def _nystrom_data(seed=0, t=40, n=2):
    """A 1-d ICM kernel and t random observations of n tasks."""
    g = torch.Generator().manual_seed(seed)
    k = RBFKernel().to(DT)
    k.lengthscale = 0.2
    kernel = ICMKernel(k, n, task_covar=torch.tensor([[1.0, 0.3], [0.3, 0.7]], dtype=DT))
    X = torch.rand(t, 1, generator=g, dtype=DT)
    Y = torch.randn(t, n, generator=g, dtype=DT)
    return kernel, X, Y


def test_theorem_three_beta_matches_hand_formula_on_nystrom_model():
    kernel, X, Y = _nystrom_data()
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


def test_theorem_three_beta_on_exact_model_uses_lemma_4_and_exceeds_theorem_two():
    kernel, X, Y = _nystrom_data(1)
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


def test_theorem_three_beta_bad_input():
    for kw, match in [
        ({"b": -1.0, "sigma": 0.1}, "b"),
        ({"b": 1.0, "sigma": float("nan")}, "sigma"),
        ({"b": 1.0, "sigma": 0.1, "epsilon": 1.0}, "epsilon"),
        ({"b": 1.0, "sigma": 0.1, "delta": 0.0}, "delta"),
        ({"b": 1.0, "sigma": 0.1, "eta": 0.0}, "eta"),
    ]:
        with pytest.raises(ValueError, match=match):
            TheoremThreeBeta(**kw)
    kernel, X, Y = _nystrom_data(2)
    model = NystromMultiTaskGP(X, Y, covar_module=kernel, noise=0.1, generator=0)
    with pytest.raises(ValueError, match="eta"):
        TheoremThreeBeta(b=1.0, sigma=0.1, eta=0.2)(model)
