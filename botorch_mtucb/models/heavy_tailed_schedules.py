"""Deprecated location of the heavy-tailed schedules: see :mod:`botorch_mtucb.theory.heavy_tailed`.

Kept as a thin re-export so that ``from botorch_mtucb.models.heavy_tailed_schedules import …``
keeps working; new code imports from :mod:`botorch_mtucb.theory.heavy_tailed`.
"""

from __future__ import annotations

from botorch_mtucb.theory.heavy_tailed import (
    Constants,
    FeatureKind,
    ata_beta,
    ata_log_term,
    ata_truncation_level,
    check_constants,
    check_heavy_tailed_params,
    effective_horizon,
    nystrom_q,
    tgp_beta,
    tgp_truncation_level,
)

__all__ = [
    "Constants",
    "FeatureKind",
    "ata_beta",
    "ata_log_term",
    "ata_truncation_level",
    "check_constants",
    "check_heavy_tailed_params",
    "effective_horizon",
    "nystrom_q",
    "tgp_beta",
    "tgp_truncation_level",
]
