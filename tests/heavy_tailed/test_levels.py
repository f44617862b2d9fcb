"""Truncation levels of TruncatedGP: Algorithm 1's per-round levels and the data-driven mode's
current level (the one the benchmark suite uses), against brute force and the suite's model."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.models import TruncatedGP

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


def _rbf() -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = 0.3
    return k


def test_default_levels_and_brute_force_targets() -> None:
    X, Y = _data(40, 0)
    y = Y.squeeze(-1)
    per = TruncatedGP(X, Y, 1.0, 0.5, _rbf())
    cur = TruncatedGP(X, Y, 1.0, 0.5, _rbf(), level="current")
    assert per.level == "per-round" and TruncatedGP(X, Y).level == "current"
    b_s = 0.5**0.5 * torch.arange(1, 41, dtype=DT) ** 0.25
    b_t = 0.5**0.5 * 40**0.25
    assert torch.equal(per.train_targets, torch.where(y.abs() <= b_s, y, 0.0))
    assert torch.equal(cur.train_targets, torch.where(y.abs() <= b_t, y, 0.0))
    assert not torch.equal(per.train_targets, cur.train_targets)  # this data tells them apart
    with pytest.raises(ValueError, match="`level`"):
        TruncatedGP(X, Y, 1.0, 0.5, level="latest")


def test_clipping_winsorises_at_the_same_levels() -> None:
    """``clip=True``: ŷ = max(−b, min(y, b)) at the same levels; the order of the rewards
    beyond b is kept (the largest reward stays a largest target), zeroing loses it."""
    X, Y = _data(40, 0)
    y = Y.squeeze(-1)
    b_s = 0.5**0.5 * torch.arange(1, 41, dtype=DT) ** 0.25
    b_t = 0.5**0.5 * 40**0.25
    per = TruncatedGP(X, Y, 1.0, 0.5, _rbf(), clip=True)
    cur = TruncatedGP(X, Y, 1.0, 0.5, _rbf(), level="current", clip=True)
    assert not TruncatedGP(X, Y, 1.0, 0.5, _rbf()).clip  # declared v: Algorithm 1 zeroes
    assert TruncatedGP(X, Y).clip  # the data-driven mode clips
    assert torch.equal(per.train_targets, torch.where(y > b_s, b_s, torch.where(y < -b_s, -b_s, y)))
    assert torch.equal(cur.train_targets, y.clamp(-b_t, b_t))
    assert int((y.abs() > b_t).sum()) > 0  # the data tells clipping from no truncation
    top = int(y.argmax())
    assert cur.train_targets[top] == cur.train_targets.max()  # the best reward: a top target
    zeroed = TruncatedGP(X, Y, 1.0, 0.5, _rbf(), level="current").train_targets
    assert zeroed[top] == 0 < zeroed.max()  # zeroing makes it a typical one


@pytest.mark.parametrize("level", ["per-round", "current"])
@pytest.mark.parametrize("on_arms", [False, True], ids=["dense", "arms"])
def test_clipped_conditioning_equals_a_scratch_build(level: str, on_arms: bool) -> None:
    """One-at-a-time conditioning (the rank-one arm path, the dense block extension) keeps
    the clipped targets of a scratch build, and its posterior that of a GP on them."""
    arms = torch.rand(12, 2, dtype=DT, generator=torch.Generator().manual_seed(1))
    X, Y = _data(40, 5, arms if on_arms else None)
    kw = dict(level=level, clip=True, arms=arms if on_arms else None)
    m = TruncatedGP(X[:10], Y[:10], 1.0, 0.5, _rbf(), lam=0.3, **kw)
    for s in range(10, 40):
        m = m.condition_on_observations(X[s : s + 1], Y[s : s + 1])
    ref = TruncatedGP(X, Y, 1.0, 0.5, _rbf(), lam=0.3, **kw)
    torch.testing.assert_close(m.train_targets, ref.train_targets, atol=0, rtol=0)
    plain = TruncatedGP(X, ref.train_targets.unsqueeze(-1), 1.0, 0.5, _rbf(), lam=0.3,
                        truncate=False)  # an untruncated GP on the clipped targets
    Xt = arms.unsqueeze(-2) if on_arms else torch.rand(9, 1, 2, dtype=DT)
    with torch.no_grad():
        p, r, g = m.posterior(Xt), ref.posterior(Xt), plain.posterior(Xt)
    torch.testing.assert_close(p.mean, r.mean, atol=1e-10, rtol=0)
    torch.testing.assert_close(p.variance, r.variance, atol=1e-10, rtol=0)
    torch.testing.assert_close(r.mean, g.mean, atol=1e-10, rtol=0)


@pytest.mark.parametrize("on_arms", [False, True], ids=["dense", "arms"])
def test_current_level_conditioning_equals_a_scratch_build(on_arms: bool) -> None:
    """Every conditioning re-truncates all rewards at the new b_t (rank-one path on arms)."""
    arms = torch.rand(12, 2, dtype=DT, generator=torch.Generator().manual_seed(1))
    X, Y = _data(40, 2, arms if on_arms else None)
    kw = dict(level="current", arms=arms if on_arms else None)
    m = TruncatedGP(X[:10], Y[:10], 1.0, 0.5, _rbf(), lam=0.3, **kw)
    changed = 0
    for s in range(10, 40):
        before = m.train_targets[:s].clone()
        m = m.condition_on_observations(X[s : s + 1], Y[s : s + 1])
        changed += int(not torch.equal(before, m.train_targets[:s]))
    assert changed > 0  # some earlier target came back in as b_t grew
    ref = TruncatedGP(X, Y, 1.0, 0.5, _rbf(), lam=0.3, **kw)
    Xt = arms.unsqueeze(-2) if on_arms else torch.rand(9, 1, 2, dtype=DT)
    with torch.no_grad():
        p, r = m.posterior(Xt), ref.posterior(Xt)
    torch.testing.assert_close(p.mean, r.mean, atol=1e-10, rtol=0)
    torch.testing.assert_close(p.variance, r.variance, atol=1e-10, rtol=0)
