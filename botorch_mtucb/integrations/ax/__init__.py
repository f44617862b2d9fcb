"""Ax integration: generation strategies, models and acquisitions of botorch-mtucb in Ax.

Needs ``ax-platform`` (``pip install 'botorch-mtucb[ax]'``). Importing this package registers
the BoTorch input constructors of the package's acquisitions and their storage encoders.
"""

from botorch_mtucb.integrations.ax.strategies import (
    HEAVY_TAILED_TRANSFORMS,
    AxAdaptiveTruncationGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxTruncatedGP,
    DesignSizedGenerationStrategy,
    JointSurrogate,
    UCBAcquisition,
    construct_inputs_heavy_tailed_ucb,
    construct_inputs_scalarized_mtucb,
    heavy_tailed_generation_strategy,
    mtucb_generation_strategy,
    multitask_gp_generation_strategy,
    register_ax_storage,
)

__all__ = [
    "HEAVY_TAILED_TRANSFORMS",
    "AxAdaptiveTruncationGP",
    "AxExactMultiTaskGP",
    "AxPracticalMultiTaskGP",
    "AxTruncatedGP",
    "DesignSizedGenerationStrategy",
    "JointSurrogate",
    "UCBAcquisition",
    "construct_inputs_heavy_tailed_ucb",
    "construct_inputs_scalarized_mtucb",
    "heavy_tailed_generation_strategy",
    "mtucb_generation_strategy",
    "multitask_gp_generation_strategy",
    "register_ax_storage",
]
