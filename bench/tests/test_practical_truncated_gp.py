"""The suite's practical truncated GP is the library's data-driven TruncatedGP."""

from __future__ import annotations

import pytest
import torch

from botorch_mtucb.models import TruncatedGP
from mtucb_bench.robust_baselines import practical_truncated_gp

DT = torch.float64


def _data(t: int, seed: int, arms: torch.Tensor | None = None):
    g = torch.Generator().manual_seed(seed)
    if arms is None:
        X = torch.rand(t, 2, dtype=DT, generator=g)
    else:
        X = arms[torch.randint(0, arms.shape[0], (t,), generator=g)]
    w = torch.rand(t, 1, dtype=DT, generator=g).clamp_min(0.02)
    Y = 2.0 + torch.sin(5 * X[:, :1]) + 0.5 * torch.randn(t, 1, dtype=DT, generator=g) / w.sqrt()
    return X, Y


@pytest.mark.parametrize("clip", [True, False], ids=["clip", "zero"])
def test_data_driven_model_equals_the_suites_practical_model(clip: bool) -> None:
    """The library's data-driven model and the suite's practical model truncate at the current
    level, fit the same SingleTaskGP on the same targets and give the same posterior."""
    X, Y = _data(30, 3)
    ours = TruncatedGP(X, Y) if clip else TruncatedGP(X, Y, clip=False)
    assert ours.clip is clip
    suite, loc = practical_truncated_gp(X, Y, clip=clip)  # level="current" (its default)
    assert ours.location == pytest.approx(float(loc), abs=1e-12)
    torch.testing.assert_close(ours.train_targets, suite.train_targets, atol=1e-12, rtol=0)
    Xt = torch.rand(8, 2, dtype=DT, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        m1, v1 = ours.mean_and_variance(Xt)
        m2, v2 = suite.mean_and_variance(Xt)
    torch.testing.assert_close(m1, m2 + float(loc), atol=1e-8, rtol=0)
    torch.testing.assert_close(v1, v2, atol=1e-8, rtol=0)
