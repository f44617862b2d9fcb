"""robust_gp / RobustGP / recommend against independent references.

* leave-one-out moments vs brute-force GP refits without each reading (same hyperparameters);
* the flags catch planted outliers of both signs and one-sided failures, and leave a planted
  peak that several readings support unflagged;
* the posterior lives on the caller's box (equal to the unit-cube model mapped back);
* recommend never returns a planted corrupted point; it is the plain argmax of the posterior
  mean for a model without flags;
* caller tensors untouched, dtype / device, bad inputs.
"""

from __future__ import annotations

import math
import pickle
import warnings

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel, ScaleKernel

from botorch_mtucb.heavy_tailed.robust import (
    MIN_SCREENED,
    SCALE_FLOOR,
    SPREAD_THRESHOLD,
    SUSPICION_THRESHOLD,
    RobustGP,
    loo_moments,
)
from botorch_mtucb.models import TruncatedGP, recommend, robust_gp

DT = torch.float64


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _smooth(X: torch.Tensor) -> torch.Tensor:
    return torch.sin(5 * X[:, :1]) + torch.cos(3 * X[:, 1:2])


def _data(n: int = 40, seed: int = 0, noise: float = 0.05) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=DT)
    return X, _smooth(X) + noise * torch.randn(n, 1, generator=g, dtype=DT)


# ---------------------------------------------------------------------------- LOO moments
@pytest.mark.parametrize("lam", [1e-3, 0.3])
def test_loo_moments_match_brute_force_refits(lam):
    g = torch.Generator().manual_seed(1)
    X = torch.rand(12, 3, generator=g, dtype=DT)
    y = torch.randn(12, generator=g, dtype=DT)
    kernel = ScaleKernel(RBFKernel(ard_num_dims=3)).to(X)
    kernel.outputscale = 2.0
    kernel.base_kernel.lengthscale = torch.tensor([0.3, 0.5, 0.8], dtype=DT)
    m, s2 = loo_moments(kernel, lam, X, y)
    with torch.no_grad():
        K = kernel(X, X).to_dense()
    for i in range(12):
        keep = torch.arange(12) != i
        A = K[keep][:, keep] + lam * torch.eye(11, dtype=DT)
        k = K[keep, i]
        mean = k @ torch.linalg.solve(A, y[keep])
        var = K[i, i] + lam - k @ torch.linalg.solve(A, k)
        assert math.isclose(float(m[i]), float(mean), rel_tol=1e-8, abs_tol=1e-9)
        assert math.isclose(float(s2[i]), float(var), rel_tol=1e-8, abs_tol=1e-12)


def test_loo_moments_with_excluded_readings_match_brute_force():
    g = torch.Generator().manual_seed(2)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    y = torch.randn(10, generator=g, dtype=DT)
    exclude = torch.zeros(10, dtype=torch.bool)
    exclude[[1, 6]] = True
    y[[1, 6]] = torch.tensor([80.0, -60.0], dtype=DT)  # must not matter anywhere
    kernel = RBFKernel(ard_num_dims=2).to(X)
    kernel.lengthscale = torch.tensor([0.4, 0.7], dtype=DT)
    lam = 0.05
    m, s2 = loo_moments(kernel, lam, X, y, exclude)
    with torch.no_grad():
        K = kernel(X, X).to_dense()
    for i in range(10):
        given = ~exclude & (torch.arange(10) != i)
        A = K[given][:, given] + lam * torch.eye(int(given.sum()), dtype=DT)
        k = K[given, i]
        assert math.isclose(float(m[i]), float(k @ torch.linalg.solve(A, y[given])),
                            rel_tol=1e-8, abs_tol=1e-9)
        var = K[i, i] + lam - k @ torch.linalg.solve(A, k)
        assert math.isclose(float(s2[i]), float(var), rel_tol=1e-8, abs_tol=1e-12)
    none = loo_moments(kernel, lam, X, y, torch.zeros(10, dtype=torch.bool))
    assert torch.equal(none[0], loo_moments(kernel, lam, X, y)[0])


