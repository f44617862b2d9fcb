"""Pathwise (Matheron) posterior sampling for the package's models.

Importing :mod:`botorch_mtucb.sampling` registers :class:`~botorch_mtucb.models.ExactMultiTaskGP`,
:class:`~botorch_mtucb.models.TruncatedGP` and :class:`~botorch_mtucb.models.AdaptiveTruncationGP`
(quadrature Fourier features) with BoTorch's ``draw_matheron_paths``
(:mod:`botorch_mtucb.sampling.pathwise`), so ``get_optimal_samples``, qJES / qPES / qMES and
pathwise Thompson sampling run on them. The path classes are in
:mod:`botorch_mtucb.sampling.paths`.
"""

from botorch_mtucb.sampling.paths import (
    ConstantShift,
    FeatureSpacePath,
    SeparablePriorPath,
    SeparableUpdatePath,
)
from botorch_mtucb.sampling.pathwise import (
    DEFAULT_NUM_FEATURES,
    draw_adaptive_truncation_paths,
    draw_exact_multitask_paths,
    draw_truncated_gp_paths,
    psd_sqrt,
)

__all__ = [
    "DEFAULT_NUM_FEATURES",
    "ConstantShift",
    "FeatureSpacePath",
    "SeparablePriorPath",
    "SeparableUpdatePath",
    "draw_adaptive_truncation_paths",
    "draw_exact_multitask_paths",
    "draw_truncated_gp_paths",
    "psd_sqrt",
]
