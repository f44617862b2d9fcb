"""Tests of botorch_mtucb.linalg.factor.CholeskyFactor: the factorisation's jitter policy (that of
linear_operator's ``psd_safe_cholesky``), its single host read, and the block algebra against
dense references."""

import warnings

import pytest
import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from linear_operator.utils.errors import NanError, NotPSDError
from linear_operator.utils.warnings import NumericalWarning

from botorch_mtucb.linalg import CholeskyFactor
from tests.sync_counter import SyncCounter

DT = torch.float64


def _spd(t, batch=(), seed=0, noise=0.1):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(*batch, t, 2, generator=g, dtype=DT)
    K = torch.exp(-((X[..., :, None, :] - X[..., None, :, :]) ** 2).sum(-1) / 0.3)
    return K + noise * torch.eye(t, dtype=DT)


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_spd_factor_is_the_cholesky_of_the_symmetrised_matrix(batch):
    A = _spd(6, batch)
    A_asym = A + 1e-3 * torch.randn(A.shape, generator=torch.Generator().manual_seed(1), dtype=DT)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalWarning)  # no jitter on an SPD matrix
        F = CholeskyFactor.from_matrix(A_asym)
    assert torch.equal(F.L, torch.linalg.cholesky(0.5 * (A_asym + A_asym.mT)))
    y = torch.randn(*batch, 6, 2, dtype=DT)
    torch.testing.assert_close(A_asym.mT @ F.solve(y) + A_asym @ F.solve(y), 2 * y)
    torch.testing.assert_close(F.logdet(), torch.logdet(0.5 * (A_asym + A_asym.mT)))
    torch.testing.assert_close(F.inv_quad(y), (y * torch.linalg.solve(F.L @ F.L.mT, y)).sum(-2))


def test_spd_factorisation_reads_the_host_once_whatever_the_batch():
    for A in (_spd(8), _spd(8, (4,))):
        with SyncCounter() as sc:
            CholeskyFactor.from_matrix(A)
        assert sc.count("read") == 1 and sc.count("check") == 0, sc.report()
        assert "factor.py" in sc.events[0].where


def test_singular_matrix_gets_psd_safe_cholesky_jitter_on_the_failed_member_only():
    v = torch.tensor([[1.0], [2.0], [3.0]], dtype=DT)
    singular = v @ v.T  # rank one: cholesky fails
    A = torch.stack([_spd(3), singular])
    with pytest.warns(NumericalWarning, match="added jitter"):
        F = CholeskyFactor.from_matrix(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        ref = psd_safe_cholesky(A)
    assert torch.equal(F.L, ref)
    assert torch.equal(F.L[0], torch.linalg.cholesky(A[0]))  # the SPD member is untouched
    torch.testing.assert_close(F.L[1] @ F.L[1].T, singular, atol=1e-6, rtol=0)


def test_nan_and_indefinite_matrices_raise_linear_operators_errors():
    A = _spd(4)
    A[1, 2] = A[2, 1] = float("nan")
    with pytest.raises(NanError):
        CholeskyFactor.from_matrix(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        with pytest.raises(NotPSDError):
            CholeskyFactor.from_matrix(-torch.eye(3, dtype=DT))


def test_empty_matrix_and_extension_against_the_dense_factor():
    E = CholeskyFactor.from_matrix(torch.zeros(0, 0, dtype=DT))
    assert E.size == 0 and E.solve(torch.ones(0, 1, dtype=DT)).shape == (0, 1)
    A = _spd(7)
    F = CholeskyFactor.from_matrix(A[:4, :4]).extend(A[:4, 4:], A[4:, 4:])
    torch.testing.assert_close(F.L, torch.linalg.cholesky(A))
