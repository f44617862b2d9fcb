"""Package settings, as GPyTorch-style context managers (``gpytorch.settings`` feature flags).

Example:
    >>> import torch
    >>> import botorch_mtucb.settings
    >>> with botorch_mtucb.settings.check_test_inputs(True):
    ...     botorch_mtucb.settings.check_test_inputs.on()
    True
"""

from __future__ import annotations

from gpytorch.settings import _feature_flag

__all__ = ["check_test_inputs"]


class check_test_inputs(_feature_flag):
    """Kept so that code using it keeps running; it has no effect.

    The test inputs of every public ``posterior`` / ``task_posterior`` /
    ``projected_task_posterior`` call are always checked
    (:func:`botorch_mtucb.utils.validation.check_test_tensor`: a float32 / float64 tensor
    without NaN or infinite values), whatever this flag says: the check costs no host
    synchronisation on an accelerator, so it need not be switched off on the hot path.

    Example:
        >>> check_test_inputs.on()   # the default (the check runs either way)
        False
        >>> with check_test_inputs(True):
        ...     check_test_inputs.on()
        True
    """

    _default = False
