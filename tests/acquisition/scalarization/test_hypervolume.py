"""Tests for the hypervolume scalarization s_λ(y) = min_i max(0, (y_i − z_i)/λ_i)ⁿ.

References: BoTorch's exact ``Hypervolume`` (the Zhang & Golovin identity
HV_z(S) = c_n E_λ[max_{y∈S} s_λ(y)] on random fronts), the formula written out by hand, brute
force over random pairs (Lipschitz constant) and over the confidence box (directional bound).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from botorch.optim import optimize_acqf
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated
from scipy import stats

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    ScalarizationSampler,
    ScalarizedMultiTaskUCB,
    sample_scalarization_weights,
)
from botorch_mtucb.acquisition.multi_task_ucb import spectral_norm_psd
from botorch_mtucb.acquisition.scalarization.hypervolume import (
    HypervolumeScalarization,
    hypervolume_scalarization_constant,
)
from botorch_mtucb.models import ExactMultiTaskGP

DT = torch.float64

pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _by_hand(Y, lam, z):
    """min_i max(0, (y_i − z_i)/λ_i)ⁿ for ``... x n`` Y and ``L x n`` λ: ``L x ...``."""
    n = Y.shape[-1]
    ratios = (Y.unsqueeze(0) - z) / lam.reshape(lam.shape[0], *([1] * (Y.dim() - 1)), n)
    return ratios.min(dim=-1).values.clamp_min(0.0) ** n


def _random_front(n, seed):
    """A random non-dominated set above z (with one point that is below z in one objective)."""
    g = _gen(seed)
    z = torch.randn(n, generator=g, dtype=DT)
    Y = z + torch.rand(40, n, generator=g, dtype=DT) * (0.5 + torch.rand(n, generator=g, dtype=DT))
    Y = Y[is_non_dominated(Y)][:12]
    below = Y.max(dim=0).values + 1.0
    below[0] = z[0] - 0.5  # dominates nothing above z: contributes no volume, s_λ = 0
    return torch.cat([Y, below.unsqueeze(0)]), z


# ------------------------------------------------------------------ the hypervolume identity


def test_constant_is_the_unit_balls_positive_orthant_volume():
    for n, ref in [(1, 1.0), (2, math.pi / 4), (3, math.pi / 6), (4, math.pi**2 / 32)]:
        assert math.isclose(hypervolume_scalarization_constant(n), ref, rel_tol=1e-12)
    with pytest.raises(ValueError, match="`n`"):
        hypervolume_scalarization_constant(0)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_mc_mean_of_best_value_times_c_n_is_botorch_hypervolume(n):
    """c_n · mean over λ of max_{y∈S} s_λ(y) = BoTorch's exact HV_z(S), within 4.5 MC standard
    errors; the hypervolume is not c_n times the mean (a factor c_n² ≠ 1 away)."""
    Y, z = _random_front(n, 100 + n)
    hv = Hypervolume(z).compute(Y[is_non_dominated(Y)])
    lam = sample_scalarization_weights(n, 200_000, "hypervolume", _gen(n))
    best = _by_hand(Y, lam, z).max(dim=-1).values
    c = hypervolume_scalarization_constant(n)
    mean, se = best.mean(), best.std() / math.sqrt(best.numel())
    assert abs(c * mean - hv) <= 4.5 * c * se, (c * mean, hv, c * se)
    assert c * se < 0.02 * hv  # the test resolves the constant
    assert abs(mean / c - hv) > 10 * c * se  # the other reading of the identity fails


@pytest.mark.parametrize("n", [2, 4, 6])
def test_sampler_draws_are_exactly_zhang_golovin_and_average_to_the_hypervolume(n):
    """ScalarizationSampler(n, kind="hypervolume", ref_point=z)() is min_i max(0, (y_i −
    z_i)/λ_i)ⁿ with λ = sample_scalarization_weights(n, 1, "hypervolume") of the same generator,
    and its draws average to HV / c_n."""
    Y, z = _random_front(n, 200 + n)
    hv = Hypervolume(z).compute(Y[is_non_dominated(Y)])
    sampler = ScalarizationSampler(n, kind="hypervolume", ref_point=z)
    g, g_ref = _gen(9), _gen(9)
    best = []
    for _ in range(3000):
        s = sampler(g)
        lam = sample_scalarization_weights(n, 1, "hypervolume", g_ref)
        assert isinstance(s, HypervolumeScalarization)
        torch.testing.assert_close(s.sphere_weights, lam[0], rtol=0, atol=0)
        value = s(Y)
        torch.testing.assert_close(value, _by_hand(Y, lam, z)[0], rtol=1e-12, atol=0)
        best.append(value.max())
    best = torch.stack(best)
    c = hypervolume_scalarization_constant(n)
    se = best.std() / math.sqrt(best.numel())
    assert abs(c * best.mean() - hv) <= 4.5 * c * se


def test_from_data_expectation_is_the_hypervolume_of_the_normalised_outcomes():
    """With from_data's scale r the identity reads E_λ[max s_λ] = HV_z / (c_n ∏ r)."""
    n = 3
    Y, _ = _random_front(n, 7)
    Y = Y * torch.tensor([1.0, 30.0, 0.01], dtype=DT)
    lams = sample_scalarization_weights(n, 3000, "hypervolume", _gen(3))
    best = torch.stack([HypervolumeScalarization.from_data(lam, Y)(Y).max() for lam in lams])
    s = HypervolumeScalarization.from_data(lams[0], Y)
    hv = Hypervolume(s.ref_point).compute(Y[is_non_dominated(Y)])
    c = hypervolume_scalarization_constant(n)
    target = hv / (c * float(s.scale.prod()))
    se = best.std() / math.sqrt(best.numel())
    assert abs(best.mean() - target) <= 4.5 * se


