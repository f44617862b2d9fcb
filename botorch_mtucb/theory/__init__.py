"""Theory constants of both papers as pure functions (one place per formula)."""

from botorch_mtucb.theory.multi_task import (
    c_epsilon,
    check_epsilon_delta,
    rho,
    theorem2_beta,
    theorem3_beta,
    theorem3_q,
)

__all__ = [
    "c_epsilon",
    "check_epsilon_delta",
    "rho",
    "theorem2_beta",
    "theorem3_beta",
    "theorem3_q",
]

# Heavy-tailed BO (paper 001): truncation levels, confidence widths, Nyström q.
from botorch_mtucb.theory.heavy_tailed import (  # noqa: E402
    ata_beta,
    ata_log_term,
    ata_truncation_level,
    check_constants,
    check_heavy_tailed_params,
    effective_horizon,
    nystrom_q,
    tgp_beta,
    tgp_truncation_level,
    tgp_truncation_levels,
)

__all__ += [
    "ata_beta",
    "ata_log_term",
    "ata_truncation_level",
    "check_constants",
    "check_heavy_tailed_params",
    "effective_horizon",
    "nystrom_q",
    "tgp_beta",
    "tgp_truncation_level",
    "tgp_truncation_levels",
]
