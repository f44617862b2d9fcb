"""Pathwise (Matheron) posterior sampling for the package's models.

Importing :mod:`botorch_mtucb.sampling` registers the package's models with BoTorch's
``draw_matheron_paths``, so ``get_optimal_samples``, qJES / qPES / qMES and pathwise Thompson
sampling run on them: :class:`~botorch_mtucb.models.ExactMultiTaskGP`,
:class:`~botorch_mtucb.models.TruncatedGP`, :class:`~botorch_mtucb.models.AdaptiveTruncationGP`
(quadrature Fourier features) and :class:`~botorch_mtucb.models.HeavyTailedBatch`
(:mod:`botorch_mtucb.sampling.pathwise`), and the MT-BKB models
:class:`~botorch_mtucb.models.NystromMultiTaskGP` and
:class:`~botorch_mtucb.models.NystromMultiTaskBatch` in their own Nyström embedding
(:mod:`botorch_mtucb.sampling.nystrom`). The path classes are in
:mod:`botorch_mtucb.sampling.paths`.
"""

from botorch_mtucb.sampling.nystrom import (
    draw_nystrom_batch_paths,
    draw_nystrom_multitask_paths,
)
from botorch_mtucb.sampling.paths import (
    BatchMembersPath,
    ConstantShift,
    FeatureSpacePath,
    SeparablePriorPath,
    SeparableUpdatePath,
)
from botorch_mtucb.sampling.pathwise import (
    DEFAULT_NUM_FEATURES,
    draw_adaptive_truncation_paths,
    draw_exact_multitask_paths,
    draw_heavy_tailed_batch_paths,
    draw_truncated_gp_paths,
    psd_sqrt,
)

__all__ = [
    "DEFAULT_NUM_FEATURES",
    "BatchMembersPath",
    "ConstantShift",
    "FeatureSpacePath",
    "SeparablePriorPath",
    "SeparableUpdatePath",
    "draw_adaptive_truncation_paths",
    "draw_exact_multitask_paths",
    "draw_heavy_tailed_batch_paths",
    "draw_nystrom_batch_paths",
    "draw_nystrom_multitask_paths",
    "draw_truncated_gp_paths",
    "psd_sqrt",
]