def test_weights_law_is_uniform_on_the_positive_sphere():
    L2 = sample_scalarization_weights(2, 4000, "hypervolume", _gen(0))
    angle = torch.atan2(L2[:, 1], L2[:, 0]).numpy()
    assert stats.kstest(angle, stats.uniform(0, np.pi / 2).cdf).pvalue > 1e-3
    L3 = sample_scalarization_weights(3, 4000, "hypervolume", _gen(1))
    assert (L3 > 0).all()
    torch.testing.assert_close(L3.norm(dim=-1), torch.ones(4000, dtype=DT))
    for i in range(3):  # Archimedes: a coordinate of the uniform point on S² is U[-1, 1]
        assert stats.kstest(L3[:, i].numpy(), stats.uniform(0, 1).cdf).pvalue > 1e-3
    # the Chebyshev law fails the same test
    C3 = sample_scalarization_weights(3, 4000, "chebyshev", _gen(1))
    C3 = C3 / C3.norm(dim=-1, keepdim=True)
    assert stats.kstest(C3[:, 0].numpy(), stats.uniform(0, 1).cdf).pvalue < 1e-3


# ------------------------------------------------------------------ the scalarization itself


def test_value_pieces_root_and_repr():
    lam = torch.tensor([0.6, 0.8], dtype=DT)
    s = HypervolumeScalarization(lam, [1.0, -1.0])
    Y = torch.tensor([[4.0, 7.0], [0.0, 7.0], [2.2, 1.0]], dtype=DT)
    torch.testing.assert_close(s(Y), torch.tensor([25.0, 0.0, 4.0], dtype=DT))
    torch.testing.assert_close(s.pieces(Y).min(dim=-1).values, s(Y))
    torch.testing.assert_close(s.root(Y), torch.tensor([5.0, -5.0 / 3, 2.0], dtype=DT))
    torch.testing.assert_close(s.from_root(s.root(Y)), s(Y))
    torch.testing.assert_close(s.weights, torch.tensor([3 / 7, 4 / 7], dtype=DT))
    assert s.directions(Y) is None and "HypervolumeScalarization" in repr(s)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_monotone_in_every_objective_and_minimize_signs(n):
    g = _gen(n)
    lam = sample_scalarization_weights(n, 1, "hypervolume", g)[0]
    z = torch.randn(n, generator=g, dtype=DT)
    minimize = (torch.rand(n, generator=g) < 0.5).tolist()
    signs = 1.0 - 2.0 * torch.tensor(minimize, dtype=DT)
    s = HypervolumeScalarization(lam, z, minimize)
    Y = z + 2 * torch.randn(500, n, generator=g, dtype=DT)
    better = Y + signs * torch.rand(500, n, generator=g, dtype=DT)  # better in every objective
    assert (s(better) >= s(Y)).all()
    positive = s(Y) > 0
    assert positive.any() and (s(better)[positive] > s(Y)[positive]).all()
    # minimised objectives: the same as maximising the negated data against −z
    plain = HypervolumeScalarization(lam, z * signs)
    torch.testing.assert_close(s(Y), plain(Y * signs))
    torch.testing.assert_close(s.root(Y), plain.root(Y * signs))


