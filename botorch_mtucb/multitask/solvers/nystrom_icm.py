"""The MT-BKB posterior solver for ICM kernels Γ = k·B (paper 000, Appendix A eqs. (7)–(8)).

The scalar Nyström embedding of the dictionary and ``n`` rotated problems of size ``r`` that
share one eigendecomposition (:class:`~botorch_mtucb.linalg.ICMRotation`, the same rotation as
the exact ICM solver). The Nyström formulas, the dictionary factorisations (``"eigh"`` /
``"pivoted_cholesky"``) and the shared base :class:`NystromSolverBase` live in
:mod:`botorch_mtucb.multitask.solvers.nystrom`.
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.linalg.icm import Affine, ICMRotation, ProjectedICMPredictor
from botorch_mtucb.linalg.nystrom import default_pinv_rtol, pivoted_cholesky, reduced_pinv_sqrt
from botorch_mtucb.linalg.stationary import FrozenStationaryCross
from botorch_mtucb.multitask.solvers.base import cross_kernel, dense
from botorch_mtucb.multitask.solvers.nystrom import (
    DENSE_GRAM_MAX,
    NystromSolverBase,
    check_dictionary,
    lower_inverse,
    resolve_method,
)
from botorch_mtucb.multitask.utils import KroneckerLowRankCovariance

__all__ = ["ICMNystromSolver"]


class ICMNystromSolver(NystromSolverBase):
    """MT-BKB posterior for Γ = k·B through the scalar embedding (paper 000, eqs. (7)–(8)).

    With ``B = U diag(ξ) Uᵀ``, ``φ̃(x) = (K̃_D^{1/2})⁺ k̃_D(x)`` and ``ṽ = Σ_s φ̃(x_s)φ̃(x_s)ᵀ
    = E diag(c) Eᵀ``:

        μ̃_t(x) = Σ_i ξ_i φ̃(x)ᵀ(ξ_i ṽ + ηI)⁻¹ (Σ_s y_sᵀu_i φ̃(x_s)) · u_i            (7)
        Γ̃_t(x, x') = Σ_i ξ_i (k(x, x') − φ̃(x)ᵀφ̃(x') + η φ̃(x)ᵀ(ξ_i ṽ + ηI)⁻¹φ̃(x')) u_i u_iᵀ

    whose ``x = x'`` eigenvalues give ‖Γ̃_t(x, x)‖ = max_i of them (8). One factorisation of
    the ``m x m`` scalar Gram ``K̃_D`` and one ``r x r`` eigendecomposition of ``ṽ`` serve all
    ``n`` problems. ``method`` chooses how ``K̃_D`` is factored, as in
    :class:`~botorch_mtucb.multitask.solvers.nystrom.NystromSolver` (``"auto"``: ``eigh`` when
    ``m ≤ 256``, else pivoted Cholesky).

    Example:
        >>> k, B = kernel.icm_components()
        >>> idx, p = torch.tensor([0, 3, 5, 8]), torch.full((4,), 0.5, dtype=torch.float64)
        >>> eta = torch.tensor(0.1, dtype=torch.float64)
        >>> solver = ICMNystromSolver(k, B, train_X, train_resid, eta, idx, p)
        >>> s = solver.eigen_variances(X)  # b x q x n; ‖Γ̃_t(x, x)‖ = s.max(-1), eq. (8)
    """

    def __init__(
        self,
        data_kernel: Kernel,
        task_covar: Tensor,
        train_X: Tensor,
        train_resid: Tensor,
        noise: Tensor,
        indices: Tensor,
        probs: Tensor,
        rtol: float | None = None,
        method: str = "auto",
    ) -> None:
        """
        Args:
            data_kernel: Scalar kernel ``k``.
            task_covar: ``n x n`` PSD task matrix ``B``.
            train_X: ``t x d`` training inputs (input-transformed).
            train_resid: ``t x n`` targets minus the prior mean.
            noise: Regulariser η > 0 (scalar tensor).
            indices: ``m`` LongTensor, dictionary rows of ``train_X`` (repeats allowed).
            probs: ``m`` inclusion probabilities ``p_j ∈ (0, 1]``.
            rtol: Relative cutoff of the pseudo-inverse square root.
            method: ``"auto"``, ``"eigh"`` or ``"pivoted_cholesky"``.
        """
        check_dictionary(train_X, indices, probs)
        self.data_kernel = data_kernel
        self.train_X = train_X
        self.noise = noise
        self.num_tasks = train_resid.shape[-1]
        self.indices = indices
        self.probs = probs
        self.rtol = default_pinv_rtol(train_X.dtype) if rtol is None else rtol
        self.method = resolve_method(method, indices.numel())
        self.basis_X, Mt = self._factor(train_X[indices], probs)  # Mt: s x r
        self.rank = r = Mt.shape[-1]
        Phi = self._features(train_X, Mt)  # t x r, rows φ̃(x_s) in reduced coordinates
        v = Phi.transpose(-1, -2) @ Phi
        c, E = torch.linalg.eigh(v) if r else (v.new_zeros(0), v)
        self.Mq = Mt @ E  # s x r: rotated features Z(x) = k(x, X_S) Mq = Eᵀφ̃(x)
        self.train_Z = Phi @ E  # t x r
        # the n rotated scalar problems (eqs. (7)-(8)), shared with the exact ICM solver
        self.rotation = ICMRotation(
            task_covar, c, noise, self.train_Z.transpose(-1, -2), train_resid, normalized=True
        )
        self.xi, self.U, self.c = self.rotation.xi, self.rotation.U, self.rotation.spectrum
        # the kernel against the basis points, hyperparameters read once (detached caches)
        self._frozen = None if torch.is_grad_enabled() or r == 0 else FrozenStationaryCross.maybe(
            data_kernel, self.basis_X
        )

    def _factor(self, dict_X: Tensor, probs: Tensor) -> tuple[Tensor, Tensor]:
        """Basis points ``X_S`` and ``Mt`` (``|S| x r``) with ``φ̃(x) ≅ Mtᵀ k(X_S, x)``."""
        m = dict_X.shape[-2]
        if m == 0:
            return dict_X, dict_X.new_zeros(0, 0)
        k = self.data_kernel
        if self.method == "eigh":
            w = probs.rsqrt()
            K = dense(k.forward(dict_X, dict_X)) * w[:, None] * w[None, :]
            return dict_X, (reduced_pinv_sqrt(K, self.rtol) * w[None, :]).transpose(-1, -2)
        if m <= DENSE_GRAM_MAX:  # one kernel call instead of one per pivot
            K = dense(k.forward(dict_X, dict_X))
            diag, column = torch.diagonal(K).clone(), lambda i: K[:, i]
        else:
            diag = dense(k.forward(dict_X, dict_X, diag=True)).reshape(-1)

            def column(i: Tensor) -> Tensor:  # i: one-element LongTensor on the device
                return dense(k.forward(dict_X, dict_X.index_select(0, i)))[:, 0]

        piv, L = pivoted_cholesky(diag, column, self.rtol)
        if piv.numel() == 0:
            return dict_X[:0], dict_X.new_zeros(0, 0)
        return dict_X[piv], lower_inverse(L).transpose(-1, -2)

    def _features(self, X: Tensor, Mt: Tensor) -> Tensor:
        if Mt.shape[-1] == 0:
            return X.new_zeros(*X.shape[:-1], 0)
        return cross_kernel(self.data_kernel, X, self.basis_X) @ Mt

    def _Z(self, X: Tensor) -> Tensor:
        """Rotated embedding ``Eᵀφ̃_t(x)``: ``batch x q x r``."""
        return self._features(X, self.Mq)

    def eigen_variances(self, X: Tensor, Z: Tensor | None = None) -> Tensor:
        """Eigenvalues of Γ̃_t(x, x) along ``u_i`` (eq. (8) before the max), ``batch x q x n``."""
        Z = self._Z(X) if Z is None else Z
        kxx = dense(self.data_kernel.forward(X, X, diag=True))
        return self.rotation.eigen_variances(Z, kxx).clamp_min(0.0)

    def _block_eigenvalues(self, X: Tensor) -> Tensor:
        return self.eigen_variances(X)

    def _compute_train_summary(self) -> tuple[Tensor, Tensor]:
        return self._summary(self.eigen_variances(self.train_X, Z=self.train_Z))

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        rot = self.rotation
        Z = self._Z(X)  # shared by the mean and the covariance
        mean = rot.to_tasks(rot.rotated_mean(Z))
        if not full_cov:
            return mean, rot.blocks(self.eigen_variances(X, Z=Z))
        Kqq = dense(self.data_kernel.forward(X, X))
        return mean, rot.joint_from_directions(rot.direction_covariances(Z, Kqq))

    def predict_lazy_joint(self, X: Tensor) -> tuple[Tensor, KroneckerLowRankCovariance]:
        """Mean and ``K_qq ⊗ B − R Rᵀ``: ``S_i = ξ_i K_qq − A_i A_iᵀ``, ``A_i = Z diag(√w_i)``
        (the rotation's variance weights ``w_i ≥ 0``)."""
        rot = self.rotation
        Z = self._Z(X)
        A = Z.unsqueeze(-3) * rot.weights.transpose(-1, -2).sqrt().unsqueeze(-2)  # b x n x q x r
        cov = KroneckerLowRankCovariance.from_directions(self.data_kernel(X, X), rot.U, rot.xi,
                                                         A)
        return rot.to_tasks(rot.rotated_mean(Z)), cov

    def projected_variances(self, X: Tensor, W: Tensor) -> tuple[Tensor, Tensor]:
        """``Σ_i s_i(x) (u_iᵀ w_j)²``: no ``n x n`` blocks."""
        rot = self.rotation
        Z = self._Z(X)
        s = self.eigen_variances(X, Z=Z)
        return rot.to_tasks(rot.rotated_mean(Z)), s @ (rot.U.transpose(-1, -2) @ W).pow(2)

    def projected_predictor(
        self, directions: Tensor, out_scale: Tensor, out_shift: Tensor, in_affine: Affine
    ) -> ProjectedICMPredictor | None:
        """The hot-path predictor with the rotated embedding ``Z(x) = k(x, X_S) M_q`` as
        features (:class:`~botorch_mtucb.linalg.icm.ProjectedICMPredictor`; arguments as in
        :meth:`~botorch_mtucb.multitask.solvers.base.MultiTaskSolver.projected_predictor`).
        ``None`` without a frozen stationary kernel (a solver built with gradients), an empty
        basis or for batched data."""
        if self._frozen is None or self.train_X.dim() > 2:
            return None
        return ProjectedICMPredictor(self.rotation, self._frozen, self.Mq, directions, out_scale,
                                     out_shift, in_affine)

    def information_gain(self) -> Tensor:
        """½ log det(I + η⁻¹ Ṽ_t) = ½ Σ_i Σ_j log(1 + ξ_i c_j / η) (Nyström estimate)."""
        return self.rotation.information_gain()
