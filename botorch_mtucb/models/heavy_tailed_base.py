"""Shared plumbing of :class:`TruncatedGP` and :class:`AdaptiveTruncationGP`.

Input validation, finite arm sets (index lookup and kernel matrix), append-only row storage,
cheap model copies, the float32 conditioning guard and the BoTorch posterior wrapper. The
algorithms themselves live in ``truncated_gp.py`` and ``adaptive_truncation_gp.py``.

Hot-path rules: posterior evaluations do no validation and no host synchronisation (inputs are
validated at construction and at ``condition_on_observations``); the arm lookup of a candidate
tensor is cached (by storage, shape, strides and version counter), so evaluating the same
candidate set every round costs a few attribute reads.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_mtucb.models.heavy_tailed_arm_history import ArmSet, RowBuffer
from botorch_mtucb.utils.validation import check_finite

__all__ = [
    "ArmSet",
    "HeavyTailedModel",
    "RowBuffer",
    "check_float_conditioning",
    "check_training_data",
    "shallow_copy_model",
    "spectral_ridge",
]

#: Largest ``eps(dtype) · κ̂`` accepted, ``κ̂ = 1 + tr(K_t)/λ`` a bound on the condition number
#: of ``K_t + λI`` (see :func:`check_float_conditioning`).
MAX_EPS_KAPPA = 0.1

_DICT_KEYS = ("_parameters", "_buffers", "_modules")


def check_training_data(train_X: Tensor, train_Y: Tensor) -> tuple[Tensor, Tensor]:
    """Validate ``t x d`` inputs and ``t x 1`` targets (``t = 0`` allowed).

    Returns:
        ``(train_X, y)`` with ``y`` of shape ``t`` in the dtype of ``train_X`` (views, not
        copies of the caller's tensors; they are never written to).
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


def check_float_conditioning(
    trace: float, lam: float, dtype: torch.dtype, what: str, max_eps_kappa: float = MAX_EPS_KAPPA
) -> None:
    """Refuse a regularised system that ``dtype`` cannot solve accurately.

    ``κ̂ = 1 + tr(K)/λ ≥ cond(K + λI)``; solves in a dtype with machine epsilon ``eps`` lose
    about ``eps · κ`` of relative accuracy (measured for the TGP posterior mean in float32:
    error ≈ 0.2 · eps · λ_max/λ). Above ``eps · κ̂ = 0.1`` the result could be off by several
    percent of the reward scale, so the model raises instead of returning it.

    Args:
        trace: ``tr(K)`` (a bound on ``λ_max(K)``).
        lam: The regulariser ``λ``.
        dtype: The model's dtype.
        what: Name of the model, for the message.
        max_eps_kappa: Largest accepted ``eps · κ̂`` (ATA-GP-UCB's SVD-based fit is accurate to
            ≈ 1e-3 · eps · κ and passes 10).
    """
    eps = torch.finfo(dtype).eps
    kappa = 1.0 + trace / lam
    if eps * kappa > max_eps_kappa:
        raise ValueError(
            f"{what} in {dtype} cannot be accurate here: with `lam`={lam:g} and tr(K_t)="
            f"{trace:.3g}, cond(K_t + lam I) may reach {kappa:.2e} and eps·cond = "
            f"{eps * kappa:.2g} > {max_eps_kappa}. Use float64 data or a larger `lam`."
        )


#: ``eps · tr(ΦᵀΦ)/λ`` up to which ``eigh`` of the Gram is accurate enough (else SVD of Φ).
_GRAM_OK = 1e-6
#: ``eps · tr(ΦᵀΦ)/λ`` above which a ridge fit refuses (SVD fit error ≈ 1e-3 · eps · κ).
MAX_EPS_KAPPA_RIDGE = 10.0


def spectral_ridge(
    Phi: Tensor, lam: float, what: str = "AdaptiveTruncationGP", rows: bool = True
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``V = ΦᵀΦ + λI = W diag(e) Wᵀ`` (every ``e ≥ λ``) and ``V^{-1/2} Φᵀ``, accurately.

    Paper 001, Algorithm 2: ``V_t`` and the rows ``u_iᵀ`` of ``V_t^{-1/2} Φ_tᵀ``. When
    ``eps · tr(ΦᵀΦ)/λ ≤ 1e-6`` the Gram's eigendecomposition is used with its eigenvalues
    clamped at 0 before adding ``λ`` (never an inverse square root of round-off); otherwise
    the SVD ``Φ = U S Wᵀ`` gives ``e = S² + λ`` and ``V^{-1/2} Φᵀ = W diag(S/√(S² + λ)) Uᵀ``
    without squaring the condition number (float32 stays accurate to ≈ 1e-3 down to
    ``λ = 1e-7`` with ``‖φ‖ = 1``, measured). One host sync (the trace).

    Args:
        Phi: ``t x m`` matrix (``t`` or ``m`` may be 0).
        lam: Regulariser ``λ > 0``.
        what: Model name for the error message.
        rows: ``False`` skips ``V^{-1/2} Φᵀ`` on the Gram path (returned as ``None``; then
            ``W diag(e^{-1/2}) Wᵀ Φᵀ`` is as accurate as it gets).

    Returns:
        ``(W, e, U)``: ``m x m`` orthonormal, ``m`` eigenvalues and the ``m x t`` matrix
        ``U = V^{-1/2} Φᵀ`` whose rows are Algorithm 2's ``u_iᵀ`` (or ``None``).

    Raises:
        ValueError: if ``eps · (1 + tr(ΦᵀΦ)/λ) > 10`` (the dtype cannot give an accurate fit).
    """
    t, m = Phi.shape
    if t == 0 or m == 0:
        W = torch.eye(m, dtype=Phi.dtype, device=Phi.device)
        return W, torch.full((m,), lam, dtype=Phi.dtype, device=Phi.device), Phi.new_zeros(m, t)
    gram = Phi.transpose(-1, -2) @ Phi
    trace = float(gram.diagonal().sum())
    check_float_conditioning(trace, lam, Phi.dtype, what, MAX_EPS_KAPPA_RIDGE)
    if torch.finfo(Phi.dtype).eps * trace / lam <= _GRAM_OK:
        s2, W = torch.linalg.eigh(gram)
        e = s2.clamp_min(0.0) + lam
        if not rows:
            return W, e, None
        return W, e, ((W * e.rsqrt()) @ W.transpose(-1, -2)) @ Phi.transpose(-1, -2)
    U, S, Wh = torch.linalg.svd(Phi, full_matrices=t < m)
    k, W = S.shape[0], Wh.transpose(-1, -2)
    e = torch.cat([S.square(), S.new_zeros(m - k)]) + lam
    shrink = S * (S.square() + lam).rsqrt()
    return W, e.clamp_min(lam), (W[:, :k] * shrink) @ U[:, :k].transpose(-1, -2)


class HeavyTailedModel(Model):
    """Common base: single output, no batch, posterior built from a mean and a covariance.

    State shared by both models: the regulariser ``lam``, the number of observations ``_t``,
    raw rewards in a :class:`RowBuffer` and either inputs (``_X_buf``) or arm indices
    (``_idx_buf``) in another.
    """

    _num_outputs = 1

    @property
    def num_outputs(self) -> int:
        return 1

    def _apply(self, fn, *args, **kwargs):
        """Refuse ``.to`` / ``.float()`` / ``.cuda()`` that would change dtype or device.

        The models' state is plain tensors (histories, factors), not parameters or buffers,
        so ``nn.Module._apply`` would leave it behind silently; build the model on
        ``train_X.to(...)`` instead. Moves that change nothing are allowed.
        """
        probe = torch.zeros(1, dtype=self._dtype, device=self.train_X.device)
        moved = fn(probe)
        if moved.dtype != probe.dtype or moved.device != probe.device:
            raise NotImplementedError(
                f"{type(self).__name__} cannot be moved to {moved.dtype} on {moved.device}: "
                "its state is not made of parameters or buffers. Build a new model from "
                "`train_X.to(...)`, `train_Y.to(...)` (and the kernel / features moved) instead."
            )
        return super()._apply(fn, *args, **kwargs)

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size([])

    @property
    def noise(self) -> Tensor:
        """The regulariser ``λ`` as a 0-dim tensor (:class:`RegularisedModel`; do not modify)."""
        return self._lam_t

    @property
    def num_observations(self) -> int:
        """Number of observations ``t``."""
        return self._t

    @property
    def train_X(self) -> Tensor:
        """``t x d`` inputs in round order (arm coordinates on a finite arm set)."""
        if self._arms is not None:
            return self._arms.points[self._idx_buf.view(self._t)]
        return self._X_buf.view(self._t)

    @property
    def train_Y(self) -> Tensor:
        """``t x 1`` raw rewards in round order."""
        return self._y_buf.view(self._t).unsqueeze(-1)

    def _init_data(self, X: Tensor, y: Tensor, arms: ArmSet | None, kernel: Kernel | None) -> None:
        """Store the training data (copied into :class:`RowBuffer` s) and the arm set."""
        self._arms, self._t, self._dtype = arms, X.shape[0], X.dtype
        self._lam_t = torch.tensor(self.lam, dtype=X.dtype, device=X.device)
        self._y_buf = RowBuffer(y)
        if arms is not None:
            self._idx_buf = RowBuffer(arms.index(X, "train_X", kernel))
            self._X_buf = None
        else:
            self._X_buf, self._idx_buf = RowBuffer(X), None

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
            X: ``batch_shape x q x d`` test points (cast to the model's dtype).
            output_indices: Only ``None`` or ``[0]`` (single output).
            observation_noise: If ``True``, add ``λ`` to the diagonal.
            posterior_transform: Optional BoTorch posterior transform.
        """
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        X = self._check_test_inputs(X)
        mean, cov = self._moments(X, full=True)
        post = self._make_posterior(mean, cov, self.lam, observation_noise)
        return post if posterior_transform is None else posterior_transform(post)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal posterior mean and variance at ``batch_shape x q x d`` inputs.

        The fast path of :class:`HeavyTailedUCB` (no joint covariance, no posterior object,
        no host synchronisation). On the whole arm set in order the results may be views of
        the model's state: do not modify them in place.

        Returns:
            ``(mean, variance)``, each ``batch_shape x q``.
        """
        return self._moments(self._check_test_inputs(X), full=False)

    def _check_test_inputs(self, X: Tensor) -> Tensor:
        """Shape check (no data-dependent check: this is the hot path) and dtype cast."""
        d = self._arms.points.shape[-1] if self._arms is not None else self._X_buf.data.shape[-1]
        if X.dim() < 2 or X.shape[-1] != d:
            raise ValueError(
                f"`X` must have shape batch_shape x q x d with d = {d}, got {tuple(X.shape)}."
            )
        return X if X.dtype == self._dtype else X.to(self._dtype)

    def _arm_index(self, X: Tensor) -> tuple[Tensor, bool]:
        """Arm indices of test inputs and whether they are all arms in order (no sync when the
        candidate tensor was seen before; a first sight validates it)."""
        idx, whole, valid = self._arms.lookup(X)
        if not valid:
            raise ValueError(self._arms._message("X"))
        return idx, whole

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

    def _check_condition_inputs(self, X: Tensor, Y: Tensor) -> tuple[Tensor, Tensor]:
        """Shapes and the cast to the model's dtype (finiteness is checked by the caller)."""
        d = self._arms.points.shape[-1] if self._arms is not None else self._X_buf.data.shape[-1]
        if X.dim() != 2 or X.shape[-1] != d:
            raise ValueError(f"`X` must be an n x d matrix with d = {d}, got {tuple(X.shape)}.")
        if Y.dim() != 2 or Y.shape != (X.shape[0], 1):
            raise ValueError(
                f"`Y` must have shape ({X.shape[0]}, 1) to match `X`, got {tuple(Y.shape)}."
            )
        dt = self._dtype
        return (X if X.dtype == dt else X.to(dt)), (Y if Y.dtype == dt else Y.to(dt))

    def _appended_copy(
        self, X: Tensor, Y: Tensor, arm_kernel: Kernel | None = None
    ) -> tuple[HeavyTailedModel, Tensor, Tensor, Tensor | None, tuple | None]:
        """Checked shallow copy with ``(X, Y)`` appended (the start of every conditioning).

        Validation costs one host sync. On a finite arm set with a few rows, ``X`` and ``Y``
        are read to the host in that sync and the arms are found by exact match (a tolerance
        search only for rows that are not bit-identical to an arm).

        Returns:
            ``(new, X, y, idx, host)``: the copy, ``X`` in the model's dtype, the ``n``
            rewards as a vector, the arm indices of ``X`` (``None`` without arms, and for the
            host path) and, for the host path, ``(arm indices, rewards)`` as Python lists.
        """
        X, Y = self._check_condition_inputs(X, Y)
        n, y, t = X.shape[0], Y[:, 0], self._t
        idx = host = None
        if self._arms is not None and n <= 64:
            rows = torch.cat([X, Y], dim=-1).tolist()  # the one sync
            if not all(math.isfinite(v) for row in rows for v in row):
                check_finite(X, "X")
                check_finite(Y, "Y")
            idx_list = self._arms.index_rows([row[:-1] for row in rows])
            y_list = [row[-1] for row in rows]
            host = (idx_list, y_list)
            if n == 1:
                state = {
                    "_y_buf": self._y_buf.appended_value(t, y_list[0]),
                    "_idx_buf": self._idx_buf.appended_value(t, idx_list[0]),
                }
            else:
                idx_t = torch.tensor(idx_list, dtype=torch.long, device=X.device)
                state = {"_y_buf": self._y_buf.appended(t, y),
                         "_idx_buf": self._idx_buf.appended(t, idx_t)}
        else:
            check_finite(Y, "Y")
            state = {"_y_buf": self._y_buf.appended(t, y)}
            if self._arms is not None:
                idx = self._arms.index(X, "X", arm_kernel)
                state["_idx_buf"] = self._idx_buf.appended(t, idx)
            else:
                check_finite(X, "X")
                state["_X_buf"] = self._X_buf.appended(t, X)
        state["_t"] = t + n
        new = shallow_copy_model(self)
        new.__dict__.update(state)
        return new, X, y, idx, host

    def subset_output(self, idcs: list[int]) -> Model:
        if list(idcs) != [0]:
            raise ValueError(f"This model has a single output; got output indices {idcs}.")
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")


def shallow_copy_model(model: HeavyTailedModel) -> HeavyTailedModel:
    """A new model object sharing every (immutable) state tensor and sub-module of ``model``.

    Used by ``condition_on_observations``: the caller then *replaces* (never mutates) the
    state that changes, so the old model stays valid. The module registries are copied, so
    registering a sub-module on one model does not affect the other.
    """
    new = model.__class__.__new__(model.__class__)
    state = dict(model.__dict__)
    for key in _DICT_KEYS:
        state[key] = state[key].copy()
    new.__dict__.update(state)
    return new