def test_loo_moments_do_not_depend_on_the_left_out_target():
    X, Y = _data(10)
    kernel = RBFKernel().to(X)
    y = Y[:, 0]
    m0, _ = loo_moments(kernel, 0.1, X, y)
    y2 = y.clone()
    y2[4] += 100.0
    m1, _ = loo_moments(kernel, 0.1, X, y2)
    assert math.isclose(float(m0[4]), float(m1[4]), rel_tol=1e-9)
    assert not math.isclose(float(m0[3]), float(m1[3]), rel_tol=1e-3)


# ---------------------------------------------------------------------------- flags
def test_flags_catch_outliers_of_both_signs():
    X, Y = _data(40)
    Y[5] += 8.0
    Y[17] -= 8.0
    model = robust_gp(X, Y)
    assert model.suspicious.dtype == torch.bool and model.suspicious.shape == (40,)
    assert bool(model.suspicious[5]) and bool(model.suspicious[17])
    assert int(model.suspicious.sum()) <= 4
    # flagged targets are their leave-one-out means: close to f, not to the reading
    f = _smooth(X)[:, 0]
    assert abs(float(model.train_Y[5, 0] - f[5])) < 1.0
    assert abs(float(model.train_Y[17, 0] - f[17])) < 1.0
    assert torch.equal(model.raw_Y, Y)
    # the posterior ignores them: the mean at the outliers' inputs follows f
    mean = model.posterior(X[[5, 17]]).mean[:, 0]
    assert (mean - f[[5, 17]]).abs().max() < 1.0


def test_one_sided_failures_are_flagged_and_never_recommended():
    X, Y = _data(40, seed=2)
    bad = [3, 11, 29]
    Y[bad] = float(_smooth(X).max()) + 10.0  # a failed sensor reading above f*
    model = robust_gp(X, Y)
    assert model.suspicious[bad].all()
    rec = recommend(model, X)
    assert not (rec == X[bad]).all(dim=-1).any()
    # the recommendation is the best posterior mean among unflagged readings
    with torch.no_grad():
        mean = model.posterior(X.unsqueeze(-2)).mean.view(-1)
    mean[model.suspicious] = -math.inf
    assert torch.equal(rec, X[int(mean.argmax())].unsqueeze(0))


def test_a_peak_that_neighbours_support_is_not_flagged():
    g = torch.Generator().manual_seed(3)
    centre = torch.tensor([0.6, 0.4], dtype=DT)
    X = torch.cat([torch.rand(30, 2, generator=g, dtype=DT),
                   centre + 0.04 * torch.randn(6, 2, generator=g, dtype=DT)])

    def f(x):
        return 0.3 * torch.sin(3 * x[:, :1]) + 6.0 * torch.exp(
            -((x - centre) ** 2).sum(-1, keepdim=True) / (2 * 0.1**2))

    Y = f(X) + 0.05 * torch.randn(36, 1, generator=g, dtype=DT)
    Y[2] -= 10.0  # and one planted outlier elsewhere
    model = robust_gp(X, Y)
    assert not model.suspicious[30:].any()  # the peak's readings are signal
    assert bool(model.suspicious[2])
    rec = recommend(model, X)
    assert float(((rec[0] - centre) ** 2).sum().sqrt()) < 0.15


def test_clean_data_flags_few_readings():
    X, Y = _data(40, seed=4)
    model = robust_gp(X, Y)
    assert int(model.suspicious.sum()) <= 1


def test_flag_rule_on_the_reported_residuals():
    X, Y = _data(30, seed=5)
    Y[0] += 5.0
    model = robust_gp(X, Y)
    e, flags = model.residuals, model.suspicious
    scale = max(SCALE_FLOOR, 1.4826 * float(e.abs().median()))
    spread = 1.4826 * float((Y - Y.median()).abs().median())
    assert bool(flags[0])
    assert (e[flags].abs() > SUSPICION_THRESHOLD * scale).all()
    moved = (model.raw_Y - model.train_Y).abs().squeeze(-1)  # |z_i - m_i| where flagged
    assert (moved[flags] > SUSPICION_THRESHOLD * spread).all()
    assert (moved[~flags] < 1e-12).all()
    assert int(flags.sum()) < 15  # fewer than half


