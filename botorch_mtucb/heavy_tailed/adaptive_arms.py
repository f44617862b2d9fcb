"""ATA-GP-UCB's finite-arm path: the low-rank arm basis, the arm-space fit, dictionary draws.

Private mixin of :class:`~botorch_mtucb.models.AdaptiveTruncationGP` (paper 001, Algorithm 2 on
a finite domain). With ``F`` the ``A x m`` arm features factored as ``F = F' Wᵀ`` (``W``
orthonormal, ``m x r``) and ``n`` the pull counts,

    V = Fᵀ diag(n) F + λI,   V^{-1/2} = W C^{-1/2} Wᵀ + λ^{-1/2}(I − WWᵀ),
    C = F'ᵀ diag(n) F' + λI_r,

so a round factors only an ``r x r`` matrix (:func:`~botorch_mtucb.linalg.ridge.arm_ridge_rows`);
the per-direction truncation runs on the per-arm sorted rewards
(:class:`~botorch_mtucb.linalg.truncated_sums.ArmRewardHistory`). A Nyström dictionary is redrawn
on the arms with the law of drawing every training point independently (:meth:`_resample_arms`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.heavy_tailed.moments import projection_levels
from botorch_mtucb.linalg.ridge import arm_ridge_rows, low_rank_factor

__all__: list[str] = []


class _AdaptiveArmPath:
    """Arm-space fit and dictionary draws of :class:`AdaptiveTruncationGP` (module docstring)."""

    def _arm_basis(self) -> tuple[Tensor, Tensor]:
        """Factor ``F = F' Wᵀ`` of the ``A x m`` arm features, ``W`` (``m x r``) orthonormal.

        QFF: thin SVD of ``F`` (computed once; singular values below ``max(1e-13, 10 eps)
        s_max`` are dropped). Nyström: ``F = K_{A,D} Q diag(s) Qᵀ`` with
        ``(K_D^{1/2})⁺ = Q diag(s) Qᵀ`` over the kept eigenpairs, so ``F' = K_{A,D} Q diag(s)``
        and ``W = Q`` exactly. The factor is cached for as long as the dictionary does not
        change.
        """
        cache, cdt = getattr(self, "_basis_cache", None), self._cdtype
        if cache is not None and cache[0] is self.features and cache[1].dtype == cdt:
            return cache[1], cache[2]
        if self.kind == "qff":
            Fp, W = low_rank_factor(self.features(self._arms.points.to(cdt)))
        elif self.features.num_features == 0:
            Fp = self._K_A.new_zeros(self._arms.num_arms, 0)
            W = self._K_A.new_zeros(0, 0)
        else:
            f = self.__dict__["_cfeat"][2]
            D_idx = self._arms.index(f.dictionary.to(self._K_A), "dictionary", f.base_kernel)
            Q, scale = f.factor
            W = Q.to(self._K_A)
            Fp = self._K_A[:, D_idx] @ (W * scale.to(W))
        self.__dict__["_basis_cache"] = (self.features, Fp, W)
        return Fp, W

    def _fit_arms(self, cfeat) -> None:
        """Arm-space fit: ``V^{-1/2} = W C^{-1/2} Wᵀ + λ^{-1/2}(I − WWᵀ)`` with
        ``C = F'ᵀ diag(n) F' + λI_r`` (:func:`~botorch_mtucb.linalg.ridge.arm_ridge_rows`),
        hence ``G = F V^{-1/2} = F' C^{-1/2} Wᵀ`` and ``μ_A = F θ = F' C^{-1/2} Wᵀ r̂``; only
        an ``r x r`` factorisation per round."""
        Fp, W = self._arm_basis()
        Z, P = arm_ridge_rows(Fp, self._counts.to(Fp), self.lam)
        G = P @ W.transpose(-1, -2)  # A x m; row a: u_{·,τ} for every round τ at arm a
        if self.num_observations and Fp.shape[-1]:
            b = self.truncation_level()
            if self.level == "projection" and math.isfinite(b):
                u_max = (G.abs() * (self._counts > 0).to(G).unsqueeze(-1)).amax(0)
                b = projection_levels(u_max, self.num_observations, self.alpha, self.v)
            r_hat = self._history.truncated_projection(G, b)
            theta_r = Z @ (W.transpose(-1, -2) @ r_hat)
        else:
            r_hat, theta_r = G.new_zeros(G.shape[-1]), Fp.new_zeros(Fp.shape[-1])
        var = self.lam * P.square().sum(-1)
        if self.kind == "nystrom":
            var = var + self._K_A.diagonal() - Fp.square().sum(-1)
        # Plain tensors straight into __dict__ (skips nn.Module.__setattr__ on the hot path).
        self.__dict__.update(_Fp_A=Fp, _P_A=P, _G_A=G, _r_hat=r_hat, _mean_A=Fp @ theta_r,
                             _var_A=var)

    def _resample_arms(self, new: _AdaptiveArmPath) -> tuple[NystromFeatures, Tensor]:
        """Dictionary draw on an arm set: arm ``a`` (pulled ``n_a`` times) enters with
        probability ``1 − (1 − p_a)^{n_a}``, ``p_a = min{q σ²_t(a), 1}`` — the same law as
        drawing every training point independently and keeping distinct points."""
        q = new.nystrom_q()
        var = self.arm_variances().clamp_min(0.0) / self.features.kernel_scale(self._arms.points)
        p = (q * var).clamp_max(1.0)
        n = new._counts
        log_miss = torch.where(p < 1, n * torch.log1p(-p.clamp_max(1 - 1e-16)), -torch.inf)
        incl = torch.where(n > 0, -torch.expm1(log_miss), torch.zeros_like(p))
        mask = self.features.sample_mask(incl, 1.0)
        if torch.equal(mask, self._dictionary_mask()):
            return self.features, mask  # same dictionary: keep its factor (and our cache)
        return self.features.with_dictionary(self._arms.points[mask]), mask

    def _dictionary_mask(self) -> Tensor:
        """Boolean ``A`` mask of the arms in the current Nyström dictionary (cached)."""
        cached = getattr(self, "_dict_mask", None)
        if cached is not None and cached[0] is self.features:
            return cached[1]
        mask = torch.zeros(self._arms.num_arms, dtype=torch.bool, device=self._counts.device)
        if self.features.num_features:
            D = self.features.dictionary.to(self._counts)
            mask[self._arms.index(D, "dictionary", self.features.base_kernel)] = True
        self._dict_mask = (self.features, mask)
        return mask
