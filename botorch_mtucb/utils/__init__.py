"""Shared helpers: input validation, space-filling initial designs, the local polish of x*_λ."""

from botorch_mtucb.utils.initial_design import (
    check_bounds,
    initial_design_size,
    sobol_initial_design,
)
from botorch_mtucb.utils.optimum import polish_maxima
from botorch_mtucb.utils.validation import check_finite, check_psd_matrix

__all__ = [
    "check_bounds",
    "check_finite",
    "check_psd_matrix",
    "initial_design_size",
    "polish_maxima",
    "sobol_initial_design",
]
