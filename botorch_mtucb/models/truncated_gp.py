"""TGP-UCB's estimator: a GP posterior on rewards truncated at their own round's level.

Paper 001, §3, Algorithm 1. With observations ``y_1, …, y_t`` in round order,

    ŷ_s = y_s · 1{|y_s| ≤ b_s},       b_s = v^{1/(1+α)} s^{1/(2(1+α))},
    μ̂_t(x) = k_t(x)ᵀ (K_t + λI)⁻¹ Ŷ_t,   σ²_t(x) = k(x, x) − k_t(x)ᵀ (K_t + λI)⁻¹ k_t(x).

Each reward keeps the level of its own round, so ``ŷ_s`` never changes once observed.

Two computational paths give the same numbers:

* dense (continuous domains): Cholesky of ``K_t + λI``; ``condition_on_observations``
  extends the factor by a block (``O(t²)`` per new point instead of ``O(t³)``).
* finite arms (a :class:`PrecomputedKernel`, or ``arms=``): only counts ``n_a`` and sums of
  truncated rewards ``s_a`` per arm matter. With ``D = diag(√n)`` and ``M = D K_A D + λI``
  (``A x A``), ``μ_A = K_A D M⁻¹ (s/√n)``, ``Σ_A = K_A − K_A D M⁻¹ D K_A`` and
  ``ln det(I_t + λ⁻¹K_t) = ln det M − A ln λ`` (Sylvester). A single new observation at arm
  ``a`` is a rank-one (Kalman) update of ``μ_A, Σ_A`` in ``O(A²)``, independent of ``t``.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel, RBFKernel
from torch import Tensor

from botorch_mtucb.models.heavy_tailed_base import (
    ArmSet,
    HeavyTailedModel,
    check_training_data,
)
from botorch_mtucb.theory.heavy_tailed import (
    Constants,
    check_constants,
    check_heavy_tailed_params,
    tgp_beta,
    tgp_truncation_level,
    tgp_truncation_levels,
)

__all__ = ["TruncatedGP"]

#: Default SE lengthscale when no kernel is given (paper 001, §6 synthetic experiments).
DEFAULT_LENGTHSCALE = 0.2


class TruncatedGP(HeavyTailedModel):
    """Single-output BoTorch model of TGP-UCB (paper 001, Algorithm 1).

    Example:
        >>> model = TruncatedGP(train_X, train_Y, alpha=1.0, v=4.0, B=1.0, constants="authors")
        >>> acqf = HeavyTailedUCB(model)          # β = model.beta()
        >>> model = model.condition_on_observations(x_new, y_new)
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        alpha: float,
        v: float,
        covar_module: Kernel | None = None,
        lam: float = 1.0,
        delta: float = 0.1,
        B: float = 1.0,
        *,
        constants: Constants = "theory",
        truncate: bool = True,
        arms: Tensor | None = None,
    ) -> None:
        """
        Args:
            train_X: ``t x d`` inputs in round order (float arm indices ``t x 1`` with a
                :class:`PrecomputedKernel`).
            train_Y: ``t x 1`` raw (untruncated) rewards, row ``s`` observed in round ``s+1``.
            alpha: Moment order ``α ∈ (0, 1]`` with ``E|y|^{1+α} ≤ v``.
            v: Moment bound ``v > 0``.
            covar_module: Kernel ``k`` with ``k(x, x) ≤ 1``; default ``RBFKernel`` with
                lengthscale 0.2 (the paper's synthetic setting). Hyperparameters are fixed.
            lam: Regulariser ``λ > 0`` (GP noise variance).
            delta: Confidence ``δ ∈ (0, 1]`` (theory ``β``).
            B: Bound on ``‖f‖_H``.
            constants: ``"theory"`` (default: Theorem 1's ``β``, which carries the
                high-probability guarantee) or ``"authors"`` (public-code ``β``, much smaller;
                what the paper's figures used). ``b_t`` is the same for both.
            truncate: ``False`` sets ``b_t = ∞`` (plain GP-UCB posterior).
            arms: Optional ``A x d`` finite candidate set; all training inputs and all
                posterior inputs must then be rows of it (fast arm-space path).
        """
        super().__init__()
        X, y = check_training_data(train_X, train_Y)
        self.alpha, self.v, self.lam, self.delta, self.B = check_heavy_tailed_params(
            alpha, v, lam, delta, B
        )
        self.constants = check_constants(constants)
        self.truncate = bool(truncate)
        if covar_module is None:
            covar_module = RBFKernel().to(X)
            covar_module.lengthscale = DEFAULT_LENGTHSCALE
        if not isinstance(covar_module, Kernel):
            raise ValueError(
                f"`covar_module` must be a gpytorch Kernel, got {type(covar_module).__name__}."
            )
        self.covar_module = covar_module
        self._arms = ArmSet.resolve(arms, covar_module, X)
        self.train_X = X
        self.train_Y = y.unsqueeze(-1)
        self._dtype = X.dtype
        targets = self._truncate(y, 0)
        self.train_targets = targets
        if self._arms is not None:
            self._K_A = self._arms.kernel_matrix(covar_module).to(X)
            self._arm_idx = self._arms.index(X, "train_X", covar_module)
            A = self._arms.num_arms
            self._counts = torch.bincount(self._arm_idx, minlength=A).to(X)
            self._sums = torch.zeros(A, dtype=X.dtype, device=X.device).index_add_(
                0, self._arm_idx, targets
            )
            self._arm_posterior_from_stats()
        else:
            with torch.no_grad():
                K = self.covar_module(X, X).to_dense() if X.shape[0] else X.new_zeros(0, 0)
                eye = torch.eye(K.shape[-1], dtype=X.dtype, device=X.device)
                self._L = torch.linalg.cholesky(K + self.lam * eye)
                self._finish_dense()

    # ------------------------------------------------------------------ schedules
    @property
    def num_observations(self) -> int:
        """Number of observations ``t``."""
        return self.train_X.shape[0]

    def truncation_level(self, t: int | None = None) -> float:
        """Truncation level ``b_t`` of round ``t`` (default: the latest round ``t``)."""
        t = self.num_observations if t is None else int(t)
        if t < 0:
            raise ValueError(f"`t` must be a non-negative round index, got {t}.")
        return tgp_truncation_level(t, self.alpha, self.v) if self.truncate else math.inf

    def log_det(self) -> float:
        """Information term ``ln det(I_t + λ⁻¹ K_t)`` (= 2 × information gain)."""
        return float(self._log_det)

    def beta(self) -> float:
        """Confidence width ``β_{t+1}`` for choosing the next point (Theorem 1 or authors)."""
        return tgp_beta(
            self.num_observations,
            self.alpha,
            self.v,
            self.lam,
            self.delta,
            self.B,
            self.log_det(),
            self.constants,
        )

    def _truncate(self, y: Tensor, first_round_offset: int) -> Tensor:
        """``ŷ_s = y_s 1{|y_s| ≤ b_s}`` for rewards observed in rounds ``offset+1, …``."""
        if not self.truncate:
            return y.clone()
        if y.shape[0] == 1:
            b = tgp_truncation_level(first_round_offset + 1, self.alpha, self.v)
        else:
            s = torch.arange(1, y.shape[0] + 1, dtype=y.dtype, device=y.device)
            b = tgp_truncation_levels(s + first_round_offset, self.alpha, self.v)
        return torch.where(y.abs() <= b, y, torch.zeros_like(y))

    # ------------------------------------------------------------------ dense path
    def _finish_dense(self) -> None:
        L = self._L
        self._alpha_vec = torch.cholesky_solve(self.train_targets.unsqueeze(-1), L).squeeze(-1)
        t = L.shape[-1]
        self._log_det = 2.0 * L.diagonal().log().sum() - t * math.log(self.lam)

    # ------------------------------------------------------------------ arm path
    def _arm_posterior_from_stats(self) -> None:
        """``μ_A, Σ_A, ln det`` from counts and truncated sums (``O(A³)``)."""
        K, n, s = self._K_A, self._counts, self._sums
        A = K.shape[0]
        d = n.sqrt()
        M = d.unsqueeze(-1) * K * d + self.lam * torch.eye(A, dtype=K.dtype, device=K.device)
        L = torch.linalg.cholesky(M)
        w = torch.where(n > 0, s / d.clamp_min(1e-300), torch.zeros_like(s))
        c = d * torch.cholesky_solve(w.unsqueeze(-1), L).squeeze(-1)
        self._mean_A = K @ c
        Z = torch.linalg.solve_triangular(L, d.unsqueeze(-1) * K, upper=False)
        self._cov_A = K - Z.transpose(-1, -2) @ Z
        self._var_A = self._cov_A.diagonal()
        self._log_det = 2.0 * L.diagonal().log().sum() - A * math.log(self.lam)

    # ------------------------------------------------------------------ BoTorch API
    def _moments(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """``μ̂_t`` and the covariance (``full``) or variance of ``σ_t`` at ``... x q x d``."""
        if self._arms is not None:
            idx = self._arms.index(X, "X", self.covar_module)
            if full:
                return self._mean_A[idx], self._cov_A[idx.unsqueeze(-1), idx.unsqueeze(-2)]
            return self._mean_A[idx], self._var_A[idx]
        k_xx = self.covar_module(X, X, diag=not full).to_dense()
        if self.num_observations == 0:
            return X.new_zeros(X.shape[:-1]), k_xx
        k_xt = self.covar_module(X, self.train_X).to_dense()  # ... x q x t
        mean = k_xt @ self._alpha_vec
        # One triangular solve with all batch x q right-hand sides (broadcasting L over the
        # batch would copy it once per batch element).
        t = k_xt.shape[-1]
        V = torch.linalg.solve_triangular(self._L, k_xt.reshape(-1, t).T, upper=False)
        V = V.T.reshape(k_xt.shape)  # ... x q x t, rows L⁻¹k_t(x)
        if full:
            return mean, k_xx - V @ V.transpose(-1, -2)
        return mean, k_xx - V.square().sum(-1)

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs) -> TruncatedGP:
        """A new model with ``(X, Y)`` appended as rounds ``t+1, …, t+n``.

        New rewards are truncated at their own rounds' levels. ``self`` is left unchanged.

        Args:
            X: ``n x d`` new inputs.
            Y: ``n x 1`` new raw rewards.
        """
        t = self.num_observations
        new, X, y, idx = self._appended_copy(X, Y, self.covar_module)
        targets = self._truncate(y, t)
        new.train_targets = torch.cat([self.train_targets, targets])
        if idx is not None:
            new._sums = self._sums.index_add(0, idx, targets)
            if X.shape[0] == 1:
                # Kalman / Sherman–Morrison update of the arm-space posterior, O(A²).
                a = idx[0]
                col = self._cov_A[:, a]
                c = self.lam + col[a]
                new._mean_A = self._mean_A + col * ((targets[0] - self._mean_A[a]) / c)
                new._cov_A = self._cov_A - torch.outer(col, col) / c
                new._var_A = new._cov_A.diagonal()
                new._log_det = self._log_det + torch.log(c / self.lam)
            else:
                new._arm_posterior_from_stats()
        else:
            with torch.no_grad():
                new._extend_cholesky(self, X)
        return new

    def _extend_cholesky(self, old: TruncatedGP, X: Tensor) -> None:
        """Block-extend ``old``'s Cholesky factor of ``K_t + λI`` by the ``n`` rows of ``X``.

        ``L_new = [[L, 0], [Sᵀ, chol(K_nn + λI − SᵀS)]]`` with ``S = L⁻¹ K_tn``: ``O(t² n)``.
        """
        t, n = old.num_observations, X.shape[0]
        k_new = self.covar_module(self.train_X, X).to_dense()  # (t+n) x n
        S = torch.linalg.solve_triangular(old._L, k_new[:t], upper=False)  # t x n
        C = k_new[t:] + self.lam * torch.eye(n, dtype=X.dtype, device=X.device)
        L = old._L.new_zeros(t + n, t + n)
        L[:t, :t] = old._L
        L[t:, :t] = S.transpose(-1, -2)
        L[t:, t:] = torch.linalg.cholesky(C - S.transpose(-1, -2) @ S)
        self._L = L
        self._finish_dense()
