"""``linalg.truncated_sums.ArmRewardHistory`` against brute-force masked sums."""

from __future__ import annotations

import torch

from botorch_mtucb.linalg.truncated_sums import ArmRewardHistory

DT = torch.float64


def test_truncated_sums_and_projection_equal_brute_force_after_appends() -> None:
    g = torch.Generator().manual_seed(0)
    A, m, t = 6, 4, 40
    idx = torch.randint(0, A, (t,), generator=g)
    y = torch.randn(t, dtype=DT, generator=g) ** 3
    h = ArmRewardHistory(idx[:15], y[:15], A)
    for j in range(15, t):  # in-place appends, with capacity growth
        h.append(idx[j], y[j])
    G = torch.randn(A, m, dtype=DT, generator=g)
    G[2, 1] = 0.0  # a zero weight: threshold +inf
    b = 0.8
    onehot = torch.nn.functional.one_hot(idx, A).to(DT)  # t x A
    U = onehot @ G  # u_{i,τ} = G[a(τ), i]
    ref = (U * y[:, None] * ((U * y[:, None]).abs() <= b)).sum(0)
    torch.testing.assert_close(h.truncated_projection(G, b), ref, atol=1e-12, rtol=0)
    thr = torch.rand(A, m, dtype=DT, generator=g) * 2
    S = h.truncated_sums(thr)
    ref_S = torch.stack([torch.stack([y[(idx == a) & (y.abs() <= thr[a, i])].sum()
                                      for i in range(m)]) for a in range(A)])
    torch.testing.assert_close(S, ref_S, atol=1e-12, rtol=0)
    assert h.length == t