@pytest.mark.parametrize("n", [1, 2, 4])
def test_lipschitz_constant_bounds_random_pairs_below_upper(n):
    g = _gen(20 + n)
    for _ in range(20):
        lam = sample_scalarization_weights(n, 1, "hypervolume", g)[0]
        z = torch.randn(n, generator=g, dtype=DT)
        upper = z + 2 * torch.rand(n, generator=g, dtype=DT)
        minimize = (torch.rand(n, generator=g) < 0.5).tolist()
        signs = 1.0 - 2.0 * torch.tensor(minimize, dtype=DT)
        scale = 0.5 + torch.rand(n, generator=g, dtype=DT)
        s = HypervolumeScalarization(lam, z * signs, minimize, scale, upper * signs)
        lo = z - 1.0
        A = (lo + (upper - lo) * torch.rand(4000, n, generator=g, dtype=DT)) * signs
        B = A + 0.05 * torch.randn(4000, n, generator=g, dtype=DT)
        inside = ((B * signs) <= upper).all(dim=-1)
        ratio = (s(A) - s(B)).abs()[inside] / (A - B).norm(dim=-1)[inside]
        L = s.lipschitz
        assert torch.isfinite(L) and (ratio <= L * (1 + 1e-9)).all()
    one = HypervolumeScalarization([1.0], [0.0])
    assert float(one.lipschitz) == 1.0  # n = 1: 1/λ, no bound needed
    assert math.isinf(float(HypervolumeScalarization([0.6, 0.8], [0.0, 0.0]).lipschitz))


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="positive part of the unit sphere"):
        HypervolumeScalarization([0.5, 0.5], [0.0, 0.0])  # the simplex, not the sphere
    with pytest.raises(ValueError, match="positive part of the unit sphere"):
        HypervolumeScalarization([1.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="ref_point"):
        HypervolumeScalarization([0.6, 0.8], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="upper"):
        HypervolumeScalarization([0.6, 0.8], [0.0, 0.0], upper=[1.0])
    with pytest.raises(ValueError, match="scale"):
        HypervolumeScalarization([0.6, 0.8], [0.0, 0.0], scale=[1.0, -1.0])
    with pytest.raises(ValueError, match="minimize"):
        HypervolumeScalarization([0.6, 0.8], [0.0, 0.0], minimize=[True])
    Y = torch.rand(5, 2, dtype=DT)
    with pytest.raises(ValueError, match="`Y` must be an N x n"):
        HypervolumeScalarization.from_data([0.6, 0.8], Y[:, :1])
    with pytest.raises(ValueError, match="margin"):
        HypervolumeScalarization.from_data([0.6, 0.8], Y, margin=-1.0)
    with pytest.raises(ValueError, match="span"):
        HypervolumeScalarization.from_data([0.6, 0.8], Y, span="box")
    with pytest.raises(ValueError, match="predicted"):
        HypervolumeScalarization.from_data([0.6, 0.8], Y, predicted=torch.rand(2, 3))


# ------------------------------------------------------------------------------- from_data


def test_from_data_places_z_below_the_front_nadir_and_upper_above_its_best():
    Y = torch.tensor([[0.0, 10.0], [1.0, 0.0], [0.5, 5.0], [0.2, 1.0]], dtype=DT)
    s = HypervolumeScalarization.from_data([0.6, 0.8], Y, margin=0.2)
    torch.testing.assert_close(s.ref_point, torch.tensor([-0.2, -2.0], dtype=DT))
    torch.testing.assert_close(s.upper, torch.tensor([1.2, 12.0], dtype=DT))
    torch.testing.assert_close(s.scale, torch.tensor([1.0, 10.0], dtype=DT))
    m = HypervolumeScalarization.from_data([0.6, 0.8], -Y, minimize=[True, True], margin=0.2)
    torch.testing.assert_close(m.ref_point, -s.ref_point)
    torch.testing.assert_close(m(-Y), s(Y))
    # a predicted point below the observed front lowers the nadir, as in the Chebyshev one
    P = torch.tensor([[2.0, -5.0]], dtype=DT)
    p = HypervolumeScalarization.from_data([0.6, 0.8], Y, predicted=P, span="front")
    c = ChebyshevScalarization.from_data([0.5, 0.5], Y, predicted=P, span="front")
    torch.testing.assert_close(p.ref_point, c.ref_point)


@pytest.mark.parametrize("minimize", [None, [False, True, True]])
def test_from_data_is_unit_free(minimize):
    """Rescaling and shifting the objectives leaves s_λ's values unchanged."""
    g = _gen(4)
    Y = torch.randn(15, 3, generator=g, dtype=DT)
    P = torch.randn(3, 3, generator=g, dtype=DT)
    a = torch.tensor([1e-3, 1.0, 250.0], dtype=DT)
    b = torch.tensor([5.0, -2.0, 1e3], dtype=DT)
    lam = sample_scalarization_weights(3, 1, "hypervolume", g)[0]
    for kwargs in ({}, {"predicted": P, "span": "front"}):
        s = HypervolumeScalarization.from_data(lam, Y, minimize, **kwargs)
        kw = {**kwargs, "predicted": P * a + b} if kwargs else {}
        t = HypervolumeScalarization.from_data(lam, Y * a + b, minimize, **kw)
        Yt = torch.randn(50, 3, generator=g, dtype=DT)
        torch.testing.assert_close(s(Yt), t(Yt * a + b))
        assert (s(Y) > 0).any()


# ------------------------------------------------------------------- the two UCB bounds


@pytest.mark.parametrize("n", [2, 3, 5])
def test_directional_bound_covers_every_f_in_the_confidence_box(n):
    """from_root(directional value) = s_λ(μ̃ + βσ) ≥ s_λ(f) for every f with |f_i − μ_i| ≤
    βσ_i; and the spectral bound s_λ(μ) + L_λ β ‖Γ‖^{1/2} covers f in the ball when all the
    compared outcomes lie below ``upper``."""
    g = _gen(30 + n)
    b = 200
    mean = torch.randn(b, n, generator=g, dtype=DT)
    A = torch.randn(b, n, n, generator=g, dtype=DT)
    cov = 0.3 * A @ A.transpose(-1, -2) / n
    var = torch.diagonal(cov, dim1=-2, dim2=-1)
    beta = 1.5
    for _ in range(10):
        lam = sample_scalarization_weights(n, 1, "hypervolume", g)[0]
        minimize = (torch.rand(n, generator=g) < 0.3).tolist()
        signs = 1.0 - 2.0 * torch.tensor(minimize, dtype=DT)
        z = (mean * signs).min(dim=0).values - 0.5
        width = beta * spectral_norm_psd(cov).sqrt()
        upper = (mean * signs).max(dim=0).values + width.max() + 1e-9
        s = HypervolumeScalarization(lam, z * signs, minimize, upper=upper * signs)
        value = s.directional_ucb_from_variances(mean, var, beta)
        bound = s.from_root(value)
        torch.testing.assert_close(bound, s(mean + signs * beta * var.sqrt()))
        torch.testing.assert_close(
            value, s.directional_ucb_from_variances(mean, var, torch.tensor(beta, dtype=DT))
        )
        spectral = s(mean) + s.lipschitz * width
        assert (bound <= spectral * (1 + 1e-9) + 1e-12).all()
        for _ in range(20):
            u = 2 * torch.rand(b, n, generator=g, dtype=DT) - 1
            f_box = mean + u * beta * var.sqrt()
            assert (s(f_box) <= bound * (1 + 1e-12) + 1e-12).all()
            d = torch.randn(b, n, generator=g, dtype=DT)
            f_ball = mean + d / d.norm(dim=-1, keepdim=True) * width.unsqueeze(-1) * u[:, :1]
            assert (s(f_ball) <= spectral * (1 + 1e-12) + 1e-12).all()
        # the acquisition value orders points as the bound does where the bound is positive
        pos = bound > 0
        assert pos.sum() > 10
        order = value[pos].argsort()
        assert (bound[pos][order].diff() >= 0).all()
        assert (value[~pos] <= 0).all()


def _fitted_model(n=3, seed=0):
    g = _gen(seed)
    X = torch.rand(12, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(3 * X[:, 0]) + X[:, 1], X.prod(-1), (1 - X).sum(-1)], -1)[:, :n]
    return X, Y, ExactMultiTaskGP(X, Y)


