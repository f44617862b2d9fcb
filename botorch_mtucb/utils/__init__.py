"""Shared helpers: input validation and the local polish of x*_λ."""

from botorch_mtucb.utils.optimum import polish_maxima
from botorch_mtucb.utils.validation import check_finite, check_psd_matrix

__all__ = ["check_finite", "check_psd_matrix", "polish_maxima"]
