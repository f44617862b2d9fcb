"""Theory constants of both papers as pure functions (one place per formula).

* :mod:`~botorch_mtucb.theory.multi_task` — paper 000: ``ρ``, ``c_ε``, Theorem 3's ``q``,
  ``β_t`` of MT-KB (Theorem 2) and ``β̃_t`` of MT-BKB (Theorem 3);
* :mod:`~botorch_mtucb.theory.heavy_tailed` — paper 001: truncation levels ``b_t`` and widths
  ``β_{t+1}`` of TGP-UCB (Theorem 1) and ATA-GP-UCB (Lemma 1, Theorems 3–4), the Nyström
  ``q`` (Theorem 4), with the authors' public-code constants beside them.

Example:
    >>> from botorch_mtucb import theory
    >>> theory.rho(0.5), theory.tgp_truncation_level(16, alpha=1.0, v=4.0)
    (3.0, 4.0)
"""

from botorch_mtucb.theory.heavy_tailed import (
    ata_beta,
    ata_log_term,
    ata_truncation_level,
    check_constants,
    check_feature_kind,
    check_heavy_tailed_params,
    effective_horizon,
    nystrom_q,
    tgp_beta,
    tgp_truncation_level,
    tgp_truncation_levels,
)
from botorch_mtucb.theory.multi_task import (
    c_epsilon,
    check_delta,
    check_epsilon_delta,
    check_horizon,
    rho,
    theorem2_beta,
    theorem3_beta,
    theorem3_q,
)

__all__ = [
    "ata_beta",
    "ata_log_term",
    "ata_truncation_level",
    "c_epsilon",
    "check_constants",
    "check_feature_kind",
    "check_delta",
    "check_epsilon_delta",
    "check_heavy_tailed_params",
    "check_horizon",
    "effective_horizon",
    "nystrom_q",
    "rho",
    "tgp_beta",
    "tgp_truncation_level",
    "tgp_truncation_levels",
    "theorem2_beta",
    "theorem3_beta",
    "theorem3_q",
]
