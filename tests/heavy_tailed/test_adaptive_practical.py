"""AdaptiveTruncationGP's data-driven mode: no α, no v, a BoTorch-fitted kernel."""

from __future__ import annotations

import pytest
import torch
from botorch.optim import optimize_acqf
from gpytorch.kernels import RBFKernel, ScaleKernel

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.heavy_tailed.moments import (
    PRACTICAL_WIDTH,
    fit_kernel_on_targets,
    projection_levels,
    robust_location_and_moment,
)
from botorch_mtucb.models import AdaptiveTruncationGP

DT = torch.float64


def _data(t: int = 30, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, 2, dtype=DT, generator=g)
    Y = 3.0 + torch.sin(4 * X[:, :1]) * X[:, 1:] + 0.1 * torch.randn(t, 1, dtype=DT, generator=g)
    Y[5] += 200.0  # a gross outlier
    return X, Y


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_data_driven_estimates_fit_and_equal_the_declared_model_on_centred_data() -> None:
    X, Y = _data()
    Y_copy = Y.clone()
    m = AdaptiveTruncationGP(X, Y, generator=_gen())
    assert torch.equal(Y, Y_copy)  # not mutated
    loc, v = robust_location_and_moment(Y.squeeze(-1), 1.0)
    assert m.location == pytest.approx(float(loc)) and m.v == pytest.approx(float(v))
    assert m.alpha == 1.0 and m.constants == "practical" and m.beta() == PRACTICAL_WIDTH
    assert HeavyTailedUCB(m).beta == PRACTICAL_WIDTH
    assert m.kind == "nystrom" and isinstance(m.features.base_kernel, ScaleKernel)
    torch.testing.assert_close(m.train_Y, Y, atol=1e-12, rtol=0)
    # The kernel and λ are BoTorch's fit on the centred rewards truncated at TGP's level b_t.
    z = Y.squeeze(-1) - loc
    b = float(v) ** 0.5 * 30**0.25
    kern, lam = fit_kernel_on_targets(X, torch.where(z.abs() <= b, z, 0.0))
    assert m.lam == pytest.approx(lam, rel=1e-8)
    torch.testing.assert_close(m.features.base_kernel.base_kernel.lengthscale,
                               kern.base_kernel.lengthscale, atol=1e-8, rtol=0)
    # Same dictionary, declared (α, v, λ) on the centred data: the same posterior + loc.
    declared = AdaptiveTruncationGP(X, Y - loc, 1.0, m.v, m.features, m.lam,
                                    sample_dictionary=False, level="projection")
    assert declared.constants == "theory" and declared.location == 0.0
    Xt = torch.rand(7, 1, 2, dtype=DT, generator=_gen(3))
    with torch.no_grad():
        p, r = m.posterior(Xt), declared.posterior(Xt)
    torch.testing.assert_close(p.mean, r.mean + float(loc), atol=1e-10, rtol=0)
    torch.testing.assert_close(p.variance, r.variance, atol=1e-10, rtol=0)
    assert m.truncation_level() == declared.truncation_level()
    # Conditioning keeps loc and v and centres the new rewards.
    new = m.condition_on_observations(X[:2], Y[:2], resample_dictionary=False)
    ref = declared.condition_on_observations(X[:2], Y[:2] - loc, resample_dictionary=False)
    with torch.no_grad():
        torch.testing.assert_close(new.posterior(Xt).mean, ref.posterior(Xt).mean + float(loc),
                                   atol=1e-10, rtol=0)


def test_truncation_bounds_a_gross_outlier_that_moves_the_untruncated_fit() -> None:
    X, Y = _data()
    m = AdaptiveTruncationGP(X, Y, generator=_gen())
    plain = AdaptiveTruncationGP(X, Y, features=m.features, lam=m.lam, truncate=False,
                                 sample_dictionary=False)
    clean = Y.clone()
    clean[5] -= 200.0
    ref = AdaptiveTruncationGP(X, clean, features=m.features, lam=m.lam,
                               sample_dictionary=False)
    x5 = X[5:6].unsqueeze(-2)
    with torch.no_grad():
        err_trunc = float((m.posterior(x5).mean - ref.posterior(x5).mean).abs())
        err_plain = float((plain.posterior(x5).mean - ref.posterior(x5).mean).abs())
    assert err_plain > 10.0 * err_trunc  # the outlier drags the untruncated mean


