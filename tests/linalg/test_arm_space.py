"""``linalg.arm_space`` against a dense t x t GP on the repeated observations (brute force)."""

from __future__ import annotations

import torch

from botorch_mtucb.linalg.arm_space import (
    arm_space_factor,
    arm_space_posterior,
    augmented_rank_one,
    augmented_state,
    kalman_rank_one,
)

DT = torch.float64


def _problem(A: int = 7, t: int = 25, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    P = torch.rand(A, 2, dtype=DT, generator=g)
    K = torch.exp(-torch.cdist(P, P).square() / 0.3)
    idx = torch.randint(0, A - 1, (t,), generator=g)  # the last arm is never pulled
    y = torch.randn(t, dtype=DT, generator=g)
    return K, idx, y


def _dense(K, idx, y, lam):
    Kt = K[idx][:, idx] + lam * torch.eye(idx.shape[0], dtype=DT)
    Kx = K[:, idx]
    mean = Kx @ torch.linalg.solve(Kt, y)
    cov = K - Kx @ torch.linalg.solve(Kt, Kx.T)
    log_det = torch.logdet(torch.eye(idx.shape[0], dtype=DT) + K[idx][:, idx] / lam)
    return mean, cov, log_det


def test_posterior_from_counts_and_sums_equals_the_dense_gp() -> None:
    K, idx, y = _problem()
    lam = 0.3
    n = torch.bincount(idx, minlength=K.shape[0]).to(DT)
    s = torch.zeros(K.shape[0], dtype=DT).index_add_(0, idx, y)
    mean, cov, log_det = arm_space_posterior(K, n, s, lam)
    ref = _dense(K, idx, y, lam)
    torch.testing.assert_close(mean, ref[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(cov, ref[1], atol=1e-12, rtol=0)
    torch.testing.assert_close(log_det, ref[2], atol=1e-10, rtol=0)
    torch.testing.assert_close(arm_space_factor(K, n, lam)[2], log_det, atol=0, rtol=0)
    torch.testing.assert_close(cov @ s / lam, mean, atol=1e-10, rtol=0)  # μ_A = Σ_A s / λ


def test_kalman_updates_equal_a_scratch_build() -> None:
    K, idx, y = _problem(t=30, seed=1)
    lam = torch.tensor(0.5, dtype=DT)
    n = torch.bincount(idx[:10], minlength=K.shape[0]).to(DT)
    s = torch.zeros(K.shape[0], dtype=DT).index_add_(0, idx[:10], y[:10])
    mean, cov, log_det = arm_space_posterior(K, n, s, 0.5)
    for j in range(10, 30):
        mean, cov, c = kalman_rank_one(mean, cov, int(idx[j]), y[j], lam)
        log_det = log_det + torch.log(c / lam)
    ref = _dense(K, idx, y, 0.5)
    torch.testing.assert_close(mean, ref[0], atol=1e-11, rtol=0)
    torch.testing.assert_close(cov, ref[1], atol=1e-11, rtol=0)
    torch.testing.assert_close(log_det, ref[2], atol=1e-10, rtol=0)
    assert kalman_rank_one(None, cov, 0, y[0], lam)[0] is None


def test_augmented_updates_equal_a_scratch_build_and_stay_symmetric() -> None:
    K, idx, y = _problem(t=40, seed=2)
    lam = torch.tensor(0.5, dtype=DT)
    A = K.shape[0]
    S = augmented_state(torch.zeros(A, dtype=DT), K)
    torch.testing.assert_close(S[:-1, :-1], K, atol=0, rtol=0)
    e_last = torch.zeros(A + 1, dtype=DT)
    e_last[-1] = 1.0
    log_det = torch.zeros((), dtype=DT)
    for j in range(40):
        S, c = augmented_rank_one(S, int(idx[j]), float(y[j]), lam, e_last)
        log_det = log_det + torch.log(c / lam)
    ref = _dense(K, idx, y, 0.5)
    torch.testing.assert_close(S[-1, :-1], ref[0], atol=1e-11, rtol=0)
    torch.testing.assert_close(S[:-1, -1], ref[0], atol=1e-11, rtol=0)
    torch.testing.assert_close(S[:-1, :-1], ref[1], atol=1e-11, rtol=0)
    torch.testing.assert_close(log_det, ref[2], atol=1e-10, rtol=0)
    assert torch.equal(S, S.T)  # h hᵀ is exactly symmetric: no drift between the halves
    # y=None: the covariance block only, as kalman_rank_one(None, ...).
    S2, c2 = augmented_rank_one(S, 3, None, lam, e_last)
    cov, c_ref = kalman_rank_one(None, S[:-1, :-1].contiguous(), 3, y[0], lam)[1:]
    torch.testing.assert_close(S2[:-1, :-1], cov, atol=1e-14, rtol=0)
    torch.testing.assert_close(c2, c_ref, atol=0, rtol=0)
