r"""Posterior solvers for multi-task kernel regression (paper 000, §3.1, §3.3, Appendix A).

A solver holds the factorisation of one training set under one set of hyperparameters and
answers three questions: the posterior mean, the posterior covariance (joint over ``q``
points and ``n`` tasks, or only the ``n x n`` block of each point) and the information gain.
The BoTorch model chooses the solver from the kernel's structure and caches it. Both
implement :class:`~botorch_mtucb.multitask.solvers.base.MultiTaskSolver`.

* :class:`DenseSolver` — any multi-task kernel: one :class:`~botorch_mtucb.linalg.CholeskyFactor`
  of the ``nt x nt`` matrix ``G_t + ηI`` (paper 000, eq. (1) and §3.1); conditioning extends
  the factor by a block row.
* :class:`ICMSolver` — Γ = k·B: the ICM rotation (:class:`~botorch_mtucb.linalg.ICMRotation`)
  of one eigendecomposition ``K_t = W diag(a) Wᵀ``, which serves all ``n`` eigen-directions of
  ``B`` (§3.3), plus an optional *appended block* of ``m`` points added by conditioning.
  Direction ``i`` of the appended block is one scalar GP update of the eigen part:

  .. math::
      S_i = ξ_i K_{11} + ηI − P_1 \mathrm{diag}(w_i) P_1^T, \quad
      k^{(0)}_i(x, X_1) = ξ_i k(x, X_1) − F(x) \mathrm{diag}(w_i) P_1^T,

      m_i(x) = m^{(0)}_i(x) + k^{(0)}_i(x, X_1) S_i^{-1} (Y_1 u_i − m^{(0)}_i(X_1)), \quad
      s_i(x) = s^{(0)}_i(x) − k^{(0)}_i(x, X_1) S_i^{-1} k^{(0)}_i(X_1, x),

  with ``P_1 = k(X_1, X_0) W`` and ``w_i = ξ_i² / (ξ_i a + η)``. Each appended point costs
  O(n t²) (one row of ``P_1`` and a block extension of the ``n`` Cholesky factors of ``S_i``)
  instead of a new ``t x t`` eigendecomposition; once the block outgrows the eigen part the
  model rebuilds from scratch (amortised O(t³) per doubling).
* :class:`ICMCholeskySolver` — Γ = k·B from the ``n`` Cholesky factors of ``ξ_i K_t + ηI``
  (the blocks of ``G_t + ηI`` in B's eigenbasis, §3.3), without any ``t x t``
  eigendecomposition: ``m_i(x) = ξ_i k(x, X)(ξ_i K_t + ηI)⁻¹ Y u_i`` and
  ``s_i(x) = ξ_i k(x, x) − ξ_i² ‖L_i⁻¹ k(X, x)‖²``; conditioning extends each factor by a
  block row.

:func:`icm_solver` chooses between the two ICM solvers by
:func:`~botorch_mtucb.linalg.icm_likelihood_method` (the Cholesky one for few tasks and many
points, where ``n`` Cholesky factors cost less than one eigendecomposition; the eigen one
otherwise, whose frozen hot-path predictor is cheaper per call) and takes the factorisation of
a likelihood evaluation at the same hyperparameters and data when one is stored
(:func:`icm_factor_key`, :class:`~botorch_mtucb.linalg.ICMFactorCache`).

All tensors follow GPyTorch's interleaved multi-task order (index ``point·n + task``).
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.linalg.icm import Affine, ICMRotation, ProjectedICMPredictor, interleave_blocks
from botorch_mtucb.linalg.icm_cholesky import icm_likelihood_method
from botorch_mtucb.linalg.separable import ProjectedSeparablePredictor
from botorch_mtucb.linalg.stationary import FrozenStationaryCross
from botorch_mtucb.multitask.solvers.base import MultiTaskSolver, cross_kernel, dense
from botorch_mtucb.multitask.utils import KroneckerLowRankCovariance

__all__ = [
    "POSTERIOR_EIGH_MAX_POINTS",
    "DenseSolver",
    "ICMCholeskySolver",
    "ICMSolver",
    "extend_solver",
    "icm_factor_key",
    "icm_posterior_method",
    "icm_solver",
]


class DenseSolver(MultiTaskSolver):
    r"""Generic solver: Cholesky of the dense ``nt x nt`` matrix ``G_t + N`` (paper 000, eq. (1)).

    ``μ_t(x) = G_t(x)ᵀ (G_t + N)⁻¹ Y_t`` and ``Γ_t(x, x') = Γ(x, x') − G_t(x)ᵀ (G_t + N)⁻¹
    G_t(x')`` with ``N = ηI`` (or the known noise variances on the diagonal). Costs O(n³t³)
    to build; used for kernels that are not a single separable term and for heteroscedastic
    known noise. :meth:`extend` appends points by one block row of the factor.

    Args:
        kernel: Multi-task kernel Γ (``n`` tasks).
        train_X: ``t x d`` (or ``batch x t x d``) training inputs, input-transformed.
        train_resid: ``t x n`` (or ``batch x t x n``) targets minus the prior mean.
        noise: η (0-dim) or the ``t·n`` interleaved known noise variances.
        chol: A factor of ``G_t + N`` to reuse (a ``CholeskyFactor`` or its lower triangle).

    Example:
        >>> solver = DenseSolver(kernel, train_X, train_resid, torch.tensor(0.1).double())
        >>> mean, cov = solver.predict(X)  # b x q x n, b x (q·n) x (q·n)
    """

    def __init__(
        self,
        kernel: MultiTaskKernel,
        train_X: Tensor,
        train_resid: Tensor,
        noise: Tensor,
        chol: Tensor | CholeskyFactor | None = None,
    ) -> None:
        self.kernel = kernel
        self.train_X = train_X
        self.noise = noise
        self.num_tasks = n = train_resid.shape[-1]
        t = train_X.shape[-2]
        if chol is None:
            G = dense(kernel.forward(train_X, train_X))
            chol = CholeskyFactor.from_matrix(G + _noise_matrix(noise, n * t, G))
        elif not isinstance(chol, CholeskyFactor):
            chol = CholeskyFactor(chol)
        self.factor = chol
        self.alpha = chol.solve(train_resid.reshape(*train_resid.shape[:-2], n * t, 1))
        self._frozen_ok = not torch.is_grad_enabled()  # hyperparameters may be read once

    @property
    def chol(self) -> Tensor:
        """The lower Cholesky factor of ``G_t + ηI``."""
        return self.factor.L

    def _solve(self, cross: Tensor) -> Tensor:
        """``L⁻¹ crossᵀ`` as ``batch x (t·n) x (q·n)``, with one flat triangular solve."""
        if self.factor.L.dim() > 2:  # batched training data: broadcast
            return self.factor.solve_lower(cross.transpose(-1, -2))
        flat = cross.reshape(-1, cross.shape[-1]).transpose(0, 1)
        v = self.factor.solve_lower(flat)
        return v.transpose(0, 1).reshape(cross.shape).transpose(-1, -2)

    def mean(self, X: Tensor) -> Tensor:
        """``Γ(X, X_t) α``: the cross-kernel and one product, no solve (see the base class)."""
        cross = cross_kernel(self.kernel, X, self.train_X)  # batch x (q·n) x (t·n)
        return (cross @ self.alpha).reshape(*cross.shape[:-2], X.shape[-2], self.num_tasks)

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        n = self.num_tasks
        if not full_cov and self.train_X.dim() > 2:  # batched data: blocks of the joint
            mean, cov = self.predict(X, full_cov=True)
            q = X.shape[-2]
            cov = cov.reshape(*cov.shape[:-2], q, n, q, n).diagonal(dim1=-4, dim2=-2)
            return mean, cov.movedim(-1, -3)
        if not full_cov:  # one point per block: batch x q x 1 x d
            mean, cov = self.predict(X.unsqueeze(-2), full_cov=True)
            return mean.squeeze(-2), cov.reshape(*X.shape[:-1], n, n)
        cross = cross_kernel(self.kernel, X, self.train_X)  # batch x (q·n) x (t·n)
        mean = (cross @ self.alpha).reshape(*cross.shape[:-2], X.shape[-2], n)
        prior = dense(self.kernel.forward(X, X))
        v = self._solve(cross)
        return mean, prior - v.transpose(-1, -2) @ v

    def predict_lazy_joint(self, X: Tensor) -> tuple[Tensor, KroneckerLowRankCovariance] | None:
        """Mean and ``Σ_j K_j ⊗ B_j − R Rᵀ`` with ``R = (L⁻¹ G_t(X))ᵀ`` (``q·n x t·n``), for a
        kernel whose task matrices are plain ``n x n``; ``None`` otherwise."""
        components = self.kernel.separable_components()
        if any(B.dim() != 2 for _, B in components):
            return None
        cross = cross_kernel(self.kernel, X, self.train_X)  # batch x (q·n) x (t·n)
        mean = (cross @ self.alpha).reshape(*cross.shape[:-2], X.shape[-2], self.num_tasks)
        terms = [(k(X, X), B.to(X)) for k, B in components]
        return mean, KroneckerLowRankCovariance.build(terms, self._solve(cross).transpose(-1, -2))

    def projected_predictor(
        self, directions: Tensor, out_scale: Tensor, out_shift: Tensor, in_affine: Affine
    ) -> ProjectedSeparablePredictor | None:
        """The hot-path predictor (see the base class) for unbatched data, a solver built
        without gradients and a kernel whose every term is a stationary RBF / Matérn kernel
        with a plain ``n x n`` task matrix; else ``None``."""
        if not self._frozen_ok or self.train_X.dim() > 2:
            return None
        terms: dict[int, tuple[FrozenStationaryCross, Tensor]] = {}
        for k, B in self.kernel.separable_components():
            if B.dim() != 2:
                return None
            if id(k) in terms:  # terms sharing one scalar kernel: their task matrices add up
                frozen, total = terms[id(k)]
                terms[id(k)] = (frozen, total + B.detach())
                continue
            frozen = FrozenStationaryCross.maybe(k, self.train_X)
            if frozen is None:
                return None
            terms[id(k)] = (frozen, B.detach().to(self.train_X))
        L_inv_T = self._lower_inverse_T() if directions.shape[-1] > 0 else None
        return ProjectedSeparablePredictor(
            list(terms.values()), L_inv_T, self.alpha.detach(), directions,
            out_scale, out_shift, in_affine,
        )

    def _lower_inverse_T(self) -> Tensor:
        """``(L⁻¹)ᵀ`` of the factor (detached), formed once per solver for its predictors."""
        cached = self.__dict__.get("_L_inv_T")
        if cached is None:
            L = self.chol.detach()
            eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
            cached = torch.linalg.solve_triangular(L, eye, upper=False).transpose(-1, -2)
            self._L_inv_T = cached
        return cached

    def information_gain(self) -> Tensor:
        """½ log det(I + N^{-1/2} G_t N^{-1/2}) with N = ηI or the known noise diagonal."""
        nt = self.factor.size
        log_noise = nt * torch.log(self.noise) if self.noise.dim() == 0 else torch.log(
            self.noise).sum(-1)
        return 0.5 * (self.factor.logdet() - log_noise)

    def extend(self, new_X: Tensor, train_X: Tensor, train_resid: Tensor) -> DenseSolver:
        """Solver with ``new_X`` appended: one block row of the Cholesky factor."""
        C = dense(self.kernel.forward(self.train_X, new_X))  # tn x mn
        D = dense(self.kernel.forward(new_X, new_X))
        if self.noise.dim() > 0:
            raise NotImplementedError("Extending a known-noise solver needs the new variances.")
        D = D + _noise_matrix(self.noise, D.shape[-1], D)
        return DenseSolver(self.kernel, train_X, train_resid, self.noise, self.factor.extend(C, D))


def _noise_matrix(noise: Tensor, size: int, like: Tensor) -> Tensor:
    """``ηI`` for a 0-dim η, ``diag(noise)`` for a vector of ``size`` variances."""
    if noise.dim() == 0:
        return noise * torch.eye(size, dtype=like.dtype, device=like.device)
    return torch.diag_embed(noise)


class ICMSolver(MultiTaskSolver):
    r"""ICM solver for Γ = k·B (paper 000, §3.3 and Appendix A), see the module docstring.

    With ``K_t = W diag(a) Wᵀ`` and ``B = U diag(ξ) Uᵀ`` the system ``G_t + ηI`` splits into
    ``n`` scalar problems along the eigen-directions ``u_i``:
    ``Γ_t(x, x) = Σ_i s_i(x) u_i u_iᵀ``, ``‖Γ_t(x, x)‖ = max_i s_i(x)``. One ``t x t``
    eigendecomposition of ``K_t`` and one ``n x n`` of ``B``; never forms the ``nt x nt``
    system. :meth:`extend` appends points in O(n t²) each.

    Args:
        data_kernel: Scalar kernel ``k``.
        task_covar: ``n x n`` PSD task matrix ``B``.
        train_X: ``t x d`` (or ``batch x t x d``) training inputs, input-transformed.
        train_resid: ``t x n`` (or ``batch x t x n``) targets minus the prior mean.
        noise: Regulariser η > 0 (0-dim tensor).
        K: The ``t x t`` matrix ``k(X_t, X_t)`` when already computed.
        eigen: ``(a, W)`` with ``K_t = W diag(a) Wᵀ`` when already computed (then ``K`` is
            not needed).

    Example:
        >>> k, B = kernel.icm_components()
        >>> solver = ICMSolver(k, B, train_X, train_resid, torch.tensor(0.1).double())
        >>> s = solver.eigen_variances(X)  # b x q x n, the s_i(x)
    """

    def __init__(
        self,
        data_kernel: Kernel,
        task_covar: Tensor,
        train_X: Tensor,
        train_resid: Tensor,
        noise: Tensor,
        K: Tensor | None = None,
        eigen: tuple[Tensor, Tensor] | None = None,
    ) -> None:
        self.data_kernel = data_kernel
        self.task_covar = task_covar
        self.train_X = self.base_X = train_X
        self.noise = noise
        self.num_tasks = train_resid.shape[-1]
        # hyperparameters read once for the acquisition hot path, where caches are detached
        self._frozen = None if torch.is_grad_enabled() else FrozenStationaryCross.maybe(
            data_kernel, train_X
        )
        if eigen is not None:
            a, W = eigen
        else:
            if K is None:
                K = dense(data_kernel.forward(train_X, train_X))
            a, W = torch.linalg.eigh(0.5 * (K + K.transpose(-1, -2)))
        self.a, self.W = a.clamp_min(0.0), W  # t, t x t
        self.rotation = ICMRotation(task_covar, self.a, noise, W.transpose(-1, -2), train_resid,
                                    normalized=False)
        self.xi, self.U = self.rotation.xi, self.rotation.U
        # appended block (empty until extend): inputs, P_1 = k(X_1, X_0) W, Cholesky of S_i
        self.block_X = train_X[:0]
        self.block_P = train_X.new_zeros(0, train_X.shape[-2])
        self.block_factor: CholeskyFactor | None = None
        self.block_coef: Tensor | None = None  # n x m: S_i⁻¹ (Y_1 u_i − m⁰_i(X_1))

    @property
    def block_size(self) -> int:
        """Number of points appended by :meth:`extend` since the eigendecomposition."""
        return self.block_X.shape[-2]

    # ------------------------------------------------------------------ prediction
    def _features(self, X: Tensor) -> Tensor:
        """``F(X) = k(X, X_0) W``: ``batch x q x t_0``."""
        if self._frozen is not None:
            return self._frozen(X) @ self.W
        return cross_kernel(self.data_kernel, X, self.base_X) @ self.W

    def _block_cross(self, X: Tensor, F: Tensor) -> Tensor:
        """``k⁰_i(X, X_1)``: ``batch x n x q x m``."""
        kx1 = cross_kernel(self.data_kernel, X, self.block_X)  # batch x q x m
        G = self.rotation.weights.transpose(-1, -2).unsqueeze(-1) * self.block_P.transpose(
            -1, -2
        )  # n x t0 x m
        return self.xi[:, None, None] * kx1.unsqueeze(-3) - F.unsqueeze(-3) @ G

    def _block_terms(self, X: Tensor, F: Tensor) -> tuple[Tensor, Tensor]:
        """The appended block's share of the rotated moments: the mean shift
        (``batch x q x n``) and ``V_i = S_i^{-1/2} k⁰_i(X_1, X)`` (``batch x n x m x q``), whose
        ``V_iᵀ V_i`` the block takes off the covariance along ``u_i``."""
        C = self._block_cross(X, F)  # batch x n x q x m
        shift = (C @ self.block_coef.unsqueeze(-1)).squeeze(-1).transpose(-1, -2)
        return shift, _solve_blocks(self.block_factor, C, shared=False)

    def eigen_variances(self, X: Tensor) -> Tensor:
        """Eigenvalues s_i(x) of Γ_t(x, x) along u_i, ``batch x q x n`` (clamped at 0).

        ‖Γ_t(x, x)‖ = max_i s_i(x) (paper 000, §3.3).
        """
        return self._moments(X, joint=False)[1]

    def _moments(self, X: Tensor, joint: bool) -> tuple[Tensor, Tensor]:
        """Rotated mean (``batch x q x n``) and ``s`` (``batch x q x n``) or ``S_i`` (joint)."""
        rot = self.rotation
        F = self._features(X)
        mean = rot.rotated_mean(F)
        if joint:
            Kqq = dense(self.data_kernel.forward(X, X))
            cov = rot.direction_covariances(F, Kqq)
        else:
            if self._frozen is not None:
                kxx = self._frozen.diag(X)
            else:
                kxx = dense(self.data_kernel.forward(X, X, diag=True))
            cov = rot.eigen_variances(F, kxx)
        if self.block_factor is not None:
            shift, V = self._block_terms(X, F)
            mean = mean + shift
            if joint:
                cov = cov - V.transpose(-1, -2) @ V
            else:
                cov = cov - V.pow(2).sum(-2).transpose(-1, -2)
        if not joint:
            cov = cov.clamp_min(0.0)
        return mean, cov

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        rot = self.rotation
        joint = full_cov and X.shape[-2] != 1  # for q = 1 the joint covariance is the block
        mean, cov = self._moments(X, joint=joint)
        mean = rot.to_tasks(mean)
        if joint:
            return mean, rot.joint_from_directions(cov)
        blocks = rot.blocks(cov)
        return mean, (blocks.squeeze(-3) if full_cov else blocks)

    def predict_lazy_joint(self, X: Tensor) -> tuple[Tensor, KroneckerLowRankCovariance]:
        """Mean and ``K_qq ⊗ B − R Rᵀ``: ``S_i = ξ_i K_qq − A_i A_iᵀ`` with
        ``A_i = F diag(√w_i)`` and, after :meth:`extend`, the block's ``V_iᵀ`` beside it."""
        rot = self.rotation
        F = self._features(X)
        mean = rot.rotated_mean(F)
        A = F.unsqueeze(-3) * rot.weights.transpose(-1, -2).sqrt().unsqueeze(-2)  # b x n x q x r
        if self.block_factor is not None:
            shift, V = self._block_terms(X, F)
            mean, Vt = mean + shift, V.transpose(-1, -2)
            rows = torch.broadcast_shapes(A.shape[:-1], Vt.shape[:-1])  # batch x n x q
            A = torch.cat([A.expand(*rows, A.shape[-1]), Vt.expand(*rows, Vt.shape[-1])], -1)
        cov = KroneckerLowRankCovariance.from_directions(
            self.data_kernel(X, X), rot.U, rot.xi, A
        )
        return rot.to_tasks(mean), cov

    def projected_variances(self, X: Tensor, W: Tensor) -> tuple[Tensor, Tensor]:
        """``Σ_i s_i(x) (u_iᵀ w_j)²``: no ``n x n`` blocks (see the base class)."""
        rot = self.rotation
        mean, s = self._moments(X, joint=False)
        return rot.to_tasks(mean), s @ (rot.U.transpose(-1, -2) @ W).pow(2)

    def projected_predictor(
        self, directions: Tensor, out_scale: Tensor, out_shift: Tensor, in_affine: Affine
    ) -> ProjectedICMPredictor | None:
        """The hot-path predictor (see the base class) for unbatched data, a frozen stationary
        kernel (a solver built without gradients) and no appended block; else ``None``."""
        if self._frozen is None or self.block_factor is not None or self.base_X.dim() > 2:
            return None
        return ProjectedICMPredictor(self.rotation, self._frozen, self.W, directions, out_scale,
                                     out_shift, in_affine)

    def information_gain(self) -> Tensor:
        gain = self.rotation.information_gain()
        if self.block_factor is not None:
            m = self.block_size
            gain = gain + 0.5 * (self.block_factor.logdet() - m * torch.log(self.noise)).sum()
        return gain

    # ------------------------------------------------------------------ conditioning
    def extend(self, new_X: Tensor, train_X: Tensor, train_resid: Tensor) -> ICMSolver:
        """Solver with ``new_X`` appended, in O(n t² m) (module docstring).

        Falls back to a new eigendecomposition when the appended block would outgrow the
        eigen part (``m > t_0``), reusing the already computed ``K_t``.

        Args:
            new_X: ``m x d`` appended inputs (input-transformed).
            train_X: ``(t+m) x d`` all training inputs (the first ``t`` rows are this solver's).
            train_resid: ``(t+m) x n`` all targets minus the prior mean.
        """
        k, t0 = self.data_kernel, self.base_X.shape[-2]
        if self.base_X.dim() > 2 or new_X.dim() > 2:
            raise NotImplementedError("The Schur-block extension is for unbatched data.")
        if self.block_size + new_X.shape[-2] > t0:
            K = dense(k.forward(train_X, train_X))
            return ICMSolver(k, self.task_covar, train_X, train_resid, self.noise, K=K)
        new = ICMSolver.__new__(ICMSolver)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_predictors", None)  # the model's predictors of this solver
        w = self.rotation.weights.transpose(-1, -2).unsqueeze(-1)  # n x t0 x 1
        P_new = cross_kernel(k, new_X, self.base_X) @ self.W  # m x t0
        eye = torch.eye(new_X.shape[-2], dtype=new_X.dtype, device=new_X.device)
        D = self.xi[:, None, None] * dense(k.forward(new_X, new_X)) - (P_new * w.transpose(
            -1, -2)) @ P_new.transpose(-1, -2) + self.noise * eye  # n x m x m
        if self.block_factor is None:
            factor = CholeskyFactor.from_matrix(D)
        else:
            C = self.xi[:, None, None] * dense(k.forward(self.block_X, new_X)) - (
                self.block_P * w.transpose(-1, -2)
            ) @ P_new.transpose(-1, -2)  # n x m_old x m
            factor = self.block_factor.extend(C, D)
        new.block_X = torch.cat([self.block_X, new_X], dim=-2)
        new.block_P = torch.cat([self.block_P, P_new], dim=-2)
        new.block_factor = factor
        new.train_X = train_X
        r1 = train_resid[t0:] @ self.U  # m_all x n, rotated targets of the block
        e = (r1 - self.rotation.rotated_mean(new.block_P)).transpose(-1, -2)  # n x m_all
        new.block_coef = factor.solve(e.unsqueeze(-1)).squeeze(-1)
        return new


class ICMCholeskySolver(MultiTaskSolver):
    r"""ICM solver for Γ = k·B from ``n`` Cholesky factors (paper 000, §3.3; module docstring).

    With ``B = U diag(ξ) Uᵀ`` the system ``G_t + ηI`` is, in B's eigenbasis, the ``n``
    blocks ``ξ_i K_t + ηI = L_i L_iᵀ``. Along direction ``u_i``

    .. math::
        m_i(x) = ξ_i k(x, X_t) (ξ_i K_t + ηI)^{-1} Y_t u_i, \qquad
        s_i(x) = ξ_i k(x, x) − ξ_i^2 \|L_i^{-1} k(X_t, x)\|^2,

    and ``μ_t(x) = Σ_i m_i(x) u_i``, ``Γ_t(x, x) = Σ_i s_i(x) u_i u_iᵀ``. Building costs ``n``
    Cholesky factors of size ``t`` (no eigendecomposition of ``K_t``); a prediction
    ``n`` triangular solves. :meth:`extend` appends points by one block row of each factor.

    Args:
        data_kernel: Scalar kernel ``k``.
        task_covar: ``n x n`` PSD task matrix ``B`` (eigenvalues clamped at 0).
        train_X: ``t x d`` (or ``batch x t x d``) training inputs, input-transformed.
        train_resid: ``t x n`` (or ``batch x t x n``) targets minus the prior mean.
        noise: Regulariser η > 0 (0-dim tensor).
        K: The ``t x t`` matrix ``k(X_t, X_t)`` when already computed.
        factors: ``(ξ, U, L)`` with ``L: n x t x t`` the factors of ``ξ_i K_t + ηI`` when
            already computed (e.g. by the last likelihood evaluation of a fit).

    Example:
        >>> k, B = kernel.icm_components()
        >>> solver = ICMCholeskySolver(k, B, train_X, train_resid, torch.tensor(0.1).double())
        >>> mean, blocks = solver.predict(X, full_cov=False)  # b x q x n, b x q x n x n
    """

    def __init__(
        self,
        data_kernel: Kernel,
        task_covar: Tensor,
        train_X: Tensor,
        train_resid: Tensor,
        noise: Tensor,
        K: Tensor | None = None,
        factors: tuple[Tensor, Tensor, Tensor] | None = None,
    ) -> None:
        self.data_kernel = data_kernel
        self.task_covar = task_covar
        self.train_X = train_X
        self.noise = noise
        self.num_tasks = train_resid.shape[-1]
        if factors is None:
            xi, U = torch.linalg.eigh(0.5 * (task_covar + task_covar.transpose(-1, -2)))
            xi = xi.clamp_min(0.0)
            if K is None:
                K = dense(data_kernel.forward(train_X, train_X))
            eye = torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
            factor = CholeskyFactor.from_matrix(
                xi[:, None, None] * K.unsqueeze(-3) + noise * eye
            )  # [batch x] n x t x t
        else:
            xi, U, L = factors
            factor = CholeskyFactor(L)
        self.xi, self.U, self.factor = xi, U, factor
        rotated = (train_resid @ U).transpose(-1, -2).unsqueeze(-1)  # [batch x] n x t x 1
        self.coef = xi[:, None] * factor.solve(rotated).squeeze(-1)  # ξ_i α_i, n x t

    def _cross(self, X: Tensor) -> Tensor:
        """``k(X, X_t)``: ``batch x q x t``."""
        return cross_kernel(self.data_kernel, X, self.train_X)

    def _moments(self, X: Tensor, joint: bool) -> tuple[Tensor, Tensor]:
        """Rotated mean ``batch x q x n`` and ``s`` (``batch x q x n``) or ``S_i``
        (``batch x n x q x q``, joint)."""
        kx = self._cross(X)
        mean = kx @ self.coef.transpose(-1, -2)
        V = _solve_blocks(self.factor, kx, shared=True)  # batch x n x t x q
        xi = self.xi
        if joint:
            Kqq = dense(self.data_kernel.forward(X, X))
            cov = xi[:, None, None] * Kqq.unsqueeze(-3) - xi[:, None, None].square() * (
                V.transpose(-1, -2) @ V
            )
            return mean, cov
        kxx = dense(self.data_kernel.forward(X, X, diag=True))
        s = xi * kxx.unsqueeze(-1) - xi.square() * V.square().sum(-2).transpose(-1, -2)
        return mean, s.clamp_min(0.0)

    def eigen_variances(self, X: Tensor) -> Tensor:
        """Eigenvalues s_i(x) of Γ_t(x, x) along u_i, ``batch x q x n`` (clamped at 0)."""
        return self._moments(X, joint=False)[1]

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        U = self.U
        joint = full_cov and X.shape[-2] != 1  # for q = 1 the joint covariance is the block
        mean, cov = self._moments(X, joint=joint)
        mean = mean @ U.transpose(-1, -2)
        if joint:
            return mean, interleave_blocks(torch.einsum("...ipr,ai,bi->...parb", cov, U, U))
        blocks = (U * cov.unsqueeze(-2)) @ U.transpose(-1, -2)
        return mean, (blocks.squeeze(-3) if full_cov else blocks)

    def predict_lazy_joint(self, X: Tensor) -> tuple[Tensor, KroneckerLowRankCovariance]:
        """Mean and ``K_qq ⊗ B − R Rᵀ``: ``S_i = ξ_i K_qq − A_i A_iᵀ``, ``A_i = ξ_i V_iᵀ``."""
        kx = self._cross(X)
        mean = kx @ self.coef.transpose(-1, -2)
        V = _solve_blocks(self.factor, kx, shared=True)  # batch x n x t x q
        A = self.xi[..., :, None, None] * V.transpose(-1, -2)  # batch x n x q x t
        cov = KroneckerLowRankCovariance.from_directions(self.data_kernel(X, X), self.U,
                                                         self.xi, A)
        return mean @ self.U.transpose(-1, -2), cov

    def projected_variances(self, X: Tensor, W: Tensor) -> tuple[Tensor, Tensor]:
        """``Σ_i s_i(x) (u_iᵀ w_j)²``: no ``n x n`` blocks (see the base class)."""
        mean, s = self._moments(X, joint=False)
        U = self.U
        return mean @ U.transpose(-1, -2), s @ (U.transpose(-1, -2) @ W).pow(2)

    def information_gain(self) -> Tensor:
        """½ Σ_i (log det(ξ_i K_t + ηI) − t log η) = ½ log det(I + η⁻¹ G_t)."""
        n, t = self.num_tasks, self.factor.size
        return 0.5 * (self.factor.logdet().sum(-1) - n * t * torch.log(self.noise))

    def extend(self, new_X: Tensor, train_X: Tensor, train_resid: Tensor) -> ICMCholeskySolver:
        """Solver with ``new_X`` appended: one block row of each of the ``n`` factors.

        Args:
            new_X: ``m x d`` appended inputs (input-transformed).
            train_X: ``(t+m) x d`` all training inputs (the first ``t`` rows are this solver's).
            train_resid: ``(t+m) x n`` all targets minus the prior mean.
        """
        k, xi = self.data_kernel, self.xi[:, None, None]
        C = xi * dense(k.forward(self.train_X, new_X)).unsqueeze(-3)  # n x t x m
        Knew = dense(k.forward(new_X, new_X)).unsqueeze(-3)
        eye = torch.eye(new_X.shape[-2], dtype=new_X.dtype, device=new_X.device)
        factor = self.factor.extend(C, xi * Knew + self.noise * eye)
        return ICMCholeskySolver(k, self.task_covar, train_X, train_resid, self.noise,
                                 factors=(self.xi, self.U, factor.L))


def _solve_blocks(factor: CholeskyFactor, cross: Tensor, shared: bool) -> Tensor:
    """``L_i⁻¹ crossᵀ`` for the ``n`` factors ``L_i`` of ``factor``: ``batch x n x t x q``.

    Args:
        factor: ``n`` factors, ``n x t x t`` (or ``train_batch x n x t x t``).
        cross: ``batch x q x t``, one right-hand side for every factor (``shared``), or
            ``batch x n x q x t``, one per factor.
        shared: Whether ``cross`` is shared by the factors.

    For unbatched factors the test batch is moved into the columns, so each factor is used
    once and never copied per test point; batched factors (batched training data) broadcast
    against ``cross``'s batch.
    """
    L = factor.L
    if L.dim() > 3:
        rhs = cross.transpose(-1, -2)
        return factor.solve_lower(rhs.unsqueeze(-3) if shared else rhs)
    n, t = L.shape[0], L.shape[-1]
    if shared:
        batch = cross.shape[:-1]  # (..., q)
        rhs = cross.reshape(-1, t).transpose(0, 1).expand(n, t, -1)
    else:
        batch = (*cross.shape[:-3], cross.shape[-2])
        rhs = cross.movedim(-3, 0).reshape(n, -1, t).transpose(-1, -2)
    V = factor.solve_lower(rhs)  # n x t x (B·q)
    return V.reshape(n, t, *batch).movedim((0, 1), (-3, -2))


def icm_factor_key(kernel: torch.nn.Module, train_X: Tensor, noise: Tensor) -> tuple[Tensor, ...]:
    """What the ICM factorisation of ``k(X, X)``, ``B`` and η depends on, as tensors.

    The training inputs, η and every parameter and buffer of the multi-task ``kernel``
    (detached, not copied): equal keys mean equal ``K_t``, ``B`` and η. Used with
    :class:`~botorch_mtucb.linalg.ICMFactorCache`.

    Args:
        kernel: The multi-task kernel Γ = k·B.
        train_X: ``t x d`` training inputs, input-transformed.
        noise: η (0-dim tensor).

    Example:
        >>> key = icm_factor_key(model.covar_module, train_X, torch.tensor(0.1).double())
    """
    state = [v.detach() for v in (*kernel.parameters(), *kernel.buffers())]
    return (train_X.detach(), noise.detach().reshape(()), *state)


def icm_solver(
    data_kernel: Kernel,
    task_covar: Tensor,
    train_X: Tensor,
    train_resid: Tensor,
    noise: Tensor,
    stored: tuple[str, tuple[Tensor, ...]] | None = None,
) -> ICMSolver | ICMCholeskySolver:
    """The ICM solver for Γ = k·B: by :func:`icm_posterior_method`, from stored factors
    of that route when given.

    ``stored`` (``(method, factors)`` from :meth:`~botorch_mtucb.linalg.ICMFactorCache.take`)
    builds the solver without factorising again when its route is the one
    :func:`icm_posterior_method` chooses; otherwise the chosen solver is built from scratch:
    :class:`ICMCholeskySolver` (``"cholesky"``) or :class:`ICMSolver` (``"eigh"``).

    Args:
        data_kernel: Scalar kernel ``k``.
        task_covar: ``n x n`` task matrix ``B``.
        train_X: ``t x d`` (or ``batch x t x d``) training inputs, input-transformed.
        train_resid: ``t x n`` (or ``batch x t x n``) targets minus the prior mean.
        noise: η > 0 (0-dim tensor).
        stored: Factors of a likelihood evaluation at the same hyperparameters and data.

    Example:
        >>> k, B = kernel.icm_components()
        >>> solver = icm_solver(k, B, train_X, train_resid, torch.tensor(0.1).double())
    """
    method = icm_posterior_method(train_resid.shape[-1], train_X.shape[-2])
    dtype = train_X.dtype
    if stored is not None and stored[0] == method and all(f.dtype == dtype for f in stored[1]):
        factors = stored[1]
        if method == "cholesky":
            return ICMCholeskySolver(data_kernel, task_covar, train_X, train_resid, noise,
                                     factors=factors)
        return ICMSolver(data_kernel, task_covar, train_X, train_resid, noise, eigen=factors)
    cls = ICMCholeskySolver if method == "cholesky" else ICMSolver
    return cls(data_kernel, task_covar, train_X, train_resid, noise)


#: Largest number of training points at which the posterior uses :class:`ICMSolver` even
#: where the likelihood takes Choleskys (:func:`icm_posterior_method`).
POSTERIOR_EIGH_MAX_POINTS = 1000


def icm_posterior_method(num_tasks: int, num_points: int) -> str:
    """The ICM posterior's route: ``"eigh"`` (:class:`ICMSolver`) or ``"cholesky"``.

    The eigen solver answers each test point with one product by ``W`` (its frozen predictor
    on the acquisition's hot path), the Cholesky solver with ``n`` triangular solves; an
    acquisition maximisation makes hundreds of such calls, which repay the one ``t x t``
    ``eigh`` up to :data:`POSTERIOR_EIGH_MAX_POINTS` points. Above that, and never where
    :func:`~botorch_mtucb.linalg.icm_likelihood_method` itself says ``"eigh"`` (many
    tasks), the ``n`` Cholesky factors, which a fit hands over, are kept.

    Args:
        num_tasks: ``n``.
        num_points: ``t``.

    Example:
        >>> icm_posterior_method(2, 300), icm_posterior_method(2, 5000)
        ('eigh', 'cholesky')
    """
    if num_points <= POSTERIOR_EIGH_MAX_POINTS:
        return "eigh"
    return icm_likelihood_method(num_tasks, num_points)

def extend_solver(
    solver: MultiTaskSolver, new_X: Tensor, train_X: Tensor, train_resid: Tensor
) -> MultiTaskSolver:
    """Solver for the training set extended by ``new_X``, reusing the old factorisation.

    The dense solver extends its Cholesky factor by one block row (O(n³t²m) instead of
    O(n³t³)); the ICM solver appends a Schur block (O(n t² m), see :class:`ICMSolver`).
    The result equals the solver built from scratch on ``train_X``.

    Args:
        solver: Solver of the old training set (its ``train_X`` is the first ``t`` rows).
        new_X: ``m x d`` appended inputs.
        train_X: ``(t+m) x d`` full training inputs.
        train_resid: ``(t+m) x n`` full targets minus the prior mean.

    Returns:
        The solver of ``(train_X, train_resid)``.

    Raises:
        NotImplementedError: For a solver without an incremental update (e.g. Nyström).

    Example:
        >>> old = DenseSolver(kernel, train_X[:10], train_resid[:10], torch.tensor(0.1).double())
        >>> new = extend_solver(old, train_X[10:], train_X, train_resid)
    """
    return solver.extend(new_X, train_X, train_resid)
