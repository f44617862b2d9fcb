"""Input validation shared by kernels, models and acquisition functions.

Every check raises a ``ValueError`` that names the offending argument and says what was
expected, so users never see a silent NaN further down the line.
"""

from __future__ import annotations

import math
import weakref

import torch
from torch import Tensor

__all__ = [
    "as_flag_vector",
    "as_float_vector",
    "as_real",
    "check_finite",
    "check_psd_matrix",
    "check_test_tensor",
]


def check_finite(value: Tensor, name: str) -> None:
    """Raise ``ValueError`` if ``value`` holds NaN or infinite entries.

    For training data (constructors, conditioning): the error is raised at once on every
    device, at the cost of reading one scalar from the device (on the CPU the sum of the
    entries; the entry-wise test runs only when that sum is not finite). Test inputs of the
    hot path go through :func:`check_test_tensor` instead, which reads nothing on an
    accelerator. Non-floating tensors pass.

    Args:
        value: Tensor to check (any shape).
        name: Argument name used in the error message.

    Example:
        >>> check_finite(torch.ones(2, 3), "X")   # passes silently
        >>> check_finite(torch.tensor([float("nan")]), "X")
        Traceback (most recent call last):
        ...
        ValueError: `X` contains NaN or infinite values.
    """
    if not torch.is_tensor(value):
        raise ValueError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}.")
    if not value.is_floating_point():
        return
    message = f"`{name}` contains NaN or infinite values."
    if not (_finite_on_cpu(value) if value.is_cpu else bool(torch.isfinite(value).all())):
        raise ValueError(message)


def check_test_tensor(X: object, name: str = "X") -> Tensor:
    """Validate test inputs of a public posterior or acquisition call; return them.

    Refuses a non-tensor (e.g. a NumPy array) and a non-floating or ``bfloat16`` tensor with a
    ``TypeError``, and NaN or infinite entries with a ``ValueError`` naming ``name``. The
    finiteness check costs no host synchronisation on an accelerator: there it is queued on
    the device (``torch._assert_async``) and fails at the next synchronisation; on the CPU it
    raises at once. A tensor that passed and was not written to since (the same object with
    the same version counter, e.g. a candidate set evaluated again, or the same ``X`` handed
    from an acquisition to its model) is not checked again; writes that bypass the version
    counter (through ``.data`` or a NumPy view) are not seen.

    Args:
        X: Test inputs, ``batch_shape x q x d`` (any shape).
        name: Argument name used in the error messages.

    Returns:
        ``X`` itself (checked).

    Example:
        >>> X = check_test_tensor(torch.rand(3, 1, 2, dtype=torch.float64))
        >>> check_test_tensor(torch.tensor([[float("nan")]]))
        Traceback (most recent call last):
        ...
        ValueError: `X` contains NaN or infinite values.
    """
    if not torch.is_tensor(X):
        raise TypeError(
            f"`{name}` must be a torch.Tensor, got {type(X).__name__} "
            "(convert with torch.as_tensor(..., dtype=torch.float64))."
        )
    if not X.is_floating_point() or X.dtype == torch.bfloat16:
        raise TypeError(f"`{name}` must be a float32 or float64 tensor, got {X.dtype}.")
    versioned = not X.is_inference()  # inference tensors have no version counter
    if versioned:
        version = X._version
        for ref, seen in _CHECKED:
            if seen == version and ref() is X:
                return X
    if not X.is_cpu:  # queued on the device: no host synchronisation
        torch._assert_async(torch.isfinite(X).all(), f"`{name}` contains NaN or infinite values.")
    elif not _finite_on_cpu(X):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    if versioned:
        _CHECKED.insert(0, (weakref.ref(X), version))
        del _CHECKED[_CACHE_SIZE:]
    return X


def as_real(value: object, name: str, expected: str) -> float:
    """``value`` as a float: a real number (Python or NumPy) or a one-element tensor; a
    string, ``bool``, ``None`` or anything ``float`` cannot read is a ``ValueError`` saying
    ``name`` must be ``expected``.

    Example:
        >>> as_real(2, "q", "a positive number")
        2.0
    """
    if isinstance(value, str | bytes | bool) or value is None:
        raise ValueError(f"`{name}` must be {expected}, got {value!r}.")
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"`{name}` must be {expected}, got {value!r}.") from None


