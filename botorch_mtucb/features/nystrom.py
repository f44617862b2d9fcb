"""Nyström feature embedding with a variance-sampled dictionary (paper 001, §5.1 (b)).

Given a dictionary ``D = {d_1, …, d_m}`` of points, the embedding is

    φ(x) = (K_D^{1/2})⁺ k_D(x) ∈ R^m,        K_D = [k(d_i, d_j)],  k_D(x) = [k(d_i, x)],

so that ``φ(x)ᵀφ(y) = k_D(x)ᵀ K_D⁺ k_D(y)`` is the projection of ``k`` onto the span of the
dictionary. The dictionary is drawn from the training points ``x_1, …, x_t``: each is kept
independently with probability ``p_i = min{q σ²_{t−1}(x_i), 1}``, where ``σ²_{t−1}`` is the
approximate posterior variance after round ``t − 1`` (paper 001, Algorithm 2 and its "Nyström
Embedding" routine; Theorem 4 takes ``q = 6ρ ln(4T/δ)/ε²``). Repeated points are kept once:
``D`` is a *set* of points, and on a finite arm set the same arm is pulled many times (the
authors' code likewise keeps a boolean mask over arms). Keeping duplicates would leave
``φᵀφ`` unchanged but add redundant directions.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.linalg.nystrom import psd_pinv_sqrt_factor as _linalg_pinv_sqrt_factor
from botorch_mtucb.utils.validation import as_real, check_finite

__all__ = ["NystromFeatures", "psd_pinv_sqrt", "psd_pinv_sqrt_factor", "unique_rows"]


def psd_pinv_sqrt_factor(matrix: Tensor, rtol: float | None = None) -> tuple[Tensor, Tensor]:
    """Factor ``(M^{1/2})⁺ = Q diag(s) Qᵀ`` of a symmetric PSD matrix, kept eigenpairs only.

    The package's one implementation, :func:`botorch_mtucb.linalg.nystrom.psd_pinv_sqrt_factor`
    (paper 001, §5.1 (b): the embedding ``φ(x) = (K_D^{1/2})⁺ k_D(x)``): eigenvalues
    ``e ≤ rtol · e_max`` (and non-positive ones) are treated as zero and dropped.

    Args:
        matrix: ``m x m`` symmetric PSD matrix.
        rtol: Relative eigenvalue cut-off; ``None`` (default) uses the dtype-aware
            :func:`~botorch_mtucb.linalg.nystrom.default_pinv_rtol` (≈2.2e-13 in float64,
            ≈1.2e-5 in float32).

    Returns:
        ``(Q, s)``: ``m x r`` orthonormal eigenvectors of the kept eigenvalues and the ``r``
        values ``s = e^{-1/2}``.
    """
    return _linalg_pinv_sqrt_factor(matrix, rtol)


def psd_pinv_sqrt(matrix: Tensor, rtol: float | None = None) -> Tensor:
    """Pseudo-inverse of the symmetric square root of a PSD matrix, ``(M^{1/2})⁺``.

    Args:
        matrix: ``m x m`` symmetric PSD matrix.
        rtol: Relative eigenvalue cut-off (see :func:`psd_pinv_sqrt_factor`; ``None``: the
            dtype-aware default).

    Returns:
        ``m x m`` symmetric matrix ``Q diag(e^{-1/2}) Qᵀ`` over the kept eigenpairs.
    """
    Q, s = psd_pinv_sqrt_factor(matrix, rtol)
    return (Q * s) @ Q.transpose(-1, -2)


class NystromFeatures:
    """Nyström embedding ``φ(x) = (K_D^{1/2})⁺ k_D(x)`` with a resampled dictionary.

    A plain (non-Module) object holding the base kernel, the sampling parameters and the
    current dictionary. :meth:`resample` and :meth:`with_dictionary` return *new* objects
    that share the kernel and generator, so a model and the model conditioned from it never
    share a mutable dictionary. A fresh object has an empty dictionary (``m = 0``):
    the features are empty and a model using them falls back to the prior variance.

    Example:
        >>> import torch
        >>> from gpytorch.kernels import RBFKernel
        >>> kern = RBFKernel()
        >>> kern.lengthscale = 0.2
        >>> nys = NystromFeatures(kern, epsilon=0.1, generator=torch.Generator().manual_seed(0))
        >>> nys.num_features
        0
        >>> train_X = torch.rand(30, 2, dtype=torch.float64)
        >>> nys = nys.resample(train_X, variances=nys.prior_variance(train_X), q=1.0)
        >>> nys.num_features  # q k(x, x) = 1: every distinct training point is kept
        30
        >>> nys(torch.rand(4, 5, 2, dtype=torch.float64)).shape  # 4 x 5 x m
        torch.Size([4, 5, 30])
    """

    def __init__(
        self,
        base_kernel: Kernel,
        q: float | None = None,
        epsilon: float = 0.1,
        generator: torch.Generator | None = None,
        rtol: float | None = None,
    ) -> None:
        """
        Args:
            base_kernel: Scalar GPyTorch kernel ``k`` with ``k(x, x) ≤ 1`` (e.g. ``RBFKernel``
                or ``PrecomputedKernel`` for finite arm sets).
            q: Oversampling parameter of ``p_i = min{q σ²(x_i), 1}``. ``None`` lets the model
                choose it from its schedule (theory: ``6ρ ln(4T/δ)/ε²``, Theorem 4; authors'
                code: ``ln(T)/ε²``).
            epsilon: Accuracy ``ε ∈ (0, 1)`` of the embedding (enters ``q`` and ``β``).
            generator: Random generator for the Bernoulli draws (reproducibility).
            rtol: Relative eigenvalue cut-off of the pseudo-inverse square root; ``None``
                (default) uses the dtype-aware
                :func:`~botorch_mtucb.linalg.nystrom.default_pinv_rtol` of the dictionary's
                kernel matrix.

        Raises:
            ValueError: on a kernel that is not a GPyTorch ``Kernel``, ``q ≤ 0``,
                ``ε ∉ (0, 1)`` or ``rtol ∉ (0, 1)``.
        """
        if not isinstance(base_kernel, Kernel):
            raise ValueError(
                f"`base_kernel` must be a gpytorch Kernel, got {type(base_kernel).__name__}."
            )
        if q is not None and not 0.0 < as_real(q, "q", "positive and finite (or None)") < math.inf:
            raise ValueError(f"`q` must be positive and finite (or None), got {q!r}.")
        if not 0.0 < as_real(epsilon, "epsilon", "a number in (0, 1)") < 1.0:
            raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon!r}.")
        if rtol is not None and not 0.0 < as_real(rtol, "rtol", "a number in (0, 1)") < 1.0:
            raise ValueError(f"`rtol` must lie in (0, 1) (or be None), got {rtol!r}.")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError(
                f"`generator` must be a torch.Generator or None, got {type(generator).__name__}."
            )
        self.base_kernel = base_kernel
        self.q = None if q is None else float(q)
        self.epsilon = float(epsilon)
        self.generator = generator
        self.rtol = None if rtol is None else float(rtol)
        self.dictionary: Tensor | None = None
        self._transform: Tensor | None = None  # (K_D^{1/2})⁺, m x m
        self._basis: Tensor | None = None  # m x r eigenvectors of K_D (kept)
        self._scale: Tensor | None = None  # r values e^{-1/2}

    # ------------------------------------------------------------------ construction
    def with_dictionary(self, dictionary: Tensor) -> NystromFeatures:
        """A copy of this object using the given dictionary (rows are points, kept as given).

        Args:
            dictionary: ``m x d`` dictionary points (``m = 0`` allowed).

        Returns:
            A new :class:`NystromFeatures` sharing kernel, ``q``, ``ε`` and generator.
        """
        check_finite(dictionary, "dictionary")
        if dictionary.dim() != 2:
            raise ValueError(
                f"`dictionary` must be an m x d matrix, got shape {tuple(dictionary.shape)}."
            )
        new = NystromFeatures.__new__(NystromFeatures)
        new.__dict__.update(self.__dict__)
        new.dictionary = dictionary
        with torch.no_grad():  # in the dictionary's dtype, whatever the kernel's parameters
            K_D = self.base_kernel(dictionary, dictionary).to_dense().to(dictionary)
        Q, scale = psd_pinv_sqrt_factor(K_D, self.rtol)  # symmetrised inside
        new._basis, new._scale = Q, scale
        new._transform = (Q * scale) @ Q.transpose(-1, -2)
        return new

    def resample(
        self, train_X: Tensor, variances: Tensor, q: float | None = None
    ) -> NystromFeatures:
        """Draw a new dictionary from the training points (paper 001, Nyström Embedding).

        Each ``x_i`` is kept with probability ``p_i = min{q σ²_{t−1}(x_i), 1}``; kept points
        are de-duplicated (first occurrence order).

        Args:
            train_X: ``t x d`` training inputs ``x_1, …, x_t``.
            variances: ``t`` approximate posterior variances ``σ²_{t−1}(x_i)`` after round
                ``t − 1`` (the prior variance :meth:`prior_variance` when there is no model
                yet).
            q: Oversampling parameter; defaults to ``self.q``.

        Returns:
            A new :class:`NystromFeatures` with the sampled dictionary.
        """
        q = self.q if q is None else as_real(q, "q", "positive")
        if q is None or not 0 < q < math.inf:
            raise ValueError(
                f"`q` must be positive and finite; got {q!r} (set it here or in __init__)."
            )
        check_finite(variances, "variances")
        if variances.shape != train_X.shape[:1] or train_X.dim() != 2:
            raise ValueError(
                f"`variances` must have shape (t,) matching `train_X` (t x d); got "
                f"{tuple(variances.shape)} and {tuple(train_X.shape)}."
            )
        keep = self.sample_mask(variances, q)
        return self.with_dictionary(unique_rows(train_X[keep]))

    def sample_mask(self, variances: Tensor, q: float) -> Tensor:
        """Independent Bernoulli draws with ``p_i = min{q σ²_i, 1}``; when none succeeds (few
        points with small variances), the point closest to acceptance (the smallest
        ``u_i / p_i`` among ``p_i > 0``) is kept, since an empty dictionary would leave the
        model without any of its readings.

        Args:
            variances: ``t`` variances (negative round-off is clamped to 0).
            q: Oversampling parameter.

        Returns:
            ``t`` boolean mask.
        """
        p = (q * variances.clamp_min(0.0)).clamp_max(1.0)
        u = torch.rand(p.shape, generator=self.generator, dtype=p.dtype, device=p.device)
        keep = u < p
        if p.numel() == 0:  # a shape, not a value: no host read
            return keep
        keys = torch.where(p > 0, u / p, torch.full_like(p, math.inf))
        first = keys == keys.min()  # tensor ops only (no host read); forced if nothing kept
        return keep | (first & (p > 0) & ~keep.any())

    # ------------------------------------------------------------------ evaluation
    @property
    def num_features(self) -> int:
        """Current dictionary size ``m_t`` (0 until the first :meth:`resample`)."""
        return 0 if self.dictionary is None else self.dictionary.shape[0]

    @property
    def transform(self) -> Tensor | None:
        """``(K_D^{1/2})⁺`` (``m x m``), or ``None`` while no dictionary is set."""
        return self._transform

    @property
    def factor(self) -> tuple[Tensor, Tensor] | None:
        """``(Q, s)`` with ``(K_D^{1/2})⁺ = Q diag(s) Qᵀ`` (``m x r``, ``r``), or ``None``."""
        return None if self._basis is None else (self._basis, self._scale)

    def __call__(self, X: Tensor) -> Tensor:
        """Evaluate ``φ(X) = k(X, D) (K_D^{1/2})⁺``.

        Args:
            X: ``... x n x d`` inputs.

        Returns:
            ``... x n x m`` features (``m = 0`` when the dictionary is empty or unset), in
            the dtype of ``X``. Values are not checked (a posterior's hot path: no host sync).
        """
        if not torch.is_tensor(X):
            raise ValueError(f"`X` must be a torch.Tensor, got {type(X).__name__}.")
        if self.dictionary is None or self.dictionary.shape[0] == 0:
            return X.new_zeros(*X.shape[:-1], 0)
        k_XD = self.base_kernel(X, self.dictionary.to(X)).to_dense().to(X)
        return k_XD @ self._transform.to(X)

    def prior_variance(self, X: Tensor) -> Tensor:
        """``k(x, x)`` at ``... x n x d`` inputs, shape ``... x n``."""
        with torch.no_grad():
            return self.base_kernel(X, X, diag=True).to(X)

    def kernel_scale(self, X: Tensor) -> Tensor:
        """``max_i k(x_i, x_i)`` over ``X`` (0-dim, at least the dtype's ``tiny``; 1 for an
        empty ``X``): the scale to divide posterior variances by before :meth:`resample`.

        Paper 001 keeps point i with probability ``p_i = min{q σ²_{t−1}(x_i), 1}`` for a
        kernel with ``k(x, x) ≤ 1``. A fitted kernel carries the rewards' units (outputscale
        ≈ Var y); dividing ``σ²`` by this scale applies the paper's rule to ``k / max k``,
        the same draw in any units (the paper's SE kernel, ``k(x, x) = 1``: unchanged).

        Example:
            >>> from gpytorch.kernels import RBFKernel, ScaleKernel
            >>> k = ScaleKernel(RBFKernel()).double()
            >>> k.outputscale = 1e-4
            >>> X = torch.rand(5, 2, dtype=torch.float64)
            >>> round(float(NystromFeatures(k).kernel_scale(X)), 6)
            0.0001
        """
        kxx = self.prior_variance(X)
        if kxx.numel() == 0:
            return kxx.new_ones(())
        return kxx.max().clamp_min(torch.finfo(kxx.dtype).tiny)

    def __repr__(self) -> str:
        return (
            f"NystromFeatures(base_kernel={type(self.base_kernel).__name__}, q={self.q}, "
            f"epsilon={self.epsilon}, m={self.num_features})"
        )


def unique_rows(X: Tensor) -> Tensor:
    """Distinct rows of ``X`` (``n x d``) in order of first occurrence."""
    if X.shape[0] <= 1:
        return X
    uniq, inverse = torch.unique(X, dim=0, return_inverse=True)
    first = torch.full((uniq.shape[0],), X.shape[0], dtype=torch.long, device=X.device)
    first = first.scatter_reduce(0, inverse, torch.arange(X.shape[0], device=X.device), "amin")
    return X[first.sort().values]