def test_continuous_domain_with_optimize_acqf() -> None:
    X, Y = _data(20, 1)
    m = AdaptiveTruncationGP(X, Y, generator=_gen())
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    x, val = optimize_acqf(HeavyTailedUCB(m), bounds, q=1, num_restarts=3, raw_samples=64)
    assert x.shape == (1, 2) and bool(((x >= 0) & (x <= 1)).all()) and torch.isfinite(val)
    with torch.no_grad():
        mu, var = m.mean_and_variance(x.unsqueeze(-2))
    torch.testing.assert_close(val, (mu + PRACTICAL_WIDTH * var.sqrt()).squeeze(), atol=1e-8,
                               rtol=0)


def test_declared_mode_is_unchanged_and_errors_are_clear() -> None:
    X, Y = _data(12, 2)
    qff = QuadratureFourierFeatures(0.2, 8, 2)
    m = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff)
    assert m.location == 0.0 and m.lam == 1.0 and m.constants == "theory" and m.v == 2.0
    positional = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, 1.0, 0.1, 1.0)
    with torch.no_grad():
        torch.testing.assert_close(m.posterior(X).mean, positional.posterior(X).mean,
                                   atol=0, rtol=0)
    with pytest.raises(ValueError, match="`features` is required"):
        AdaptiveTruncationGP(X, Y, 1.0, 2.0)
    with pytest.raises(ValueError, match="unit cube"):
        AdaptiveTruncationGP(X + 2.0, Y)
    tiny = AdaptiveTruncationGP(X[:1], Y[:1], generator=_gen())  # too little data to fit
    assert isinstance(tiny.features, NystromFeatures) and tiny.lam == 1.0


def _hand_mean(X, y, features, lam, levels_fn, Xt):
    """Algorithm 2 by hand: V = ΦᵀΦ + λI, U = V^{-1/2}Φᵀ (eigh), r̂, θ = V^{-1/2} r̂."""
    Phi = features(X)
    e, W = torch.linalg.eigh(Phi.T @ Phi + lam * torch.eye(Phi.shape[1], dtype=DT))
    Vmh = W @ torch.diag(e.rsqrt()) @ W.T
    U = Vmh @ Phi.T
    b = levels_fn(U)
    Z = U * y
    r_hat = torch.where(Z.abs() <= b, Z, 0.0).sum(-1)
    return features(Xt) @ (Vmh @ r_hat)


def test_projection_levels_match_a_hand_computation() -> None:
    u = torch.tensor([1.0, 0.5, 0.0], dtype=DT)
    # α = 1: b_i = √v · √t · u_i; α = 1/2: v^{2/3} t^{1/6 + 1/2} u_i.
    torch.testing.assert_close(projection_levels(u, 16, 1.0, 4.0),
                               torch.tensor([8.0, 4.0, 0.0], dtype=DT), atol=1e-12, rtol=0)
    expected = 8.0 ** (2.0 / 3.0) * 64.0 ** (1.0 / 6.0 + 0.5) * u
    torch.testing.assert_close(projection_levels(u, 64, 0.5, 8.0), expected, atol=1e-10, rtol=0)


@pytest.mark.parametrize("arms", [False, True])
def test_data_driven_levels_per_direction_match_algorithm_2_by_hand(arms: bool) -> None:
    g = _gen(4)
    P = torch.rand(14, 2, dtype=DT, generator=g)
    idx = torch.randint(0, 9, (25,), generator=g)  # arms 9-13 never pulled
    X = P[idx]
    Y = torch.sin(3 * X[:, :1]) + 0.2 * torch.randn(25, 1, dtype=DT, generator=g)
    Y[[2, 11]] += torch.tensor([[60.0], [-40.0]], dtype=DT)  # gross outliers
    m = AdaptiveTruncationGP(X, Y, generator=_gen(1), arms=P if arms else None)
    assert m.level == "projection"
    y = Y.squeeze(-1) - m.location
    t = X.shape[0]

    def levels(U):  # per direction: √v̂ · √t · max_τ |u_{i,τ}|  (α = 1)
        return (m.v**0.5 * t**0.5 * U.abs().amax(-1)).unsqueeze(-1)

    Xt = torch.rand(6, 2, dtype=DT, generator=_gen(5))
    ref = _hand_mean(X, y, m.features, m.lam, levels, Xt) + m.location
    with torch.no_grad():
        mean = m.posterior(Xt.unsqueeze(-2)).mean.reshape(-1) if not arms else None
    if arms:  # the arm path predicts on arms only
        ref = _hand_mean(X, y, m.features, m.lam, levels, P) + m.location
        with torch.no_grad():
            mean = m.posterior(P.unsqueeze(-2)).mean.reshape(-1)
    torch.testing.assert_close(mean, ref, atol=1e-8, rtol=0)
    # The paper's single level b_t (level="paper") zeroes more terms and gives another fit.
    paper = AdaptiveTruncationGP(X, Y, features=m.features, lam=m.lam, sample_dictionary=False,
                                 level="paper", arms=P if arms else None)
    b = paper.truncation_level()
    ref_paper = _hand_mean(X, y, m.features, m.lam, lambda U: b,
                           P if arms else Xt) + m.location
    with torch.no_grad():
        mp = paper.posterior((P if arms else Xt).unsqueeze(-2)).mean.reshape(-1)
    torch.testing.assert_close(mp, ref_paper, atol=1e-8, rtol=0)
    assert float((mp - mean).abs().max()) > 1e-3


