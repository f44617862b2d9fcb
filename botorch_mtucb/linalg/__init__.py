"""Structured linear algebra for multi-task kernels (paper 000, §3.3, App. A, Lemma 8) and
the heavy-tailed ridge fits (paper 001, Algorithm 2).

* :class:`CholeskyFactor` — solves, log-determinants and block extension of ``A = L Lᵀ``;
* :class:`ICMRotation`, :func:`interleave_blocks` — Γ = k·B as ``n`` scalar problems in
  B's eigenbasis;
* :func:`icm_inv_quad_logdet` and its linear operators — the ICM marginal likelihood from
  ``eigh(K)`` and ``eigh(B)`` or from ``n`` Cholesky factors of ``ξ_i K + ηI``
  (:class:`ICMCholeskyInvQuadLogdet`, :func:`icm_likelihood_method`), and
  :class:`ICMFactorCache`, the factorisation a posterior reuses after a fit;
* :func:`reduced_pinv_sqrt`, :func:`psd_pinv_sqrt_factor`, :func:`pivoted_cholesky` — the
  one Nyström factorisation;
* :func:`working_dtype` and friends — the float32 policy; :func:`spectral_ridge`,
  :class:`ArmRewardHistory` — ATA-GP-UCB's ridge fit and truncated sums.
"""

from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.linalg.icm import ICMRotation, interleave_blocks
from botorch_mtucb.linalg.icm_cholesky import (
    ICMCholeskyInvQuadLogdet,
    ICMFactorCache,
    ICMNotPositiveDefiniteError,
    icm_factor_cache,
    icm_likelihood_method,
    take_icm_factors,
)
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
    check_regulariser,
    regularised_condition,
    working_dtype,
)
from botorch_mtucb.linalg.ridge import spectral_ridge
from botorch_mtucb.linalg.truncated_sums import ArmRewardHistory

__all__ = [
    "CholeskyFactor",
    "ICMRotation",
    "ICMAddedDiagLinearOperator",
    "ICMCholeskyInvQuadLogdet",
    "ICMFactorCache",
    "ICMNotPositiveDefiniteError",
    "ICMInvQuadLogdet",
    "ICMKroneckerLinearOperator",
    "ICMMultitaskMultivariateNormal",
    "icm_factor_cache",
    "icm_inv_quad_logdet",
    "icm_likelihood_method",
    "icm_likelihood_enabled",
    "interleave_blocks",
    "default_pinv_rtol",
    "pivoted_cholesky",
    "psd_pinv_sqrt_factor",
    "reduced_pinv_sqrt",
    "PRECISION_BUDGET",
    "ArmRewardHistory",
    "check_float_conditioning",
    "check_regulariser",
    "regularised_condition",
    "spectral_ridge",
    "take_icm_factors",
    "working_dtype",
    "use_icm_likelihood",
]
