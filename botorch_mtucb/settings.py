"""Package settings, as GPyTorch-style context managers.

Example:
    >>> with botorch_mtucb.settings.check_test_inputs(True):
    ...     model.posterior(X)   # raises on NaN / inf in X
"""

from __future__ import annotations

from gpytorch.settings import _feature_flag

__all__ = ["check_test_inputs"]


class check_test_inputs(_feature_flag):
    """Check test inputs of ``posterior`` / ``task_posterior`` for NaN and infinite values.

    Off by default: the check reads the tensor on the host (a device synchronisation on every
    acquisition evaluation). Training data and conditioning inputs are always checked.
    """

    _default = False
