"""AdaptiveTruncationGP vs kernel ridge regression / GP and brute-force feature-space formulas.

Each test runs in float64 and float32; a float32 model is compared with a float64 reference on
the same (float32-rounded) data. float32 tolerances (:func:`_tol`) are ``c · eps32 · κ̂ ·
scale`` with ``κ̂ = 1 + tr(ΦᵀΦ)/λ`` (the SVD-based fit measured ≈ 1e-3 · eps · κ̂ · |y|); the
Nyström embedding adds its dtype-aware cut-off (eigenvalues of ``K_D`` below 1.2e-5 · λ_max are
dropped in float32), whose effect on the all-points model is bounded by ``√rtol · |y|``.
"""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel
from gpytorch.means import ZeroMean

from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.linalg.nystrom import default_pinv_rtol
from botorch_mtucb.models import AdaptiveTruncationGP
from botorch_mtucb.protocols import DictionaryModel, RegularisedModel

DT = torch.float64
F32 = torch.float32
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])


def _tol(dtype: torch.dtype, f64_tol: float, kappa: float, scale: float = 1.0) -> float:
    """float64: the original tolerance; float32: ``4 · eps · κ̂ · scale`` (module doc)."""
    if dtype == torch.float64:
        return f64_tol
    return 4.0 * torch.finfo(dtype).eps * kappa * scale


