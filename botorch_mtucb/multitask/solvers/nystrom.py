"""Nyström (MT-BKB) posterior solvers (paper 000, §3.2, Appendix A eqs. (7)–(8), Appendix D).

Given a dictionary ``D_t = {x_{i_1}, …, x_{i_m}}`` of training points with inclusion
probabilities ``p_j``, the reweighted embedding of ``x`` is ``G̃_t(x)`` (the ``nm x n`` stack of
``Γ(x_{i_j}, x)/√p_j``), ``G̃_t`` the reweighted ``nm x nm`` dictionary Gram and

    Φ̃_t(x) = (G̃_t^{1/2})⁺ G̃_t(x),          Ṽ_t = Σ_s Φ̃_t(x_s) Φ̃_t(x_s)ᵀ,
    μ̃_t(x)      = Φ̃_t(x)ᵀ (Ṽ_t + ηI)⁻¹ Σ_s Φ̃_t(x_s) y_s,
    Γ̃_t(x, x') = Γ(x, x') − Φ̃_t(x)ᵀ Φ̃_t(x') + η Φ̃_t(x)ᵀ (Ṽ_t + ηI)⁻¹ Φ̃_t(x').

The last line is the deterministic-training-conditional (DTC) form: the residual
``Γ − Φ̃ᵀΦ̃`` keeps the prior variance in directions the dictionary does not span, so far from
the data ``Γ̃_t(x, x) = Γ(x, x)`` (no variance starvation).

* :class:`NystromSolver` — any multi-task kernel, through the ``nm``-dimensional embedding.
* :class:`ICMNystromSolver` (:mod:`botorch_mtucb.multitask.solvers.nystrom_icm`) — Γ = k·B: the
  scalar embedding ``φ̃_t(x) = (K̃_D^{1/2})⁺ k̃_D(x)``
  and ``n`` problems of size ``m`` that share one eigendecomposition of ``ṽ_t = Σ_s φ̃φ̃ᵀ``
  (eqs. (7)–(8)).

Factoring the dictionary Gram (rank deficiency is normal, never an error):

* ``"eigh"`` — the paper's ``(G̃^{1/2})⁺``: ``eigh`` of the reweighted Gram, eigenvalues below
  ``rtol · λ_max`` dropped, reduced coordinates ``ψ(x) = diag(λ_r^{-1/2}) Q_rᵀ G̃_t(x)``
  (``Φ̃_t(x) = Q_r ψ(x)`` with ``Q_r`` orthonormal, so every quantity above is unchanged).
  O(n³m³).
* ``"pivoted_cholesky"`` — by Lemma 8 (Appendix D), ``Φ̃_t(x)ᵀΦ̃_t(x') = Φ(x)ᵀ P_t Φ(x')`` with
  ``P_t`` the orthogonal projection on the span of the dictionary's embeddings: μ̃_t and Γ̃_t
  depend on the dictionary only through that span (the weights ``1/√p`` cancel). A pivoted
  Cholesky of the dictionary Gram, stopped once every residual diagonal entry is below
  ``rtol · max diag``, gives a basis of that span from ``r`` pivot points in O(nm r²) with
  ``ψ(x) = L_PP⁻¹ Γ(X_P, x)``. For smooth kernels the numerical rank ``r`` is far below
  ``nm``, which is what keeps large dictionaries cheap.
* ``"auto"`` (default) — ``"eigh"`` when ``nm ≤ 256``, else ``"pivoted_cholesky"``.

An empty dictionary (``m = 0``) or a Gram with nothing above the cutoff gives the prior (zero
mean change, covariance Γ).

Cost with ``t`` training points and ``r`` kept directions: building O(t n² r² ) (generic) or
O(t r²) (ICM) plus the factorisation above; each query point then costs O(n² r²) (generic)
or O(n r) (ICM), independent of ``t``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel, kron_interleaved
from botorch_mtucb.linalg.factor import CholeskyFactor
from botorch_mtucb.linalg.nystrom import (
    default_pinv_rtol,
    pivoted_cholesky,
    reduced_pinv_sqrt,
)
from botorch_mtucb.multitask.solvers.base import MultiTaskSolver, cross_kernel, dense

__all__ = ["NystromSolver", "NystromSolverBase"]


def _dense_cross(kernel: MultiTaskKernel, X1: Tensor, X2: Tensor) -> Tensor:
    """Dense interleaved Γ(X1, X2), ``(N1·n) x (N2·n)``, summed over the separable terms."""
    return sum(
        kron_interleaved(dense(k.forward(X1, X2)), B) for k, B in kernel.separable_components()
    )


def check_dictionary(train_X: Tensor, indices: Tensor, probs: Tensor) -> None:
    """Check a dictionary: ``m`` row indices of ``train_X`` and ``m`` probabilities in (0, 1].

    Raises:
        ValueError: On mismatched shapes, indices outside ``[0, t)`` or probabilities
            outside (0, 1].
    """
    if indices.dim() != 1 or probs.shape != indices.shape:
        raise ValueError(
            "`indices` and `probs` must be 1-d tensors of the same length, got shapes "
            f"{tuple(indices.shape)} and {tuple(probs.shape)}."
        )
    if not indices.numel():
        return
    bad_index = (indices.min() < 0) | (indices.max() >= train_X.shape[-2])
    bad_prob = ~((probs > 0) & (probs <= 1)).all()
    bad_index, bad_prob = torch.stack([bad_index, bad_prob]).tolist()  # one host read
    if bad_index:
        raise ValueError(f"`indices` must lie in [0, {train_X.shape[-2] - 1}].")
    if bad_prob:
        raise ValueError("`probs` (inclusion probabilities) must lie in (0, 1].")


_METHODS = ("auto", "eigh", "pivoted_cholesky")
_AUTO_EIGH_MAX = 256
#: Largest dictionary Gram (rows) that the pivoted Cholesky reads from one precomputed matrix
#: instead of one kernel column per pivot.
DENSE_GRAM_MAX = 3000


def resolve_method(method: str, size: int) -> str:
    """The factorisation of a dictionary Gram of ``size`` rows: ``"auto"`` resolves to
    ``"eigh"`` up to 256 rows, else ``"pivoted_cholesky"``.

    Raises:
        ValueError: If ``method`` is not ``"auto"``, ``"eigh"`` or ``"pivoted_cholesky"``.
    """
    if method not in _METHODS:
        raise ValueError(f"`method` must be one of {_METHODS}, got {method!r}.")
    if method == "auto":
        return "eigh" if size <= _AUTO_EIGH_MAX else "pivoted_cholesky"
    return method


def lower_inverse(L: Tensor) -> Tensor:
    """``L⁻¹`` of an ``r x r`` lower-triangular ``L`` (one triangular solve)."""
    eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    return torch.linalg.solve_triangular(L, eye, upper=False)


class NystromSolverBase(MultiTaskSolver):
    """What the Nyström solvers share: the per-point variance summaries of Γ̃_t.

    MT-BKB (paper 000, Algorithm 2) draws the next dictionary with probabilities
    ``p = min{q ‖Γ̃_t(x, x)‖, 1}`` and Theorem 3's β̃_t sums
    ``log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s))``; :meth:`variance_summary` gives both.
    Subclasses (:class:`NystromSolver`,
    :class:`~botorch_mtucb.multitask.solvers.nystrom_icm.ICMNystromSolver`) may supply the
    eigenvalues of Γ̃_t(x, x) more cheaply than from the ``n x n`` blocks.
    """

    noise: Tensor
    train_X: Tensor
    rank: int
    method: str

    def variance_summary(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Spectral norm and log-determinant of Γ̃_t(x, x) at each point.

        Args:
            X: ``batch x q x d`` (or ``q x d``) inputs.

        Returns:
            ``(‖Γ̃_t(x, x)‖, log det(I_n + η⁻¹ Γ̃_t(x, x)))``, each ``batch x q``. The norm is
            what the next round's inclusion probabilities use; the log-determinant is a term
            of the Theorem-3 sum Σ_s log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)).
        """
        return self._summary(self._block_eigenvalues(X.to(self.dtype)))

    def _summary(self, evals: Tensor) -> tuple[Tensor, Tensor]:
        return evals.max(dim=-1).values, torch.log1p(evals / self.noise).sum(-1)

    def _block_eigenvalues(self, X: Tensor) -> Tensor:
        blocks = self.task_blocks(X)
        blocks = 0.5 * (blocks + blocks.transpose(-1, -2))
        return torch.linalg.eigvalsh(blocks).clamp_min(0.0)

    def train_variance_summary(self) -> tuple[Tensor, Tensor]:
        """:meth:`variance_summary` at the training points (cached), each ``t``."""
        cached = getattr(self, "_train_summary", None)
        if cached is None:
            cached = self._compute_train_summary()
            self._train_summary = cached
        return cached

    def _compute_train_summary(self) -> tuple[Tensor, Tensor]:
        return self.variance_summary(self.train_X)


