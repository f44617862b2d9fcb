"""AdaptiveTruncationGP vs kernel ridge regression / GP and brute-force feature-space formulas."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel
from gpytorch.means import ZeroMean

from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import AdaptiveTruncationGP

DT = torch.float64


LAM = 0.8


def _rbf(lengthscale: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def _heavy(t: int, seed: int, X: torch.Tensor | None = None, d: int = 1):
    g = torch.Generator().manual_seed(seed)
    if X is None:
        X = torch.rand(t, d, dtype=DT, generator=g)
    z = torch.randn(t, dtype=DT, generator=g)
    w = torch.rand(t, dtype=DT, generator=g).clamp_min(1e-4)
    return X, (torch.cos(5 * X[:, 0]) + z / w.sqrt()).unsqueeze(-1)


def _brute_force(phi_train, y, phi_test, b, lam=LAM):
    """Algorithm 2 literally: rows u_i of V^{-1/2}Φᵀ, r̂_i = Σ_τ u_iτ y_τ 1{|u_iτ y_τ| ≤ b}."""
    m = phi_train.shape[-1]
    V = phi_train.T @ phi_train + lam * torch.eye(m, dtype=DT)
    e, Q = torch.linalg.eigh(V)
    V_mh = Q @ torch.diag(e.rsqrt()) @ Q.T
    U = V_mh @ phi_train.T  # m x t
    r_hat = torch.zeros(m, dtype=DT)
    kept = 0
    for i in range(m):  # one direction at a time, as in the paper
        w = U[i] * y
        mask = w.abs() <= b
        kept += int(mask.sum())
        r_hat[i] = w[mask].sum()
    theta = V_mh @ r_hat
    var_qff = lam * ((phi_test @ torch.linalg.inv(V)) * phi_test).sum(-1)
    return phi_test @ theta, var_qff, kept, U.numel()


def _gp(X, Y, lengthscale=0.2):
    gp = SingleTaskGP(
        X,
        Y,
        train_Yvar=torch.full_like(Y, LAM),
        covar_module=_rbf(lengthscale),
        mean_module=ZeroMean(),
        outcome_transform=None,
    )
    return gp.eval()


def test_nystrom_all_points_no_truncation_equals_krr_and_gp() -> None:
    X, Y = _heavy(30, 0, d=2)
    nys = NystromFeatures(_rbf(), q=1e6)  # p = 1 for every point: exact on span(k(·, x_i))
    model = AdaptiveTruncationGP(X, Y, 1.0, 2.0, nys, lam=LAM, truncate=False)
    assert model.num_features == 30
    Xt = torch.rand(6, 2, dtype=DT, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        K, k_t = _rbf()(X, X).to_dense(), _rbf()(Xt, X).to_dense()
    krr = k_t @ torch.linalg.solve(K + LAM * torch.eye(30, dtype=DT), Y)
    post = model.posterior(Xt)
    torch.testing.assert_close(post.mean, krr, atol=1e-7, rtol=0)
    ref = _gp(X, Y).posterior(Xt)
    torch.testing.assert_close(post.variance, ref.variance, atol=1e-7, rtol=0)
    torch.testing.assert_close(
        post.distribution.covariance_matrix,
        ref.distribution.covariance_matrix,
        atol=1e-7,
        rtol=0,
    )


def test_qff_no_truncation_equals_feature_ridge_and_approximates_gp() -> None:
    X, Y = _heavy(40, 2)
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    model = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, lam=LAM, truncate=False)
    Xt = torch.linspace(0, 1, 11, dtype=DT).unsqueeze(-1)
    Phi, phi = qff(X), qff(Xt)
    V = Phi.T @ Phi + LAM * torch.eye(64, dtype=DT)
    ridge = phi @ torch.linalg.solve(V, Phi.T @ Y)
    post = model.posterior(Xt)
    torch.testing.assert_close(post.mean, ridge, atol=1e-9, rtol=0)
    var = LAM * (phi * torch.linalg.solve(V, phi.T).T).sum(-1)
    torch.testing.assert_close(post.variance[:, 0], var, atol=1e-9, rtol=0)
    gp = _gp(X, Y).posterior(Xt)  # QFF error ~1e-11 ⇒ same as the exact GP
    torch.testing.assert_close(post.mean, gp.mean, atol=1e-6, rtol=0)
    torch.testing.assert_close(post.variance, gp.variance, atol=1e-6, rtol=0)


@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_per_direction_truncation_matches_brute_force(kind: str) -> None:
    X, Y = _heavy(60, 3)
    if kind == "qff":
        feats = QuadratureFourierFeatures(0.2, 24, 1)
    else:
        D = torch.linspace(0, 1, 9, dtype=DT).unsqueeze(-1)
        feats = NystromFeatures(_rbf()).with_dictionary(D)
    model = AdaptiveTruncationGP(
        X, Y, 0.6, 1.5, feats, lam=LAM, horizon=100, sample_dictionary=False
    )
    b = model.truncation_level()
    log_term = math.log((2 if kind == "qff" else 4) * model.num_features * 100 / 0.1)
    assert b == pytest.approx((1.5 / log_term) ** (1 / 1.6) * 60 ** (0.4 / 3.2), rel=1e-12)
    Xt = torch.linspace(0, 1, 13, dtype=DT).unsqueeze(-1)
    mean, var_qff, kept, total = _brute_force(feats(X), Y[:, 0], feats(Xt), b)
    assert 0 < kept < total  # some entries truncated, some kept: the test is not vacuous
    post = model.posterior(Xt)
    torch.testing.assert_close(post.mean[:, 0], mean, atol=1e-9, rtol=0)
    if kind == "qff":
        torch.testing.assert_close(post.variance[:, 0], var_qff, atol=1e-10, rtol=0)
    else:
        with torch.no_grad():
            k_diag = _rbf()(Xt, Xt, diag=True)
        dtc = k_diag - feats(Xt).square().sum(-1) + var_qff
        torch.testing.assert_close(post.variance[:, 0], dtc, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_arm_fast_path_matches_brute_force_over_rounds(kind: str) -> None:
    arms = torch.linspace(0.01, 1, 40, dtype=DT).unsqueeze(-1)
    g = torch.Generator().manual_seed(4)
    idx = torch.randint(0, 40, (150,), generator=g)
    _, Y = _heavy(150, 5, X=arms[idx])
    with torch.no_grad():
        K = _rbf()(arms, arms).to_dense()
    if kind == "qff":
        feats = QuadratureFourierFeatures(0.2, 32, 1)
        model = AdaptiveTruncationGP(arms[idx[:30]], Y[:30], 0.8, 2.0, feats, lam=LAM, arms=arms,
                                     horizon=150)
        cond = lambda m, s: m.condition_on_observations(arms[idx[s : s + 1]], Y[s : s + 1])  # noqa: E731
    else:
        gen = torch.Generator().manual_seed(0)
        feats = NystromFeatures(PrecomputedKernel(K), q=3.0, generator=gen)
        model = AdaptiveTruncationGP(idx[:30, None].to(DT), Y[:30], 0.8, 2.0, feats, lam=LAM,
                                     horizon=150)
        cond = lambda m, s: m.condition_on_observations(idx[s : s + 1, None].to(DT), Y[s : s + 1])  # noqa: E731
    for s in range(30, 150):  # in-place history appends, dictionary redrawn every round
        model = cond(model, s)
    if kind == "qff":
        phi_train, phi_arms = feats(arms[idx]), feats(arms)
        test_X = arms
    else:
        D = arms[model.features.dictionary[:, 0].long()]
        ref_feats = NystromFeatures(_rbf()).with_dictionary(D)
        phi_train, phi_arms = ref_feats(arms[idx]), ref_feats(arms)
        test_X = torch.arange(40, dtype=DT).unsqueeze(-1)
    b = model.truncation_level()
    mean, var_qff, kept, total = _brute_force(phi_train, Y[:, 0], phi_arms, b)
    assert 0 < kept < total
    post = model.posterior(test_X.unsqueeze(-2))  # 40 x 1 x 1
    torch.testing.assert_close(post.mean[:, 0, 0], mean, atol=1e-8, rtol=0)
    var = var_qff if kind == "qff" else K.diagonal() - phi_arms.square().sum(-1) + var_qff
    torch.testing.assert_close(post.variance[:, 0, 0], var, atol=1e-9, rtol=0)
    # Joint covariance over all arms: λ φᵀV⁻¹φ' (+ k − φᵀφ' for Nyström).
    V = phi_train.T @ phi_train + LAM * torch.eye(phi_train.shape[-1], dtype=DT)
    cov = LAM * phi_arms @ torch.linalg.solve(V, phi_arms.T)
    if kind == "nystrom":
        cov = cov + K - phi_arms @ phi_arms.T
    torch.testing.assert_close(model.posterior(test_X).distribution.covariance_matrix, cov,
                               atol=1e-9, rtol=0)


def test_branching_from_an_old_model_rebuilds_its_history() -> None:
    arms = torch.linspace(0, 1, 20, dtype=DT).unsqueeze(-1)
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    X, Y = _heavy(50, 6, X=arms[torch.arange(50) % 20])
    base = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, arms=arms, horizon=100)
    y1, y2 = torch.tensor([[50.0]], dtype=DT), torch.tensor([[-3.0]], dtype=DT)
    child1 = base.condition_on_observations(arms[:1], y1)  # appends in place
    child2 = base.condition_on_observations(arms[1:2], y2)  # must not see child1's reward
    for child, Xn, Yn in [(child1, arms[:1], y1), (child2, arms[1:2], y2)]:
        ref = AdaptiveTruncationGP(torch.cat([X, Xn]), torch.cat([Y, Yn]), 1.0, 2.0, qff,
                                   arms=arms, horizon=100)
        torch.testing.assert_close(child.posterior(arms).mean, ref.posterior(arms).mean,
                                   atol=1e-10, rtol=0)


def test_nystrom_arm_dictionary_law() -> None:
    """Arm a enters with probability 1 − (1 − p_a)^{n_a}, p_a = min{q σ²_t(a), 1}."""
    arms = torch.linspace(0, 1, 25, dtype=DT).unsqueeze(-1)
    with torch.no_grad():
        K = _rbf(0.1)(arms, arms).to_dense()
    idx = torch.arange(60) % 25
    idx[:20] = 3  # one heavily pulled arm
    _, Y = _heavy(60, 7, X=arms[idx])
    q = 0.6
    feats = NystromFeatures(PrecomputedKernel(K), q=q, generator=torch.Generator().manual_seed(1))
    model = AdaptiveTruncationGP(idx[:, None].to(DT), Y, 1.0, 2.0, feats)
    x_new, y_new = torch.tensor([[7.0]], dtype=DT), torch.tensor([[0.3]], dtype=DT)
    counts = torch.bincount(torch.cat([idx, torch.tensor([7])]), minlength=25).to(DT)
    p = (q * model.posterior(torch.arange(25, dtype=DT).reshape(25, 1, 1)).variance.reshape(-1))
    incl = 1 - (1 - p.clamp(0, 1)) ** counts
    reps = 200
    hits = torch.zeros(25, dtype=DT)
    for _ in range(reps):
        D = model.condition_on_observations(x_new, y_new).features.dictionary
        hits[D[:, 0].long()] += 1
    sd = (incl * (1 - incl) / reps).sqrt().clamp_min(1e-3)
    assert ((hits / reps - incl).abs() / sd).max() < 5.0
    assert hits[counts == 0].sum() == 0  # never-pulled arms are never in the dictionary


def test_outlier_moves_mean_by_bounded_amount() -> None:
    """Paper 001 Fig. 1(f), small: one 1e6 reward; ATA's change obeys the per-direction bound."""
    arms = torch.linspace(0, 1, 40, dtype=DT).unsqueeze(-1)
    g = torch.Generator().manual_seed(8)
    idx = torch.randint(0, 40, (300,), generator=g)
    f = torch.sin(4 * arms[:, 0])
    y_clean = (f[idx] + 0.1 * torch.randn(300, dtype=DT, generator=g)).unsqueeze(-1)
    y_out = y_clean.clone()
    y_out[100, 0] = 1e6
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    kw = dict(lam=1.0, arms=arms, horizon=300, constants="authors")
    mu_out = AdaptiveTruncationGP(arms[idx], y_out, 1.0, 2.0, qff, **kw).posterior(arms).mean
    clean = AdaptiveTruncationGP(arms[idx], y_clean, 1.0, 2.0, qff, **kw)
    mu_clean = clean.posterior(arms).mean
    plain = AdaptiveTruncationGP(arms[idx], y_out, 1.0, 2.0, qff, truncate=False, **kw)
    # Each direction's term for the outlier round changes by at most 2 b_t, so
    # |Δμ(x)| ≤ ‖V^{-1/2}φ(x)‖₂ · 2 b_t √m (Cauchy–Schwarz).
    Phi, phi = qff(arms[idx]), qff(arms)
    V = Phi.T @ Phi + torch.eye(64, dtype=DT)
    norm = (phi * torch.linalg.solve(V, phi.T).T).sum(-1).sqrt()
    bound = norm * 2 * clean.truncation_level() * math.sqrt(64)
    assert ((mu_out - mu_clean)[:, 0].abs() <= bound + 1e-12).all()
    assert (mu_out - mu_clean).abs().max() < 1.0
    assert (plain.posterior(arms).mean - mu_clean).abs().max() > 1e3


