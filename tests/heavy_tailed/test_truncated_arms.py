"""TruncatedGP's finite-arm path (``truncated_arms.py``) against brute-force t x t formulas.

The reference is written here from paper 001, Algorithm 1: targets truncated by hand (zeroed or
winsorised at ``b_s`` or at the current ``b_t``), ``μ = K_{A,t}(K_t + λI)⁻¹ŷ`` and
``Σ = K_A − K_{A,t}(K_t + λI)⁻¹K_{t,A}`` by a dense solve, ``ln det(I + K_t/λ)`` by ``logdet``.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import TruncatedGP

DT = torch.float64
LAM = 0.8
ALPHA, V = 0.7, 1.5


def _problem(A: int = 30, T: int = 1200, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    arms = torch.linspace(0, 1, A, dtype=DT).unsqueeze(-1)
    kern = RBFKernel().to(DT)
    kern.lengthscale = 0.15
    with torch.no_grad():
        K = kern(arms, arms).to_dense()
    f = K @ (torch.rand(A, dtype=DT, generator=g) - 0.5)
    idx = torch.randint(0, A, (T,), generator=g)
    # Student-t(2) noise: heavy enough that zeroing / clipping acts in every mode.
    noise = torch.randn(T, dtype=DT, generator=g) / torch.sqrt(
        torch.distributions.Chi2(2.0).sample((T,)) / 2.0
    )
    return arms, kern, K, idx, (f[idx] + 0.5 + noise).unsqueeze(-1)


def _levels(t: int, level: str, alpha: float, v: float) -> torch.Tensor:
    s = torch.full((t,), float(t), dtype=DT) if level == "current" else torch.arange(
        1, t + 1, dtype=DT)
    return v ** (1 / (1 + alpha)) * s ** (1 / (2 * (1 + alpha)))


def _brute(K, idx, z, level, clip, alpha, v, lam):
    """Dense reference on centred rewards ``z`` (``t``)."""
    b = _levels(z.shape[0], level, alpha, v)
    y_hat = torch.maximum(torch.minimum(z, b), -b) if clip else torch.where(z.abs() <= b, z, 0.0)
    Kt, KAt = K[idx][:, idx], K[:, idx]
    M = Kt + lam * torch.eye(idx.shape[0], dtype=DT)
    mean = KAt @ torch.linalg.solve(M, y_hat)
    cov = K - KAt @ torch.linalg.solve(M, KAt.T)
    log_det = torch.logdet(torch.eye(idx.shape[0], dtype=DT) + Kt / lam)
    return mean, cov, float(log_det)


@pytest.mark.parametrize("by_index", [True, False], ids=["precomputed", "arms"])
@pytest.mark.parametrize("clip", [False, True], ids=["zero", "clip"])
@pytest.mark.parametrize("level", ["per-round", "current"])
def test_long_sequence_of_rank_one_updates_equals_scratch_build(level, clip, by_index) -> None:
    arms, kern, K, idx, y = _problem()
    T = idx.shape[0]
    if by_index:
        X, kw = idx.to(DT).unsqueeze(-1), dict(covar_module=PrecomputedKernel(K))
    else:
        X, kw = arms[idx], dict(covar_module=kern, arms=arms)
    kw.update(lam=LAM, level=level, clip=clip, constants="theory")
    m = TruncatedGP(X[:0], y[:0], ALPHA, V, **kw)
    X_in, y_in = X.clone(), y.clone()
    for s in range(T):
        m = m.condition_on_observations(X[s : s + 1], y[s : s + 1])
    assert torch.equal(X, X_in) and torch.equal(y, y_in)  # the caller's tensors untouched
    assert m.num_observations == T and torch.equal(m.train_Y, y)
    scratch = TruncatedGP(X, y, ALPHA, V, **kw)
    mean_ref, cov_ref, log_det_ref = _brute(K, idx, y[:, 0], level, clip, ALPHA, V, LAM)
    cand = (torch.arange(30, dtype=DT).unsqueeze(-1) if by_index else arms).unsqueeze(-2)
    for model in (m, scratch):
        mean, var = model.mean_and_variance(cand)
        torch.testing.assert_close(mean[:, 0], mean_ref, atol=1e-10, rtol=0)
        torch.testing.assert_close(var[:, 0], cov_ref.diagonal(), atol=1e-10, rtol=0)
        post = model.posterior(cand[:, 0].unsqueeze(0))
        torch.testing.assert_close(post.distribution.covariance_matrix[0], cov_ref, atol=1e-10,
                                   rtol=0)
        assert model.log_det() == pytest.approx(log_det_ref, rel=1e-10)
    torch.testing.assert_close(m.train_targets, scratch.train_targets, atol=0, rtol=0)
    # The whole arm set in other shapes (views of the state) and a subset (indexing).
    for shape in ((30, 1), (1, 30, 1), (2, 15, 1, 1)):
        mean, var = m.mean_and_variance(cand.reshape(*shape))
        assert mean.shape == shape[:-1]
        torch.testing.assert_close(mean.reshape(-1), mean_ref, atol=1e-10, rtol=0)
        torch.testing.assert_close(var.reshape(-1), cov_ref.diagonal(), atol=1e-10, rtol=0)
    mean, var = m.mean_and_variance(cand[[4, 2, 4]])
    torch.testing.assert_close(mean[:, 0], mean_ref[[4, 2, 4]], atol=1e-10, rtol=0)
    torch.testing.assert_close(var[:, 0], cov_ref.diagonal()[[4, 2, 4]], atol=1e-10, rtol=0)


def test_data_driven_mode_centres_and_clips_on_the_fast_path() -> None:
    arms, kern, K, idx, y = _problem(T=400, seed=4)
    X = arms[idx]
    kw = dict(covar_module=kern, lam=LAM, arms=arms)  # v=None: centred, "current", clip
    m0 = TruncatedGP(X[:100], y[:100], **kw)
    assert m0.location != 0.0 and m0.level == "current" and m0.clip
    m = m0
    for s in range(100, 400):
        m = m.condition_on_observations(X[s : s + 1], y[s : s + 1])
    z = y[:, 0] - m0.location
    mean_ref, cov_ref, _ = _brute(K, idx, z, "current", True, m0.alpha, m0.v, LAM)
    mean, var = m.mean_and_variance(arms.unsqueeze(-2))
    torch.testing.assert_close(mean[:, 0], mean_ref + m0.location, atol=1e-10, rtol=0)
    torch.testing.assert_close(var[:, 0], cov_ref.diagonal(), atol=1e-10, rtol=0)


def test_fast_path_keeps_parents_valid_and_refuses_bad_input() -> None:
    arms, kern, K, idx, y = _problem(T=20)
    X = arms[idx]
    m = TruncatedGP(X, y, ALPHA, V, kern, lam=LAM, arms=arms)
    before = m.mean_and_variance(arms.unsqueeze(-2))
    before = (before[0].clone(), before[1].clone())
    x1, x2 = arms[3:4], arms[17:18]
    y1, y2 = torch.tensor([[0.25]], dtype=DT), torch.tensor([[-1.5]], dtype=DT)
    c1 = m.condition_on_observations(x1, y1)
    c2 = m.condition_on_observations(x2, y2)  # m no longer holds the buffers' tip: copies
    c11 = c1.condition_on_observations(x2, y2)
    assert c1.train_Y[-1, 0] == 0.25 and c2.train_Y[-1, 0] == -1.5 and m.num_observations == 20
    torch.testing.assert_close(c1.train_X[-1], x1[0], atol=0, rtol=0)
    for model, xs, ys in ((c1, [x1], [y1]), (c2, [x2], [y2]), (c11, [x1, x2], [y1, y2])):
        ref = TruncatedGP(torch.cat([X, *xs]), torch.cat([y, *ys]), ALPHA, V, kern, lam=LAM,
                          arms=arms)
        for a, b in zip(model.mean_and_variance(arms.unsqueeze(-2)),
                        ref.mean_and_variance(arms.unsqueeze(-2)), strict=True):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    after = m.mean_and_variance(arms.unsqueeze(-2))
    assert torch.equal(after[0], before[0]) and torch.equal(after[1], before[1])
    # float32 inputs are cast to the model's dtype; a non-arm row, NaN and bad shapes raise.
    c32 = m.condition_on_observations(arms[:1].float(), y1.float())  # arm 0.0: exact
    assert c32.train_X.dtype == DT and c32.num_observations == 21
    with pytest.raises(ValueError, match="rows of `arms`"):
        m.condition_on_observations(torch.full((1, 1), 0.0123, dtype=DT), y1)
    with pytest.raises(ValueError, match="NaN"):
        m.condition_on_observations(x1, torch.full((1, 1), float("nan"), dtype=DT))
    with pytest.raises(ValueError, match="`Y`"):
        m.condition_on_observations(x1, torch.zeros(1, 2, dtype=DT))
    with pytest.raises(NotImplementedError, match="gradients"):
        m.condition_on_observations(x1.clone().requires_grad_(True), y1)


@pytest.mark.parametrize("how", ["deepcopy", "copy", "pickle"])
def test_copied_models_append_into_their_own_rows(how: str) -> None:
    """RowBuffer writes through a NumPy view of its tensor: a copy must get a view of its own."""
    arms, kern, K, idx, y = _problem(T=10)
    m = TruncatedGP(arms[idx], y, ALPHA, V, kern, lam=LAM, arms=arms)
    copier = {"deepcopy": copy.deepcopy, "copy": copy.copy,
              "pickle": lambda o: pickle.loads(pickle.dumps(o))}[how]
    bufs = copier(m._y_buf), copier(m._idx_buf)
    for buf, value in zip(bufs, (0.625, 4), strict=True):
        out = buf.appended_value(10, value)
        assert out.data[10] == value and out.view(11).shape == (11,)
    c = copy.deepcopy(m).condition_on_observations(arms[4:5], torch.tensor([[0.7]], dtype=DT))
    assert c.train_Y[-1, 0] == 0.7 and torch.equal(c.train_X[-1], arms[4])
    ref = TruncatedGP(torch.cat([arms[idx], arms[4:5]]), torch.cat([y, y.new_full((1, 1), 0.7)]),
                      ALPHA, V, kern, lam=LAM, arms=arms)
    torch.testing.assert_close(c.mean_and_variance(arms.unsqueeze(-2))[0],
                               ref.mean_and_variance(arms.unsqueeze(-2))[0], atol=1e-12, rtol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_fast_path_on_cuda_matches_cpu() -> None:
    arms, kern, K, idx, y = _problem(T=200)
    kw = dict(covar_module=PrecomputedKernel(K), lam=LAM, level="per-round", clip=True)
    X = idx.to(DT).unsqueeze(-1)
    ref = TruncatedGP(X, y, ALPHA, V, **kw)
    m = TruncatedGP(X[:0], y[:0], ALPHA, V, **kw).to("cuda")
    for s in range(200):
        m = m.condition_on_observations(X[s : s + 1].cuda(), y[s : s + 1].cuda())
    cand = torch.arange(30, dtype=DT).reshape(30, 1, 1)
    for a, b in zip(m.mean_and_variance(cand.cuda()), ref.mean_and_variance(cand), strict=True):
        torch.testing.assert_close(a.cpu(), b, atol=1e-10, rtol=0)


@pytest.mark.parametrize("clip", [False, True], ids=["zero", "clip"])
def test_current_level_sums_are_incremental_and_branch_safely(clip) -> None:
    """level="current": per-arm sums kept across updates (rewards beyond the level move inside
    as it grows), equal to the brute-force re-truncation; two children of one model (one
    reward inside, one far beyond the level) do not see each other's rewards."""
    arms, kern, K, idx, y = _problem(T=300, seed=6)
    X = arms[idx]
    kw = dict(covar_module=kern, lam=LAM, arms=arms, level="current", clip=clip)
    m = TruncatedGP(X[:50], y[:50], ALPHA, V, **kw)
    for s in range(50, 300):
        m = m.condition_on_observations(X[s : s + 1], y[s : s + 1])
    sums = m._level_sums
    assert sums.b == pytest.approx(V ** (1 / (1 + ALPHA)) * 300 ** (1 / (2 * (1 + ALPHA))))
    assert len(sums.out) == int((y.abs() > sums.b).sum()) > 0  # only the rewards beyond b
    big = torch.tensor([[50.0]], dtype=DT)
    for x_new, y_new in ((arms[5:6], torch.tensor([[0.3]], dtype=DT)), (arms[9:10], big)):
        child = m.condition_on_observations(x_new, y_new)
        i_all = torch.cat([idx, torch.tensor([9 if y_new is big else 5])])
        mean_ref, cov_ref, _ = _brute(K, i_all, torch.cat([y, y_new])[:, 0], "current", clip,
                                      ALPHA, V, LAM)
        mean, var = child.mean_and_variance(arms.unsqueeze(-2))
        torch.testing.assert_close(mean[:, 0], mean_ref, atol=1e-10, rtol=0)
        torch.testing.assert_close(var[:, 0], cov_ref.diagonal(), atol=1e-10, rtol=0)
    mean_ref, _, _ = _brute(K, idx, y[:, 0], "current", clip, ALPHA, V, LAM)
    torch.testing.assert_close(m.mean_and_variance(arms.unsqueeze(-2))[0][:, 0], mean_ref,
                               atol=1e-10, rtol=0)  # the parent is untouched