@pytest.mark.parametrize("bound", ["directional", "spectral"])
def test_multi_task_ucb_with_hypervolume_runs_in_optimize_acqf_with_finite_gradients(bound):
    X, Y, model = _fitted_model()
    lam = sample_scalarization_weights(3, 1, "hypervolume", _gen(2))[0]
    s = HypervolumeScalarization.from_data(lam, Y, minimize=[False, True, False])
    acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0, bound=bound)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    cand, val = optimize_acqf(acqf, bounds, q=1, num_restarts=3, raw_samples=64)
    assert cand.shape == (1, 2) and torch.isfinite(val)
    assert ((cand >= 0) & (cand <= 1)).all()
    Xt = torch.rand(16, 1, 2, generator=_gen(3), dtype=DT).requires_grad_(True)
    acqf(Xt).sum().backward()
    assert torch.isfinite(Xt.grad).all() and (Xt.grad.abs().sum(dim=-1) > 0).all()


def test_directional_acquisition_keeps_a_gradient_below_the_reference_point():
    """With z above every upper bound the bound is 0 everywhere; the acquisition value (its
    root before the clamp) still has a nonzero gradient, and agrees with the task posterior."""
    X, Y, model = _fitted_model()
    lam = sample_scalarization_weights(3, 1, "hypervolume", _gen(5))[0]
    s = HypervolumeScalarization(lam, Y.max(dim=0).values + 10.0)
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.0)
    Xt = torch.rand(8, 1, 2, generator=_gen(6), dtype=DT).requires_grad_(True)
    value = acqf(Xt)
    assert (value < 0).all() and (s.from_root(value) == 0).all()
    value.sum().backward()
    assert torch.isfinite(Xt.grad).all() and (Xt.grad.abs().sum(dim=-1) > 0).all()
    with torch.no_grad():
        mean, covar = model.task_posterior(Xt.detach())
        var = torch.diagonal(covar[..., 0, :, :], dim1=-2, dim2=-1)
        ref = s.directional_ucb_from_variances(mean[..., 0, :], var, 1.0)
    torch.testing.assert_close(value.detach(), ref)


