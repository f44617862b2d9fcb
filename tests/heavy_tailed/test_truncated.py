"""TruncatedGP vs BoTorch's SingleTaskGP and brute-force t x t formulas, in float64 and float32.

Every float32 model is compared with a float64 reference built on the same (float32-rounded)
data. Tolerances: float64 keeps the original ones; float32 uses :func:`_tol`, ``c · eps32 · κ̂ ·
scale`` with ``κ̂ = 1 + tr(K_t)/λ ≥ cond(K_t + λI)`` (the forward-error bound of a solve; the
measured mean error is ≈ 0.2 · eps · λ_max/λ · |y|, ``TGP_ERROR_FACTOR``).
"""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel
from gpytorch.means import ZeroMean

from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import TruncatedGP
from botorch_mtucb.protocols import (
    DictionaryModel,
    MarginalMomentsModel,
    RegularisedModel,
    WidthScheduleModel,
)

DT = torch.float64
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])


def _tol(dtype: torch.dtype, f64_tol: float, kappa: float, scale: float = 1.0) -> float:
    """float64: the original tolerance; float32: ``4 · eps · κ̂ · scale`` (see module doc)."""
    if dtype == torch.float64:
        return f64_tol
    return 4.0 * torch.finfo(dtype).eps * kappa * scale


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


@DTYPES
def test_no_truncation_equals_gp_posterior(dtype: torch.dtype) -> None:
    X, Y = _heavy_data(40, 0, d=2)
    X, Y = X.to(dtype).to(DT), Y.to(dtype).to(DT)  # the data the float32 model sees
    model = TruncatedGP(X.to(dtype), Y.to(dtype), 1.0, 2.0, covar_module=_rbf(), lam=LAM,
                        truncate=False)
    gp = _reference_gp(X, Y[:, 0])
    Xt = torch.rand(5, 3, 2, dtype=DT, generator=torch.Generator().manual_seed(1))
    Xt = Xt.to(dtype).to(DT)
    post, ref = model.posterior(Xt.to(dtype)), gp.posterior(Xt)
    assert post.mean.shape == (5, 3, 1) and post.mean.dtype == dtype
    kappa = 1 + 40 / LAM
    tol_m = _tol(dtype, 1e-8, kappa, float(Y.abs().max()))
    torch.testing.assert_close(post.mean.to(DT), ref.mean, atol=tol_m, rtol=1e-8)
    tol_v = _tol(dtype, 1e-8, kappa)
    torch.testing.assert_close(
        post.distribution.covariance_matrix.to(DT), ref.distribution.covariance_matrix,
        atol=tol_v, rtol=0,
    )
    noisy = model.posterior(Xt.to(dtype), observation_noise=True).variance.to(DT)
    torch.testing.assert_close(noisy, ref.variance + LAM, atol=tol_v, rtol=0)
    # A float32 model queried with float64 inputs casts them (no crash, same numbers).
    torch.testing.assert_close(model.posterior(Xt).mean, post.mean, atol=0, rtol=0)


@DTYPES
def test_truncation_zeroes_exactly_beyond_own_round_level(dtype: torch.dtype) -> None:
    alpha, v = 0.5, 1.5
    X, Y = _heavy_data(60, 2)
    X, Y = X.to(dtype).to(DT), Y.to(dtype).to(DT)
    Xd, Yd = X.to(dtype), Y.to(dtype)
    model = TruncatedGP(Xd, Yd, alpha, v, covar_module=_rbf(), lam=LAM)
    b = _levels(60, alpha, v)
    expected = torch.where(Y[:, 0].abs() <= b, Y[:, 0], torch.zeros(60, dtype=DT))
    assert 0 < int((expected == 0).sum()) < 60  # truncation is active, not everything
    torch.testing.assert_close(model.train_targets.to(DT), expected, atol=0, rtol=0)
    assert model.truncation_level(7) == pytest.approx(float(b[6]), rel=1e-14)
    Xt = torch.rand(9, 1, 1, dtype=DT).to(dtype)
    gp = _reference_gp(X, expected)
    ref = gp.posterior(Xt.to(DT)).mean
    tol = _tol(dtype, 1e-8, 1 + 60 / LAM, float(expected.abs().max()))
    torch.testing.assert_close(model.posterior(Xt).mean.to(DT), ref, atol=tol, rtol=0)
    # Conditioning one at a time gives each reward its own round's level too.
    m = TruncatedGP(Xd[:10], Yd[:10], alpha, v, covar_module=_rbf(), lam=LAM)
    for s in range(10, 60):
        m = m.condition_on_observations(Xd[s : s + 1], Yd[s : s + 1])
    torch.testing.assert_close(m.train_targets.to(DT), expected, atol=0, rtol=0)
    torch.testing.assert_close(m.posterior(Xt).mean.to(DT), ref, atol=tol, rtol=0)


