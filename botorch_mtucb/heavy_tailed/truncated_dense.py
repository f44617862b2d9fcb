"""TGP-UCB's dense path: Cholesky factor of ``K_t + λI``, its block extension, fantasy siblings.

Private mixin of :class:`~botorch_mtucb.models.TruncatedGP` (paper 001, Algorithm 1 on a
continuous domain): ``μ̂_t(x) = k_t(x)ᵀ (K_t + λI)⁻¹ Ŷ_t`` and
``σ²_t(x) = k(x, x) − k_t(x)ᵀ (K_t + λI)⁻¹ k_t(x)`` from the lower Cholesky factor ``L`` of
``K_t + λI``. ``condition_on_observations`` extends ``L`` by one block
(``O(t² n)`` for ``n`` new points instead of ``O((t+n)³)``); a float32 model whose
``tr(K_t)`` crosses the precision threshold is rebuilt once in float64 (see the
:mod:`~botorch_mtucb.heavy_tailed.truncated` docstring). The finite-arm path is
:mod:`~botorch_mtucb.heavy_tailed.truncated_arms`.
"""

from __future__ import annotations

import copy
import math

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from botorch_mtucb.heavy_tailed.arms import RowBuffer
from botorch_mtucb.heavy_tailed.base import shallow_copy_model
from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.utils.validation import check_finite

__all__: list[str] = []


class _TruncatedDensePath:
    """Dense-path factor, moments and conditioning of
    :class:`~botorch_mtucb.models.TruncatedGP` (module docstring)."""

    def _kernel(self, X1: Tensor, X2: Tensor, diag: bool = False) -> Tensor:
        """Kernel matrix (or diagonal) in the working dtype (a float64 copy of the kernel
        when the data's dtype is not accurate enough)."""
        cdt, kern = self._cdtype, self.covar_module
        if cdt != self._dtype:
            kern = self.__dict__.get("_kern64")
            if kern is None:
                kern = self.__dict__["_kern64"] = copy.deepcopy(self.covar_module).to(cdt)
        return kern(X1.to(cdt), X2.to(cdt), diag=diag).to_dense().to(cdt)

    def _finish_dense(self) -> None:
        L = self._L
        targets = self.train_targets.to(L.dtype)
        self._alpha_vec = torch.cholesky_solve(targets.unsqueeze(-1), L).squeeze(-1)
        t = L.shape[-1]
        if self._obs_noise is None:
            self._log_det = 2.0 * L.diagonal().log().sum() - t * math.log(self.lam)
        else:  # L factors K_t + diag(noise): ln det(I + K_t/λ) on demand
            self._log_det = None

    def _dense_log_det(self) -> Tensor:
        """``ln det(I_t + λ⁻¹ K_t)`` from a fresh factor of ``K_t + λI`` (``L`` factors
        ``K_t + diag(noise)`` after a conditioning with other noise variances)."""
        X, t = self.train_X, self._t
        K = self._kernel(X, X)
        eye = torch.eye(t, dtype=K.dtype, device=K.device)
        L = psd_safe_cholesky(K + self.lam * eye)
        return 2.0 * L.diagonal().log().sum() - t * math.log(self.lam)

    def _dense_moments(
        self, X: Tensor, full: bool, alphas: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Dense-path ``μ̂_t`` and covariance (``full``) or variance of ``σ_t`` at ``... x q x d``
        (``alphas``: see :meth:`TruncatedGP._centred_moments`)."""
        k_xx = self._kernel(X, X, diag=not full)
        if self.num_observations == 0:
            return X.new_zeros(X.shape[:-1]), k_xx
        k_xt = self._kernel(X, self.train_X)  # ... x q x t
        if alphas is None:
            mean = k_xt @ self._alpha_vec
        else:  # ... x m x q x t times m x t x 1
            mean = (k_xt @ alphas.to(k_xt.dtype).unsqueeze(-1)).squeeze(-1)
        # One triangular solve with all batch x q right-hand sides (broadcasting L over the
        # batch would copy it once per batch element).
        t = k_xt.shape[-1]
        V = torch.linalg.solve_triangular(self._L, k_xt.reshape(-1, t).T, upper=False)
        V = V.T.reshape(k_xt.shape)  # ... x q x t, rows L⁻¹k_t(x)
        if full:
            return mean, k_xx - V @ V.transpose(-1, -2)
        return mean, k_xx - V.square().sum(-1)

    def _fantasy_siblings(
        self, X: Tensor, Y: Tensor, kwargs: dict
    ) -> list[_TruncatedDensePath] | None:
        """``m`` models, ``self`` conditioned on ``(X, Y[i])`` for each ``i``, that share one
        factor: the fantasies of one input (:class:`~botorch_mtucb.models.HeavyTailedBatch`). ``X``
        ``q x d``, ``Y`` ``m x q x 1``. The inputs and ``K_t + λI`` do not depend on the rewards, so
        the block Cholesky extension is done once and each sibling differs only in its targets and
        weights ``(K_t + λI)⁻¹ Ŷ_i`` (one ``cholesky_solve`` with ``m`` right-hand sides). ``None``
        on a finite arm set (each member is then its own arm-space model)."""
        if self._arms is not None or Y.dim() != 3 or Y.shape[-1] != 1:
            return None
        base = self.condition_on_observations(X, Y[0], **kwargs)  # validates X and Y[0]
        Y = Y if Y.dtype == self._dtype else Y.to(self._dtype)
        check_finite(Y, "Y")
        m, t = Y.shape[0], self._t
        z = Y[..., 0] - self._loc if self._loc != 0.0 else Y[..., 0]
        rewards = torch.cat([self._y_buf.view(t).expand(m, t), z], -1)  # m x (t + q)
        L = base._L
        alphas = torch.cholesky_solve(base._targets(rewards).to(L.dtype).T, L).T  # m x (t+q)
        out = [base]
        for i in range(1, m):
            sib = shallow_copy_model(base)
            buf = RowBuffer.__new__(RowBuffer)  # exact capacity: a later append copies
            buf.data, buf.length, buf._np = rewards[i], rewards.shape[-1], None
            sib._y_buf, sib._alpha_vec = buf, alphas[i]
            out.append(sib)
        return out

    def _extend_cholesky(self, old: _TruncatedDensePath, X: Tensor) -> None:
        """Block-extend ``old``'s Cholesky factor of ``K_t + λI`` by the ``n`` rows of ``X``.

        ``L_new = [[L, 0], [Sᵀ, chol(K_nn + Λ_n − SᵀS)]]`` with ``S = L⁻¹ K_tn`` and the new
        observations' noise ``Λ_n`` (``λI`` unless ``_obs_noise`` says otherwise): ``O(t² n)``.
        """
        t, n = old.num_observations, X.shape[0]
        k_new = self._kernel(self.train_X, X)  # (t+n) x n
        if old._max_trace < math.inf:  # float32: tr(K_t) decides the dtype (one host read)
            self._trace = old._trace + float(k_new[t:].diagonal().detach().sum())
            if self._trace > old._max_trace:  # the data's dtype would be inaccurate: rebuild
                return self._build()  # in float64
        # float64 working dtype: tr(K_t) is not needed, so not read (no host synchronisation)
        if self._obs_noise is None:
            D = k_new[t:] + self.lam * torch.eye(n, dtype=k_new.dtype, device=X.device)
        else:
            D = k_new[t:] + torch.diag_embed(self._obs_noise[t:].to(k_new.dtype))
        self._L = CholeskyFactor(old._L).extend(k_new[:t], D).L  # the one block extension
        self._finish_dense()
