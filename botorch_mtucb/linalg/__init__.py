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
    "use_icm_likelihood",
]
