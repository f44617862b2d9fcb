"""What the front-based hypervolume acquisitions share: pending points, batch shapes, dtypes."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.utils.multi_objective.box_decompositions.non_dominated import (
    FastNondominatedPartitioning,
)
from botorch.utils.multi_objective.pareto import is_non_dominated

from botorch_mtucb.acquisition import (
    HypervolumeImprovementUCB,
    LogExpectedHypervolumeImprovement,
)
from botorch_mtucb.acquisition.hypervolume_front import HypervolumeFrontAcquisition

DT = torch.float64
CLASSES = [HypervolumeImprovementUCB, LogExpectedHypervolumeImprovement]


def _data(n: int, t: int = 12, d: int = 3, seed: int = 0, dtype=DT):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, d, generator=g, dtype=DT)
    W = torch.randn(d, n, generator=g, dtype=DT)
    Y = torch.sin(2 * X @ W) + 0.3 * torch.cos(3 * X).sum(-1, keepdim=True)
    return X.to(dtype), Y.to(dtype)


@pytest.mark.parametrize("cls", CLASSES)
def test_pending_points_lower_the_value_and_batches_are_distinct(cls):
    X, Y = _data(2, seed=6)
    model = SingleTaskGP(X, Y)
    acqf = cls(model, Y.min(0).values - 0.1, X)
    assert isinstance(acqf, HypervolumeFrontAcquisition)
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=DT)
    torch.manual_seed(0)
    x1, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=64)
    before = acqf(x1.unsqueeze(0))
    acqf.set_X_pending(x1)
    after = acqf(x1.unsqueeze(0))
    assert float(after.detach()) < float(before.detach())
    acqf.set_X_pending(None)
    torch.testing.assert_close(acqf(x1.unsqueeze(0)), before)
    torch.manual_seed(0)
    batch, _ = optimize_acqf(acqf, bounds, q=3, num_restarts=2, raw_samples=64, sequential=True)
    assert torch.cdist(batch, batch).add(torch.eye(3, dtype=DT)).min() > 1e-4


@pytest.mark.filterwarnings("ignore:The model inputs are of type torch.float32")
@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch_shape", [(), (4,), (2, 3)])
def test_batch_shapes_and_dtypes(cls, dtype, batch_shape):
    X, Y = _data(3, dtype=dtype)
    model = SingleTaskGP(X, Y)
    acqf = cls(model, (Y.min(0).values - 0.1).tolist(), X)
    Xc = torch.rand(*batch_shape, 1, 3, dtype=dtype)
    out = acqf(Xc)
    assert out.shape == (batch_shape if batch_shape else (1,)) and out.dtype == dtype
    assert bool(out.isfinite().all())
    torch.testing.assert_close(out.reshape(-1), acqf(Xc.reshape(-1, 1, 3)))


@pytest.mark.parametrize("cls", CLASSES)
def test_front_ranges_and_cells_are_those_of_the_posterior_means(cls):
    X, Y = _data(3, seed=9)
    model = SingleTaskGP(X, Y)
    z = Y.min(0).values - 0.1
    acqf = cls(model, z, X)
    with torch.no_grad():
        P = model.posterior(X).mean
    P = P[is_non_dominated(P)]
    r = P.max(0).values - z
    lower, upper = FastNondominatedPartitioning(ref_point=z, Y=P).get_hypercell_bounds()
    torch.testing.assert_close(acqf.ranges, r)
    torch.testing.assert_close(acqf.cell_lower, (lower - z) / r)
    torch.testing.assert_close(acqf.cell_upper, (upper - z) / r)


def _posterior_marginals(acqf: HypervolumeFrontAcquisition, X: torch.Tensor):
    """The general path: ``model.posterior(X)``'s mean and variance, scaled as the acquisition's."""
    post = acqf.model.posterior(X)
    mean, var = post.mean[..., 0, :], post.variance[..., 0, :]
    sd = var.clamp_min(1e-30).sqrt()
    return (mean * acqf.signs - acqf.ref_point) / acqf.ranges, sd / acqf.ranges


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("pending", [False, True])
def test_multitask_model_moments_equal_the_posterior_path(cls, pending):
    from botorch_mtucb.models import ExactMultiTaskGP, practical_multitask_gp
    from botorch_mtucb.protocols import ProjectedTaskPosteriorModel

    X, Y = _data(3, t=15, seed=4)
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=DT)
    for model, Yt in ((practical_multitask_gp(X, 5 * Y + 2, bounds), 5 * Y + 2),
                      (ExactMultiTaskGP(X, Y), Y)):
        assert isinstance(model, ProjectedTaskPosteriorModel)
        z = Yt.min(0).values - 0.5
        z[1] = Yt[:, 1].max() + 0.5  # objective 1 is minimised
        acqf = cls(model, z, X, minimize=[False, True, False])
        if pending:
            acqf.set_X_pending(torch.rand(2, 3, dtype=DT))
        assert acqf._projected
        Xc = torch.rand(6, 1, 3, dtype=DT, requires_grad=True)
        mean, sd = acqf.scaled_marginals(Xc)
        ref_mean, ref_sd = _posterior_marginals(acqf, Xc)
        torch.testing.assert_close(mean, ref_mean, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(sd, ref_sd, rtol=1e-9, atol=1e-9)
        grad = torch.autograd.grad((mean.sum() + sd.sum()), Xc)[0]
        ref_grad = torch.autograd.grad((ref_mean.sum() + ref_sd.sum()), Xc)[0]
        torch.testing.assert_close(grad, ref_grad, rtol=1e-8, atol=1e-8)
        # float32 candidates on a float64 model take the checked path and give the same values
        mean32, sd32 = acqf.scaled_marginals(Xc.detach().float())
        torch.testing.assert_close(mean32, mean.detach(), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(sd32, sd.detach(), rtol=1e-6, atol=1e-6)