def test_a_deviation_within_the_readings_spread_is_not_flagged():
    """An improbable residual (tiny noise) smaller than the readings' spread is averaged: the
    model's predictive spread, not the data, would call it an outlier."""
    X, Y = _data(40, seed=23, noise=1e-3)
    spread = 1.4826 * float((Y - Y.median()).abs().median())
    mild, far = Y.clone(), Y.clone()
    mild[9] += 0.25 * SPREAD_THRESHOLD * spread
    far[9] += 2.0 * SPREAD_THRESHOLD * spread
    model = robust_gp(X, mild)
    scale = max(SCALE_FLOOR, 1.4826 * float(model.residuals.abs().median()))
    assert float(model.residuals[9].abs()) > SUSPICION_THRESHOLD * scale  # improbable ...
    assert not bool(model.suspicious[9])  # ... but within the spread: kept
    assert torch.allclose(model.train_Y, mild, rtol=0.0, atol=1e-12)
    assert bool(robust_gp(X, far).suspicious[9])


def test_tied_readings_keep_a_spread_and_the_best_clean_reading():
    """Noise-free readings of a bump on a zero plateau (more than half of them exactly 0, so
    their MAD is 0): the spread falls back to the mean absolute deviation, no reading is
    flagged, and the recommendation is the best reading's point."""
    g = torch.Generator().manual_seed(2)
    X = torch.rand(20, 2, generator=g, dtype=DT)
    Y = (1 - 10 * ((X - 0.6) ** 2).sum(-1, keepdim=True)).clamp_min(0.0)
    assert float((Y == 0).double().mean()) > 0.5  # the MAD is 0
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    model = robust_gp(X, Y, bounds)
    assert not bool(model.suspicious.any())
    torch.testing.assert_close(model.train_Y, Y, rtol=0.0, atol=0.0)
    torch.testing.assert_close(recommend(model, X), X[Y.argmax()].unsqueeze(0))
    # a gross outlier on the plateau is still caught
    Z = Y.clone()
    Z[int((Y == 0).nonzero()[0, 0])] = 5.0
    flagged = robust_gp(X, Z, bounds).suspicious
    assert bool(flagged[int((Y == 0).nonzero()[0, 0])]) and int(flagged.sum()) == 1


def test_spread_threshold_sets_the_second_condition():
    """``k`` of ``|y_i − m_i| > k · σ_y``: a planted deviation of 2.5 σ_y (improbable under the
    model) is flagged for k = 2 and kept for k = 3; k = 0 leaves only the first condition."""
    X, Y = _data(40, seed=23, noise=1e-3)
    spread = 1.4826 * float((Y - Y.median()).abs().median())
    Y[9] += 2.5 * spread
    assert bool(RobustGP(X, Y, spread_threshold=2.0).suspicious[9])
    kept = RobustGP(X, Y, spread_threshold=3.0)
    assert not bool(kept.suspicious[9])
    assert float(kept.residuals[9].abs()) > SUSPICION_THRESHOLD * SCALE_FLOOR  # improbable
    assert bool(RobustGP(X, Y, spread_threshold=0.0).suspicious[9])


def test_few_readings_are_not_screened():
    X, Y = _data(MIN_SCREENED - 1)
    Y[0] += 50.0
    assert not robust_gp(X, Y).suspicious.any()
    two = robust_gp(X[:2], Y[:2])  # the fewest readings accepted
    assert two.posterior(X[:1].unsqueeze(-2)).mean.isfinite().all()


def test_threshold_controls_the_flags():
    X, Y = _data(40, seed=6)
    Y[7] += 6.0
    loose = RobustGP(X, Y, threshold=1e3)
    assert not loose.suspicious.any()
    assert bool(RobustGP(X, Y, threshold=SUSPICION_THRESHOLD).suspicious[7])


