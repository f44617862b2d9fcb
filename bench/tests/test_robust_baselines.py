"""Suite methods: robust moment estimate, practical TGP against a plain GP, the trial loop."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.means import ZeroMean

from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from mtucb_bench.ht_suite_problems import ht_suite_problem, sobol_unit_design
from mtucb_bench.robust_baselines import (
    METHODS,
    loo_means,
    practical_truncated_gp,
    recommend_index,
    replay_observations,
    robust_location_and_moment,
    run_suite_trial,
)

DT = torch.float64


def _lower_median(values: list[float]) -> float:
    s = sorted(values)
    return s[(len(s) - 1) // 2]  # torch.median's convention for even counts


@pytest.mark.parametrize("t, alpha", [(1, 1.0), (7, 0.5), (30, 1.0), (101, 0.9)])
def test_robust_moment_brute_force(t, alpha):
    y = torch.randn(t, dtype=DT, generator=torch.Generator().manual_seed(t)) * 3 + 5
    loc, v = robust_location_and_moment(y, alpha)
    vals = y.tolist()
    med = _lower_median(vals)
    K = max(1, min(math.ceil(8 * math.log(10)), t // 2))
    groups = [[abs(vals[s] - med) ** (1 + alpha) for s in range(t) if s % K == k] for k in range(K)]
    expected = _lower_median([sum(g) / len(g) for g in groups])
    assert float(loc) == pytest.approx(med)
    assert float(v) == pytest.approx(max(expected, 1e-12), rel=1e-12)
    _, v_raw = robust_location_and_moment(y, alpha, centre=False)
    assert float(v_raw) > float(v)  # about 0 instead of about 5


def test_robust_moment_ignores_rare_outliers():
    g = torch.Generator().manual_seed(0)
    y = torch.randn(40, dtype=DT, generator=g)
    y_out = y.clone()
    y_out[[3, 17]] = 1e4  # two outliers hit two of the 19 groups
    _, v = robust_location_and_moment(y)
    _, v_out = robust_location_and_moment(y_out)
    assert float(v_out) < 3 * float(v)
    assert float(y_out.square().mean()) > 1e6  # the plain moment explodes
    with pytest.raises(ValueError, match="`y` must be a non-empty vector"):
        robust_location_and_moment(y.new_zeros(0))
    with pytest.raises(ValueError, match="`alpha`"):
        robust_location_and_moment(y, alpha=0.0)


def test_practical_tgp_equals_zero_mean_gp_on_truncated_targets():
    g = torch.Generator().manual_seed(1)
    X = torch.rand(25, 2, dtype=DT, generator=g)
    Y = (torch.sin(6 * X[:, :1]) + X[:, 1:] + 10.0) + 0.1 * torch.randn(25, 1, generator=g)
    Y[[4, 11]] += torch.tensor([[500.0], [-300.0]], dtype=DT)
    Y_before = Y.clone()
    model, loc = practical_truncated_gp(X, Y)
    assert torch.equal(Y, Y_before)  # the caller's tensor is untouched
    assert float(loc) == pytest.approx(float(Y.median()))
    targets = model.train_targets
    assert targets[4] == 0 and targets[11] == 0  # outliers zeroed = imputed at the centre
    kept = targets != 0
    assert torch.allclose(targets[kept], (Y.squeeze(-1) - loc)[kept])
    # Independent reference: a zero-mean exact GP with the same hyperparameters on ẑ.
    k = model.covar_module
    ref = SingleTaskGP(
        X, targets.unsqueeze(-1), covar_module=ScaleKernel(RBFKernel(ard_num_dims=2)),
        mean_module=ZeroMean(), outcome_transform=None,
    ).to(DT)
    ref.covar_module.base_kernel.lengthscale = k.base_kernel.lengthscale.detach().clone()
    ref.covar_module.outputscale = k.outputscale.detach().clone()
    ref.likelihood.noise = model.lam
    ref.eval()
    Xt = torch.rand(13, 2, dtype=DT, generator=g)
    with torch.no_grad():
        post = ref.posterior(Xt)
        mean, var = model.mean_and_variance(Xt)
    assert torch.allclose(mean, post.mean.squeeze(-1), atol=1e-8)
    assert torch.allclose(var, post.variance.squeeze(-1), atol=1e-8)
    # No truncation: the same pipeline, outliers kept.
    plain, _ = practical_truncated_gp(X, Y, truncate=False)
    assert torch.allclose(plain.train_targets, Y.squeeze(-1) - loc)


def test_practical_tgp_levels():
    g = torch.Generator().manual_seed(2)
    X = torch.rand(20, 1, dtype=DT, generator=g)
    Y = torch.randn(20, 1, dtype=DT, generator=g)
    cur, loc = practical_truncated_gp(X, Y, alpha=1.0, v=1.0)
    per, _ = practical_truncated_gp(X, Y, alpha=1.0, v=1.0, level="per-round")
    z = Y.squeeze(-1) - loc
    s = torch.arange(1, 21, dtype=DT)
    assert torch.equal(cur.train_targets, torch.where(z.abs() <= 20**0.25, z, 0.0))
    assert torch.equal(per.train_targets, torch.where(z.abs() <= s**0.25, z, 0.0))
    assert per.truncate and not cur.truncate
    with pytest.raises(ValueError, match="`level`"):
        practical_truncated_gp(X, Y, level="final")


def test_practical_tgp_clip_winsorises_and_keeps_the_order():
    g = torch.Generator().manual_seed(4)
    X = torch.rand(24, 2, dtype=DT, generator=g)
    Y = 0.1 * torch.randn(24, 1, dtype=DT, generator=g)
    Y[[2, 9]] = torch.tensor([[6.0], [3.0]], dtype=DT)  # two rare high rewards (a peak)
    Y[15] = -40.0  # a gross low outlier
    Y_before = Y.clone()
    clipped, loc = practical_truncated_gp(X, Y, alpha=1.0, v=0.5, clip=True)
    zeroed, _ = practical_truncated_gp(X, Y, alpha=1.0, v=0.5)
    assert torch.equal(Y, Y_before)
    z = (Y.squeeze(-1) - loc).tolist()
    b = 0.5**0.5 * 24**0.25  # b_t = v^{1/2} t^{1/4}
    expected = [min(max(zi, -b), b) for zi in z]  # winsorised by hand
    assert clipped.train_targets.tolist() == pytest.approx(expected, abs=1e-12)
    assert not clipped.truncate
    # Zeroing maps the two best rewards to the centre; clipping keeps them the largest.
    assert zeroed.train_targets[2] == 0 and zeroed.train_targets[9] == 0
    top = clipped.train_targets.topk(2).indices.tolist()
    assert sorted(top) == [2, 9] and clipped.train_targets[15] == pytest.approx(-b)
    per, _ = practical_truncated_gp(X, Y, alpha=1.0, v=0.5, clip=True, level="per-round")
    s = torch.arange(1, 25, dtype=DT)
    bs = (0.5**0.5 * s**0.25).tolist()
    assert per.train_targets.tolist() == pytest.approx(
        [min(max(zi, -bi), bi) for zi, bi in zip(z, bs, strict=True)], abs=1e-12
    )


def test_practical_tgp_declared_v_and_no_centring():
    X = sobol_unit_design(12, 2, seed=0)
    Y = 50.0 + torch.linspace(-1, 1, 12, dtype=DT).unsqueeze(-1)
    model, _ = practical_truncated_gp(X, Y, alpha=0.5, v=2.0)
    assert isinstance(model, TruncatedGP) and model.alpha == 0.5 and model.v == 2.0
    # Uncentred data with a level estimated about 0 keep everything; with a small declared v
    # every reward (≈ 50) is zeroed: the failure mode centring avoids.
    zeroed, loc = practical_truncated_gp(X, Y, alpha=1.0, v=1.0, centre=False)
    assert float(loc) == 0 and (zeroed.train_targets == 0).all()


def test_recommend_index_is_posterior_mean_argmax():
    X = sobol_unit_design(15, 2, seed=2)
    Y = -(X - 0.3).square().sum(-1, keepdim=True)
    model, _ = practical_truncated_gp(X, Y, truncate=False)
    with torch.no_grad():
        mean = model.posterior(X.unsqueeze(-2)).mean.view(-1)
    assert recommend_index(model, X) == int(mean.argmax())


def test_run_suite_trial_common_random_numbers():
    p = ht_suite_problem("branin", "contaminated:0.1x100")
    a = run_suite_trial(p, "TGP-UCB-practical", seed=3, n_init=5, iterations=2, raw_samples=32,
                        num_restarts=2)
    b = run_suite_trial(p, "STGP-UCB", seed=3, n_init=5, iterations=2, raw_samples=32,
                        num_restarts=2)
    assert len(a["regret"]) == 7 and len(a["simple_regret"]) == 3 and len(a["seconds"]) == 2
    assert a["regret"][:5] == b["regret"][:5]  # same initial design
    X0 = sobol_unit_design(5, 2, seed=3)
    assert a["regret"][:5] == pytest.approx(p.regret(X0).tolist())
    assert a["cumulative_regret"][-1] == pytest.approx(sum(a["regret"]))
    Xr = torch.tensor(a["inputs"], dtype=DT)  # the evaluated inputs, in round order
    assert Xr.shape == (7, 2) and torch.equal(Xr[:5], X0)
    assert a["regret"] == pytest.approx(p.regret(Xr).tolist(), abs=1e-12)
    assert all(r >= -1e-9 for r in a["simple_regret"])
    # The replay from the regrets and the seed reproduces the stored rewards.
    y = torch.tensor(a["observations"], dtype=DT)
    assert torch.allclose(replay_observations(p, a), y, rtol=0, atol=1e-9)
    assert torch.allclose(replay_observations(p, b), torch.tensor(b["observations"], dtype=DT),
                          atol=1e-9)
    assert not torch.allclose(replay_observations(p, {**a, "seed": 4}), y, atol=1e-9)
    with pytest.raises(ValueError, match="expected n_init"):
        replay_observations(p, {**a, "iterations": 3})
    again = run_suite_trial(p, "TGP-UCB-practical", seed=3, n_init=5, iterations=2,
                            raw_samples=32, num_restarts=2)
    assert again["regret"] == a["regret"]  # reproducible
    with pytest.raises(ValueError, match="Unknown method 'EI'"):
        run_suite_trial(p, "EI", seed=0)
    with pytest.raises(ValueError, match="n_init >= 2"):
        run_suite_trial(p, "STGP-UCB", seed=0, n_init=1)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_runs_one_round(method):
    p = ht_suite_problem("branin", "student-t:3")
    r = run_suite_trial(p, method, seed=0, n_init=6, iterations=1, raw_samples=16,
                        num_restarts=1)
    assert len(r["regret"]) == 7 and all(math.isfinite(x) for x in r["regret"])
    if method == "ATA-GP-UCB-practical":  # Nyström draws seeded per round: reproducible
        again = run_suite_trial(p, method, seed=0, n_init=6, iterations=1, raw_samples=16,
                                num_restarts=1)
        assert again["regret"] == r["regret"]


def _suite_script():
    from mtucb_bench.suites import ht_suite

    return ht_suite


@pytest.mark.parametrize("wins, losses", [(0, 0), (1, 0), (2, 8), (5, 5), (9, 1), (0, 10)])
def test_suite_sign_test_against_scipy(wins, losses):
    scipy_stats = pytest.importorskip("scipy.stats")
    p = _suite_script()._sign_test_p(wins, losses)
    expected = 1.0 if wins + losses == 0 else scipy_stats.binomtest(wins, wins + losses).pvalue
    assert p == pytest.approx(expected, rel=1e-12)


def test_suite_winners_pick_the_minimum_with_enough_trials():
    def entry(mean, median, cum, n):
        return {"simple": {"mean": mean, "median": median, "n": n},
                "cumulative": {"mean": cum}}

    summary = {"cell": {"A": entry(0.3, 0.1, 20.0, 10), "B": entry(0.2, 0.25, 30.0, 10),
                        "C": entry(0.01, 0.01, 1.0, 2)}}  # C: too few trials
    rows = _suite_script()._winners(summary, min_trials=5)
    assert rows[-1] == "| cell | B (0.2, 10) | A (0.1, 10) | A (20, 10) |"


def test_loo_means_and_residual_winsorising_by_hand():
    g = torch.Generator().manual_seed(11)
    X = torch.rand(25, 2, generator=g, dtype=DT)
    Y = torch.sin(4 * X).sum(-1, keepdim=True) + 0.05 * torch.randn(25, 1, generator=g, dtype=DT)
    Y[7] += 60.0  # a gross outlier
    clip, loc = practical_truncated_gp(X, Y, clip=True)
    y_hat, lam = clip.train_targets, clip.lam
    with torch.no_grad():
        K = clip.covar_module(X, X).to_dense()
    loo = torch.empty(25, dtype=DT)
    for i in range(25):  # brute force: the GP on the other 24 points, same hyperparameters
        keep = torch.arange(25) != i
        A = K[keep][:, keep] + lam * torch.eye(24, dtype=DT)
        loo[i] = K[i, keep] @ torch.linalg.solve(A, y_hat[keep])
    torch.testing.assert_close(loo_means(clip), loo, atol=1e-10, rtol=0)
    resid, loc2 = practical_truncated_gp(X, Y, clip=True, residual_steps=1)
    assert float(loc2) == float(loc)
    z = Y[:, 0] - loc
    r = z - loo
    _, v_r = robust_location_and_moment(r, 1.0, centre=False)
    b_r = float(v_r) ** 0.5 * 25 ** 0.25
    torch.testing.assert_close(resid.train_targets, loo + r.clamp(-b_r, b_r), atol=1e-10,
                               rtol=0)
    assert abs(float(resid.train_targets[7] - loo[7])) == pytest.approx(b_r)  # the outlier
    with pytest.raises(ValueError, match="residual_steps"):
        practical_truncated_gp(X, Y, residual_steps=-1)