def test_declared_calls_keep_the_papers_single_level() -> None:
    X, Y = _data(15, 3)
    qff = QuadratureFourierFeatures(0.2, 6, 2)
    m = AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff)
    assert m.level == "paper"
    b = m.truncation_level()
    Xt = torch.rand(5, 2, dtype=DT, generator=_gen(6))
    ref = _hand_mean(X, Y.squeeze(-1), qff, 1.0, lambda U: b, Xt)
    with torch.no_grad():
        torch.testing.assert_close(m.posterior(Xt.unsqueeze(-2)).mean.reshape(-1), ref,
                                   atol=1e-8, rtol=0)
    with pytest.raises(ValueError, match="`level` must be 'paper' or 'projection'"):
        AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, level="direction")


def test_level_travels_with_the_state_dict_and_conditioning() -> None:
    X, Y = _data(20, 4)
    m = AdaptiveTruncationGP(X, Y, generator=_gen())
    other = AdaptiveTruncationGP(X, Y - m.location, 1.0, m.v, m.features, m.lam,
                                 sample_dictionary=False)
    assert other.level == "paper"
    other.load_state_dict(m.state_dict())
    Xt = torch.rand(4, 1, 2, dtype=DT, generator=_gen(7))
    with torch.no_grad():
        assert other.level == "projection"
        torch.testing.assert_close(other.posterior(Xt).mean, m.posterior(Xt).mean,
                                   atol=1e-10, rtol=0)
        new = m.condition_on_observations(X[:1], Y[:1], resample_dictionary=False)
        assert new.level == "projection"


@pytest.mark.parametrize("arms", [False, True])
def test_data_driven_dictionary_is_the_same_in_any_reward_units(arms: bool) -> None:
    """The fitted kernel carries the rewards' units (outputscale ≈ Var y): the Nyström
    dictionary's inclusion probabilities q σ² are taken on k / max k, so rewards × 1e-3 give
    the same dictionary (also after conditioning) and the same model up to that factor. Before,
    the dictionary shrank to one point and the mean to a constant."""
    X, Y = _data(30, seed=5)
    kw = {"arms": X} if arms else {}
    models = [AdaptiveTruncationGP(X, scale * Y, generator=_gen(3), **kw) for scale in (1.0, 1e-3)]
    big, small = models
    assert big.features.dictionary.shape[0] > 10
    assert torch.equal(small.features.dictionary, big.features.dictionary)
    Xt = (X[:20] if arms else torch.rand(20, 2, generator=_gen(4), dtype=DT)).unsqueeze(-2)
    with torch.no_grad():
        torch.testing.assert_close(small.posterior(Xt).mean / 1e-3, big.posterior(Xt).mean,
                                   rtol=1e-5, atol=1e-6)
    Xn, Yn = X[:3], Y[:3]
    nb = big.condition_on_observations(Xn, Yn)
    ns = small.condition_on_observations(Xn, 1e-3 * Yn)
    assert ns.features.dictionary.shape[0] == nb.features.dictionary.shape[0] > 10


def test_nystrom_kernel_scale_is_the_largest_prior_variance() -> None:
    kernel = ScaleKernel(RBFKernel()).to(DT)
    kernel.outputscale = 2.5e-4
    features = NystromFeatures(kernel)
    X = torch.rand(6, 2, generator=_gen(0), dtype=DT)
    assert float(features.kernel_scale(X)) == pytest.approx(2.5e-4)
    assert float(features.kernel_scale(X[:0])) == 1.0