def _arm_problem(num_arms: int = 30):
    arms = torch.linspace(0, 1, num_arms, dtype=DT).unsqueeze(-1)
    with torch.no_grad():
        K = _rbf()(arms, arms).to_dense()
    return arms, K


@DTYPES
@pytest.mark.parametrize("constants", ["theory", "authors"])
def test_arm_fast_path_matches_dense_and_log_det(dtype: torch.dtype, constants: str) -> None:
    arms, K = _arm_problem()
    g = torch.Generator().manual_seed(4)
    idx = torch.randint(0, 30, (200,), generator=g)
    y = (torch.randn(200, dtype=DT, generator=g) * 3).unsqueeze(-1).to(dtype)
    kern = PrecomputedKernel(K.to(dtype))
    kw = dict(lam=LAM, constants=constants)
    ix = idx[:, None].to(dtype)
    fast = TruncatedGP(ix[:20], y[:20], 1.0, 2.0, kern, **kw)
    via_arms = TruncatedGP(arms[idx[:20]].to(dtype), y[:20], 1.0, 2.0, _rbf(), arms=arms, **kw)
    for s in range(20, 200):  # rank-one updates
        fast = fast.condition_on_observations(ix[s : s + 1], y[s : s + 1])
        via_arms = via_arms.condition_on_observations(arms[idx[s : s + 1]], y[s : s + 1])
    dense = TruncatedGP(arms[idx], y.to(DT), 1.0, 2.0, _rbf(), **kw)  # float64 reference
    all_idx = torch.arange(30, dtype=DT).reshape(30, 1)
    p_fast, p_dense = fast.posterior(all_idx.unsqueeze(0)), dense.posterior(arms.unsqueeze(0))
    assert p_fast.mean.dtype == dtype
    kappa = 1 + 200 / LAM
    tol = _tol(dtype, 1e-9, kappa)
    torch.testing.assert_close(p_fast.mean.to(DT), p_dense.mean, atol=tol * 3, rtol=0)
    torch.testing.assert_close(
        p_fast.distribution.covariance_matrix.to(DT),
        p_dense.distribution.covariance_matrix,
        atol=tol,
        rtol=0,
    )
    torch.testing.assert_close(via_arms.posterior(arms).mean.to(DT), p_dense.mean[0],
                               atol=tol * 3, rtol=0)
    # ln det(I_t + K_t/λ) by brute force on the t x t matrix (tracked with the theory
    # constants, computed on demand from counts with the authors').
    Kt = K[idx][:, idx]
    ref = torch.logdet(torch.eye(200, dtype=DT) + Kt / LAM).item()
    rel = 1e-10 if dtype == torch.float64 else 1e-5
    assert fast.log_det() == pytest.approx(ref, rel=rel)
    assert dense.log_det() == pytest.approx(ref, rel=1e-10)
    # Batch conditioning (rebuild from sufficient statistics) agrees as well.
    batch = TruncatedGP(ix[:20], y[:20], 1.0, 2.0, kern, **kw)
    batch = batch.condition_on_observations(ix[20:], y[20:])
    torch.testing.assert_close(batch.posterior(all_idx).mean.to(DT), p_dense.mean[0],
                               atol=tol * 3, rtol=0)


@DTYPES
def test_rank_one_updates_do_not_drift(dtype: torch.dtype) -> None:
    arms, K = _arm_problem(50)
    g = torch.Generator().manual_seed(5)
    T = 3000
    idx = torch.randint(0, 50, (T,), generator=g)
    y = torch.randn(T, 1, dtype=DT, generator=g).to(dtype)
    kern = PrecomputedKernel(K.to(dtype))
    empty = torch.zeros(0, 1, dtype=dtype)
    m = TruncatedGP(empty, empty, 1.0, 2.0, kern)
    for s in range(T):
        m = m.condition_on_observations(idx[s : s + 1, None].to(dtype), y[s : s + 1])
    fresh = TruncatedGP(idx[:, None].to(DT), y.to(DT), 1.0, 2.0, PrecomputedKernel(K))
    all_idx = torch.arange(50, dtype=DT).reshape(50, 1)
    mean, var = m.mean_and_variance(all_idx.unsqueeze(-2))
    ref_mean, ref_var = fresh.mean_and_variance(all_idx.unsqueeze(-2))
    # 3000 rank-one updates: float64 stays at round-off; float32 within 4 eps κ̂ of float64
    # in the mean and 1e-3 relative in the variance (measured 8e-5).
    kappa = 1 + T / 1.0
    torch.testing.assert_close(mean.to(DT), ref_mean, atol=_tol(dtype, 1e-10, kappa), rtol=0)
    rel = ((var.to(DT) - ref_var).abs() / ref_var).max()
    assert rel < (1e-9 if dtype == torch.float64 else 1e-3), rel


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


