"""ATA-GP-UCB's schedules as model methods: ``b_t``, ``β_{t+1}``, the Nyström ``q`` and ``m_t``.

Private mixin of :class:`~botorch_mtucb.models.AdaptiveTruncationGP`: thin methods over the
pure functions of :mod:`botorch_mtucb.theory.heavy_tailed`, where the paper equations are
(paper 001, Lemma 1 / Theorem 3 for QFF, Theorem 4 for Nyström):

    b_t = (v / L)^{1/(1+α)} t^{(1−α)/(2(1+α))},
    β_{t+1} = B' + 4 √(m_t/λ) v^{1/(1+α)} L^{α/(1+α)} t^{(1−α)/(2(1+α))},

with ``L = ln(2 m T/δ)`` (QFF) or ``ln(4 m_t T/δ)`` (Nyström), ``B' = B`` (QFF) or
``B(1 + 1/√(1−ε))`` (Nyström), and ``T`` the horizon (``max(t, 1)`` without one).
"""

from __future__ import annotations

from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.heavy_tailed.moments import PRACTICAL_WIDTH
from botorch_mtucb.theory.heavy_tailed import (
    ata_beta,
    ata_log_term,
    ata_truncation_level,
    effective_horizon,
    nystrom_q,
)

__all__: list[str] = []


class _AdaptiveTruncationSchedules:
    """ATA-GP-UCB's schedules as methods (paper 001, Lemma 1 / Theorem 4; the authors' code;
    ``constants="practical"``: ``β = PRACTICAL_WIDTH``, ``b_t`` and ``q`` as the theory's)."""

    @property
    def _schedule_constants(self) -> str:
        return "theory" if self.constants == "practical" else self.constants

    @property
    def dictionary_size(self) -> int:
        """Nyström dictionary size ``m_t`` (:class:`~botorch_mtucb.protocols.DictionaryModel`;
        QFF models have none)."""
        if self.kind != "nystrom":
            raise AttributeError("A QFF AdaptiveTruncationGP has no dictionary.")
        return self.features.num_features

    @property
    def num_features(self) -> int:
        """Current feature dimension ``m_t``."""
        return self.features.num_features

    def _log_term(self, t: int) -> float:
        T = effective_horizon(self.horizon, t)
        return ata_log_term(self.num_features, T, self.delta, self.kind, self._schedule_constants)

    def nystrom_q(self, features: NystromFeatures | None = None, t: int | None = None) -> float:
        """Nyström oversampling ``q``: the features' own ``q``, else the schedule's."""
        features = self.features if features is None else features
        if features.q is not None:
            return features.q
        t = self.num_observations if t is None else t
        T = effective_horizon(self.horizon, t)
        return nystrom_q(T, self.delta, features.epsilon, self._schedule_constants)

    def truncation_level(self, t: int | None = None) -> float:
        """Truncation level ``b_t`` (default: the current ``t``; uses the current ``m_t``)."""
        t = self.num_observations if t is None else int(t)
        if t < 0:
            raise ValueError(f"`t` must be a non-negative round index, got {t}.")
        if not self.truncate:
            return float("inf")
        return ata_truncation_level(t, self.alpha, self.v, self._log_term(t))

    def beta(self) -> float:
        """Confidence width ``β_{t+1}`` for choosing the next point (Lemma 1 / Theorem 4, the
        authors' or the practical ``PRACTICAL_WIDTH``)."""
        if self.constants == "practical":
            return PRACTICAL_WIDTH
        t = self.num_observations
        eps = self.features.epsilon if self.kind == "nystrom" else 0.0
        return ata_beta(
            t,
            self.alpha,
            self.v,
            self.lam,
            self.B,
            self.num_features,
            self._log_term(t),
            self.kind,
            self.constants,
            eps,
        )
