"""Structured linear algebra for multi-task kernels."""

from botorch_mtucb.linalg.icm_likelihood import (
    ICMAddedDiagLinearOperator,
    ICMInvQuadLogdet,
    ICMKroneckerLinearOperator,
    ICMMultitaskMultivariateNormal,
    icm_inv_quad_logdet,
    icm_likelihood_enabled,
    use_icm_likelihood,
)

__all__ = [
    "ICMAddedDiagLinearOperator",
    "ICMInvQuadLogdet",
    "ICMKroneckerLinearOperator",
    "ICMMultitaskMultivariateNormal",
    "icm_inv_quad_logdet",
    "icm_likelihood_enabled",
    "use_icm_likelihood",
]