def _r(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` rounded to ``dtype`` and back to float64 (the data a ``dtype`` model sees)."""
    return x.to(dtype).to(DT)


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


@DTYPES
def test_nystrom_all_points_no_truncation_equals_krr_and_gp(dtype: torch.dtype) -> None:
    X, Y = _heavy(30, 0, d=2)
    X, Y = _r(X, dtype), _r(Y, dtype)
    nys = NystromFeatures(_rbf(), q=1e6)  # p = 1 for every point: exact on span(k(·, x_i))
    model = AdaptiveTruncationGP(X.to(dtype), Y.to(dtype), 1.0, 2.0, nys, lam=LAM,
                                 truncate=False)
    assert model.num_features == 30 and model.dictionary_size == 30
    Xt = _r(torch.rand(6, 2, dtype=DT, generator=torch.Generator().manual_seed(1)), dtype)
    with torch.no_grad():
        K, k_t = _rbf()(X, X).to_dense(), _rbf()(Xt, X).to_dense()
    krr = k_t @ torch.linalg.solve(K + LAM * torch.eye(30, dtype=DT), Y)
    post = model.posterior(Xt.to(dtype))
    assert post.mean.dtype == dtype
    kappa = 1 + 30 / LAM
    tol_m, tol_v = _tol(dtype, 1e-7, kappa, float(Y.abs().max())), _tol(dtype, 1e-7, kappa)
    torch.testing.assert_close(post.mean.to(DT), krr, atol=tol_m, rtol=0)
    ref = _gp(X, Y).posterior(Xt)
    torch.testing.assert_close(post.variance.to(DT), ref.variance, atol=tol_v, rtol=0)
    torch.testing.assert_close(
        post.distribution.covariance_matrix.to(DT),
        ref.distribution.covariance_matrix,
        atol=tol_v,
        rtol=0,
    )
    # float64 test inputs into a float32 model are cast (same numbers, no crash).
    torch.testing.assert_close(model.posterior(Xt).mean, post.mean, atol=0, rtol=0)


@DTYPES
def test_qff_no_truncation_equals_feature_ridge_and_approximates_gp(dtype: torch.dtype) -> None:
    X, Y = _heavy(40, 2)
    X, Y = _r(X, dtype), _r(Y, dtype)
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    model = AdaptiveTruncationGP(X.to(dtype), Y.to(dtype), 1.0, 2.0, qff, lam=LAM,
                                 truncate=False)
    Xt = torch.linspace(0, 1, 11, dtype=DT).unsqueeze(-1)
    Phi, phi = qff(X), qff(Xt)
    V = Phi.T @ Phi + LAM * torch.eye(64, dtype=DT)
    ridge = phi @ torch.linalg.solve(V, Phi.T @ Y)
    post = model.posterior(Xt.to(dtype))
    kappa, ymax = 1 + 40 / LAM, float(Y.abs().max())
    torch.testing.assert_close(post.mean.to(DT), ridge, atol=_tol(dtype, 1e-9, kappa, ymax),
                               rtol=0)
    var = LAM * (phi * torch.linalg.solve(V, phi.T).T).sum(-1)
    torch.testing.assert_close(post.variance[:, 0].to(DT), var, atol=_tol(dtype, 1e-9, kappa),
                               rtol=0)
    gp = _gp(X, Y).posterior(Xt)  # QFF error ~1e-11 ⇒ same as the exact GP
    atol = 1e-6 + _tol(dtype, 0.0, kappa, ymax)
    torch.testing.assert_close(post.mean.to(DT), gp.mean, atol=atol, rtol=0)
    torch.testing.assert_close(post.variance.to(DT), gp.variance, atol=1e-6, rtol=0)


@DTYPES
@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_per_direction_truncation_matches_brute_force(kind: str, dtype: torch.dtype) -> None:
    X, Y = _heavy(60, 3)
    X, Y = _r(X, dtype), _r(Y, dtype)
    if kind == "qff":
        feats = model_feats = QuadratureFourierFeatures(0.2, 24, 1)
    else:
        D = torch.linspace(0, 1, 9, dtype=DT).unsqueeze(-1)
        feats = NystromFeatures(_rbf()).with_dictionary(D)
        model_feats = NystromFeatures(_rbf()).with_dictionary(D.to(dtype))
    model = AdaptiveTruncationGP(
        X.to(dtype), Y.to(dtype), 0.6, 1.5, model_feats, lam=LAM, horizon=100,
        sample_dictionary=False,
    )
    b = model.truncation_level()
    log_term = math.log((2 if kind == "qff" else 4) * model.num_features * 100 / 0.1)
    assert b == pytest.approx((1.5 / log_term) ** (1 / 1.6) * 60 ** (0.4 / 3.2), rel=1e-12)
    Xt = torch.linspace(0, 1, 13, dtype=DT).unsqueeze(-1)
    mean, var_qff, kept, total = _brute_force(feats(X), Y[:, 0], feats(Xt), b)
    assert 0 < kept < total  # some entries truncated, some kept: the test is not vacuous
    post = model.posterior(Xt.to(dtype))
    kappa, ymax = 1 + 60 / LAM, float(Y.abs().max())
    torch.testing.assert_close(post.mean[:, 0].to(DT), mean, atol=_tol(dtype, 1e-9, kappa, ymax),
                               rtol=0)
    tol_v = _tol(dtype, 1e-10, kappa)
    if kind == "qff":
        torch.testing.assert_close(post.variance[:, 0].to(DT), var_qff, atol=tol_v, rtol=0)
    else:
        with torch.no_grad():
            k_diag = _rbf()(Xt, Xt, diag=True)
        dtc = k_diag - feats(Xt).square().sum(-1) + var_qff
        torch.testing.assert_close(post.variance[:, 0].to(DT), dtc, atol=tol_v, rtol=0)


@DTYPES
@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_arm_fast_path_matches_brute_force_over_rounds(kind: str, dtype: torch.dtype) -> None:
    arms = _r(torch.linspace(0.01, 1, 40, dtype=DT).unsqueeze(-1), dtype)
    g = torch.Generator().manual_seed(4)
    idx = torch.randint(0, 40, (150,), generator=g)
    _, Y = _heavy(150, 5, X=arms[idx])
    Y, Yd = _r(Y, dtype), Y.to(dtype)
    with torch.no_grad():
        K = _rbf()(arms, arms).to_dense()
    if kind == "qff":
        feats = QuadratureFourierFeatures(0.2, 32, 1)
        A = arms.to(dtype)
        model = AdaptiveTruncationGP(A[idx[:30]], Yd[:30], 0.8, 2.0, feats, lam=LAM, arms=A,
                                     horizon=150)
        cond = lambda m, s: m.condition_on_observations(A[idx[s : s + 1]], Yd[s : s + 1])  # noqa: E731
    else:
        gen = torch.Generator().manual_seed(0)
        feats = NystromFeatures(PrecomputedKernel(K.to(dtype)), q=3.0, generator=gen)
        ix = idx[:, None].to(dtype)
        model = AdaptiveTruncationGP(ix[:30], Yd[:30], 0.8, 2.0, feats, lam=LAM, horizon=150)
        cond = lambda m, s: m.condition_on_observations(ix[s : s + 1], Yd[s : s + 1])  # noqa: E731
    for s in range(30, 150):  # in-place history appends, dictionary redrawn every round
        model = cond(model, s)
    if kind == "qff":
        phi_train, phi_arms = feats(arms[idx]), feats(arms)
        test_X = arms
    else:
        # Reference in float64 on the model's (dtype-rounded) kernel matrix, with the working
        # dtype's cut-off (float32 Nyström models work in float64, linalg.working_dtype).
        assert model._cdtype == DT
        K = K.to(dtype).to(DT)
        ref_feats = NystromFeatures(PrecomputedKernel(K), rtol=default_pinv_rtol(DT))
        ref_feats = ref_feats.with_dictionary(model.features.dictionary.to(DT))
        test_X = torch.arange(40, dtype=DT).unsqueeze(-1)
        phi_train, phi_arms = ref_feats(idx[:, None].to(DT)), ref_feats(test_X)
    b = model.truncation_level()
    mean, var_qff, kept, total = _brute_force(phi_train, Y[:, 0], phi_arms, b)
    assert 0 < kept < total
    post = model.posterior(test_X.unsqueeze(-2))  # 40 x 1 x 1
    kappa, ymax = 1 + 150 / LAM, float(Y.abs().max())
    torch.testing.assert_close(post.mean[:, 0, 0].to(DT), mean,
                               atol=_tol(dtype, 1e-8, kappa, ymax), rtol=0)
    var = var_qff if kind == "qff" else K.diagonal() - phi_arms.square().sum(-1) + var_qff
    tol_v = _tol(dtype, 1e-9, kappa)
    torch.testing.assert_close(post.variance[:, 0, 0].to(DT), var, atol=tol_v, rtol=0)
    # Joint covariance over all arms: λ φᵀV⁻¹φ' (+ k − φᵀφ' for Nyström).
    V = phi_train.T @ phi_train + LAM * torch.eye(phi_train.shape[-1], dtype=DT)
    cov = LAM * phi_arms @ torch.linalg.solve(V, phi_arms.T)
    if kind == "nystrom":
        cov = cov + K - phi_arms @ phi_arms.T
    torch.testing.assert_close(model.posterior(test_X).distribution.covariance_matrix.to(DT), cov,
                               atol=tol_v, rtol=0)


@DTYPES
def test_branching_from_an_old_model_rebuilds_its_history(dtype: torch.dtype) -> None:
    arms = torch.linspace(0, 1, 20, dtype=DT).unsqueeze(-1).to(dtype)
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    X, Y = _heavy(50, 6, X=arms[torch.arange(50) % 20])
    Y = Y.to(dtype)
    base = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, arms=arms, horizon=100)
    y1, y2 = torch.tensor([[50.0]], dtype=dtype), torch.tensor([[-3.0]], dtype=dtype)
    child1 = base.condition_on_observations(arms[:1], y1)  # appends in place
    child2 = base.condition_on_observations(arms[1:2], y2)  # must not see child1's reward
    for child, Xn, Yn in [(child1, arms[:1], y1), (child2, arms[1:2], y2)]:
        ref = AdaptiveTruncationGP(torch.cat([X, Xn]), torch.cat([Y, Yn]), 1.0, 2.0, qff,
                                   arms=arms, horizon=100)
        torch.testing.assert_close(child.posterior(arms).mean, ref.posterior(arms).mean,
                                   atol=1e-10, rtol=0)


@DTYPES
def test_nystrom_arm_dictionary_law(dtype: torch.dtype) -> None:
    """Arm a enters with probability 1 − (1 − p_a)^{n_a}, p_a = min{q σ²_t(a), 1}."""
    arms = torch.linspace(0, 1, 25, dtype=DT).unsqueeze(-1)
    with torch.no_grad():
        K = _rbf(0.1)(arms, arms).to_dense().to(dtype)
    idx = torch.arange(60) % 25
    idx[:20] = 3  # one heavily pulled arm
    _, Y = _heavy(60, 7, X=arms[idx])
    q = 0.6
    feats = NystromFeatures(PrecomputedKernel(K), q=q, generator=torch.Generator().manual_seed(1))
    model = AdaptiveTruncationGP(idx[:, None].to(dtype), Y.to(dtype), 1.0, 2.0, feats)
    x_new, y_new = torch.tensor([[7.0]], dtype=dtype), torch.tensor([[0.3]], dtype=dtype)
    counts = torch.bincount(torch.cat([idx, torch.tensor([7])]), minlength=25).to(DT)
    p = (q * model.posterior(torch.arange(25, dtype=DT).reshape(25, 1, 1)).variance.reshape(-1))
    p = p.to(DT)
    incl = 1 - (1 - p.clamp(0, 1)) ** counts
    reps = 200
    hits = torch.zeros(25, dtype=DT)
    for _ in range(reps):
        D = model.condition_on_observations(x_new, y_new).features.dictionary
        hits[D[:, 0].long()] += 1
    sd = (incl * (1 - incl) / reps).sqrt().clamp_min(1e-3)
    assert ((hits / reps - incl).abs() / sd).max() < 5.0
    assert hits[counts == 0].sum() == 0  # never-pulled arms are never in the dictionary


@DTYPES
def test_outlier_moves_mean_by_bounded_amount(dtype: torch.dtype) -> None:
    """Paper 001 Fig. 1(f), small: one 1e6 reward; ATA's change obeys the per-direction bound."""
    arms = torch.linspace(0, 1, 40, dtype=DT).unsqueeze(-1)
    g = torch.Generator().manual_seed(8)
    idx = torch.randint(0, 40, (300,), generator=g)
    f = torch.sin(4 * arms[:, 0])
    y_clean = (f[idx] + 0.1 * torch.randn(300, dtype=DT, generator=g)).unsqueeze(-1)
    y_out = y_clean.clone()
    y_out[100, 0] = 1e6
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    arms, y_out, y_clean = _r(arms, dtype), _r(y_out, dtype), _r(y_clean, dtype)
    A = arms.to(dtype)
    kw = dict(lam=1.0, arms=A, horizon=300, constants="authors")
    fit = lambda y, **k: AdaptiveTruncationGP(A[idx], y.to(dtype), 1.0, 2.0, qff, **kw, **k)  # noqa: E731
    mu_out = fit(y_out).posterior(arms).mean.to(DT)
    clean = fit(y_clean)
    mu_clean = clean.posterior(arms).mean.to(DT)
    plain = fit(y_out, truncate=False)
    # Each direction's term for the outlier round changes by at most 2 b_t, so
    # |Δμ(x)| ≤ ‖V^{-1/2}φ(x)‖₂ · 2 b_t √m (Cauchy–Schwarz).
    Phi, phi = qff(arms[idx]), qff(arms)
    V = Phi.T @ Phi + torch.eye(64, dtype=DT)
    norm = (phi * torch.linalg.solve(V, phi.T).T).sum(-1).sqrt()
    bound = norm * 2 * clean.truncation_level() * math.sqrt(64)
    slack = _tol(dtype, 1e-12, 1 + 300.0, 1.0)
    assert ((mu_out - mu_clean)[:, 0].abs() <= bound + slack).all()
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


@DTYPES
def test_empty_dictionary_gives_prior(dtype: torch.dtype) -> None:
    X, Y = _heavy(5, 10)
    nys = NystromFeatures(_rbf(), q=1.0).with_dictionary(torch.zeros(0, 1, dtype=dtype))
    model = AdaptiveTruncationGP(X.to(dtype), Y.to(dtype), 1.0, 2.0, nys, sample_dictionary=False)
    post = model.posterior(torch.rand(4, 1, dtype=dtype))
    torch.testing.assert_close(post.mean, torch.zeros(4, 1, dtype=dtype))
    torch.testing.assert_close(post.variance, torch.ones(4, 1, dtype=dtype))


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


def test_protocols_dictionary_size_and_noise() -> None:
    X, Y = _heavy(20, 13)
    qff = AdaptiveTruncationGP(X, Y, 1.0, 2.0, QuadratureFourierFeatures(0.2, 8, 1), lam=0.3)
    nys = AdaptiveTruncationGP(X, Y, 1.0, 2.0, NystromFeatures(_rbf(), q=1e6), lam=0.3)
    assert isinstance(nys, DictionaryModel) and nys.dictionary_size == nys.num_features == 20
    assert not isinstance(qff, DictionaryModel)  # a QFF map has no dictionary
    for m in (qff, nys):
        assert isinstance(m, RegularisedModel) and float(m.noise) == pytest.approx(0.3)
