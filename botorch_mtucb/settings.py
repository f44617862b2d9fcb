"""Package settings, as GPyTorch-style context managers (``gpytorch.settings`` feature flags).

Example:
    >>> import torch
    >>> import botorch_mtucb.settings
    >>> from botorch_mtucb.models import ExactMultiTaskGP
    >>> model = ExactMultiTaskGP(torch.rand(4, 1, dtype=torch.float64),
    ...                          torch.rand(4, 2, dtype=torch.float64))
    >>> X = torch.tensor([[float("nan")]], dtype=torch.float64)
    >>> with botorch_mtucb.settings.check_test_inputs(True):
    ...     model.posterior(X)
    Traceback (most recent call last):
    ...
    ValueError: `X` contains NaN or infinite values.
"""

from __future__ import annotations

from gpytorch.settings import _feature_flag

__all__ = ["check_test_inputs"]


class check_test_inputs(_feature_flag):
    """Check test inputs of ``posterior`` / ``task_posterior`` for NaN and infinite values.

    Off by default: the check reads the tensor on the host (a device synchronisation on every
    acquisition evaluation). Training data and conditioning inputs are always checked.

    Example:
        >>> check_test_inputs.on()   # the default
        False
        >>> with check_test_inputs(True):
        ...     check_test_inputs.on()
        True
    """

    _default = False
