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
