"""TGP-UCB's finite-arm path: arm-space posterior, one-observation conditioning, Kalman update.

Private mixin of :class:`~botorch_mtucb.models.TruncatedGP` (paper 001, Algorithm 1 on a finite
domain, :mod:`botorch_mtucb.linalg.arm_space`). The posterior over the ``A`` arms is held in one
augmented symmetric ``(A+1) x (A+1)`` matrix ``S = [[Σ_A, μ_A], [μ_Aᵀ, ·]]``, so that one
observation ``ŷ`` at arm ``a`` is a single symmetric rank-one update of ``S`` (the Kalman update
of ``μ_A`` and ``Σ_A`` at once, :func:`~botorch_mtucb.linalg.arm_space.augmented_rank_one`);
``ln det(I + K_t/λ) ← ln det + ln(c/λ)``, ``c = λ + Σ_aa``. With
``level="current"`` every target may change, so ``μ_A = Σ_A s/λ`` is recomputed from the
per-arm sums ``s`` at the new level and kept apart (``_mean_cur``); the level only grows, so
``s`` is kept up to date incrementally (:class:`_LevelSums`: a bisection, the rewards that
move inside and a copy of the list of those beyond the level, instead of re-truncating all
``t`` rewards).

The one-observation conditioning (``1 x d``, ``1 x 1``, no gradients) reads the observation to the
host once (free on a CPU; on other devices one synchronisation), finds its arm by exact match and
writes it into the shared append-only buffers, then does the update above: ``O(A²)`` tensor work
in 8 operations. It checks what the general path checks (shapes, the dtype cast, finiteness,
arm membership, no gradients); anything unusual is left to the general path, which raises.
"""

from __future__ import annotations

import bisect
import math

import torch
from torch import Tensor

from botorch_mtucb.heavy_tailed.arms import _needs_grad
from botorch_mtucb.heavy_tailed.base import shallow_copy_model
from botorch_mtucb.linalg.arm_space import (
    arm_space_posterior,
    augmented_rank_one,
    augmented_state,
)
from botorch_mtucb.theory.heavy_tailed import tgp_truncation_level

__all__: list[str] = []


