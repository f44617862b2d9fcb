r"""Batched conditioning of a multi-task posterior: fantasies and look-ahead models.

Appending ``m`` observations ``Y_1`` at ``X_1`` to a Gaussian posterior with mean μ and
covariance Γ_t (noise η) is one more Gaussian update:

.. math::
    μ'(x) = μ(x) + Γ_t(x, X_1) (Γ_t(X_1, X_1) + ηI)^{-1} (Y_1 − μ(X_1)), \qquad
    Γ'(x, x') = Γ_t(x, x') − Γ_t(x, X_1) (Γ_t(X_1, X_1) + ηI)^{-1} Γ_t(X_1, x').

For the exact model this *is* the posterior on the extended data (the Gaussian update is
exact), so :class:`ConditionedSolver` serves batched ``condition_on_observations`` and BoTorch's
``fantasize`` (``X: batch x m x d``, ``Y: num_fantasies x batch x m x n``) without rebuilding
anything, for any base solver. For MT-BKB it updates the current Nyström posterior with its
dictionary kept (a fantasy is hypothetical: no new dictionary is drawn for it). Unbatched
conditioning of the exact ICM model uses the cheaper Schur block of
:class:`~botorch_mtucb.models.solvers.ICMSolver` instead.
"""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.models.solvers import MultiTaskSolver

__all__ = ["ConditionedSolver"]


class ConditionedSolver(MultiTaskSolver):
    """A base solver's posterior updated on ``m`` (batched) observations.

    Args:
        base: The solver of the model that is conditioned.
        X1: ``batch x m x d`` appended inputs (input-transformed, the base's dtype).
        resid1: ``batch' x m x n`` appended targets minus the prior mean (``batch'`` may have
            leading fantasy dimensions in front of ``batch``).
        noise: η (0-dim tensor), or ``batch x m x n`` noise variances of the new rows.
    """

    def __init__(self, base: MultiTaskSolver, X1: Tensor, resid1: Tensor, noise: Tensor) -> None:
        self.base, self.X1, self.noise = base, X1, noise
        self.train_X = X1  # (the dtype)
        self.num_tasks = n = base.num_tasks
        m = X1.shape[-2]
        mean1, cov11 = base.predict(X1, full_cov=True)  # batch x m x n, batch x mn x mn
        if noise.dim() == 0:
            cov11 = cov11 + noise * torch.eye(m * n, dtype=cov11.dtype, device=cov11.device)
        else:  # batch x m x n variances, interleaved on the diagonal
            diag = noise.expand(*noise.shape[:-2], m, n).reshape(*noise.shape[:-2], m * n)
            cov11 = cov11 + torch.diag_embed(diag)
        self.factor = CholeskyFactor.from_matrix(cov11)
        batch = torch.broadcast_shapes(resid1.shape[:-2], mean1.shape[:-2])
        e = (resid1 - mean1).expand(*batch, m, n).reshape(*batch, m * n, 1)
        self.coef = self.factor.solve(e)  # batch' x mn x 1 (cholesky_solve broadcasts)

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        n = self.num_tasks
        if not full_cov:  # one point per block: batch x q x 1 x d
            mean, cov = self._joint(X.unsqueeze(-2), self.X1.unsqueeze(-3))
            return mean.squeeze(-2), cov.reshape(*mean.shape[:-2], n, n)
        return self._joint(X, self.X1)

    def _joint(self, X: Tensor, X1: Tensor) -> tuple[Tensor, Tensor]:
        q, m, n = X.shape[-2], X1.shape[-2], self.num_tasks
        coef, L = self.coef, self.factor.L
        if X1.dim() > self.X1.dim():  # per-point blocks: align the coefficients' batch dims
            coef, L = coef.unsqueeze(-3), L.unsqueeze(-3)
        batch = torch.broadcast_shapes(X.shape[:-2], X1.shape[:-2], coef.shape[:-2])
        d = X.shape[-1]
        joint_X = torch.cat([X.expand(*batch, q, d), X1.expand(*batch, m, d)], dim=-2)
        mean, cov = self.base.predict(joint_X, full_cov=True)
        qn = q * n
        C = cov[..., :qn, qn:]  # Γ_t(X, X_1): batch x qn x mn
        mean = mean[..., :q, :] + (C @ coef).reshape(*batch, q, n)
        V = torch.linalg.solve_triangular(L, C.transpose(-1, -2), upper=False)
        return mean, cov[..., :qn, :qn] - V.transpose(-1, -2) @ V

    def information_gain(self) -> Tensor:
        """The base's gain plus ½ log det(I + η⁻¹ Γ_t(X_1, X_1)) (Lemma 4's chain rule)."""
        mn = self.factor.size
        log_noise = mn * torch.log(self.noise) if self.noise.dim() == 0 else torch.log(
            self.noise).expand(*self.noise.shape[:-2], mn // self.num_tasks,
                               self.num_tasks).sum((-1, -2))
        return self.base.information_gain() + 0.5 * (self.factor.logdet() - log_noise)