def as_float_vector(value: object, name: str, n: int | None = None) -> Tensor:
    """``value`` as a fresh finite 1-d floating tensor of ``n`` entries (any ``n`` ≥ 1 when
    ``None``).

    A floating tensor keeps its dtype and device; anything else (a list, a tuple, NumPy, an
    integer tensor) is read in float64, never in torch's default float32.

    Args:
        value: The numbers.
        name: Argument name used in the error messages.
        n: Required length.

    Returns:
        A detached copy (``n``).

    Raises:
        ValueError: If ``value`` is not a non-empty sequence of finite numbers of length ``n``.

    Example:
        >>> as_float_vector([0.1, 0.2], "ref_point", 2).dtype
        torch.float64
    """
    want = "finite numbers" if n is None else f"{n} finite numbers (one per objective)"
    if isinstance(value, (str, bytes)):
        raise ValueError(f"`{name}` must be {want}, got {value!r}.")
    try:
        if torch.is_tensor(value):
            t = value.detach()
        else:
            t = torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"`{name}` must be {want}, got {value!r} ({err}).") from None
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"`{name}` must be {want}, got a {t.dtype} tensor.")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if t.dim() != 1 or t.numel() == 0 or (n is not None and t.shape[0] != n):
        raise ValueError(f"`{name}` must be {want}, got shape {tuple(t.shape)}.")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"`{name}` must be {want}, got {t.tolist()}.")
    return t.clone()


def as_flag_vector(value: object, name: str, n: int) -> Tensor:
    """``value`` as a fresh ``n`` bool tensor: booleans only (Python, NumPy or a bool tensor);
    integers are refused, since ``[0, 1]`` could as well mean objective indices.

    Args:
        value: The flags.
        name: Argument name used in the error messages.
        n: Required length.

    Returns:
        A bool tensor (``n``), on ``value``'s device when it is a tensor.

    Raises:
        ValueError: If ``value`` is not ``n`` booleans.

    Example:
        >>> as_flag_vector([True, False], "minimize", 2)
        tensor([ True, False])
    """
    want = f"{n} booleans (one per objective)"
    if isinstance(value, (str, bytes)):
        raise ValueError(f"`{name}` must hold {want}, got {value!r}.")
    try:
        t = value.detach() if torch.is_tensor(value) else torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"`{name}` must hold {want}, got {value!r} ({err}).") from None
    if t.dtype != torch.bool:
        raise ValueError(f"`{name}` must hold {want} (not indices), got {value!r}.")
    if t.shape != (n,):
        raise ValueError(f"`{name}` must hold {want}, got shape {tuple(t.shape)}.")
    return t.clone()


#: The last few test tensors that passed :func:`check_test_tensor`: (weak reference, version).
_CHECKED: list[tuple[weakref.ref, int]] = []
_CACHE_SIZE = 4


def _finite_on_cpu(X: Tensor) -> bool:
    """All entries finite. The sum of finite entries is finite unless it overflows, and any NaN
    or infinite entry makes it non-finite, so the entry-wise check runs only when the sum is
    not finite (a NaN, an infinity or an overflow)."""
    values = X.detach()
    if math.isfinite(values.sum()):
        return True
    return bool(torch.isfinite(values).all())


def check_psd_matrix(
    matrix: Tensor, name: str, size: int | None = None, rtol: float = 1e-8
) -> Tensor:
    """Validate a symmetric positive semi-definite matrix.

    Args:
        matrix: ``k x k`` tensor.
        name: Argument name used in the error message.
        size: Expected side length ``k`` (not checked when ``None``).
        rtol: Tolerance, relative to the largest eigenvalue magnitude, for negative
            eigenvalues (round-off); never below ``k`` times the matrix dtype's machine
            epsilon (a low-rank float32 matrix has eigenvalues of order −k·eps·‖M‖).

    Returns:
        The ``k x k`` matrix, symmetrised as ``(M + Mᵀ)/2``.

    Example:
        >>> check_psd_matrix(torch.tensor([[2.0, 1.0], [1.0, 2.0]]), "B", size=2)
        tensor([[2., 1.],
                [1., 2.]])
    """
    check_finite(matrix, name)
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(
            f"`{name}` must be a non-empty square matrix, got shape {tuple(matrix.shape)}."
        )
    if size is not None and matrix.shape[0] != size:
        raise ValueError(
            f"`{name}` must be {size} x {size}, got shape {tuple(matrix.shape)}."
        )
    scale = matrix.abs().max().clamp_min(1e-300)
    if (matrix - matrix.transpose(0, 1)).abs().max() > 1e-6 * scale:
        raise ValueError(f"`{name}` must be symmetric.")
    sym = 0.5 * matrix + 0.5 * matrix.transpose(0, 1)  # halves first: no overflow
    evals = torch.linalg.eigvalsh(sym.to(torch.float64))
    eps = torch.finfo(matrix.dtype).eps if matrix.is_floating_point() else 0.0
    if evals.min() < -max(rtol, 1e-10, matrix.shape[0] * eps) * evals.abs().max():
        raise ValueError(
            f"`{name}` must be positive semi-definite; its smallest eigenvalue is "
            f"{evals.min().item():.3g}."
        )
    return sym
