"""Structured linear algebra for multi-task kernels."""

from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.linalg.icm import ICMRotation, interleave_blocks
from botorch_mtucb.linalg.icm_likelihood import (
    ICMAddedDiagLinearOperator,
    ICMInvQuadLogdet,
    ICMKroneckerLinearOperator,
    ICMMultitaskMultivariateNormal,
    icm_inv_quad_logdet,
    icm_likelihood_enabled,
    use_icm_likelihood,
)
from botorch_mtucb.linalg.nystrom import (
    default_pinv_rtol,
    pivoted_cholesky,
    psd_pinv_sqrt_factor,
    reduced_pinv_sqrt,
)
from botorch_mtucb.linalg.precision import (
    PRECISION_BUDGET,
    check_float_conditioning,
    regularised_condition,
    working_dtype,
)
from botorch_mtucb.linalg.ridge import spectral_ridge
from botorch_mtucb.linalg.truncated_sums import ArmRewardHistory

__all__ = [
    "CholeskyFactor",
    "ICMRotation",
    "ICMAddedDiagLinearOperator",
    "ICMInvQuadLogdet",
    "ICMKroneckerLinearOperator",
    "ICMMultitaskMultivariateNormal",
    "icm_inv_quad_logdet",
    "icm_likelihood_enabled",
    "interleave_blocks",
    "default_pinv_rtol",
    "pivoted_cholesky",
    "psd_pinv_sqrt_factor",
    "reduced_pinv_sqrt",
    "PRECISION_BUDGET",
    "ArmRewardHistory",
    "check_float_conditioning",
    "regularised_condition",
    "spectral_ridge",
    "working_dtype",
    "use_icm_likelihood",
]