class _TruncatedArmPath:
    """Arm-space state and updates of :class:`~botorch_mtucb.models.TruncatedGP` (module
    docstring)."""

    @property
    def _cov_A(self) -> Tensor:
        """``A x A`` posterior covariance ``Σ_A`` (a view of the augmented state)."""
        return self._S[:-1, :-1]

    @property
    def _mean_A(self) -> Tensor:
        """``A`` posterior mean ``μ_A`` of the centred rewards (a view, or ``_mean_cur``)."""
        mean = self.__dict__.get("_mean_cur")
        return self._S[-1, :-1] if mean is None else mean

    def _arm_stats(self) -> tuple[Tensor, Tensor]:
        """Pull counts ``n`` and truncated sums ``s`` per arm; sets ``tr(K_t) = Σ n_a K_aa``."""
        K, idx = self._K_A, self._idx_buf.view(self._t)
        n = torch.bincount(idx, minlength=K.shape[0]).to(K)
        self._trace = float((n * K.diagonal()).sum())
        return n, torch.zeros_like(n).index_add_(0, idx, self.train_targets.to(K))

    def _arm_posterior_from_stats(self) -> None:
        """``μ_A, Σ_A, ln det`` from counts and truncated sums (``O(A³)``, linalg.arm_space)."""
        n, s = self._arm_stats()
        mean, cov, self._log_det = arm_space_posterior(self._K_A, n, s, self.lam)
        self._S = augmented_state(mean, cov)
        self._e_last = torch.zeros_like(self._S[0])
        self._e_last[-1] = 1.0
        current = self.level == "current" and self.truncate
        self._mean_cur = mean if current else None
        self._level_sums = _LevelSums.build(self, s.shape[0]) if current else None
        self._whole_views = None

    def _arm_moments(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """``μ̂_t`` and the covariance (``full``) or variance at arm inputs ``... x q x d``."""
        idx, whole = self._arm_index(X)
        if full:
            return self._mean_A[idx], self._cov_A[idx.unsqueeze(-1), idx.unsqueeze(-2)]
        if whole:  # the whole arm set in order: views of the state, cached per shape
            cached = self.__dict__.get("_whole_views")
            if cached is None or cached[0] != X.shape:
                cached = self.__dict__["_whole_views"] = (X.shape, self._whole_arm_views(X))
            return cached[1]
        return self._mean_A[idx], self._S.diagonal()[idx]

    def _whole_arm_views(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """``μ_A`` and ``diag Σ_A`` as views of shape ``X.shape[:-1]`` (one ``as_strided`` each:
        slicing, ``diagonal`` and ``reshape`` cost a microsecond apiece)."""
        S, shape = self._S, X.shape[:-1]
        A = S.shape[0] - 1
        mean = self.__dict__.get("_mean_cur")
        if S.stride() != (A + 1, 1):  # not contiguous (never built so): plain views
            mean = self._mean_A if mean is None else mean
            return mean.reshape(shape), S.diagonal()[:-1].reshape(shape)
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        strides.reverse()
        off = S.storage_offset()
        var = S.as_strided(shape, [s * (A + 2) for s in strides], off)
        if mean is None:
            return S.as_strided(shape, strides, off + A * (A + 1)), var
        return mean.reshape(shape), var

    def _condition_one_arm(self, X: Tensor, Y: Tensor):
        """``condition_on_observations`` of one ``1 x d`` / ``1 x 1`` observation on a finite arm
        set without gradients, or ``None`` where the general path must run (bad shapes, a
        non-finite value: it raises the errors)."""
        arms, dt = self._arms, self._dtype
        if X.shape != (1, arms.points.shape[-1]) or Y.shape != (1, 1) or _needs_grad(X, Y):
            return None
        X = X if X.dtype == dt else X.to(dt)
        Y = Y if Y.dtype == dt else Y.to(dt)
        if self._loc != 0.0:
            Y = Y - self._loc  # in the tensors' dtype, as the general path
        if X.device.type == "cpu":
            row, y = X.tolist()[0], Y.tolist()[0][0]
        else:  # one synchronisation for both
            vals = torch.cat([X, Y], dim=-1).tolist()[0]
            row, y = vals[:-1], vals[-1]
        if not (math.isfinite(y) and all(map(math.isfinite, row))):
            return None
        a = arms._rows.get(tuple(row))
        if a is None:
            a = arms.index_rows([row])[0]  # tolerance search; raises for a non-arm
        t = self._t
        new = shallow_copy_model(self)
        new.__dict__.update(
            _y_buf=self._y_buf.appended_value(t, y),
            _idx_buf=self._idx_buf.appended_value(t, a),
            _t=t + 1,
        )
        new._rank_one_update(self, a, y)
        return new

    def _rank_one_update(self, old, a: int, y: float) -> None:
        """Kalman update of the arm-space posterior by one centred reward ``y`` at arm ``a``,
        ``O(A²)`` (the module docstring; ``level="current"``: ``Σ_A`` by the same update,
        ``μ_A = Σ_A s/λ`` from the re-truncated sums)."""
        t = old._t
        trace = old._trace + old._kdiag[a]
        if trace > old._max_trace:  # the data's dtype would be inaccurate: float64 rebuild
            return self._build()
        current = self.level == "current" and self.truncate  # every target may change
        if self.truncate:
            b = tgp_truncation_level(t + 1, self.alpha, self.v)
            if abs(y) > b and not current:
                y = max(-b, min(y, b)) if self.clip else 0.0
        S, c = augmented_rank_one(old._S, a, None if current else y, self._lam_c, self._e_last)
        state = {"_trace": trace, "_S": S, "_log_det": None, "_whole_views": None}
        if current:
            sums = old.__dict__.get("_level_sums")
            if sums is None:  # none kept (an older pickle): re-truncate all t rewards
                idx = self._idx_buf.view(self._t)
                s = torch.zeros_like(S[0, :-1]).index_add_(0, idx, self.train_targets.to(S))
            else:  # the level only grows: the sums follow it incrementally
                sums = sums.updated(a, y, b, self.clip)
                s = sums.truncated_sums(self.clip)
            state["_level_sums"] = sums
            state["_mean_cur"] = S[:-1, :-1] @ s / self.lam
        if old._log_det is not None and self.constants == "theory":
            state["_log_det"] = old._log_det + torch.log(c / self._lam_c)
        self.__dict__.update(state)


class _LevelSums:
    """Per-arm sums of the rewards truncated at the current level ``b_t`` (``level="current"``),
    kept up to date per observation without re-truncating all ``t`` rewards.

    The level only grows with ``t``, so a reward once inside (``|y| ≤ b``) stays inside:
    ``inside[a] = Σ_{arm a, |y| ≤ b} y``, ``sign_out[a] = Σ_{arm a, |y| > b} sign(y)`` and the
    rewards beyond the level in a list sorted by ``|y|`` (``pool``: ``abs_out`` and
    ``(arm, y)`` pairs), whose prefix below a new level moves inside. The truncated sums are
    ``inside + b · sign_out`` (winsorised) or ``inside`` (zeroed). Immutable: an update returns
    a new object (copies of two ``A``-vectors and of the pool, which holds only the rewards
    beyond the level), so a model conditioned twice keeps both children valid.
    """

    __slots__ = ("abs_out", "b", "inside", "out", "sign_out")

    @classmethod
    def build(cls, model, num_arms: int) -> _LevelSums:
        """From ``model``'s rewards at its level ``b_t`` (``O(t log t)``)."""
        self = cls()
        t = model._t
        y = model._y_buf.view(t)
        idx = model._idx_buf.view(t)
        dt = model._S.dtype
        self.b = tgp_truncation_level(t, model.alpha, model.v) if t else 0.0
        mask = y.abs() <= self.b
        zero = torch.zeros(num_arms, dtype=dt, device=y.device)
        self.inside = zero.index_add(0, idx[mask], y[mask].to(dt))
        self.sign_out = zero.index_add(0, idx[~mask], y[~mask].sign().to(dt))
        ys, arms = y[~mask].tolist(), idx[~mask].tolist()
        order = sorted(range(len(ys)), key=lambda i: abs(ys[i]))
        self.abs_out = [abs(ys[i]) for i in order]
        self.out = [(arms[i], ys[i]) for i in order]
        return self

    def updated(self, a: int, y: float, b: float, clip: bool) -> _LevelSums:
        """The sums after one more reward ``y`` (centred) at arm ``a``, at the new level ``b``."""
        new = _LevelSums()
        new.b = b
        k = bisect.bisect_right(self.abs_out, b)  # these move inside
        moved = self.out[:k]
        new.abs_out, new.out = self.abs_out[k:], self.out[k:]
        if abs(y) <= b:
            moved = [*moved, (a, y)]
        else:
            j = bisect.bisect_right(new.abs_out, abs(y))
            new.abs_out.insert(j, abs(y))
            new.out.insert(j, (a, y))
        new.inside, new.sign_out = self.inside, self.sign_out
        if abs(y) > b:
            new.sign_out = self.sign_out.clone()
            new.sign_out[a] += math.copysign(1.0, y)
        if moved:
            arms = torch.tensor([m[0] for m in moved], device=self.inside.device)
            vals = torch.tensor([m[1] for m in moved], dtype=self.inside.dtype,
                                device=self.inside.device)
            new.inside = self.inside.index_add(0, arms, vals)
            if k:
                signs = torch.sign(vals[:k])
                new.sign_out = new.sign_out.index_add(0, arms[:k], -signs)
        return new

    def truncated_sums(self, clip: bool) -> Tensor:
        """``A`` per-arm sums of the truncated rewards at the level ``b``."""
        return torch.add(self.inside, self.sign_out, alpha=self.b) if clip else self.inside
