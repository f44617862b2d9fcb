"""ScalarizedMultiTaskUCB: refusals of bad input and unsupported models, dtype handling, and
the model's frozen fast path against the general path.

Split from ``test_multi_task_ucb.py`` (values and gradients live there; the directional bound's
validity in ``test_multi_task_ucb_directional.py``).
"""

from __future__ import annotations

import pytest
import torch
from botorch.models import KroneckerMultiTaskGP, ModelListGP, SingleTaskGP
from botorch.models.transforms import Log

from botorch_mtucb.acquisition import LinearScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.models import ExactMultiTaskGP
from tests.acquisition.test_multi_task_ucb import (
    _icm,
    _icm_standardized,
    _scalarization,
    _train_data,
)

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::botorch.exceptions.warnings.OptimizationWarning",
)


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs_raise():
    X, Y = _train_data()
    model = _icm(X, Y)
    s = _scalarization("linear", torch.tensor([0.5, 0.5], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, 1.0)
    with pytest.raises(ValueError, match="q = 1"):
        acqf(torch.rand(4, 2, 2, dtype=DT))
    with pytest.raises(ValueError, match="q = 1"):
        acqf(torch.rand(2, dtype=DT))
    assert acqf(torch.rand(1, 2, dtype=DT)).shape == (1,)
    s3 = LinearScalarization(torch.tensor([0.2, 0.3, 0.5], dtype=DT))
    with pytest.raises(ValueError, match="3 weights but the model has 2 outputs"):
        ScalarizedMultiTaskUCB(model, s3, 1.0)
    for beta in (-0.1, float("nan"), torch.tensor([1.0, 2.0])):
        with pytest.raises(ValueError, match="beta"):
            ScalarizedMultiTaskUCB(model, s, beta)
    with pytest.raises(ValueError, match="bound"):
        ScalarizedMultiTaskUCB(model, s, 1.0, bound="trace")
    with pytest.raises(ValueError, match="scalarization"):
        ScalarizedMultiTaskUCB(model, lambda y: y.sum(-1), 1.0)
    single = SingleTaskGP(X, Y[:, :1])
    with pytest.raises(ValueError, match="multi-output model"):
        ScalarizedMultiTaskUCB(single, LinearScalarization(torch.ones(1, dtype=DT)), 1.0)
    from botorch_mtucb.acquisition import HypervolumeScalarization

    unbounded = HypervolumeScalarization([0.6, 0.8], ref_point=[-1.0, -1.0])  # L_λ = inf
    with pytest.raises(ValueError, match="`bound='spectral'` needs a finite Lipschitz"):
        ScalarizedMultiTaskUCB(model, unbounded, 1.0, bound="spectral")
    assert bool(ScalarizedMultiTaskUCB(model, unbounded, 1.0)(torch.rand(3, 1, 2, dtype=DT))
                .isfinite().all())  # the directional bound needs no L_λ


def test_kronecker_multitask_gp_is_refused():
    X, Y = _train_data()
    kron = KroneckerMultiTaskGP(X, Y)
    kron.eval()
    # why: its posterior drops the cross-task covariance that GPyTorch's predictive has
    Xt = torch.rand(1, 2, dtype=DT)
    with torch.no_grad():
        block_post = kron.posterior(Xt).distribution.covariance_matrix
        block_gp = kron(Xt).covariance_matrix
    assert block_post[0, 1] == 0 and block_gp[0, 1].abs() > 1e-8
    s = _scalarization("chebyshev", torch.tensor([0.5, 0.5], dtype=DT))
    with pytest.raises(ValueError, match="KroneckerMultiTaskGP is not supported"):
        ScalarizedMultiTaskUCB(kron, s, 1.0)


def test_non_gaussian_posterior_is_refused():
    X, Y = _train_data()
    m1 = SingleTaskGP(X, Y[:, :1].exp(), outcome_transform=Log())
    m2 = SingleTaskGP(X, Y[:, 1:])
    model = ModelListGP(m1, m2)
    model.eval()
    acqf = ScalarizedMultiTaskUCB(model, _scalarization("linear", [0.5, 0.5]), 1.0)
    with pytest.raises(ValueError, match="no Gaussian task covariance"):
        acqf(torch.rand(3, 1, 2, dtype=DT))


def test_malformed_pending_points_are_refused():
    g = torch.Generator().manual_seed(11)
    X = torch.rand(6, 1, generator=g, dtype=torch.float64)
    Y = torch.randn(6, 2, generator=g, dtype=torch.float64)
    acqf = ScalarizedMultiTaskUCB(
        ExactMultiTaskGP(X, Y), LinearScalarization(torch.tensor([0.5, 0.5])), beta=1.0
    )
    acqf.set_X_pending(None)  # nothing pending is fine
    acqf.set_X_pending(torch.empty(0, 1, dtype=torch.float64))  # nor is an empty batch
    assert acqf.X_pending is None
    with pytest.raises(ValueError, match="X_pending"):  # wrong d (GP-BUCB: see test_pending)
        acqf.set_X_pending(torch.rand(2, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="X_pending"):
        acqf.set_X_pending(torch.full((1, 1), float("nan"), dtype=torch.float64))


def test_beta_and_values_follow_the_model_dtype():
    """β is converted once to the model's dtype; a float32 model gives float32 values."""
    g = torch.Generator().manual_seed(12)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    Y = torch.randn(10, 2, generator=g, dtype=DT)
    s = _scalarization("chebyshev", torch.tensor([0.4, 0.6], dtype=DT))
    ref = ScalarizedMultiTaskUCB(_icm_standardized(X, Y), s, beta=1.5)
    m32 = _icm_standardized(X.float(), Y.float())
    acqf = ScalarizedMultiTaskUCB(m32, s, beta=1.5)
    assert acqf.beta.dtype == torch.float32 and ref.beta.dtype == DT
    Xt = torch.rand(5, 1, 2, generator=g, dtype=DT)
    out = acqf(Xt.float())
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), ref(Xt), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("cls", ["ucb", "hvi", "heavy"])
def test_moved_acquisition_hallucinates_in_its_new_dtype(cls):
    """``.to(float32)`` moves the model of the real data and the pending points too: pending
    points set after the move, and clearing them, keep float32, with the float64 values."""
    from botorch.optim import optimize_acqf

    from botorch_mtucb.acquisition import HeavyTailedUCB, HypervolumeImprovementUCB

    g = torch.Generator().manual_seed(4)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    Y = torch.stack([X.sum(-1).sin(), X.prod(-1)], -1)

    def build(X_pending=None):
        if cls == "ucb":
            return ScalarizedMultiTaskUCB(ExactMultiTaskGP(X, Y), LinearScalarization([0.4, 0.6]),
                                          X_pending=X_pending)
        if cls == "hvi":
            return HypervolumeImprovementUCB(ExactMultiTaskGP(X, Y), Y.min(0).values - 0.1, X,
                                             X_pending=X_pending)
        return HeavyTailedUCB(SingleTaskGP(X, Y[:, :1]), beta=1.0, X_pending=X_pending)

    Xc = torch.rand(4, 1, 2, generator=g, dtype=DT)
    pending = X[:2] + 0.05
    ref = build(pending)(Xc)
    moved = build(pending).to(torch.float32)
    out = moved(Xc.float())
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), ref, atol=1e-4, rtol=1e-4)
    moved.set_X_pending(None)  # back to the moved model of the real data
    cleared = moved(Xc.float())
    assert cleared.dtype == torch.float32
    torch.testing.assert_close(cleared.double(), build()(Xc), atol=1e-4, rtol=1e-4)
    if cls != "heavy":  # sequential batches hallucinate on the moved model
        torch.manual_seed(0)
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
        batch, _ = optimize_acqf(moved, bounds, q=2, num_restarts=2, raw_samples=16,
                                 sequential=True)
        assert batch.dtype == torch.float32 and batch.shape == (2, 2)