# --------------------------------------------------------------------------------- sampler


def test_sampler_data_and_predicted_front_match_from_data():
    Y = torch.randn(10, 3, generator=_gen(8), dtype=DT)
    P = Y.max(dim=0).values + torch.randn(3, 3, generator=_gen(9), dtype=DT)
    lam = sample_scalarization_weights(3, 1, "hypervolume", _gen(7))[0]
    observed = ScalarizationSampler(3, kind="hypervolume", ref_point="data", front="observed")
    assert observed.uses_data and not observed.uses_model and observed.augmentation == 0.0
    s = observed(_gen(7), Y)
    ref = HypervolumeScalarization.from_data(lam, Y)
    torch.testing.assert_close(s.ref_point, ref.ref_point)
    torch.testing.assert_close(s.scale, ref.scale)
    torch.testing.assert_close(s(Y), ref(Y))
    predicted = ScalarizationSampler(3, kind="hypervolume", ref_point="data")
    assert predicted.front == "predicted" and predicted.uses_model
    s = predicted(_gen(7), Y, predicted=P)
    ref = HypervolumeScalarization.from_data(lam, Y, predicted=P, span="front")
    torch.testing.assert_close(s.ref_point, ref.ref_point)
    torch.testing.assert_close(s(Y), ref(Y))
    with pytest.raises(ValueError, match="needs `predicted`"):
        predicted(_gen(0), Y)