@pytest.mark.parametrize("t", [30, 3, 1])
def test_without_flags_the_model_is_botorchs_single_task_gp(t):
    """No flag: the final model is SingleTaskGP (Standardize, Normalize to the box) fitted by
    BoTorch on the same data: same posterior, reverting to the fitted constant mean. Also
    with fewer readings than are screened, down to one (an Ax strategy's first BO trial can
    see one)."""
    from botorch.fit import fit_gpytorch_mll
    from botorch.models.transforms import Normalize, Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    X, Y = _data(30, seed=21)
    X, Y = X[:t], Y[:t]
    bounds = torch.tensor([[-2.0, 10.0], [2.0, 50.0]], dtype=DT)
    X_raw, Y = bounds[0] + (bounds[1] - bounds[0]) * X, 7.0 + 3.0 * Y
    model = robust_gp(X_raw, Y, bounds)
    assert not model.suspicious.any()
    ref = SingleTaskGP(X_raw, Y, input_transform=Normalize(2, bounds=bounds),
                       outcome_transform=Standardize(m=1))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(ref.likelihood, ref))
    ref.eval()
    U = torch.rand(64, 2, generator=torch.Generator().manual_seed(22), dtype=DT)
    Z = (bounds[0] + (bounds[1] - bounds[0]) * U).unsqueeze(-2)
    with torch.no_grad():
        p, q = model.posterior(Z), ref.posterior(Z)
        far = model.posterior(torch.tensor([[[1e3, -1e4]]], dtype=DT)).mean
    assert torch.allclose(p.mean, q.mean, rtol=1e-5, atol=1e-5)
    assert torch.allclose(p.variance, q.variance, rtol=1e-4, atol=1e-6)
    constant = ref.outcome_transform.means + ref.outcome_transform.stdvs * ref.mean_module.constant
    assert torch.allclose(far.squeeze(), constant.squeeze().detach(), atol=1e-6)
    if t > 1:
        assert not torch.allclose(constant.squeeze(), Y.median(), atol=1e-2)  # not the median
    # the same fit, not only the same optimum: lengthscales (unit cube) and noise
    width = bounds[1] - bounds[0]
    ls = model.covar_module.base_kernel.lengthscale / width
    assert torch.allclose(ls, ref.covar_module.lengthscale.detach(), rtol=1e-8, atol=0.0)
    noise = ref.likelihood.noise.detach() * ref.outcome_transform.stdvs.square()
    assert model.lam == pytest.approx(float(noise.squeeze()), rel=1e-8)


# ---------------------------------------------------------------------------- the box
def test_posterior_is_on_the_callers_box():
    X, Y = _data(25, seed=7)
    Y[4] += 6.0
    bounds = torch.tensor([[-5.0, 100.0], [5.0, 300.0]], dtype=DT)
    X_raw = bounds[0] + (bounds[1] - bounds[0]) * X
    raw = robust_gp(X_raw, Y, bounds)
    unit = robust_gp(X, Y, torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT))
    assert torch.equal(raw.suspicious, unit.suspicious)
    U = torch.rand(50, 2, generator=torch.Generator().manual_seed(8), dtype=DT)
    p_raw = raw.posterior((bounds[0] + (bounds[1] - bounds[0]) * U).unsqueeze(-2))
    p_unit = unit.posterior(U.unsqueeze(-2))
    assert torch.allclose(p_raw.mean, p_unit.mean, rtol=1e-4, atol=1e-4)
    assert torch.allclose(p_raw.variance, p_unit.variance, rtol=1e-4, atol=1e-6)


def test_default_box_is_the_data_min_max():
    X, Y = _data(20, seed=9)
    X = 3.0 * X - 1.0
    box = torch.stack([X.min(0).values, X.max(0).values])
    a, b = robust_gp(X, Y), robust_gp(X, Y, box)
    Z = torch.rand(10, 1, 2, dtype=DT)
    assert torch.allclose(a.posterior(Z).mean, b.posterior(Z).mean, rtol=1e-6, atol=1e-8)


