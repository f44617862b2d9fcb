"""Tests of botorch_mtucb.utils.validation (the test-input check of every public call)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from botorch_mtucb.utils import validation
from botorch_mtucb.utils.validation import check_finite, check_psd_matrix, check_test_tensor


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("shape", [(1,), (5, 1, 3), (2, 3, 4, 2)])
def test_non_finite_entry_anywhere_is_refused(dtype, bad, shape) -> None:
    for flat_index in (0, int(np.prod(shape)) - 1, int(np.prod(shape)) // 2):
        X = torch.rand(*shape, dtype=dtype)
        X.view(-1)[flat_index] = bad
        with pytest.raises(ValueError, match="`Xq` contains NaN or infinite values"):
            check_test_tensor(X, "Xq")


@pytest.mark.parametrize("requires_grad", [False, True])
def test_finite_inputs_pass_and_are_returned(requires_grad) -> None:
    X = torch.rand(4, 1, 3, dtype=torch.float64, requires_grad=requires_grad)
    assert check_test_tensor(X) is X
    empty = torch.rand(0, 1, 3, dtype=torch.float64)
    assert check_test_tensor(empty) is empty


def test_overflowing_sum_of_finite_entries_passes() -> None:
    """The fast path sums the entries; a sum that overflows must not be mistaken for an inf."""
    X = torch.full((8,), 3e38, dtype=torch.float32)
    assert not torch.isfinite(X.sum())
    assert check_test_tensor(X) is X
    X[5] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_test_tensor(X)


@pytest.mark.parametrize(
    "value, match",
    [
        (np.zeros((2, 3)), "must be a torch.Tensor, got ndarray"),
        ([[0.1, 0.2]], "must be a torch.Tensor, got list"),
        (torch.zeros(2, 3, dtype=torch.int64), "float32 or float64 tensor, got torch.int64"),
        (torch.zeros(2, 3, dtype=torch.bfloat16), "float32 or float64 tensor, got torch.bfloat16"),
    ],
)
def test_wrong_types_raise_type_error(value, match) -> None:
    with pytest.raises(TypeError, match=match):
        check_test_tensor(value)


def test_checked_tensor_is_not_checked_again_until_written(monkeypatch) -> None:
    calls = []
    original = validation._finite_on_cpu
    monkeypatch.setattr(validation, "_finite_on_cpu", lambda X: calls.append(1) or original(X))
    X = torch.rand(3, 1, 2, dtype=torch.float64)
    check_test_tensor(X)
    check_test_tensor(X)
    assert len(calls) == 1
    X[0, 0, 0] = float("nan")  # an in-place write bumps the version counter
    with pytest.raises(ValueError, match="NaN"):
        check_test_tensor(X)
    assert len(calls) == 2


def test_cache_holds_a_few_tensors_and_drops_older_ones(monkeypatch) -> None:
    calls = []
    original = validation._finite_on_cpu
    monkeypatch.setattr(validation, "_finite_on_cpu", lambda X: calls.append(1) or original(X))
    tensors = [torch.rand(2, 1, dtype=torch.float64) for _ in range(validation._CACHE_SIZE + 1)]
    for X in tensors:
        check_test_tensor(X)
    assert len(validation._CHECKED) == validation._CACHE_SIZE
    check_test_tensor(tensors[-1])  # most recent: cached
    assert len(calls) == len(tensors)
    check_test_tensor(tensors[0])  # pushed out of the cache: checked again
    assert len(calls) == len(tensors) + 1


def test_inference_tensors_are_checked_every_time() -> None:
    with torch.inference_mode():
        X = torch.rand(3, 1, 2, dtype=torch.float64)
        check_test_tensor(X)
        X[1, 0, 1] = float("inf")
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_test_tensor(X)


def test_check_finite_and_psd_matrix() -> None:
    check_finite(torch.ones(2), "Y")
    with pytest.raises(ValueError, match="`Y` contains NaN"):
        check_finite(torch.tensor([1.0, float("nan")]), "Y")
    with pytest.raises(ValueError, match="must be a torch.Tensor"):
        check_finite([1.0], "Y")
    with pytest.raises(ValueError, match="positive semi-definite"):
        check_psd_matrix(torch.tensor([[1.0, 2.0], [2.0, 1.0]]), "B")
    with pytest.raises(ValueError, match="symmetric"):
        check_psd_matrix(torch.tensor([[1.0, 0.5], [0.0, 1.0]]), "B")
    with pytest.raises(ValueError, match="must be 3 x 3"):
        check_psd_matrix(torch.eye(2), "B", size=3)
    # the tolerance is relative to the largest eigenvalue, also for small matrices
    with pytest.raises(ValueError, match="positive semi-definite"):
        check_psd_matrix(torch.diag(torch.tensor([1e-10, -1e-9], dtype=torch.float64)), "B")
    tiny = torch.diag(torch.tensor([1e-10, -1e-20], dtype=torch.float64))  # round-off
    torch.testing.assert_close(check_psd_matrix(tiny, "B"), tiny)
    assert bool(check_psd_matrix(torch.zeros(2, 2), "B").eq(0).all())
    with pytest.raises(ValueError, match="non-empty square matrix"):
        check_psd_matrix(torch.zeros(0, 0), "B")
    big = torch.full((2, 2), 3e38, dtype=torch.float32)  # the symmetrisation does not overflow
    assert bool(check_psd_matrix(big, "B").isfinite().all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_check_finite_refuses_any_non_finite_entry_at_once_on_the_cpu(dtype, bad) -> None:
    for flat_index in (0, 5, 11):
        X = torch.rand(3, 4, dtype=dtype, requires_grad=True)
        with torch.no_grad():
            X.view(-1)[flat_index] = bad
        with pytest.raises(ValueError, match=r"^`train_Y` contains NaN or infinite values\.$"):
            check_finite(X, "train_Y")


def test_check_finite_reads_one_scalar_and_passes_overflowing_finite_sums() -> None:
    from tests.sync_counter import SyncCounter

    X = torch.rand(50, 3, dtype=torch.float64)
    with SyncCounter() as sc:
        check_finite(X, "X")
    assert sc.count() == 1, sc.report()
    big = torch.full((8,), 3e38, dtype=torch.float32)  # finite entries, the sum overflows
    check_finite(big, "big")
    big[3] = float("inf")
    with pytest.raises(ValueError, match="`big` contains NaN"):
        check_finite(big, "big")
    check_finite(torch.zeros(0, 2, dtype=torch.float64), "empty")
    check_finite(torch.tensor([1, 2]), "ints")  # not floating: nothing to check


def test_as_float_vector_reads_lists_in_float64_and_names_the_argument():
    from botorch_mtucb.utils.validation import as_float_vector

    v = as_float_vector([0.1, 2], "ref_point", 2)
    assert v.dtype == torch.float64 and v.tolist() == [0.1, 2.0]
    t = torch.tensor([1.0, 2.0], dtype=torch.float32)
    out = as_float_vector(t, "z")
    assert out.dtype == torch.float32 and out.data_ptr() != t.data_ptr()  # a copy
    assert as_float_vector(torch.tensor([1, 2]), "z").dtype == torch.float64
    for bad in (None, "data", [0.0, None], [[1.0, 2.0]], [], [1.0, float("inf")],
                torch.tensor([True, False]), [1.0, 2.0, 3.0]):
        with pytest.raises(ValueError, match="`ref_point` must be 2 finite numbers"):
            as_float_vector(bad, "ref_point", 2)


def test_as_flag_vector_takes_booleans_only():
    from botorch_mtucb.utils.validation import as_flag_vector

    assert as_flag_vector([True, False], "minimize", 2).tolist() == [True, False]
    assert as_flag_vector(np.array([False, True]), "minimize", 2).tolist() == [False, True]
    assert as_flag_vector(torch.tensor([True]), "minimize", 1).dtype == torch.bool
    for bad in ("yes", None, [True, None], [0, 1], [0.0, 1.0], [True], [[True, False]]):
        with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
            as_flag_vector(bad, "minimize", 2)
