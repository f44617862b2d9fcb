"""Theorem-3 confidence radius β̃_t of MT-BKB (paper 000, Theorem 3 and Appendix D.1).

    β̃_t = b (1 + 1/√(1−ε)) + (σ/√η) √(2 log(2/δ) + ρ Σ_{s≤t} log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s))),
    ρ = (1+ε)/(1−ε).

Unlike Theorem 2, the sum runs over the *approximate* variances of each past round's own model,
for which Lemma 4's telescoping identity does not hold: it cannot be recomputed from the final
model and is accumulated by :class:`~botorch_mtucb.models.NystromMultiTaskGP` round by round
(``model.log_det_variance_sum``).
"""

from __future__ import annotations

import math

import torch
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.beta import BetaSchedule, log_det_information, resolve_eta
from botorch_mtucb.protocols import NystromRadiusModel
from botorch_mtucb.theory.multi_task import theorem3_beta

__all__ = ["TheoremThreeBeta"]


class TheoremThreeBeta(BetaSchedule):
    """Theorem-3 radius of MT-BKB, evaluated on the current model.

    The log-det sum is read from ``model.log_det_variance_sum`` of a
    :class:`~botorch_mtucb.protocols.NystromRadiusModel` (the Nyström model). Any other
    model (e.g. ``ExactMultiTaskGP``) has Γ̃ = Γ, and the sum is the exact Lemma-4 value
    ``log det(I + G_t/η)`` from :func:`~botorch_mtucb.acquisition.log_det_information`.

    ε and δ default to a Nyström model's own (``model.epsilon``, ``model.delta``), so that the
    dictionary's accuracy and the radius agree; Theorem 3 uses one δ for both (each gets δ/2).
    The formula itself is :func:`botorch_mtucb.theory.multi_task.theorem3_beta`.
    """

    def __init__(
        self,
        b: float,
        sigma: float,
        epsilon: float | None = None,
        delta: float | None = None,
        eta: float | None = None,
    ) -> None:
        """
        Args:
            b: Bound on the RKHS norm ‖f‖_Γ (≥ 0).
            sigma: Sub-Gaussian noise parameter σ (≥ 0).
            epsilon: Nyström accuracy ε ∈ (0, 1); ``None`` reads ``model.epsilon``.
            delta: Confidence δ ∈ (0, 1]; ``None`` reads ``model.delta``.
            eta: Regulariser η > 0; ``None`` reads the model's noise. An explicit value that
                disagrees with the model's noise is an error.
        """
        for name, val in (("b", b), ("sigma", sigma)):
            if not math.isfinite(float(val)) or float(val) < 0:
                raise ValueError(f"`{name}` must be a finite number >= 0, got {val!r}.")
        if epsilon is not None and not 0.0 < float(epsilon) < 1.0:
            raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon!r}.")
        if delta is not None and not 0.0 < float(delta) <= 1.0:
            raise ValueError(f"`delta` must lie in (0, 1], got {delta!r}.")
        if eta is not None and (not math.isfinite(float(eta)) or float(eta) <= 0):
            raise ValueError(f"`eta` must be a finite number > 0 (or None), got {eta!r}.")
        self.b = float(b)
        self.sigma = float(sigma)
        self.epsilon = None if epsilon is None else float(epsilon)
        self.delta = None if delta is None else float(delta)
        self.eta = None if eta is None else float(eta)

    def __call__(self, model: Model) -> Tensor:
        nystrom = isinstance(model, NystromRadiusModel)
        eps, delta = self.epsilon, self.delta
        for name, value in (("epsilon", eps), ("delta", delta)):
            if value is None and not nystrom:
                raise ValueError(
                    f"`{name}` could not be read from a {type(model).__name__} (not a Nyström "
                    "model with `epsilon`, `delta`); pass it to TheoremThreeBeta explicitly."
                )
        if nystrom:
            eps = float(model.epsilon) if eps is None else eps
            delta = float(model.delta) if delta is None else delta
        eta = resolve_eta(model, self.eta, "TheoremThreeBeta", "the log-det sum")
        if nystrom:
            log_det_sum = torch.as_tensor(model.log_det_variance_sum)
        else:
            log_det_sum = log_det_information(model)
        log_det_sum = log_det_sum.detach().to(torch.float64)
        return theorem3_beta(self.b, self.sigma, eta, delta, eps, log_det_sum)

    def __repr__(self) -> str:
        return (
            f"TheoremThreeBeta(b={self.b}, sigma={self.sigma}, epsilon={self.epsilon}, "
            f"delta={self.delta}, eta={self.eta})"
        )
