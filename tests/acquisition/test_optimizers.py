"""The loop's maximisers: exact argmax on arms, seeded multi-start on a box, input checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from botorch_mtucb.acquisition.optimizers import BoxOptimizer, FiniteArmOptimizer

DT = torch.float64


class _Quadratic(AcquisitionFunction):
    """−‖x − c‖² (q = 1), maximised at c."""

    def __init__(self, c: torch.Tensor) -> None:
        super().__init__(model=None)
        self.c = c

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return -((X[..., 0, :] - self.c) ** 2).sum(-1)


def test_finite_arms_give_the_exact_argmax_and_box_finds_the_optimum():
    c = torch.tensor([0.3, 0.7], dtype=DT)
    arms = torch.rand(50, 2, generator=torch.Generator().manual_seed(0), dtype=DT)
    best = arms[((arms - c) ** 2).sum(-1).argmin()]
    torch.testing.assert_close(FiniteArmOptimizer(arms)(_Quadratic(c))[0], best)
    box = BoxOptimizer(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT), num_restarts=2,
                       raw_samples=16, seed=3)
    x = box(_Quadratic(c))
    assert x.shape == (1, 2) and torch.allclose(x[0], c, atol=1e-4)


@pytest.mark.parametrize("max_batch_size", [2048, 7])
def test_finite_arms_equal_optimize_acqf_discrete(max_batch_size):
    from botorch.optim import optimize_acqf_discrete

    g = torch.Generator().manual_seed(1)
    arms = torch.rand(40, 2, generator=g, dtype=DT)
    arms[25] = arms[3]  # a tie: both take the first
    for c in (arms[3], torch.rand(2, generator=g, dtype=DT)):
        acqf = _Quadratic(c)
        ref, _ = optimize_acqf_discrete(acqf, q=1, choices=arms, max_batch_size=max_batch_size)
        opt = FiniteArmOptimizer(arms, max_batch_size=max_batch_size)
        x = opt(acqf)
        assert x.shape == (1, 2) and torch.equal(x, ref)
        x.add_(1.0)  # the caller's copy: the arm set is untouched
        assert torch.equal(opt(acqf), ref)
    with pytest.raises(ValueError, match="max_batch_size"):
        FiniteArmOptimizer(arms, max_batch_size=0)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="bounds"):
        BoxOptimizer(torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=DT))
    box = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    for restarts, raw in ((0, 8), (4, 2), (2.5, 8), (True, 8)):
        with pytest.raises(ValueError, match="`num_restarts` must be >= 1"):
            BoxOptimizer(box, num_restarts=restarts, raw_samples=raw)
    opt = BoxOptimizer(box, num_restarts=np.int64(2), raw_samples=np.int64(8))
    assert (opt.num_restarts, opt.raw_samples) == (2, 8) and type(opt.num_restarts) is int
    with pytest.raises(ValueError, match="choices"):
        FiniteArmOptimizer(torch.empty(0, 2, dtype=DT))
