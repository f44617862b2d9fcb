"""A scalar kernel over a finite set of arms given as a fixed PSD matrix: k(i, j) = M_ij
(paper 001, §6: the stock and light-sensor experiments)."""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.utils.validation import check_psd_matrix

__all__ = ["PrecomputedKernel"]


class PrecomputedKernel(Kernel):
    """Scalar kernel k(i, j) = M[i, j] on arms ``0, …, A−1``.

    Inputs are arm indices stored as floats in a last dimension of size one
    (``batch_shape x N x 1``), the form ``optimize_acqf_discrete`` passes candidates in. Used
    for the stock and light-sensor experiments (paper 001, §6), where the kernel is the
    empirical correlation of the data, and for any finite candidate set with a known
    covariance. It also works as the scalar kernel inside :class:`ICMKernel`.

    Inputs are validated (integer, in range) the first time a tensor is seen; later calls with
    the same tensor (same storage, shape, strides and version, e.g. the candidate set of every
    acquisition evaluation) skip the check, so evaluations do not synchronise with the device.

    Example:
        >>> import torch
        >>> M = torch.tensor([[1.0, 0.8, 0.1], [0.8, 1.0, 0.2], [0.1, 0.2, 1.0]])
        >>> kernel = PrecomputedKernel(M)
        >>> arms = torch.tensor([[0.0], [2.0]])   # N x 1 arm indices
        >>> kernel(arms).to_dense()
        tensor([[1.0000, 0.1000],
                [0.1000, 1.0000]])
    """

    has_lengthscale = False

    def __init__(self, matrix: Tensor, **kwargs) -> None:
        """
        Args:
            matrix: ``A x A`` symmetric PSD kernel matrix over the arms.
        """
        super().__init__(**kwargs)
        self.register_buffer("matrix", check_psd_matrix(matrix, "matrix").clone())
        self._validated: list[tuple[tuple, Tensor]] = []  # (key, input): validated inputs

    @property
    def num_arms(self) -> int:
        """Number of arms A."""
        return self.matrix.shape[0]

    def arm_indices(self, x: Tensor, name: str = "x") -> Tensor:
        """Float arm indices ``batch_shape x N x 1`` as a ``batch_shape x N`` LongTensor."""
        if x.shape[-1] != 1:
            raise ValueError(
                f"`{name}` must hold arm indices in a last dimension of size 1, got shape "
                f"{tuple(x.shape)}."
            )
        idx = x[..., 0].round()
        if (idx - x[..., 0]).abs().max() > 1e-6 if x.numel() else False:
            raise ValueError(f"`{name}` must hold integer arm indices.")
        idx = idx.long()
        if x.numel() and (idx.min() < 0 or idx.max() >= self.num_arms):
            raise ValueError(f"`{name}` holds arm indices outside [0, {self.num_arms - 1}].")
        return idx

    def _cached_indices(self, x: Tensor, name: str) -> Tensor:
        """:meth:`arm_indices`, validated once per input tensor (a small identity cache;
        inference tensors, which have no version counter, are validated at every call). The
        indices themselves are read from ``x`` at every call (no host synchronisation): a
        write that bypasses the version counter (a NumPy view, ``.data``) cannot leave old
        indices in use."""
        if x.is_inference():
            return self.arm_indices(x, name)
        key = (x.data_ptr(), x.shape, x.stride(), x.dtype, x.device, x._version)
        for k, _ in self._validated:
            if k == key:
                return x[..., 0].round().long()
        idx = self.arm_indices(x, name)
        # Holding x pins its storage (no address reuse); in-place writes bump its version.
        self._validated = [(key, x), *self._validated[:7]]
        return idx

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        """``batch_shape x N1 x N2`` matrix M[i1, i2] (its diagonal with ``diag``) for arm
        indices ``x1``, ``x2`` (``batch_shape x N x 1``)."""
        i1 = self._cached_indices(x1, "x1")
        i2 = self._cached_indices(x2, "x2")
        M = self.matrix.to(dtype=x1.dtype)
        if diag:
            i1, i2 = torch.broadcast_tensors(i1, i2)
            return M[i1, i2]
        return M[i1[..., :, None], i2[..., None, :]]