def test_schedules_theory_and_authors() -> None:
    X, Y = _heavy(30, 9)
    alpha, v, lam, delta, B, T = 0.7, 2.5, LAM, 0.05, 1.3, 500
    e = (1 - alpha) / (2 * (1 + alpha))
    qff = QuadratureFourierFeatures(0.2, 10, 1)  # m = 20
    th = AdaptiveTruncationGP(X, Y, alpha, v, qff, lam, delta, B, horizon=T)
    L = math.log(2 * 20 * T / delta)
    assert th.truncation_level() == pytest.approx((v / L) ** (1 / (1 + alpha)) * 30**e)
    assert th.beta() == pytest.approx(
        B + 4 * math.sqrt(20 / lam) * v ** (1 / (1 + alpha)) * L ** (alpha / (1 + alpha)) * 30**e
    )
    au = AdaptiveTruncationGP(X, Y, alpha, v, qff, lam, delta, B, horizon=T, constants="authors")
    La = math.log(20 * T)
    assert au.truncation_level() == pytest.approx(30**e * (v / La) ** (1 / (1 + alpha)))
    assert au.beta() == pytest.approx(
        B * math.sqrt(lam) + math.sqrt(20) * v ** (1 / (1 + alpha)) * La ** (alpha / (1 + alpha))
        * 31**e
    )
    eps = 0.2
    nys = NystromFeatures(_rbf(), epsilon=eps, generator=torch.Generator().manual_seed(0))
    thn = AdaptiveTruncationGP(X, Y, alpha, v, nys, lam, delta, B, horizon=T)
    rho = (1 + eps) / (1 - eps)
    assert thn.nystrom_q() == pytest.approx(6 * rho * math.log(4 * T / delta) / eps**2)
    m = thn.num_features
    Ln = math.log(4 * m * T / delta)
    assert thn.beta() == pytest.approx(
        B * (1 + 1 / math.sqrt(1 - eps))
        + 4 * math.sqrt(m / lam) * v ** (1 / (1 + alpha)) * Ln ** (alpha / (1 + alpha)) * 30**e
    )
    aun = AdaptiveTruncationGP(X, Y, alpha, v, nys, lam, delta, B, horizon=T, constants="authors")
    assert aun.nystrom_q() == pytest.approx(math.log(T) / eps**2)
    assert aun.truncation_level() == pytest.approx(
        30**e * (v / math.log((aun.num_features + 1) * T)) ** (1 / (1 + alpha))
    )


def test_empty_dictionary_gives_prior() -> None:
    X, Y = _heavy(5, 10)
    nys = NystromFeatures(_rbf(), q=1.0).with_dictionary(torch.zeros(0, 1, dtype=DT))
    model = AdaptiveTruncationGP(X, Y, 1.0, 2.0, nys, sample_dictionary=False)
    post = model.posterior(torch.rand(4, 1, dtype=DT))
    torch.testing.assert_close(post.mean, torch.zeros(4, 1, dtype=DT))
    torch.testing.assert_close(post.variance, torch.ones(4, 1, dtype=DT))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alpha=0.0), "alpha"),
        (dict(alpha=2.0), "alpha"),
        (dict(v=0.0), "`v`"),
        (dict(lam=-1.0), "lam"),
        (dict(horizon=0), "horizon"),
        (dict(features="qff"), "features"),
        (dict(features=QuadratureFourierFeatures(0.2, 4, 2)), "dim"),
    ],
)
def test_bad_input(kwargs: dict, match: str) -> None:
    X, Y = _heavy(5, 11)
    args = dict(alpha=1.0, v=2.0, features=QuadratureFourierFeatures(0.2, 4, 1))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        AdaptiveTruncationGP(X, Y, **args)