def test_sampler_kinds_and_errors():
    assert isinstance(ScalarizationSampler(2, "linear")(_gen(0)).weights, torch.Tensor)
    assert isinstance(
        ScalarizationSampler(2, "chebyshev", ref_point=[0, 0])(_gen(0)), ChebyshevScalarization
    )
    hv = ScalarizationSampler(2, "hypervolume", ref_point=[0.0, 0.0])
    assert not hv.uses_data and hv.augmentation == 0.0 and hv.front == "observed"
    with pytest.raises(ValueError, match="ref_point"):
        ScalarizationSampler(2, "hypervolume")
    with pytest.raises(ValueError, match="augmentation"):
        ScalarizationSampler(2, "hypervolume", ref_point="data", augmentation=0.05)
    with pytest.raises(ValueError, match="kind"):
        ScalarizationSampler(2, "pareto")
    with pytest.raises(ValueError, match="kind"):
        sample_scalarization_weights(2, 3, "pareto")
    with pytest.raises(ValueError, match="`dtype` must be a floating torch dtype"):
        sample_scalarization_weights(3, 2, dtype=torch.int64)
    with pytest.raises(ValueError, match="'data'"):
        ScalarizationSampler(2, "linear", ref_point="data")
    zero = ScalarizationSampler(2, "hypervolume", ref_point=[0, 0], augmentation=0)
    assert zero.augmentation == 0


def test_run_bo_loop_takes_the_hypervolume_sampler():
    from botorch_mtucb.loop import run_bo_loop

    def observe(X):
        return torch.stack([X.sum(-1), (1 - X).prod(-1)], dim=-1)

    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    sampler = ScalarizationSampler(2, kind="hypervolume", ref_point="data")
    history = run_bo_loop(
        observe, num_rounds=2, bounds=bounds, scalarization_sampler=sampler,
        generator=_gen(0), true_f=observe, regret_X=torch.rand(64, 2, generator=_gen(1),
                                                              dtype=DT),
        regret_bounds=bounds,
    )
    assert len(history.rounds) == 2
    assert torch.isfinite(history.regrets).all() and (history.regrets >= 0).all()
    for record in history.rounds:  # the simplex direction of each round's s_λ
        torch.testing.assert_close(record.weights.sum(), torch.tensor(1.0, dtype=DT))
