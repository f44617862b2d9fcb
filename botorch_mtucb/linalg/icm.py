r"""The ICM rotation: Γ = k·B as ``n`` scalar problems in the eigenbasis of ``B``.

For Γ(x, x') = k(x, x') B with ``B = U diag(ξ) Uᵀ`` and Gaussian noise η, rotating the task
outputs by ``U`` decouples the ``n`` tasks: direction ``i`` is a scalar kernel problem with
kernel ``ξ_i k``, noise η and targets ``Y u_i`` (paper 000, §3.3 and Appendix A). If the
``t`` training points are represented by features whose Gram has spectrum ``c_j`` (``r``
directions), every direction shares the same features and only the diagonal
``1/(ξ_i c_j + η)`` changes with ``i``:

* exact (MT-KB): ``K_t = W diag(a) Wᵀ``, features ``F(x) = k_t(x)ᵀ W`` (unnormalised),
  spectrum ``a``;
* Nyström (MT-BKB): normalised features ``F(x) = Eᵀ φ̃_t(x)`` with ``ṽ_t = E diag(c) Eᵀ``
  (eqs. (7)–(8)).

Then, with ``inv_{ji} = 1/(ξ_i c_j + η)`` and ``g_j = 1`` (exact) or ``c_j`` (Nyström),

.. math::
    μ_t(x) = F(x) C Uᵀ, \quad C_{ji} = ξ_i\, inv_{ji}\, (F_{\rm train}^T Y U)_{ji}, \qquad
    s_i(x) = ξ_i k(x, x) − Σ_j F_j(x)^2\, ξ_i^2 g_j\, inv_{ji},

``Γ_t(x, x) = U diag(s(x)) Uᵀ`` and ``‖Γ_t(x, x)‖ = max_i s_i(x)``; the joint covariance over
``q`` points has ``S_i = ξ_i K_{qq} − F diag(ξ_i^2 g\, inv_{·i}) Fᵀ`` in direction ``i``. The
information gain is ``½ Σ_{i,j} log(1 + ξ_i c_j / η)``. :class:`ICMRotation` holds these
quantities; the exact and the Nyström ICM solvers only build the features.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["ICMRotation", "ProjectedICMPredictor", "interleave_blocks"]

#: ``(offset, coefficient)`` of an affine input transform, or ``None``.
Affine = tuple[Tensor, Tensor] | None


def _matmul(F: Tensor, M: Tensor) -> Tensor:
    """``F @ M`` for ``batch x q x r`` features and an ``[batch x] r x n`` matrix.

    An unbatched ``M`` takes one flat ``(batch·q) x r`` matmul instead of ``batch`` small ones;
    a batched one (a model with batched training data) broadcasts.
    """
    if M.dim() > 2:
        return F @ M
    flat = F.reshape(F.shape[:-1].numel(), F.shape[-1])
    return (flat @ M).reshape(*F.shape[:-1], M.shape[-1])


def interleave_blocks(cov: Tensor) -> Tensor:
    """Reshape ``batch x q x n x q x n`` into the interleaved ``batch x (q·n) x (q·n)``.

    Example:
        >>> interleave_blocks(torch.zeros(4, 2, 3, 2, 3)).shape
        torch.Size([4, 6, 6])
    """
    q, n = cov.shape[-4], cov.shape[-3]
    return cov.reshape(*cov.shape[:-4], q * n, q * n)


class ICMRotation:
    """The ``n`` rotated scalar problems of an ICM posterior sharing ``r`` feature directions.

    Args:
        task_covar: ``n x n`` PSD task matrix ``B`` (its eigenvalues are clamped at 0).
        spectrum: ``r`` eigenvalues ``c_j ≥ 0`` of the training features' Gram.
        noise: Regulariser η > 0 (0-dim tensor).
        train_features_t: ``r x t`` transposed training features (``Wᵀ`` for the exact
            model, whose training features are ``K_t W = W diag(a)`` up to the spectrum).
        train_resid: ``t x n`` training targets minus the prior mean.
        normalized: ``False`` for the exact model's unnormalised features (``g = 1``), ``True``
            for Nyström features (``g = c``).

    Example:
        >>> X = torch.linspace(0, 1, 4, dtype=torch.float64).unsqueeze(-1)
        >>> K = torch.exp(-((X - X.T) ** 2) / 0.1)
        >>> B = torch.tensor([[1.0, 0.6], [0.6, 1.0]], dtype=torch.float64)
        >>> a, W = torch.linalg.eigh(K)   # exact features: spectrum a, Wᵀ
        >>> eta = torch.tensor(0.1, dtype=torch.float64)
        >>> rot = ICMRotation(B, a, eta, W.T, torch.zeros(4, 2, dtype=torch.float64), False)
        >>> G = torch.kron(K, B)   # ½ log det(I + η⁻¹ K ⊗ B)
        >>> ref = 0.5 * torch.logdet(torch.eye(8, dtype=torch.float64) + G / eta)
        >>> torch.allclose(rot.information_gain(), ref)
        True
    """

    def __init__(
        self,
        task_covar: Tensor,
        spectrum: Tensor,
        noise: Tensor,
        train_features_t: Tensor,
        train_resid: Tensor,
        normalized: bool,
    ) -> None:
        xi, U = torch.linalg.eigh(0.5 * (task_covar + task_covar.transpose(-1, -2)))
        self.xi = xi.clamp_min(0.0)  # [batch x] n
        self.U = U  # [batch x] n x n, columns u_i
        self.noise = noise  # 0-dim, or batch x 1 x 1 (one η per batch member)
        self.spectrum = spectrum.clamp_min(0.0)  # [batch x] r
        xi_row = self.xi.unsqueeze(-2)  # [batch x] 1 x n
        self.inv = 1.0 / (self.spectrum.unsqueeze(-1) * xi_row + noise)  # [batch x] r x n
        proj = train_features_t @ (train_resid @ U)  # [batch x] r x n
        self.coef = xi_row * self.inv * proj  # [batch x] r x n
        gain = self.spectrum.unsqueeze(-1) if normalized else 1.0
        self.weights = xi_row**2 * gain * self.inv  # [batch x] r x n

    def rotated_mean(self, F: Tensor) -> Tensor:
        """Mean in the rotated coordinates, ``batch x q x n``, for features ``batch x q x r``."""
        return _matmul(F, self.coef)

    def to_tasks(self, rotated: Tensor) -> Tensor:
        """Rotate ``... x n`` values back to task coordinates (``· Uᵀ``)."""
        return rotated @ self.U.transpose(-1, -2)

    def eigen_variances(self, F: Tensor, kxx: Tensor) -> Tensor:
        """``s_i(x)`` (unclamped), ``batch x q x n``, from ``F`` and ``k(x, x)`` (``batch x q``)."""
        return self.xi.unsqueeze(-2) * kxx.unsqueeze(-1) - _matmul(F.pow(2), self.weights)

    def blocks(self, s: Tensor) -> Tensor:
        """Task blocks ``U diag(s) Uᵀ``: ``batch x q x n x n`` from ``batch x q x n``."""
        U = self.U.unsqueeze(-3)  # [batch x] 1 x n x n: one U for the q points
        return (U * s.unsqueeze(-2)) @ U.transpose(-1, -2)

    def direction_covariances(self, F: Tensor, Kqq: Tensor) -> Tensor:
        """``S_i = ξ_i K_qq − F diag(w_i) Fᵀ`` stacked as ``batch x n x q x q``."""
        Fw = F.unsqueeze(-3) * self.weights.transpose(-1, -2).unsqueeze(-2)  # b x n x q x r
        return self.xi[..., :, None, None] * Kqq.unsqueeze(-3) - Fw @ F.unsqueeze(-3).transpose(
            -1, -2
        )

    def joint_from_directions(self, S: Tensor) -> Tensor:
        """Interleaved ``batch x (q·n) x (q·n)`` covariance from ``batch x n x q x q`` ``S_i``."""
        cov = torch.einsum("...ipr,...ai,...bi->...parb", S, self.U, self.U)
        return interleave_blocks(cov)

    def information_gain(self) -> Tensor:
        """½ Σ_{i,j} log(1 + ξ_i c_j / η) = ½ log det(I + η⁻¹ G) of the represented Gram."""
        gain = torch.log1p(self.spectrum.unsqueeze(-1) * self.xi.unsqueeze(-2) / self.noise)
        return 0.5 * gain.sum((-1, -2))


class ProjectedICMPredictor:
    r"""μ(x) and ``wⱼᵀ Γ_t(x, x) wⱼ`` of an ICM posterior in a few fused tensor operations.

    The acquisition hot path (``optimize_acqf`` evaluates the same posterior hundreds of
    times): fixed hyperparameters, fixed directions ``W`` (``n x k``, original outcome scale), a
    stationary data kernel ``k = s·κ`` with frozen scaled training inputs
    (:class:`~botorch_mtucb.linalg.stationary.FrozenStationaryCross`), an optional affine input
    map ``x ↦ (x − o)/c`` (``Normalize``), a constant prior mean ``c_μ`` and the affine outcome
    map ``y = σ ∘ f + m`` (``Standardize``) are folded into constant matrices:

    .. math::
        F(x) = s\,κ(x)\,V, \qquad μ(x) = F(x)\,(C\,U^T \mathrm{diag}\,σ) + (c_μ ∘ σ + m),

        w_j^T Γ_t(x, x) w_j = Σ_i \max\big(s ξ_i − Σ_r F_r(x)^2 w_{ri},\ 0\big)\,
        (u_i^T (σ ∘ w_j))^2,

    with ``K_t = V diag(a) Vᵀ`` (or the Nyström features), ``C`` and ``w_{ri}`` the rotation's
    mean coefficients and variance weights (paper 000, §3.3 and App. A; the module
    docstring). The outputscale ``s`` is folded into the mean map and the weights, so the
    solver's ``V`` is shared, not copied. Equal to the solver's general path up to rounding; no
    gradient flows to the hyperparameters.

    Args:
        rotation: The solver's :class:`ICMRotation`.
        kernel: Frozen evaluator of ``k`` against the (input-transformed) training inputs.
        eigvecs: The features' linear map ``V``: the ``t x t`` eigenvectors of ``K_t`` (exact),
            or the ``|S| x r`` rotated Nyström map ``M_q`` against the basis points (MT-BKB,
            where ``F(x) = Eᵀφ̃_t(x)``).
        directions: ``n x k`` directions ``W``.
        out_scale: ``n`` outcome scale σ (ones without an outcome transform).
        out_shift: ``n`` outcome shift ``c_μ ∘ σ + m``.
        in_affine: ``(o, c)``, each ``d``, of an affine input transform, or ``None``.
    """

    def __init__(
        self,
        rotation: ICMRotation,
        kernel,
        eigvecs: Tensor,
        directions: Tensor,
        out_scale: Tensor,
        out_shift: Tensor,
        in_affine: Affine = None,
    ) -> None:
        self.kernel = kernel
        scale = kernel.scale
        self.features = eigvecs  # the solver's V, shared (no copy): G(x) = κ(x) V, F = s G
        mean_map = (rotation.coef @ rotation.U.transpose(-1, -2)) * out_scale  # t x n
        self.mean_map = scale * mean_map  # μ = F C' = G (s C')
        self.mean_shift = out_shift  # n
        self.prior = rotation.xi * scale  # n: s ξ_i = ξ_i k(x, x)
        self.weights = scale.square() * rotation.weights  # t x n: F² w = G² (s² w)
        self.proj = (rotation.U.transpose(-1, -2) @ (out_scale.unsqueeze(-1) * directions)).pow(2)
        length = kernel.lengthscale.reshape(-1)
        if in_affine is None:
            self.shift, self.divisor = None, length
        else:
            self.shift, self.divisor = in_affine[0], in_affine[1] * length

    def __call__(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """``(mean, quad)``: ``batch x q x n`` and ``batch x q x k`` at ``X: batch x q x d``
        (any ``batch x d`` shape: the results then have ``batch x n`` and ``batch x k``)."""
        flat = X.reshape(-1, X.shape[-1])
        Xs = (flat if self.shift is None else flat - self.shift) / self.divisor
        G = self.kernel.profile(Xs) @ self.features  # N x r: F(x) / s
        mean = torch.addmm(self.mean_shift, G, self.mean_map)
        s = torch.addmm(self.prior, G * G, self.weights, alpha=-1.0).clamp_min(0.0)
        quad = s @ self.proj
        return mean.reshape(*X.shape[:-1], -1), quad.reshape(*X.shape[:-1], -1)