def test_constant_input_dimension_gets_width_one():
    X, Y = _data(15, seed=10)
    X[:, 1] = 7.0
    model = robust_gp(X, Y)
    assert model.posterior(X[:3].unsqueeze(-2)).mean.isfinite().all()


# ---------------------------------------------------------------------------- recommend
def test_recommend_plain_model_is_the_mean_argmax():
    X, Y = _data(15, seed=11)
    model = SingleTaskGP(X, Y).eval()
    with torch.no_grad():
        i = int(model.posterior(X.unsqueeze(-2)).mean.view(-1).argmax())
    rec = recommend(model, X)
    assert rec.shape == (1, 2) and torch.equal(rec, X[i : i + 1])


def test_recommend_excludes_readings_a_truncated_gp_clipped():
    X, Y = _data(30, seed=12)
    Y[6] = 50.0  # clipped to the level: still the largest target
    model = TruncatedGP(X, Y)
    assert float(model.train_targets[6]) == float(model.train_targets.max())
    assert not torch.equal(recommend(model, X), X[6:7])


def test_recommend_skips_a_flagged_point_when_x_and_the_model_differ_in_float_type():
    """The readings at a row of ``X`` are found in the coarser of the two float types: a
    float32 model asked with float64 points (or the reverse) still never returns the point
    whose only reading is flagged, here the failure at the optimum."""
    g = torch.Generator().manual_seed(0)
    X = 0.05 + 0.9 * torch.rand(20, 1, generator=g, dtype=DT)
    X[5, 0] = 0.3  # not a float32 number
    Y = -4 * (X - 0.3).square() + 0.01 * torch.randn(20, 1, generator=g, dtype=DT)
    Y[5] = 20.0
    m32, m64 = robust_gp(X.float(), Y.float()), robust_gp(X, Y)
    assert bool(m32.suspicious[5]) and bool(m64.suspicious[5])
    from botorch_mtucb.utils.incumbent import _excluded

    for model, points in ((m32, X), (m32, X.float()), (m64, X), (m64, X.float())):
        assert torch.equal(_excluded(model, points, model.suspicious), model.suspicious)
        rec = recommend(model, points)
        assert rec.dtype == points.dtype and not bool((rec == points[5]).all())


def test_a_flagged_point_with_an_unflagged_duplicate_may_be_recommended():
    X, Y = _data(30, seed=13)
    X = torch.cat([X, X[:1]])
    Y = torch.cat([Y, Y[:1]])
    Y[0] = 40.0  # flagged reading; its duplicate (row 30) reads f + noise
    model = robust_gp(X, Y)
    assert bool(model.suspicious[0]) and not bool(model.suspicious[30])
    # rows 0 and 30 are the same point: a candidate through row 30's reading
    from botorch_mtucb.utils.incumbent import _excluded

    excluded = _excluded(model, X, model.suspicious)
    assert not bool(excluded[0]) and not bool(excluded[30])
    expected = model.suspicious.clone()
    expected[0] = False
    assert torch.equal(excluded, expected)


def test_recommend_bad_inputs():
    X, Y = _data(10)
    model = robust_gp(X, Y)
    with pytest.raises(ValueError, match="`X` must be a non-empty t x d"):
        recommend(model, X[0])
    with pytest.raises(ValueError, match="`X` must be a non-empty t x d"):
        recommend(model, X[:0])
    from botorch.models import SingleTaskGP

    two = SingleTaskGP(X, torch.cat([Y, -Y], -1))
    with pytest.raises(ValueError, match="single output .* got 2 outputs.*recommend_pareto_set"):
        recommend(two, X)


