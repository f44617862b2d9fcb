"""Shared plumbing of :class:`TruncatedGP` and :class:`AdaptiveTruncationGP`.

Input validation, finite arm sets (index lookup and kernel matrix), and the BoTorch posterior
wrapper. The algorithms themselves live in ``truncated_gp.py`` and ``adaptive_truncation_gp.py``.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_mtucb.kernels.precomputed import PrecomputedKernel
from botorch_mtucb.utils.validation import check_finite

__all__ = ["ArmSet", "HeavyTailedModel", "check_training_data", "shallow_copy_model"]

_MODULE_KEYS = frozenset(torch.nn.Module().__dict__)


def check_training_data(train_X: Tensor, train_Y: Tensor) -> tuple[Tensor, Tensor]:
    """Validate ``t x d`` inputs and ``t x 1`` targets (``t = 0`` allowed).

    Returns:
        ``(train_X, y)`` with ``y`` of shape ``t`` (views, not copies of the caller's tensors;
        they are never written to).
    """
    check_finite(train_X, "train_X")
    check_finite(train_Y, "train_Y")
    if not train_X.is_floating_point():
        raise ValueError(f"`train_X` must be a floating-point tensor, got {train_X.dtype}.")
    if train_X.dim() != 2:
        raise ValueError(
            f"`train_X` must be a t x d matrix (observations in round order), got shape "
            f"{tuple(train_X.shape)}; batched models are not supported."
        )
    if train_Y.dim() != 2 or train_Y.shape[-1] != 1 or train_Y.shape[0] != train_X.shape[0]:
        raise ValueError(
            f"`train_Y` must have shape (t, 1) = ({train_X.shape[0]}, 1) to match `train_X`, "
            f"got {tuple(train_Y.shape)}."
        )
    return train_X, train_Y[:, 0].to(train_X)


class ArmSet:
    """A finite candidate set: coordinates, kernel matrix and input → arm-index lookup.

    Either a :class:`PrecomputedKernel` (inputs are float arm indices, ``N x 1``) or an
    explicit ``A x d`` tensor of arm coordinates with any kernel / feature map.
    """

    def __init__(self, points: Tensor, by_index: bool) -> None:
        self.points = points
        self.by_index = by_index
        self._tol = 1e-9 * (1.0 + float(points.abs().max()))

    @classmethod
    def resolve(
        cls, arms: Tensor | None, kernel: Kernel | None, like: Tensor
    ) -> ArmSet | None:
        """Build the arm set from ``arms`` or from a :class:`PrecomputedKernel`, else ``None``."""
        if arms is not None:
            check_finite(arms, "arms")
            if arms.dim() != 2 or arms.shape[-1] != like.shape[-1] or arms.shape[0] < 1:
                raise ValueError(
                    f"`arms` must be an A x d matrix with d = {like.shape[-1]} (the dimension of "
                    f"`train_X`), got shape {tuple(arms.shape)}."
                )
            if torch.unique(arms, dim=0).shape[0] != arms.shape[0]:
                raise ValueError("`arms` must hold distinct rows.")
            return cls(arms.to(like), by_index=False)
        if isinstance(kernel, PrecomputedKernel):
            if like.shape[-1] != 1:
                raise ValueError(
                    "With a PrecomputedKernel, `train_X` must hold float arm indices of shape "
                    f"t x 1, got {tuple(like.shape)}."
                )
            points = torch.arange(kernel.num_arms, dtype=like.dtype, device=like.device)
            return cls(points.unsqueeze(-1), by_index=True)
        return None

    @property
    def num_arms(self) -> int:
        return self.points.shape[0]

    def index(self, X: Tensor, name: str = "X", kernel: Kernel | None = None) -> Tensor:
        """Arm indices (``...``, long) of inputs ``... x d`` that must be arms."""
        P = self.points.to(X)
        flat = X.reshape(-1, X.shape[-1])
        if flat.shape == P.shape and torch.equal(flat, P):  # the whole arm set, in order
            return torch.arange(P.shape[0], device=X.device).reshape(X.shape[:-1])
        if self.by_index:
            return kernel.arm_indices(X, name)
        if flat.shape[0] == 0:
            return torch.zeros(X.shape[:-1], dtype=torch.long, device=X.device)
        if flat.shape[0] * P.shape[0] * P.shape[1] <= 4_000_000:
            dist = (flat.unsqueeze(-2) - P).abs().amax(dim=-1)
        else:
            dist = torch.cdist(flat, P, p=float("inf"))
        best, idx = dist.min(dim=-1)
        if (best > self._tol).any():
            raise ValueError(
                f"`{name}` must consist of rows of `arms` (this model was built on a finite arm "
                "set); use optimize_acqf_discrete with choices=arms."
            )
        return idx.reshape(X.shape[:-1])

    def kernel_matrix(self, kernel: Kernel) -> Tensor:
        """``A x A`` kernel matrix over the arms."""
        if self.by_index:
            return kernel.matrix.to(self.points)
        with torch.no_grad():
            return kernel(self.points, self.points).to_dense()


class HeavyTailedModel(Model):
    """Common base: single output, no batch, posterior built from a mean and a covariance."""

    _num_outputs = 1

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size([])

    def _moments(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """Mean ``... x q`` and covariance ``... x q x q`` (``full``) or variance ``... x q``."""
        raise NotImplementedError  # pragma: no cover

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform=None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior at ``batch_shape x q x d`` inputs (mean ``batch_shape x q x 1``).

        Args:
            X: ``batch_shape x q x d`` test points.
            output_indices: Only ``None`` or ``[0]`` (single output).
            observation_noise: If ``True``, add ``λ`` to the diagonal.
            posterior_transform: Optional BoTorch posterior transform.
        """
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        X = self._check_test_inputs(X, self.train_X.shape[-1], self._dtype)
        mean, cov = self._moments(X, full=True)
        post = self._make_posterior(mean, cov, self.lam, observation_noise)
        return post if posterior_transform is None else posterior_transform(post)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal posterior mean and variance at ``batch_shape x q x d`` inputs.

        The fast path of :class:`HeavyTailedUCB` (no joint covariance, no posterior object).

        Returns:
            ``(mean, variance)``, each ``batch_shape x q``.
        """
        X = self._check_test_inputs(X, self.train_X.shape[-1], self._dtype)
        return self._moments(X, full=False)

    def _check_test_inputs(self, X: Tensor, d: int, dtype: torch.dtype) -> Tensor:
        check_finite(X, "X")
        if X.dim() < 2 or X.shape[-1] != d:
            raise ValueError(
                f"`X` must have shape batch_shape x q x d with d = {d}, got {tuple(X.shape)}."
            )
        return X.to(dtype)

    @staticmethod
    def _make_posterior(
        mean: Tensor, cov: Tensor, noise: float, observation_noise: bool | Tensor
    ) -> GPyTorchPosterior:
        """``GPyTorchPosterior`` from ``... x q`` mean and ``... x q x q`` covariance.

        ``observation_noise=True`` adds the regulariser ``λ`` (the Gaussian noise variance of
        the GP interpretation) to the diagonal.
        """
        if isinstance(observation_noise, Tensor):
            raise ValueError("`observation_noise` must be a bool for this model.")
        if observation_noise:
            cov = cov + noise * torch.eye(cov.shape[-1], dtype=cov.dtype, device=cov.device)
        # Lazy covariance: no eager Cholesky (joint covariances over arms are often singular).
        return GPyTorchPosterior(MultivariateNormal(mean, to_linear_operator(cov)))

    def _check_condition_inputs(self, X: Tensor, Y: Tensor, d: int) -> tuple[Tensor, Tensor]:
        check_finite(X, "X")
        check_finite(Y, "Y")
        if X.dim() != 2 or X.shape[-1] != d:
            raise ValueError(f"`X` must be an n x d matrix with d = {d}, got {tuple(X.shape)}.")
        if Y.dim() != 2 or Y.shape != (X.shape[0], 1):
            raise ValueError(
                f"`Y` must have shape ({X.shape[0]}, 1) to match `X`, got {tuple(Y.shape)}."
            )
        return X, Y

    def _appended_copy(
        self, X: Tensor, Y: Tensor, arm_kernel: Kernel | None = None
    ) -> tuple[HeavyTailedModel, Tensor, Tensor, Tensor | None]:
        """Checked shallow copy with ``(X, Y)`` appended (the start of every conditioning).

        Appends to ``train_X`` / ``train_Y`` and, on a finite arm set, to the arm indices and
        counts; the caller updates its own statistics on the returned copy.

        Returns:
            ``(new, X, y, idx)``: the copy, ``X`` in the training dtype, the ``n`` rewards as a
            vector, and the arm indices of ``X`` (``None`` without arms).
        """
        X, Y = self._check_condition_inputs(X, Y, self.train_X.shape[-1])
        X, y = X.to(self.train_X), Y[:, 0].to(self.train_X)
        new = shallow_copy_model(self)
        new.train_X = torch.cat([self.train_X, X])
        new.train_Y = torch.cat([self.train_Y, y.unsqueeze(-1)])
        idx = None
        if self._arms is not None:
            idx = self._arms.index(X, "X", arm_kernel)
            new._arm_idx = torch.cat([self._arm_idx, idx])
            new._counts = self._counts.index_add(0, idx, torch.ones_like(y))
        return new, X, y, idx

    def subset_output(self, idcs: list[int]) -> Model:
        if list(idcs) != [0]:
            raise ValueError(f"This model has a single output; got output indices {idcs}.")
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")


def shallow_copy_model(model: HeavyTailedModel) -> HeavyTailedModel:
    """A new model object sharing every (immutable) state tensor and sub-module of ``model``.

    Used by ``condition_on_observations``: the caller then *replaces* (never mutates) the
    state that changes, so the old model stays valid.
    """
    new = model.__class__.__new__(model.__class__)
    HeavyTailedModel.__init__(new)
    for key, val in model.__dict__.items():
        if key not in _MODULE_KEYS:
            new.__dict__[key] = val
    for name, module in model.named_children():
        setattr(new, name, module)
    return new
