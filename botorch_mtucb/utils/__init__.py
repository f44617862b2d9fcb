"""Shared helpers: input validation, space-filling initial designs, the local polish of x*_λ,
a fitted model's training data in the problem's units, the robust incumbent."""

from botorch_mtucb.utils.incumbent import robust_incumbent
from botorch_mtucb.utils.initial_design import (
    check_bounds,
    initial_design_size,
    sobol_initial_design,
)
from botorch_mtucb.utils.model_data import original_train_inputs, training_data
from botorch_mtucb.utils.optimum import polish_maxima
from botorch_mtucb.utils.validation import check_finite, check_psd_matrix

__all__ = [
    "check_bounds",
    "check_finite",
    "check_psd_matrix",
    "initial_design_size",
    "original_train_inputs",
    "polish_maxima",
    "robust_incumbent",
    "sobol_initial_design",
    "training_data",
]