@DTYPES
def test_outlier_bounded_for_tgp_but_wrecks_plain_gp(dtype: torch.dtype) -> None:
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
    X, y_out, y_clean = arms[idx].to(dtype), y_out.to(dtype), y_clean.to(dtype)
    kw = dict(covar_module=_rbf(), lam=1.0, arms=arms.to(dtype))
    trunc_out = TruncatedGP(X, y_out, 1.0, 2.0, **kw).posterior(arms).mean.to(DT)
    trunc_clean = TruncatedGP(X, y_clean, 1.0, 2.0, **kw).posterior(arms).mean.to(DT)
    plain_out = TruncatedGP(X, y_out, 1.0, 2.0, truncate=False, **kw).posterior(arms).mean
    # The outlier is zeroed (|1e6| > b_151): the mean moves only by the weight of one
    # clean reward, ≤ |y_clean[150]| · ‖row of K(K+λI)⁻¹‖∞ < 1.
    assert (trunc_out - trunc_clean).abs().max() < 1.0
    assert (plain_out - trunc_clean).abs().max() > 1e4
    assert (trunc_clean - f.unsqueeze(-1)).abs().max() < 0.2


@DTYPES
@pytest.mark.parametrize("on_arms", [False, True], ids=["dense", "arms"])
def test_condition_leaves_original_unchanged(dtype: torch.dtype, on_arms: bool) -> None:
    X, Y = _heavy_data(15, 8)
    arms = torch.linspace(0, 1, 10, dtype=DT).unsqueeze(-1).to(dtype)
    X, Y = (arms[torch.arange(15) % 10] if on_arms else X.to(dtype)), Y.to(dtype)
    kw = dict(arms=arms) if on_arms else {}
    m = TruncatedGP(X, Y, 1.0, 2.0, _rbf(), lam=LAM, **kw)
    Xt = arms[:4] if on_arms else torch.rand(4, 1, dtype=dtype)
    before = m.posterior(Xt).mean.clone()
    X_copy, Y_copy = X.clone(), Y.clone()
    Xn = arms[3:5] if on_arms else torch.rand(2, 1, dtype=dtype)
    m2 = m.condition_on_observations(Xn, torch.randn(2, 1, dtype=dtype))
    m3 = m.condition_on_observations(Xn[:1], torch.randn(1, 1, dtype=dtype))  # a sibling
    m4 = m2.condition_on_observations(Xn[:1], torch.randn(1, 1, dtype=dtype))  # the tip
    torch.testing.assert_close(m.posterior(Xt).mean, before, atol=0, rtol=0)
    assert (m.num_observations, m2.num_observations, m3.num_observations) == (15, 17, 16)
    assert m4.num_observations == 18
    torch.testing.assert_close(m3.train_X, torch.cat([X, Xn[:1]]), atol=0, rtol=0)
    torch.testing.assert_close(m2.train_Y[:15], Y, atol=0, rtol=0)
    assert torch.equal(X, X_copy) and torch.equal(Y, Y_copy)
    # Each model equals a scratch build on its own data (siblings never see each other's rows).
    for mod in (m2, m3, m4):
        ref = TruncatedGP(mod.train_X, mod.train_Y, 1.0, 2.0, _rbf(), lam=LAM, **kw)
        torch.testing.assert_close(mod.posterior(Xt).mean, ref.posterior(Xt).mean,
                                   atol=_tol(dtype, 1e-10, 1 + 18 / LAM), rtol=0)


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
    with pytest.raises(ValueError, match="train_X"):  # (3-d data builds a HeavyTailedBatch)
        TruncatedGP(X[:, 0], Y, 1.0, 2.0)
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


