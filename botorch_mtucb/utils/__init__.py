"""Shared validation helpers."""

from botorch_mtucb.utils.validation import check_finite, check_psd_matrix

__all__ = ["check_finite", "check_psd_matrix"]
