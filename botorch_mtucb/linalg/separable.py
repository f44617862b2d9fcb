r"""The acquisition hot path of a dense multi-task posterior with separable stationary terms.

For a kernel Γ(x, x') = Σ_j k_j(x, x') B_j (a linear model of coregionalisation, e.g. the
practical model's ICM term plus one kernel per task) the posterior has no eigenbasis that
splits it into scalar problems, and the model's solver factorises the dense ``tn x tn``
matrix ``G_t + N = L Lᵀ`` once (paper 000, eq. (1)). What an acquisition asks of it at a
candidate x, the means and the variances along fixed directions ``wᵀ Γ_t(x, x) w``, then
needs only the ``t``-vectors ``k_j(x, X_t)``:

.. math::
    μ(x) = Σ_j k_j(x, X_t)\, A B_j^T, \qquad
    w^T Γ_t(x, x) w = Σ_j k_j(x, x)\, w^T B_j w − \big\| L^{-1} g_w(x) \big\|^2,

    g_w(x)_{(i, a)} = Σ_j k_j(x, x_i)\, (B_j w)_a,

with ``A`` the ``t x n`` coefficients ``(G_t + N)⁻¹ vec Y`` (point-major, as the solver's
interleaved layout). :class:`ProjectedSeparablePredictor` folds the input and outcome
transforms and ``L⁻¹`` into constants, as
:class:`~botorch_mtucb.linalg.icm.ProjectedICMPredictor` does for the ICM.
"""

from __future__ import annotations

from torch import Tensor

from botorch_mtucb.linalg.icm import Affine
from botorch_mtucb.linalg.stationary import FrozenStationaryCross

__all__ = ["ProjectedSeparablePredictor"]


class ProjectedSeparablePredictor:
    r"""μ(x) and ``wⱼᵀ Γ_t(x, x) wⱼ`` of a dense posterior with stationary separable terms.

    Fixed hyperparameters and directions (the module docstring's formulas); equal to the
    dense solver's general path up to rounding; no gradient flows to the hyperparameters.

    Args:
        terms: ``[(k_j, B_j)]``: a frozen evaluator of each distinct scalar kernel against the
            (input-transformed) training inputs, with the sum of the ``n x n`` task matrices
            of the terms that share it.
        L_inv_T: ``tn x tn`` transpose of ``L⁻¹``, ``L`` the lower Cholesky factor of
            ``G_t + N`` (interleaved, point-major); only read when ``k > 0`` (``None`` for
            means only), so that a solver forms it once for all its predictors.
        alpha: ``tn x 1`` coefficients ``(G_t + N)⁻¹ vec(Y_t − m)``.
        directions: ``n x k`` directions ``W`` (original outcome scale; ``k = 0``: means only).
        out_scale: ``n`` outcome scale σ (ones without an outcome transform).
        out_shift: ``n`` outcome shift ``c_μ ∘ σ + m``.
        in_affine: ``(o, c)``, each ``d``, of an affine input transform, or ``None``.

    Example:
        >>> from botorch_mtucb.models import practical_multitask_gp
        >>> X = torch.rand(8, 3, dtype=torch.float64)
        >>> Y = torch.stack([X.sum(-1), X.prod(-1)], -1)
        >>> model = practical_multitask_gp(X, Y, per_task=True)  # ICM + one kernel per task
        >>> predictor = model._projected_predictor(torch.eye(2, dtype=torch.float64))
        >>> mean, var = predictor(torch.rand(5, 3, dtype=torch.float64))
        >>> type(predictor).__name__, mean.shape, var.shape
        ('ProjectedSeparablePredictor', torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(
        self,
        terms: list[tuple[FrozenStationaryCross, Tensor]],
        L_inv_T: Tensor | None,
        alpha: Tensor,
        directions: Tensor,
        out_scale: Tensor,
        out_shift: Tensor,
        in_affine: Affine = None,
    ) -> None:
        n = out_scale.shape[-1]
        self.kernels = [k for k, _ in terms]
        coef = alpha.reshape(-1, n)  # t x n
        self.mean_maps = [(coef @ B.transpose(-1, -2)) * out_scale for _, B in terms]  # t x n
        self.mean_shift = out_shift
        W = out_scale.unsqueeze(-1) * directions  # n x k, the standardised scale
        self.dir_maps = [B @ W for _, B in terms]  # n x k each
        self.prior = sum(k.scale * (W * (B @ W)).sum(-2) for k, B in terms)  # k
        if directions.shape[-1] > 0 and L_inv_T is None:
            raise ValueError("`L_inv_T` is needed for k > 0 directions.")
        self.L_inv_T = L_inv_T
        self.num_tasks, self.num_directions = n, directions.shape[-1]
        self.affine = in_affine

    def __call__(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """``(mean, quad)``: ``batch x q x n`` and ``batch x q x k`` at ``X: batch x q x d``
        (any ``batch x d`` shape: the results then have ``batch x n`` and ``batch x k``)."""
        flat = X.reshape(-1, X.shape[-1])
        if self.affine is not None:
            flat = (flat - self.affine[0]) / self.affine[1]
        K = [k(flat) for k in self.kernels]  # N x t each
        mean = self.mean_shift + sum(Kj @ Mj for Kj, Mj in zip(K, self.mean_maps, strict=True))
        k_dirs = self.num_directions
        if k_dirs == 0:
            quad = flat.new_zeros(flat.shape[0], 0)
        else:
            # g_w(x) for every direction: N x t x n x k, flattened to the interleaved tn
            g = sum(
                Kj[:, :, None, None] * Pj for Kj, Pj in zip(K, self.dir_maps, strict=True)
            )
            g = g.reshape(flat.shape[0], -1, k_dirs).transpose(-1, -2)  # N x k x tn
            v = g @ self.L_inv_T  # rows: (L⁻¹ g_w)ᵀ
            quad = (self.prior - v.pow(2).sum(-1)).clamp_min(0.0)
        return mean.reshape(*X.shape[:-1], -1), quad.reshape(*X.shape[:-1], -1)
