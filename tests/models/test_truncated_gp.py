"""TruncatedGP vs BoTorch's SingleTaskGP and brute-force t x t formulas."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel
from gpytorch.means import ZeroMean

from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import TruncatedGP

DT = torch.float64


LAM = 0.7


def _rbf(lengthscale: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def _reference_gp(X: torch.Tensor, targets: torch.Tensor, lengthscale: float = 0.2):
    """Independent reference: SingleTaskGP, zero mean, fixed noise λ, same RBF kernel."""
    gp = SingleTaskGP(
        X,
        targets.reshape(-1, 1),
        train_Yvar=torch.full((X.shape[0], 1), LAM, dtype=DT),
        covar_module=_rbf(lengthscale),
        mean_module=ZeroMean(),
        outcome_transform=None,
    )
    gp.eval()
    return gp


def _levels(t: int, alpha: float, v: float) -> torch.Tensor:
    s = torch.arange(1, t + 1, dtype=DT)
    return v ** (1 / (1 + alpha)) * s ** (1 / (2 * (1 + alpha)))


def _heavy_data(t: int, seed: int, d: int = 1):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, d, dtype=DT, generator=g)
    # Student-t(1.5)-like heavy tails: normal / sqrt(chi²) ratios, scaled.
    z = torch.randn(t, dtype=DT, generator=g)
    w = torch.rand(t, dtype=DT, generator=g).clamp_min(1e-3)
    Y = (torch.sin(6 * X[:, 0]) + z / w.sqrt()).unsqueeze(-1)
    return X, Y


def test_no_truncation_equals_gp_posterior() -> None:
    X, Y = _heavy_data(40, 0, d=2)
    model = TruncatedGP(X, Y, 1.0, 2.0, covar_module=_rbf(), lam=LAM, truncate=False)
    gp = _reference_gp(X, Y[:, 0])
    Xt = torch.rand(5, 3, 2, dtype=DT, generator=torch.Generator().manual_seed(1))
    post, ref = model.posterior(Xt), gp.posterior(Xt)
    assert post.mean.shape == (5, 3, 1)
    torch.testing.assert_close(post.mean, ref.mean, atol=1e-8, rtol=1e-8)
    torch.testing.assert_close(
        post.distribution.covariance_matrix, ref.distribution.covariance_matrix, atol=1e-8, rtol=0
    )
    noisy = model.posterior(Xt, observation_noise=True).variance
    torch.testing.assert_close(noisy, ref.variance + LAM, atol=1e-8, rtol=0)


def test_truncation_zeroes_exactly_beyond_own_round_level() -> None:
    alpha, v = 0.5, 1.5
    X, Y = _heavy_data(60, 2)
    model = TruncatedGP(X, Y, alpha, v, covar_module=_rbf(), lam=LAM)
    b = _levels(60, alpha, v)
    expected = torch.where(Y[:, 0].abs() <= b, Y[:, 0], torch.zeros(60, dtype=DT))
    assert 0 < int((expected == 0).sum()) < 60  # truncation is active, not everything
    torch.testing.assert_close(model.train_targets, expected, atol=0, rtol=0)
    assert model.truncation_level(7) == pytest.approx(float(b[6]), rel=1e-14)
    Xt = torch.rand(9, 1, 1, dtype=DT)
    gp = _reference_gp(X, expected)
    torch.testing.assert_close(model.posterior(Xt).mean, gp.posterior(Xt).mean, atol=1e-8, rtol=0)
    # Conditioning one at a time gives each reward its own round's level too.
    m = TruncatedGP(X[:10], Y[:10], alpha, v, covar_module=_rbf(), lam=LAM)
    for s in range(10, 60):
        m = m.condition_on_observations(X[s : s + 1], Y[s : s + 1])
    torch.testing.assert_close(m.train_targets, expected, atol=0, rtol=0)
    torch.testing.assert_close(m.posterior(Xt).mean, gp.posterior(Xt).mean, atol=1e-8, rtol=0)


def _arm_problem(num_arms: int = 30):
    arms = torch.linspace(0, 1, num_arms, dtype=DT).unsqueeze(-1)
    with torch.no_grad():
        K = _rbf()(arms, arms).to_dense()
    return arms, K


def test_arm_fast_path_matches_dense_and_log_det() -> None:
    arms, K = _arm_problem()
    g = torch.Generator().manual_seed(4)
    idx = torch.randint(0, 30, (200,), generator=g)
    y = (torch.randn(200, dtype=DT, generator=g) * 3).unsqueeze(-1)
    kern = PrecomputedKernel(K)
    fast = TruncatedGP(idx[:20, None].to(DT), y[:20], 1.0, 2.0, kern, lam=LAM)
    via_arms = TruncatedGP(arms[idx[:20]], y[:20], 1.0, 2.0, _rbf(), lam=LAM, arms=arms)
    for s in range(20, 200):  # rank-one updates
        fast = fast.condition_on_observations(idx[s : s + 1, None].to(DT), y[s : s + 1])
        via_arms = via_arms.condition_on_observations(arms[idx[s : s + 1]], y[s : s + 1])
    dense = TruncatedGP(arms[idx], y, 1.0, 2.0, _rbf(), lam=LAM)
    all_idx = torch.arange(30, dtype=DT).reshape(30, 1)
    p_fast, p_dense = fast.posterior(all_idx.unsqueeze(0)), dense.posterior(arms.unsqueeze(0))
    torch.testing.assert_close(p_fast.mean, p_dense.mean, atol=1e-9, rtol=0)
    torch.testing.assert_close(
        p_fast.distribution.covariance_matrix,
        p_dense.distribution.covariance_matrix,
        atol=1e-9,
        rtol=0,
    )
    torch.testing.assert_close(via_arms.posterior(arms).mean, p_dense.mean[0], atol=1e-9, rtol=0)
    # ln det(I_t + K_t/λ) by brute force on the t x t matrix.
    Kt = K[idx][:, idx]
    ref = torch.logdet(torch.eye(200, dtype=DT) + Kt / LAM).item()
    assert fast.log_det() == pytest.approx(ref, rel=1e-10)
    assert dense.log_det() == pytest.approx(ref, rel=1e-10)
    # Batch conditioning (rebuild from sufficient statistics) agrees as well.
    batch = TruncatedGP(idx[:20, None].to(DT), y[:20], 1.0, 2.0, kern, lam=LAM)
    batch = batch.condition_on_observations(idx[20:, None].to(DT), y[20:])
    torch.testing.assert_close(batch.posterior(all_idx).mean, p_dense.mean[0], atol=1e-9, rtol=0)


def test_rank_one_updates_do_not_drift() -> None:
    arms, K = _arm_problem(50)
    g = torch.Generator().manual_seed(5)
    T = 3000
    idx = torch.randint(0, 50, (T,), generator=g)
    y = torch.randn(T, 1, dtype=DT, generator=g)
    kern = PrecomputedKernel(K)
    m = TruncatedGP(torch.zeros(0, 1, dtype=DT), torch.zeros(0, 1, dtype=DT), 1.0, 2.0, kern)
    for s in range(T):
        m = m.condition_on_observations(idx[s : s + 1, None].to(DT), y[s : s + 1])
    fresh = TruncatedGP(idx[:, None].to(DT), y, 1.0, 2.0, kern)  # from counts and sums
    all_idx = torch.arange(50, dtype=DT).reshape(50, 1)
    torch.testing.assert_close(m.posterior(all_idx).mean, fresh.posterior(all_idx).mean,
                               atol=1e-10, rtol=0)
    torch.testing.assert_close(m.posterior(all_idx).variance, fresh.posterior(all_idx).variance,
                               atol=1e-10, rtol=0)


def test_beta_schedules_match_theorem_1_and_authors() -> None:
    alpha, v, lam, delta, B = 0.8, 3.0, LAM, 0.05, 1.7
    X, Y = _heavy_data(25, 6)
    with torch.no_grad():
        K = _rbf()(X, X).to_dense()
    log_det = torch.logdet(torch.eye(25, dtype=DT) + K / lam).item()
    b_t = v ** (1 / (1 + alpha)) * 25 ** (1 / (2 * (1 + alpha)))
    theory = TruncatedGP(X, Y, alpha, v, _rbf(), lam=lam, delta=delta, B=B)
    expected = B + 3 / math.sqrt(lam) * b_t * math.sqrt(log_det + 2 * math.log(1 / delta))
    assert theory.beta() == pytest.approx(expected, rel=1e-10)
    assert theory.truncation_level() == pytest.approx(b_t, rel=1e-14)
    authors = TruncatedGP(X, Y, alpha, v, _rbf(), lam=lam, delta=delta, B=B, constants="authors")
    b_26 = v ** (1 / (1 + alpha)) * 26 ** (1 / (2 * (1 + alpha)))
    assert authors.beta() == pytest.approx(B * math.sqrt(lam) + b_26 * math.sqrt(math.log(26)))
    empty = TruncatedGP(X[:0], Y[:0], alpha, v, _rbf(), lam=lam, delta=delta, B=B)
    assert empty.beta() == pytest.approx(B)  # b_0 = 0


def test_outlier_bounded_for_tgp_but_wrecks_plain_gp() -> None:
    """Paper 001 Fig. 1(f), small: one 1e6 reward among well-behaved ones."""
    arms, K = _arm_problem(40)
    g = torch.Generator().manual_seed(7)
    f = K @ (torch.rand(40, dtype=DT, generator=g) * 2 - 1)
    f = f / f.abs().max()
    T = 400
    idx = torch.randint(0, 40, (T,), generator=g)
    y_clean = (f[idx] + 0.1 * torch.randn(T, dtype=DT, generator=g)).unsqueeze(-1)
    y_out = y_clean.clone()
    y_out[150, 0] = 1e6
    X = arms[idx]
    kw = dict(covar_module=_rbf(), lam=1.0, arms=arms)
    trunc_out = TruncatedGP(X, y_out, 1.0, 2.0, **kw).posterior(arms).mean
    trunc_clean = TruncatedGP(X, y_clean, 1.0, 2.0, **kw).posterior(arms).mean
    plain_out = TruncatedGP(X, y_out, 1.0, 2.0, truncate=False, **kw).posterior(arms).mean
    # The outlier is zeroed (|1e6| > b_151): the mean moves only by the weight of one
    # clean reward, ≤ |y_clean[150]| · ‖row of K(K+λI)⁻¹‖∞ < 1.
    assert (trunc_out - trunc_clean).abs().max() < 1.0
    assert (plain_out - trunc_clean).abs().max() > 1e4
    assert (trunc_clean - f.unsqueeze(-1)).abs().max() < 0.2


def test_condition_leaves_original_unchanged() -> None:
    X, Y = _heavy_data(15, 8)
    m = TruncatedGP(X, Y, 1.0, 2.0, _rbf(), lam=LAM)
    Xt = torch.rand(4, 1, dtype=DT)
    before = m.posterior(Xt).mean.clone()
    X_copy, Y_copy = X.clone(), Y.clone()
    m2 = m.condition_on_observations(torch.rand(2, 1, dtype=DT), torch.randn(2, 1, dtype=DT))
    torch.testing.assert_close(m.posterior(Xt).mean, before, atol=0, rtol=0)
    assert m2.num_observations == 17 and m.num_observations == 15
    assert torch.equal(X, X_copy) and torch.equal(Y, Y_copy)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alpha=0.0), "alpha"),
        (dict(alpha=1.5), "alpha"),
        (dict(v=0.0), "`v`"),
        (dict(v=-1.0), "`v`"),
        (dict(lam=0.0), "lam"),
        (dict(delta=0.0), "delta"),
        (dict(B=-1.0), "`B`"),
        (dict(constants="paper"), "constants"),
    ],
)
def test_bad_parameters(kwargs: dict, match: str) -> None:
    X, Y = _heavy_data(5, 9)
    args = dict(alpha=1.0, v=2.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        TruncatedGP(X, Y, **args)


def test_bad_data() -> None:
    X, Y = _heavy_data(5, 9)
    with pytest.raises(ValueError, match="train_Y"):
        TruncatedGP(X, Y[:4], 1.0, 2.0)
    with pytest.raises(ValueError, match="train_X"):
        TruncatedGP(X.unsqueeze(0), Y.unsqueeze(0), 1.0, 2.0)
    Yn = Y.clone()
    Yn[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        TruncatedGP(X, Yn, 1.0, 2.0)
    arms = torch.linspace(0, 1, 5, dtype=DT).unsqueeze(-1)
    with pytest.raises(ValueError, match="rows of `arms`"):
        TruncatedGP(X, Y, 1.0, 2.0, arms=arms)
    m = TruncatedGP(arms, Y, 1.0, 2.0, arms=arms)
    with pytest.raises(ValueError, match="rows of `arms`"):
        m.posterior(torch.full((1, 1), 0.33, dtype=DT))
    with pytest.raises(ValueError, match="`Y`"):
        m.condition_on_observations(arms[:2], torch.zeros(3, 1, dtype=DT))
