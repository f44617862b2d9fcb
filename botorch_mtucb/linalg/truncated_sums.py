"""Per-arm sorted rewards: ATA-GP-UCB's per-direction truncated sums in one ``searchsorted``.

On a finite arm set the truncation weights ``u_{i,τ}`` of ATA-GP-UCB (paper 001,
Algorithm 2) depend on the round ``τ`` only through its arm ``a(τ)``: ``u_{i,τ} = g_{a(τ), i}``
with ``G = F V^{-1/2}`` (``F`` the ``A x m`` features of the arms). Hence

    r̂_i = Σ_τ u_{i,τ} y_τ 1{|u_{i,τ} y_τ| ≤ b} = Σ_a g_{a,i} S_a(b / |g_{a,i}|),
    S_a(c) = Σ_{τ: a(τ)=a, |y_τ| ≤ c} y_τ,

and ``S_a`` is a prefix sum over the rewards of arm ``a`` sorted by ``|y|``: one batched
``searchsorted`` over ``A x m`` thresholds instead of an ``m x t`` mask per round.

Storage is a padded ``A x capacity`` matrix (``+inf`` padding for ``|y|``, zero for ``y``)
whose capacity doubles when an arm's count reaches it. :meth:`ArmRewardHistory.append` works
in place; a model records the history length it was built with, and a model whose history
has been appended to by a sibling rebuilds its own copy (see ``AdaptiveTruncationGP``).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["ArmRewardHistory"]


class ArmRewardHistory:
    """Rewards grouped by arm, sorted by absolute value, with prefix sums of signed rewards.

    Answers S_a(c) = Σ_{τ: a(τ)=a, |y_τ| ≤ c} y_τ for many (arm, threshold) pairs at once
    (paper 001, Algorithm 2 on a finite arm set; module docstring).

    Example:
        >>> h = ArmRewardHistory(torch.tensor([0, 1, 0]), torch.tensor([1.0, -2.0, 5.0]), 2)
        >>> h.truncated_sums(torch.tensor([[2.0], [3.0]]))   # arm 0: |y| ≤ 2; arm 1: |y| ≤ 3
        tensor([[ 1.],
                [-2.]])
        >>> h.append(torch.tensor(0), torch.tensor(-0.5))
        >>> h.truncated_sums(torch.tensor([[2.0], [3.0]]))
        tensor([[ 0.5000],
                [-2.0000]])
    """

    def __init__(self, arm_idx: Tensor, y: Tensor, num_arms: int) -> None:
        """
        Args:
            arm_idx: ``t`` arm indices (long) of the observations.
            y: ``t`` raw rewards.
            num_arms: Number of arms ``A``.
        """
        self.num_arms = num_arms
        self.length = int(y.shape[0])
        counts = torch.bincount(arm_idx, minlength=num_arms)
        self.counts = counts
        cap = 1
        max_count = int(counts.max()) if y.numel() else 0
        while cap < max_count + 1:
            cap *= 2
        self.abs_sorted = torch.full((num_arms, cap), torch.inf, dtype=y.dtype, device=y.device)
        self.signed_sorted = torch.zeros((num_arms, cap), dtype=y.dtype, device=y.device)
        if y.numel():
            # Lexicographic sort by (arm, |y|): stable sort by |y|, then stable sort by arm.
            order = torch.sort(y.abs(), stable=True).indices
            order = order[torch.sort(arm_idx[order], stable=True).indices]
            arms_sorted = arm_idx[order]
            starts = torch.cumsum(counts, 0) - counts
            rank = torch.arange(y.shape[0], device=y.device) - starts[arms_sorted]
            self.abs_sorted[arms_sorted, rank] = y[order].abs()
            self.signed_sorted[arms_sorted, rank] = y[order]
        self.prefix = self._prefix(self.signed_sorted)

    @staticmethod
    def _prefix(signed: Tensor) -> Tensor:
        zeros = signed.new_zeros(signed.shape[0], 1)
        return torch.cat([zeros, torch.cumsum(signed, dim=-1)], dim=-1)

    @property
    def capacity(self) -> int:
        """Padded row length (at least the largest per-arm count)."""
        return self.abs_sorted.shape[-1]

    def append(self, arm: Tensor, y: Tensor) -> None:
        """Insert one reward ``y`` (0-dim) observed at ``arm`` (0-dim long), in place."""
        if int(self.counts[arm]) + 1 > self.capacity:
            pad = self.capacity
            self.abs_sorted = torch.cat(
                [self.abs_sorted, torch.full_like(self.abs_sorted[:, :pad], torch.inf)], dim=-1
            )
            self.signed_sorted = torch.cat(
                [self.signed_sorted, torch.zeros_like(self.signed_sorted[:, :pad])], dim=-1
            )
            self.prefix = self._prefix(self.signed_sorted)
        row_abs = self.abs_sorted[arm]
        row_sig = self.signed_sorted[arm]
        ay = y.abs()
        pos = torch.searchsorted(row_abs, ay.reshape(1), right=True)  # padding is +inf
        j = torch.arange(self.capacity, device=row_abs.device)
        shifted = (j - 1).clamp_min(0)
        new_abs = torch.where(j < pos, row_abs, torch.where(j == pos, ay, row_abs[shifted]))
        new_sig = torch.where(j < pos, row_sig, torch.where(j == pos, y, row_sig[shifted]))
        self.abs_sorted[arm] = new_abs
        self.signed_sorted[arm] = new_sig
        self.prefix[arm, 1:] = torch.cumsum(new_sig, dim=-1)
        self.counts[arm] += 1
        self.length += 1

    def truncated_sums(self, thresholds: Tensor) -> Tensor:
        """``S_a(c_{a,i}) = Σ_{τ ∈ a, |y_τ| ≤ c_{a,i}} y_τ`` for ``A x m`` thresholds.

        Args:
            thresholds: ``A x m`` non-negative thresholds (``inf`` allowed).

        Returns:
            ``A x m`` truncated sums.
        """
        k = torch.searchsorted(self.abs_sorted, thresholds.contiguous(), right=True)
        return self.prefix.gather(-1, k)

    def truncated_projection(self, G: Tensor, b: float) -> Tensor:
        """``r̂_i = Σ_a g_{a,i} S_a(b/|g_{a,i}|)`` for the ``A x m`` weights ``G`` (module doc).

        Returns:
            ``m`` per-direction truncated sums, in ``G``'s dtype.
        """
        absG = G.abs()
        thr = torch.where(absG > 0, b / absG.clamp_min(1e-30), torch.full_like(G, torch.inf))
        return (G * self.truncated_sums(thr.to(self.abs_sorted.dtype)).to(G)).sum(0)