# ----------------------------------------------------------------------------- fast path


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_fast_path_equals_general_path_and_follows_the_model(kind):
    """The frozen hot path (model.projected_task_posterior) against the n x n blocks of
    task_posterior, in values and gradients, before and after the model changes."""
    X, Y = _train_data()
    model = _icm_standardized(X, Y)
    s = _scalarization(kind, torch.tensor([0.35, 0.65], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.7)
    Xt = torch.rand(9, 1, 2, generator=torch.Generator().manual_seed(4), dtype=DT)

    def general(m, Xg):
        mean, blocks = m.task_posterior(Xg)
        beta = torch.tensor(1.7, dtype=DT)
        return s.directional_ucb(mean[..., 0, :], blocks[..., 0, :, :], beta)

    def check(m):
        X1, X2 = Xt.clone().requires_grad_(True), Xt.clone().requires_grad_(True)
        v1, v2 = acqf(X1), general(m, X2)
        torch.testing.assert_close(v1, v2, atol=1e-12, rtol=1e-12)
        (g1,) = torch.autograd.grad(v1.sum(), X1)
        (g2,) = torch.autograd.grad(v2.sum(), X2)
        torch.testing.assert_close(g1, g2, atol=1e-11, rtol=1e-10)
        return v1.detach()

    assert model._projected_predictor(acqf._projection) is not None
    before = check(model)
    model.covar_module.data_covar_module.lengthscale = 0.45  # between two calls
    after = check(model)
    assert not torch.allclose(before, after)
    fresh = ScalarizedMultiTaskUCB(_icm_standardized(X, Y), s, beta=1.7)
    fresh.model.covar_module.data_covar_module.lengthscale = 0.45
    torch.testing.assert_close(after, fresh(Xt).detach(), atol=1e-12, rtol=1e-12)
    acqf.set_X_pending(Xt[0])  # conditioned model: the general path, still equal
    torch.testing.assert_close(acqf(Xt).detach(), general(acqf.model, Xt).detach(),
                               atol=1e-12, rtol=1e-12)


def test_fast_path_skips_the_model_checks_only_where_they_are_no_ops(monkeypatch):
    """Candidates in the model's dtype on an eval-mode model go to the frozen predictor
    directly; float32 candidates and a model in train mode go through
    ``projected_task_posterior`` (its conversions and ``eval()``); all agree."""
    X, Y = _train_data()
    model = _icm_standardized(X, Y).eval()
    s = _scalarization("chebyshev", torch.tensor([0.35, 0.65], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=1.3)
    Xt = torch.rand(7, 1, 2, generator=torch.Generator().manual_seed(5), dtype=DT)
    routed = []
    original = type(model).projected_task_posterior
    monkeypatch.setattr(type(model), "projected_task_posterior",
                        lambda self, *a: routed.append(1) or original(self, *a))
    direct = acqf(Xt)
    assert routed == []
    mean, var = original(model, Xt, acqf._projection)
    ref = s.directional_ucb_from_variances(mean[..., 0, :], var[..., 0, :], 1.3)
    torch.testing.assert_close(direct, ref, atol=1e-13, rtol=0)
    low = acqf(Xt.float())
    assert routed == [1] and low.dtype == DT
    torch.testing.assert_close(low, acqf(Xt.float().double()), atol=1e-12, rtol=0)
    model.train()
    again = acqf(Xt)
    assert routed == [1, 1] and not model.training
    torch.testing.assert_close(again, direct, atol=0, rtol=0)
    assert acqf(torch.empty(0, 1, 2, dtype=DT)).shape == (0,)
