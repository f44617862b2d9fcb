"""DedupOptimizer: BoxOptimizer's proposal when it is new, else the best new point."""

import pytest
import torch
from botorch.acquisition import AcquisitionFunction, UpperConfidenceBound
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.transforms import Normalize
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition.dedup import DedupOptimizer, evaluated_inputs
from botorch_mtucb.acquisition.optimizers import BoxOptimizer

DT = torch.float64
BOUNDS = torch.tensor([[-1.0, 0.0], [1.0, 2.0]], dtype=DT)


class _Bumps(AcquisitionFunction):
    """a(x) = Σ_k h_k exp(−‖x − c_k‖² / w²): a known deterministic landscape."""

    def __init__(self, centers, heights, width=0.3):
        super().__init__(model=torch.nn.Module())
        self.centers, self.heights, self.width = centers, heights, width

    def forward(self, X):
        d2 = ((X[..., None, :] - self.centers) ** 2).sum(-1)  # b x q x K
        return (self.heights * torch.exp(-d2 / self.width**2)).sum(-1).amax(-1)


def test_new_optimum_is_box_optimizers():
    g = torch.Generator().manual_seed(0)
    X = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * torch.rand(8, 2, generator=g, dtype=DT)
    Y = torch.sin(3 * X).sum(-1, keepdim=True)
    model = SingleTaskGP(X, Y, input_transform=Normalize(2, bounds=BOUNDS))
    acqf = UpperConfidenceBound(model, beta=1.0)
    box = BoxOptimizer(BOUNDS, num_restarts=3, raw_samples=64, seed=7)
    dedup = DedupOptimizer(BOUNDS, num_restarts=3, raw_samples=64, seed=7)
    for _ in range(2):  # the seeds advance alike
        torch.testing.assert_close(dedup(acqf), box(acqf), atol=1e-5, rtol=0)  # L-BFGS-B tol
    assert dedup.sources == ["best", "best"]


def test_evaluated_optimum_gives_the_best_new_restart():
    c_eval = torch.tensor([0.9, 1.9], dtype=DT)
    c_new = torch.tensor([-0.5, 0.5], dtype=DT)
    acqf = _Bumps(torch.stack([c_eval, c_new]), torch.tensor([1.0, 0.6], dtype=DT))
    E = torch.stack([c_eval, torch.zeros(2, dtype=DT)])
    E0 = E.clone()
    torch.manual_seed(0)  # optimize_acqf's start selection also draws from the global RNG
    base = BoxOptimizer(BOUNDS, num_restarts=6, raw_samples=128, seed=1)(acqf)
    assert torch.allclose(base[0], c_eval, atol=1e-3)  # the plain optimizer re-proposes it
    opt = DedupOptimizer(BOUNDS, num_restarts=6, raw_samples=128, seed=1, evaluated=E)
    torch.manual_seed(0)
    x = opt(acqf)
    assert opt.sources == ["restart"]
    torch.testing.assert_close(x[0], c_new, atol=1e-3, rtol=0)
    assert torch.equal(E, E0)


def test_all_restarts_evaluated_gives_the_best_new_raw_sample():
    c = torch.tensor([1.0, 2.0], dtype=DT)  # a corner: L-BFGS-B lands on it exactly
    acqf = _Bumps(c[None], torch.ones(1, dtype=DT), width=2.0)
    opt = DedupOptimizer(BOUNDS, num_restarts=4, raw_samples=32, seed=3,
                         evaluated=lambda: c[None])
    x = opt(acqf)
    assert opt.sources == ["raw"]
    U = SobolEngine(2, scramble=True, seed=3).draw(32).to(DT)
    R = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * U
    best, best_v = None, -float("inf")
    for r in R:  # brute force over the same sample
        gap = max(abs(float(r[j] - c[j])) / float(BOUNDS[1, j] - BOUNDS[0, j]) for j in range(2))
        v = float(torch.exp(-((r - c) ** 2).sum() / 4.0))
        if gap > 1e-6 and v > best_v:
            best, best_v = r, v
    torch.testing.assert_close(x[0], best)


def test_tolerance_is_box_relative():
    opt = DedupOptimizer(BOUNDS, tol=0.01)
    E = torch.tensor([[0.0, 1.0]], dtype=DT)
    X = torch.tensor([[0.019, 1.019], [0.021, 1.0], [0.0, 1.021]], dtype=DT)  # sides 2, 2
    assert opt.is_new(X, E).tolist() == [False, True, True]
    assert opt.is_new(X, E[:0]).all()


def test_evaluated_inputs_raw_units_and_model_list():
    g = torch.Generator().manual_seed(2)
    X = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * torch.rand(5, 2, generator=g, dtype=DT)
    Y = X.sum(-1, keepdim=True)
    m = SingleTaskGP(X, Y, input_transform=Normalize(2, bounds=BOUNDS))
    m.eval()
    assert not torch.allclose(m.train_inputs[0], X)  # stored normalised
    torch.testing.assert_close(evaluated_inputs(m), X)
    X2 = torch.rand(3, 2, generator=g, dtype=DT)
    m2 = SingleTaskGP(X2, Y[:3])
    both = evaluated_inputs(ModelListGP(m, m2))
    assert both.shape == (8, 2)
    with pytest.raises(ValueError, match="no `train_inputs`"):
        evaluated_inputs(torch.nn.Module())


def test_bad_arguments():
    with pytest.raises(ValueError, match="`bounds` must be 2 x d"):
        DedupOptimizer(BOUNDS.flip(0))
    with pytest.raises(ValueError, match="`tol` must be a number >= 0"):
        DedupOptimizer(BOUNDS, tol=-1.0)
    with pytest.raises(ValueError, match="`num_restarts` must be >= 1"):
        DedupOptimizer(BOUNDS, num_restarts=8, raw_samples=4)


def test_evaluated_of_the_wrong_shape_is_refused_by_name():
    acqf = _Bumps(torch.zeros(1, 2, dtype=DT), torch.ones(1, dtype=DT))
    for bad in ([[0.0, 1.0]], torch.zeros(3, dtype=DT), torch.zeros(2, 3, dtype=DT)):
        opt = DedupOptimizer(BOUNDS, num_restarts=2, raw_samples=8, seed=0, evaluated=bad)
        with pytest.raises(ValueError, match="`evaluated` must be an N x d = N x 2 tensor"):
            opt(acqf)


def test_nothing_new_within_tol_warns_and_returns_the_best_restart():
    """A tolerance that makes every candidate a duplicate: a warning, and the best restart
    (no raw sample that is itself a duplicate)."""
    c = torch.tensor([1.0, 2.0], dtype=DT)
    acqf = _Bumps(c[None], torch.ones(1, dtype=DT), width=2.0)
    opt = DedupOptimizer(BOUNDS, num_restarts=2, raw_samples=8, seed=3, tol=10.0,
                         evaluated=lambda: c[None])
    with pytest.warns(RuntimeWarning, match="lie within tol"):
        x = opt(acqf)
    assert opt.sources == ["duplicate"]
    torch.testing.assert_close(x[0], c, atol=1e-6, rtol=0)
