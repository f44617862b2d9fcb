"""The heavy-tailed models' schedule methods, and the old location of the schedule functions.

The private mixin ``_AdaptiveTruncationSchedules`` gives
:class:`~botorch_mtucb.models.AdaptiveTruncationGP` its ``b_t``, ``β_t``, Nyström ``q`` and
feature counts (thin methods over the pure functions of
:mod:`botorch_mtucb.theory.heavy_tailed`, where the paper equations are). The functions
themselves are re-exported here so that ``from botorch_mtucb.heavy_tailed.schedules
import …`` keeps working; new code imports them from :mod:`botorch_mtucb.theory.heavy_tailed`.
"""

from __future__ import annotations

from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.heavy_tailed.moments import PRACTICAL_WIDTH
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


class _AdaptiveTruncationSchedules:
    """ATA-GP-UCB's schedules as methods (paper 001, Lemma 1 / Theorem 4; the authors' code;
    ``constants="practical"``: ``β = PRACTICAL_WIDTH``, ``b_t`` and ``q`` as the theory's)."""

    @property
    def _schedule_constants(self) -> str:
        return "theory" if self.constants == "practical" else self.constants

    @property
    def dictionary_size(self) -> int:
        """Nyström dictionary size ``m_t`` (:class:`DictionaryModel`; QFF models have none)."""
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