# ---------------------------------------------------------------------------- contract
def test_caller_tensors_are_untouched():
    X, Y = _data(30, seed=14)
    Y[3] += 10.0
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    Xc, Yc, bc = X.clone(), Y.clone(), bounds.clone()
    model = robust_gp(X, Y, bounds)
    recommend(model, X)
    assert torch.equal(X, Xc) and torch.equal(Y, Yc) and torch.equal(bounds, bc)
    assert bool(model.suspicious[3])
    Y[5] = 1e6  # later writes to the caller's tensors do not reach the model
    assert float(model.raw_Y[5, 0]) == float(Yc[5, 0])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_dtype_follows_the_data(dtype):
    X, Y = _data(20, seed=15)
    model = robust_gp(X.to(dtype), Y.to(dtype))
    post = model.posterior(torch.rand(4, 1, 2, dtype=dtype))
    assert post.mean.dtype == dtype
    assert recommend(model, X.to(dtype)).dtype == dtype


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_device_follows_the_data():
    X, Y = _data(20, seed=16)
    model = robust_gp(X.cuda(), Y.cuda())
    assert model.suspicious.device.type == "cuda"
    assert model.posterior(X[:3].cuda().unsqueeze(-2)).mean.device.type == "cuda"


def test_conditioning_pickling_and_moving_keep_the_flags():
    X, Y = _data(20, seed=17)
    Y[2] += 10.0
    model = robust_gp(X, Y)
    new = model.condition_on_observations(X[:2] * 0.5, Y[:2])
    assert new.suspicious.shape == (22,) and not new.suspicious[20:].any()
    assert bool(new.suspicious[2]) and model.suspicious.shape == (20,)
    clone = pickle.loads(pickle.dumps(model))
    assert torch.equal(clone.suspicious, model.suspicious)
    moved = pickle.loads(pickle.dumps(model)).to(torch.float32)
    assert torch.equal(moved.suspicious, model.suspicious)
    assert moved.posterior(X[:2].float().unsqueeze(-2)).mean.dtype == torch.float32


def test_beta_is_the_practical_width():
    X, Y = _data(10)
    assert robust_gp(X, Y).beta() == 1.0


@pytest.mark.parametrize(
    "args, match",
    [
        ((torch.rand(0, 2, dtype=DT), torch.rand(0, 1, dtype=DT)), "at least 1"),
        ((torch.rand(2, 5, 2, dtype=DT), torch.rand(2, 5, 1, dtype=DT)), "batched"),
        ((torch.rand(5, 2, dtype=DT), torch.rand(4, 1, dtype=DT)), "train_Y"),
        ((torch.rand(5, 2, dtype=DT), torch.full((5, 1), math.nan, dtype=DT)), "train_Y"),
        ((torch.rand(5, 2, dtype=DT), torch.rand(5, 1, dtype=DT), torch.zeros(2, 3, dtype=DT)),
         "`bounds` must be a 2 x d"),
        ((torch.rand(5, 2, dtype=DT), torch.rand(5, 1, dtype=DT),
          torch.tensor([[0.0, 1.0], [1.0, 1.0]], dtype=DT)), "upper > lower"),
        ((torch.rand(5, 2, dtype=DT), torch.rand(5, 1, dtype=DT), [[0, 0], [1, 1]]),
         "`bounds` must be a 2 x d"),
    ],
)
def test_bad_inputs_raise_value_errors(args, match):
    with pytest.raises(ValueError, match=match):
        robust_gp(*args)


def test_inputs_outside_the_bounds_warn():
    from botorch.exceptions.warnings import InputDataWarning

    X, Y = _data(8)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputDataWarning)
        robust_gp(X, Y, bounds)  # inside: no warning
    with pytest.warns(InputDataWarning, match="1 of the 8 rows of `train_X` lie outside"):
        robust_gp(torch.cat([X[:-1], X[-1:] + 2.0]), Y, bounds)


@pytest.mark.parametrize("threshold", [0.0, -1.0, math.inf, math.nan])
def test_bad_threshold(threshold):
    X, Y = _data(6)
    with pytest.raises(ValueError, match="`threshold`"):
        RobustGP(X, Y, threshold=threshold)


@pytest.mark.parametrize("spread_threshold", [-1.0, math.inf, math.nan])
def test_bad_spread_threshold(spread_threshold):
    X, Y = _data(6)
    with pytest.raises(ValueError, match="`spread_threshold`"):
        RobustGP(X, Y, spread_threshold=spread_threshold)
