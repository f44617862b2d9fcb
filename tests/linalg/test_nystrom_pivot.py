"""The device-side pivoted Cholesky: the same pivots and factor whatever the check schedule,
against a dense reference; masked steps after the stop change nothing."""

import pytest
import torch

from botorch_mtucb.linalg import pivoted_cholesky

DT = torch.float64


def _gram(N, seed=0, ls=0.3):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(N, 3, generator=g, dtype=DT)
    return torch.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / ls)


@pytest.mark.parametrize("N", [1, 5, 40, 300])
def test_schedules_agree_and_reconstruct(N):
    A = _gram(N)
    ref_p, ref_L = pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i])
    for growth in (1.01, 1.25, 2.0, 100.0):
        p, L = pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i], check_growth=growth)
        assert torch.equal(p, ref_p)
        assert torch.equal(L, ref_L)
    torch.testing.assert_close(ref_L @ ref_L.T, A[ref_p][:, ref_p])
    # the residual of the unpicked points is below the tolerance (the stopping rule)
    if ref_p.numel() < N:
        C = A[:, ref_p] @ torch.linalg.inv(A[ref_p][:, ref_p]) @ A[ref_p]
        assert (A - C).diagonal().max() <= 1e-9


def test_rank_deficient_zero_and_bad_growth():
    v = torch.tensor([[1.0], [2.0], [2.0]], dtype=DT)
    A = v @ v.T  # rank one
    p, L = pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i], check_growth=1.5)
    assert p.tolist() == [1] and torch.allclose(L, torch.tensor([[2.0]], dtype=DT))
    Z = torch.zeros(4, 4, dtype=DT)
    p, L = pivoted_cholesky(Z.diagonal().clone(), lambda i: Z[:, i], check_growth=1.5)
    assert p.numel() == 0 and L.shape == (0, 0)
    with pytest.raises(ValueError, match="check_growth"):
        pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i], check_growth=1.0)



def _reference(diag, column, rtol):
    """The host-driven greedy pivoted Cholesky (one read per pivot, int indices)."""
    N, d = diag.numel(), diag.clone()
    stop = rtol * float(d.detach().max())
    F, pivots = diag.new_zeros(N, N), []
    for j in range(N):
        i = int(torch.argmax(d.detach()))
        dii = d[i]
        if float(dii.detach()) <= stop or float(dii.detach()) <= 0.0:
            break
        c = column(i)
        if j:
            c = c - F[:j, i] @ F[:j]
        col = c / dii.sqrt()
        F[j] = col
        d = (d - col**2).clamp_min(0.0)
        d[i] = 0.0
        pivots.append(i)
    piv = torch.tensor(pivots, dtype=torch.long)
    return piv, F[: len(pivots), piv].transpose(0, 1).tril()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("N, ls", [(7, 0.3), (200, 0.3), (500, 0.05), (500, 3.0)])
def test_bitwise_equal_to_the_host_driven_reference(dtype, N, ls):
    A = _gram(N, seed=N, ls=ls).to(dtype)
    rtol = 1000.0 * torch.finfo(dtype).eps
    ref_p, ref_L = _reference(A.diagonal(), lambda i: A[:, i], rtol)
    assert 0 < ref_p.numel() <= N
    for growth in (None, 1.25):
        p, L = pivoted_cholesky(A.diagonal(), lambda i: A[:, i], rtol, check_growth=growth)
        assert torch.equal(p, ref_p) and torch.equal(L, ref_L), growth
    # diag and the Gram untouched (the loop works in place on its own copies)
    assert torch.equal(A, _gram(N, seed=N, ls=ls).to(dtype))


@pytest.mark.parametrize("growth", [None, 1.25])
def test_tracked_inputs_give_the_same_factor_and_keep_the_graph(growth):
    X = torch.rand(60, 2, generator=torch.Generator().manual_seed(3), dtype=DT)
    ls = torch.tensor(0.4, dtype=DT, requires_grad=True)
    A = torch.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / ls)
    p, L = pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i], check_growth=growth)
    ref_p, ref_L = _reference(A.detach().diagonal(), lambda i: A.detach()[:, i], 1000 * 2.0**-52)
    assert L.requires_grad
    assert torch.equal(p, ref_p) and torch.equal(L.detach(), ref_L)
    with torch.no_grad():
        p2, L2 = pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i], check_growth=growth)
    assert not L2.requires_grad and torch.equal(p2, p) and torch.equal(L2, L.detach())


@pytest.mark.parametrize("growth", [None, 1.25])
def test_nan_diagonal_entry_stops(growth):
    A = _gram(10)
    diag = A.diagonal().clone()
    diag[0] = float("nan")  # argmax picks the NaN first: nothing is accepted
    p, L = pivoted_cholesky(diag, lambda i: A[:, i], check_growth=growth)
    assert p.numel() == 0 and L.shape == (0, 0)


@pytest.mark.parametrize("rtol", [None, 1e-6, 0.5])
def test_pinv_sqrt_factor_keeps_the_masked_eigenpairs_with_one_read(rtol):
    from botorch_mtucb.linalg.nystrom import default_pinv_rtol, psd_pinv_sqrt_factor
    from tests.sync_counter import SyncCounter

    A = _gram(40, seed=4, ls=20.0)
    with SyncCounter() as sc:
        Q, s = psd_pinv_sqrt_factor(A, rtol)
    assert sc.count("read") == 1, sc.report()
    evals, evecs = torch.linalg.eigh(A)
    cut = (default_pinv_rtol(DT) if rtol is None else rtol) * evals.max()
    keep = (evals > cut) & (evals > 0)  # the reference: a boolean mask
    assert 0 < int(keep.sum()) < 40
    assert torch.equal(Q, evecs[:, keep]) and torch.equal(s, evals[keep].rsqrt())
    Q0, s0 = psd_pinv_sqrt_factor(torch.zeros(3, 3, dtype=DT))
    assert Q0.shape == (3, 0) and s0.shape == (0,)