class NystromSolver(NystromSolverBase):
    """MT-BKB posterior for any multi-task kernel, via the ``nm``-dimensional embedding.

    Implements paper 000 §3.2 (the formulas in the module docstring) with the reweighted
    dictionary Gram ``G̃_t`` of size ``nm x nm`` and one Cholesky factor of ``V + ηI`` in the
    ``r``-dimensional reduced coordinates ``ψ(x) = M Γ(X_S, x)`` (``X_S`` the basis points).

    Two ways to factor the dictionary Gram, with the same result up to the cutoff:

    * ``"eigh"`` — ``(G̃^{1/2})⁺`` by ``eigh`` of the reweighted ``nm x nm`` Gram, eigenvalues
      below ``rtol·λ_max`` dropped (the paper's formula); O(n³m³).
    * ``"pivoted_cholesky"`` — a pivoted Cholesky of the (unweighted) Gram that stops once every
      residual diagonal entry is below ``rtol·max diag``; O(nm r²) for numerical rank ``r``.
      By Lemma 8 (Appendix D) ``Φ̃_t(x)ᵀΦ̃_t(x') = Φ(x)ᵀP_tΦ(x')`` with ``P_t`` the projection
      on the span of the dictionary, so μ̃ and Γ̃ depend on the dictionary only through that
      span: the weights ``1/√p`` cancel and any basis of the span gives the same posterior.
    * ``"auto"`` (default) — ``"eigh"`` when ``nm ≤ 256``, else ``"pivoted_cholesky"``.

    Example:
        >>> idx, p = torch.tensor([0, 3, 5, 8]), torch.full((4,), 0.5, dtype=torch.float64)
        >>> eta = torch.tensor(0.1, dtype=torch.float64)
        >>> solver = NystromSolver(kernel, train_X, train_resid, eta, idx, p)
        >>> mean, blocks = solver.predict(X, full_cov=False)  # b x q x n, b x q x n x n
        >>> norms, log_dets = solver.variance_summary(X)  # b x q each
    """

    def __init__(
        self,
        kernel: MultiTaskKernel,
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
            kernel: Multi-task kernel Γ (``n`` tasks).
            train_X: ``t x d`` training inputs (input-transformed).
            train_resid: ``t x n`` targets minus the prior mean.
            noise: Regulariser η > 0 (scalar tensor).
            indices: ``m`` LongTensor, dictionary rows of ``train_X`` (repeats allowed).
            probs: ``m`` inclusion probabilities ``p_j ∈ (0, 1]`` (weights ``1/√p_j``).
            rtol: Relative cutoff of the pseudo-inverse square root (default
                :func:`default_pinv_rtol`).
            method: ``"auto"``, ``"eigh"`` or ``"pivoted_cholesky"`` (see the class docstring).
        """
        check_dictionary(train_X, indices, probs)
        self.kernel = kernel
        self.train_X = train_X
        self.noise = noise
        self.num_tasks = n = train_resid.shape[-1]
        self.indices = indices
        self.probs = probs
        self.rtol = default_pinv_rtol(train_X.dtype) if rtol is None else rtol
        self.method = resolve_method(method, n * indices.numel())
        self.basis_X, self.M = self._factor(train_X[indices], probs)
        self.rank = r = self.M.shape[0]
        psi = self._embed(train_X)  # r x (t·n)
        self.train_psi = psi
        V = psi @ psi.transpose(-1, -2)
        eye = torch.eye(r, dtype=V.dtype, device=V.device)
        self.factor = CholeskyFactor.from_matrix(V + noise * eye)
        self.chol = self.factor.L
        b = psi @ train_resid.reshape(-1, 1)  # Σ_s ψ(x_s) y_s
        self.alpha = self.factor.solve(b)  # (V + ηI)⁻¹ b, r x 1

    def _factor(self, dict_X: Tensor, probs: Tensor) -> tuple[Tensor, Tensor]:
        """Basis points ``X_S`` and ``M`` (``r x |S|n``) with ``ψ(x) = M Γ(X_S, x)``."""
        n, m = self.num_tasks, dict_X.shape[-2]
        if m == 0:
            return dict_X, dict_X.new_zeros(0, 0)
        if self.method == "eigh":
            w = probs.rsqrt().repeat_interleave(n)  # interleaved weights, nm
            G = dense(self.kernel.forward(dict_X, dict_X)) * w[:, None] * w[None, :]
            return dict_X, reduced_pinv_sqrt(G, self.rtol) * w[None, :]
        def column(i: Tensor) -> Tensor:  # i: one-element LongTensor on the device
            block = _dense_cross(self.kernel, dict_X, dict_X.index_select(0, i // n))
            return block.index_select(1, i % n)

        if n * m <= DENSE_GRAM_MAX:  # one kernel call instead of one per pivot point
            G = _dense_cross(self.kernel, dict_X, dict_X)
            diag, column = torch.diagonal(G).clone(), lambda i: G[:, i]  # noqa: F811
        else:
            diag = dense(self.kernel.forward(dict_X, dict_X, diag=True)).reshape(-1)

        piv, L = pivoted_cholesky(diag, column, self.rtol)
        r = piv.numel()
        if r == 0:
            return dict_X[:0], dict_X.new_zeros(0, 0)
        uniq, inv = torch.unique(piv // n, return_inverse=True)
        M = dict_X.new_zeros(r, uniq.numel() * n)
        M[:, inv * n + piv % n] = lower_inverse(L)
        return dict_X[uniq], M

    def _embed(self, X: Tensor) -> Tensor:
        """``ψ(X)``: ``batch x r x (q·n)`` for ``X: batch x q x d``."""
        q = X.shape[-2]
        if self.rank == 0:
            return X.new_zeros(*X.shape[:-2], 0, q * self.num_tasks)
        cross = cross_kernel(self.kernel, X, self.basis_X)  # batch x qn x sn
        return self.M @ cross.transpose(-1, -2)

    def mean(self, X: Tensor) -> Tensor:
        psi = self._embed(X)
        m = psi.transpose(-1, -2) @ self.alpha  # batch x qn x 1
        return m.reshape(*X.shape[:-1], self.num_tasks)

    def covariance(self, X: Tensor) -> Tensor:
        prior = dense(self.kernel.forward(X, X))
        if self.rank == 0:
            return prior
        psi = self._embed(X)
        A = self.factor.solve_lower(psi)
        return prior - psi.transpose(-1, -2) @ psi + self.noise * (A.transpose(-1, -2) @ A)

    def task_blocks(self, X: Tensor) -> Tensor:
        return self._blocks_from_psi(X, self._embed(X))

    def predict(self, X: Tensor, full_cov: bool = True) -> tuple[Tensor, Tensor]:
        psi = self._embed(X)  # shared by the mean and the covariance
        mean = (psi.transpose(-1, -2) @ self.alpha).reshape(*X.shape[:-1], self.num_tasks)
        if not full_cov:
            return mean, self._blocks_from_psi(X, psi)
        prior = dense(self.kernel.forward(X, X))
        if self.rank == 0:
            return mean, prior
        A = self.factor.solve_lower(psi)
        cov = prior - psi.transpose(-1, -2) @ psi + self.noise * (A.transpose(-1, -2) @ A)
        return mean, cov

    def _blocks_from_psi(self, X: Tensor, psi: Tensor) -> Tensor:
        n, q = self.num_tasks, X.shape[-2]
        Xp = X.unsqueeze(-2)  # batch x q x 1 x d
        prior = dense(self.kernel.forward(Xp, Xp))  # batch x q x n x n
        if self.rank == 0:
            return prior
        A = self.factor.solve_lower(psi)
        psi4 = psi.reshape(*psi.shape[:-1], q, n)  # batch x r x q x n
        A4 = A.reshape(*A.shape[:-1], q, n)
        explained = torch.einsum("...rqa,...rqb->...qab", psi4, psi4)
        return prior - explained + self.noise * torch.einsum("...rqa,...rqb->...qab", A4, A4)

    def _compute_train_summary(self) -> tuple[Tensor, Tensor]:
        blocks = self._blocks_from_psi(self.train_X, self.train_psi)
        blocks = 0.5 * (blocks + blocks.transpose(-1, -2))
        return self._summary(torch.linalg.eigvalsh(blocks).clamp_min(0.0))

    def information_gain(self) -> Tensor:
        """½ log det(I + η⁻¹ Ṽ_t) = ½ log det(I_{nt} + η⁻¹ Φ̃_XᵀΦ̃_X) (Nyström estimate)."""
        return 0.5 * (self.factor.logdet() - self.rank * torch.log(self.noise))