@DTYPES
def test_protocols_noise_and_no_silent_nan(dtype: torch.dtype) -> None:
    arms, K = _arm_problem(10)
    m = TruncatedGP(arms[:5].to(dtype), torch.ones(5, 1, dtype=dtype), 1.0, 2.0, _rbf(),
                    lam=LAM, arms=arms)
    for proto in (RegularisedModel, MarginalMomentsModel, WidthScheduleModel):
        assert isinstance(m, proto)
    assert not isinstance(m, DictionaryModel)
    assert m.noise.dtype == dtype and float(m.noise) == pytest.approx(LAM)
    with pytest.raises(ValueError, match="NaN"):
        m.condition_on_observations(arms[:1], torch.full((1, 1), float("nan")))
    with pytest.raises(ValueError, match="`X` contains NaN"):
        m.condition_on_observations(torch.full((1, 1), float("nan")), torch.ones(1, 1))
    with pytest.raises(ValueError, match="`X` contains NaN"):
        m.posterior(torch.full((1, 1), float("nan"), dtype=dtype))  # checked before the lookup
    mean, var = m.mean_and_variance(arms.unsqueeze(-2))
    assert torch.isfinite(mean).all() and torch.isfinite(var).all() and mean.dtype == dtype


def test_precomputed_kernel_validates_each_input_tensor_once() -> None:
    """The identity cache of PrecomputedKernel: same tensor → no re-check; mutated → re-check."""
    arms, K = _arm_problem(6)
    kern = PrecomputedKernel(K)
    x = torch.tensor([[0.0], [2.0], [5.0]], dtype=DT)
    first = kern(x, x).to_dense()
    torch.testing.assert_close(first, K[[0, 2, 5]][:, [0, 2, 5]], atol=0, rtol=0)
    torch.testing.assert_close(kern(x, x).to_dense(), first, atol=0, rtol=0)  # cached
    x[1, 0] = 2.5  # in place: the version counter changes, so the input is checked again
    with pytest.raises(ValueError, match="integer arm indices"):
        kern(x, x).to_dense()
    with pytest.raises(ValueError, match="outside"):
        kern(torch.tensor([[6.0]], dtype=DT), x[:1]).to_dense()
    # The dense TruncatedGP path over a PrecomputedKernel equals the arm fast path.
    idx = torch.tensor([0, 3, 3, 5, 1], dtype=DT).unsqueeze(-1)
    Y = torch.randn(5, 1, dtype=DT, generator=torch.Generator().manual_seed(3))
    fast = TruncatedGP(idx, Y, 1.0, 2.0, kern, lam=LAM)
    dense = TruncatedGP(arms[idx[:, 0].long()], Y, 1.0, 2.0, _rbf(), lam=LAM)
    torch.testing.assert_close(fast.posterior(torch.arange(6, dtype=DT).unsqueeze(-1)).mean,
                               dense.posterior(arms).mean, atol=1e-10, rtol=0)


def test_arm_lookup_cache_sees_in_place_changes() -> None:
    """Candidate tensors are looked up once; an in-place change (version bump) is re-checked."""
    arms, _ = _arm_problem(8)
    m = TruncatedGP(arms[:3], torch.ones(3, 1, dtype=DT), 1.0, 2.0, _rbf(), lam=LAM, arms=arms)
    cand = arms.clone().unsqueeze(-2)  # 8 x 1 x 1, the whole arm set in order
    mean, var = m.mean_and_variance(cand)
    torch.testing.assert_close(m.mean_and_variance(cand)[0], mean, atol=0, rtol=0)  # cached
    sub = cand[[5, 2]]
    torch.testing.assert_close(m.mean_and_variance(sub)[0], mean[[5, 2]], atol=0, rtol=0)
    cand[3, 0, 0] = 0.123  # no longer an arm
    with pytest.raises(ValueError, match="rows of `arms`"):
        m.mean_and_variance(cand)
    cand[3, 0, 0] = arms[4, 0]  # an arm again, but a different one: new indices
    torch.testing.assert_close(m.mean_and_variance(cand)[0][3], mean[4], atol=0, rtol=0)


def test_data_driven_kernel_is_fitted_whatever_lam_and_alpha_is_checked_by_name():
    """A given ``lam`` is kept beside the fitted kernel (as AdaptiveTruncationGP does; before,
    it silently switched the fit off); ``alpha`` is refused by name like ``v`` and ``lam``."""
    from gpytorch.kernels import ScaleKernel

    g = torch.Generator().manual_seed(0)
    X = torch.rand(20, 2, generator=g, dtype=torch.float64)
    Y = torch.sin(5 * X[:, :1]) + 0.1 * torch.randn(20, 1, generator=g, dtype=torch.float64)
    fitted, given = TruncatedGP(X, Y), TruncatedGP(X, Y, lam=0.5)
    assert isinstance(given.covar_module, ScaleKernel) and given.lam == 0.5
    torch.testing.assert_close(given.covar_module.base_kernel.lengthscale,
                               fitted.covar_module.base_kernel.lengthscale)
    for bad in (True, "1", [0.5], None.__class__):
        with pytest.raises(ValueError, match="`alpha` must be a number in \\(0, 1\\]"):
            TruncatedGP(X, Y, alpha=bad)
