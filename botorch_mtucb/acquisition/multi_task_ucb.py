r"""Scalarized multi-task UCB of MT-KB / MT-BKB (paper 000, eq. (2)) and its directional form.

Two upper confidence bounds on s_λ(f(x)), both from the same confidence radius β:

* ``bound="spectral"`` — paper 000, eq. (2):

      u(x) = s_λ(μ(x)) + L_λ β ‖Γ(x, x)‖^{1/2},       ‖·‖ the spectral norm.

  Valid because s_λ is L_λ-Lipschitz and ‖f(x) − μ(x)‖₂ ≤ β ‖Γ(x, x)‖^{1/2} (Theorem 1).

* ``bound="directional"`` (the default) — tighter, same guarantee. The proof of Theorem 1
  (Appendix B.1) writes f(x) − μ_t(x) = Φ(x)ᵀ(V_t + ηI)⁻¹(S_t − ηθ*). Projecting on any fixed
  direction w ∈ Rⁿ first, and only then applying Cauchy–Schwarz, gives

      |wᵀ(f(x) − μ_t(x))| ≤ ‖(V_t+ηI)^{-1/2} Φ(x) w‖ · ‖(V_t+ηI)^{-1/2}(S_t − ηθ*)‖
                          = η^{-1/2} √(wᵀ Γ_t(x, x) w) · ‖(V_t+ηI)^{-1/2}(S_t − ηθ*)‖,

  using ηΦ(x)ᵀ(V_t+ηI)⁻¹Φ(x) = Γ_t(x, x) (eq. (10)). The last factor does not depend on x or
  w, and it is exactly what Theorem 1 bounds (with the η^{-1/2}) by β_t. So on the same
  probability-(1−δ) event, for all x, t and w at once: wᵀf(x) ≤ wᵀμ_t(x) + β_t √(wᵀΓ_t w).

  - Linear s_λ: take w = λ: s_λ(f) ≤ λᵀμ + β √(λᵀΓλ)   (≤ ‖λ‖₂ β ‖Γ‖^{1/2}).
  - Chebyshev s_λ: take w = e_i for each i: f_i ≤ μ_i + β σ_i, σ_i² = Γ_ii; s_λ is monotone,
    so s_λ(f) ≤ min_i λ_i (μ_i + β σ_i − z_i)   (≤ s_λ(μ) + max_i λ_i β ‖Γ‖^{1/2}, since
    min_i(a_i + c_i) ≤ min_i a_i + max_i c_i and σ_i² ≤ ‖Γ‖). Augmented (ρ > 0): the term
    ρ λᵀ(f − z) also takes w = λ: ρ (λᵀ(μ − z) + β √(λᵀΓλ))   (≤ ρ ‖λ‖₂ β ‖Γ‖^{1/2}).
  - Hypervolume s_λ (:class:`~botorch_mtucb.acquisition.HypervolumeScalarization`, Zhang &
    Golovin, 2020): the same axes w = e_i; s_λ is monotone, so
    s_λ(f) ≤ min_i max(0, (μ̃_i + β σ_i − z̃_i)/a_i)ⁿ, a = r∘λ, tildes: sign-corrected. The
    acquisition value is the n-th root of that bound before the clamp at zero,
    min_i (μ̃_i + β σ_i − z̃_i)/a_i: a monotone transform with the same maximisers that keeps
    a gradient where the bound is zero.

  Each directional value is ≤ the spectral one, so it is also ≤ s_λ(f(x)) + 2 L_λ β ‖Γ‖^{1/2}
  on the event; the one-step regret bound in the proof of Theorem 2 (Appendix C.2) therefore
  holds unchanged and so does Theorem 2's regret bound.

  The directional bound is the default: it is never looser and keeps Theorem 2.
  ``bound="spectral"`` reproduces the paper's eq. (2) exactly. Only the directional bound
  inherits the units-invariance of a scale-free s_λ (``from_data``): its width is taken along
  each objective, while ‖Γ(x, x)‖ is the largest posterior variance in the raw units, so under
  the spectral bound the objective with the largest units sets the width. For
  ``ModelListGP`` (diagonal Γ) the two Chebyshev forms differ as well: max_i λ_i · max_i σ_i
  versus the per-task λ_i σ_i.

What is maximised: all objectives are maximised unless the scalarization lists them in
``minimize`` (then they are negated first, see :mod:`botorch_mtucb.acquisition.scalarization.base`);
u(x) is an *upper* bound on the scalarized value and ``argmax_x u(x)`` is the MT-KB choice. To
minimise an objective, do not negate the data yourself *and* mark it minimised — do one of the
two.

The acquisition only needs μ(x) ∈ Rⁿ and the n × n block Γ(x, x) at each candidate (the
directional bound only the variances along λ or the n task axes: it uses
``model.projected_task_posterior(X, W)`` of a
:class:`~botorch_mtucb.protocols.ProjectedTaskPosteriorModel` and forms no block). It uses
``model.task_posterior(X)`` when the model has it (ExactMultiTaskGP and the Nyström model),
otherwise the MVN covariance of ``model.posterior(X)`` (for q = 1 the whole covariance is the
n × n block), or the per-output blocks of a ``PosteriorList``. BoTorch's
``KroneckerMultiTaskGP`` is refused: its ``posterior()`` drops the cross-task covariance.

Batches: ``set_X_pending`` conditions the model on hallucinated means at pending points
(GP-BUCB), so ``optimize_acqf(q=k, sequential=True)`` and ``optimize_acqf_discrete(q=k)`` give
``k`` points; a joint ``q > 1`` evaluation is refused. See
:mod:`botorch_mtucb.acquisition.pending` for the batch regret argument and
``pending_beta_inflation``.

Also here: :func:`task_mean_and_covariance` (μ(x) and Γ(x, x) of any supported model) and
:func:`spectral_norm_psd` (‖Γ‖, differentiable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Self

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models import KroneckerMultiTaskGP, ModelListGP
from botorch.models.model import Model
from botorch.posteriors import GPyTorchPosterior, Posterior, PosteriorList
from gpytorch.distributions import MultivariateNormal
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.acquisition.beta import BetaSchedule, as_beta_tensor
from botorch_mtucb.acquisition.moments import projected_moments
from botorch_mtucb.acquisition.pending import (
    PendingInflation,
    PendingState,
    check_pending,
    gp_bucb_inflation,
    resolve_inflation,
)
from botorch_mtucb.acquisition.scalarization import Scalarization, project_covariance
from botorch_mtucb.acquisition.scalarization.base import check_scalarization
from botorch_mtucb.protocols import (
    InformationGainModel,
    ProjectedTaskPosteriorModel,
    TaskPosteriorModel,
)
from botorch_mtucb.utils.validation import check_test_tensor

__all__ = ["ScalarizedMultiTaskUCB", "spectral_norm_psd", "task_mean_and_covariance"]


class ScalarizedMultiTaskUCB(AcquisitionFunction):
    r"""Upper confidence bound u(x) on s_λ(f(x)) from a multi-output posterior (q = 1).

    ``argmax_x u(x)`` is the point MT-KB (exact model) or MT-BKB (Nyström model) evaluates
    next (paper 000, Algorithm 1), with

    * ``bound="spectral"``: u(x) = s_λ(μ(x)) + L_λ β ‖Γ(x, x)‖^{1/2} (paper 000, eq. (2));
    * ``bound="directional"`` (default): u(x) = λᵀμ(x) + β √(λᵀΓ(x, x)λ) for the linear s_λ,
      min_i λ_i (μ_i(x) + β √Γ_ii(x, x) − z_i) for the Chebyshev one (paper 000, App. B.1;
      never larger than the spectral bound, same guarantee), and for the hypervolume one
      min_i (μ_i(x) + β √Γ_ii(x, x) − z_i)/(r_i λ_i), the n-th root of its bound
      min_i max(0, ·)ⁿ on s_λ(f(x)) before the clamp (same maximisers).

    The spectral bound takes L_λ from the scalarization (``scalarization.lipschitz``); that of
    the hypervolume s_λ is finite only with an outcome bound ``upper`` (as
    :meth:`~botorch_mtucb.acquisition.HypervolumeScalarization.from_data` sets it).

    μ(x) ∈ Rⁿ is the posterior mean and Γ(x, x) the n × n posterior task covariance at x (see
    the module docstring for the models that provide them). Works with t-batches
    (``batch_shape x 1 x d``), is differentiable for ``optimize_acqf`` (the spectral norm is the
    top eigenvalue of the n × n block, whose gradient is well defined even for repeated
    eigenvalues), and can be used with ``optimize_acqf_discrete`` on finite arm sets. Batches
    of ``k`` points come from pending points (:meth:`set_X_pending`, GP-BUCB).

    Example:
        >>> from botorch_mtucb.acquisition import ChebyshevScalarization, TheoremTwoBeta
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> train_X = torch.rand(10, 2, dtype=torch.float64)
        >>> train_Y = torch.stack([train_X.sum(-1), train_X.prod(-1)], dim=-1)
        >>> model = ExactMultiTaskGP(train_X, train_Y)
        >>> s = ChebyshevScalarization([0.3, 0.7], ref_point=[-1.0, -1.0])
        >>> acqf = ScalarizedMultiTaskUCB(model, s, beta=TheoremTwoBeta(b=1.0, sigma=0.1))
        >>> acqf(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        torch.Size([5])
    """

    def __init__(
        self,
        model: Model,
        scalarization: Scalarization,
        beta: float | Tensor | BetaSchedule = 1.0,
        bound: Literal["spectral", "directional"] = "directional",
        X_pending: Tensor | None = None,
        pending_beta_inflation: PendingInflation = 1.0,
    ) -> None:
        """
        Args:
            model: A multi-output BoTorch model with ``n = model.num_outputs ≥ 2`` whose
                posterior carries the joint task covariance (see the module docstring).
            scalarization: s_λ with ``n`` weights (:class:`LinearScalarization`,
                :class:`ChebyshevScalarization` or :class:`HypervolumeScalarization`).
            beta: Confidence radius β ≥ 0, the factor on the posterior width: a number, a 0-dim
                tensor, or a :class:`BetaSchedule` evaluated once here on ``model`` (β_{t−1} of
                the round). β = 0 scores the posterior mean alone; a larger β explores more.
                Default ``1.0``, a practical width for models with fitted hyperparameters and
                standardised outcomes, without a guarantee. The radii of the regret bounds are
                the schedules :class:`TheoremTwoBeta` (MT-KB, paper 000 Theorem 2) and
                :class:`TheoremThreeBeta` (MT-BKB, Theorem 3).
            bound: ``"spectral"`` (paper 000 eq. (2)) or ``"directional"`` (tighter, same
                guarantee; default).
            X_pending: ``m x d`` points already chosen but not yet observed: the model is
                conditioned on their hallucinated posterior means (GP-BUCB, see
                :meth:`set_X_pending`).
            pending_beta_inflation: Factor on β while points are pending: ``1.0`` (none,
                default), a number ≥ 1, or ``"gp-bucb"`` (exp of the pending points' information
                gain; :mod:`botorch_mtucb.acquisition.pending`).

        Raises:
            TypeError: if ``beta`` is not a real number, tensor or :class:`BetaSchedule`.
            ValueError: if ``beta`` is not a single finite number ``≥ 0``, or the model or
                scalarization do not fit.
        """
        super().__init__(model=model)
        _check_model(model)
        n = model.num_outputs
        if n < 2:
            raise ValueError(
                "ScalarizedMultiTaskUCB needs a multi-output model (num_outputs >= 2), got "
                f"num_outputs={n}. For a single objective use a single-output UCB."
            )
        check_scalarization(scalarization, n)
        if bound not in ("spectral", "directional"):
            raise ValueError(f"`bound` must be 'spectral' or 'directional', got {bound!r}.")
        if isinstance(beta, BetaSchedule):
            beta = beta(model)
        beta_t = as_beta_tensor(beta, "beta")
        if beta_t.numel() != 1:
            raise ValueError(f"`beta` must be a single finite number >= 0, got {beta!r}.")
        self.scalarization = scalarization
        self.bound = bound
        # Everything the hot path needs is decided and converted once, here: β in the model's
        # dtype/device, the scalarization's constants, and how to get the task moments.
        like = _model_like(model)
        self.register_buffer("beta", beta_t.reshape(()).to(like))
        self.register_buffer("beta_real_data", self.beta.clone())
        self._task_posterior = isinstance(model, TaskPosteriorModel)
        self._directions = scalarization.directions(like)
        # Directional bound on a model that projects its task covariance: no n x n blocks.
        self._projected = bound == "directional" and isinstance(
            model, ProjectedTaskPosteriorModel
        )
        self._projection = (
            torch.eye(n, dtype=like.dtype, device=like.device)
            if self._directions is None
            else self._directions
        )
        scalarization._constants(like)
        self._lipschitz = scalarization.lipschitz.to(like)  # L_λ of the spectral bound
        if bound == "spectral" and not bool(self._lipschitz.isfinite().all()):
            raise ValueError(
                f"`bound='spectral'` needs a finite Lipschitz constant L_λ, but "
                f"{type(scalarization).__name__} has L_λ = inf (a hypervolume scalarization "
                "without `upper`): pass `upper=` (or build it with `from_data`), or use "
                "bound='directional'."
            )
        self.pending_beta_inflation = resolve_inflation(pending_beta_inflation)
        if self.pending_beta_inflation == "gp-bucb" and not isinstance(
            model, InformationGainModel
        ):
            raise ValueError(
                "`pending_beta_inflation='gp-bucb'` needs a model with `information_gain()` "
                f"(ExactMultiTaskGP, NystromMultiTaskGP); {type(model).__name__} has none. Pass "
                "a number instead (e.g. exp(C) for a bound C on the batch's information gain)."
            )
        self._pending = PendingState(model)
        self._input_dim = like.shape[-1] if isinstance(model, ExactGP) else None
        self._dtype_device = (like.dtype, like.device)
        self.set_X_pending(X_pending)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Self:
        """``nn.Module._apply`` (``.to``, ``.double()``, ...), extended to the model of the
        real data and the pending points (:meth:`PendingState.apply`) and to the hot path's
        constants, so that a moved acquisition computes and hallucinates in the new dtype."""
        super()._apply(fn, recurse)
        self._pending.apply(fn)
        self._projection = fn(self._projection)
        if self._directions is not None:
            self._directions = fn(self._directions)
        self._lipschitz = fn(self._lipschitz)
        self._dtype_device = (self.beta_real_data.dtype, self.beta_real_data.device)
        return self

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """Condition on pending points with hallucinated means (GP-BUCB); ``None`` clears them.

        The acquisition is then evaluated on ``model.condition_on_observations(X_pending,
        μ(X_pending))`` (means in the original outcome scale): the mean is unchanged and the
        width shrinks at and near the pending points, so BoTorch's
        ``optimize_acqf(q=k, sequential=True)`` and ``optimize_acqf_discrete(q=k)`` return ``k``
        distinct points. β is the one computed on the real data (``beta_real_data``), times
        ``pending_beta_inflation`` while points are pending (the batch regret argument is in
        :mod:`botorch_mtucb.acquisition.pending`).

        Args:
            X_pending: ``m x d`` pending points, or ``None`` / an empty tensor for none.
        """
        X = check_pending(X_pending, self._input_dim)
        if X is not None:  # the model's dtype and device (BoTorch passes candidates as given)
            X = X.to(dtype=self._dtype_device[0], device=self._dtype_device[1])
        base = self._pending.base
        self.model = self._pending.update(X)
        self.X_pending = X
        beta = self.beta_real_data
        if X is not None and self.pending_beta_inflation == "gp-bucb":
            beta = beta * gp_bucb_inflation(base, self.model).to(beta)
        elif X is not None:
            beta = beta * self.pending_beta_inflation
        self.beta = beta
        self._beta_value = float(beta)  # one host read per state change, none per evaluation

    def forward(self, X: Tensor) -> Tensor:
        """Evaluate u on ``batch_shape x 1 x d`` candidates (a ``1 x d`` input is one point).

        Args:
            X: ``batch_shape x 1 x d`` candidates (``q = 1``; a float32 / float64 tensor without
                NaN or infinite entries).

        Returns:
            ``batch_shape`` tensor of UCB values.

        Raises:
            TypeError: if ``X`` is not a float32 / float64 tensor.
            ValueError: if ``X`` holds NaN or infinite values or is not ``batch_shape x 1 x d``.
        """
        check_test_tensor(X, "X")
        if X.dim() == 2:
            X = X.unsqueeze(0)
        if X.dim() < 2 or X.shape[-2] != 1:
            raise ValueError(
                "ScalarizedMultiTaskUCB supports q = 1 only: `X` must be batch_shape x 1 x d, "
                f"got shape {tuple(X.shape)}. For batches use optimize_acqf(..., q=k, "
                "sequential=True) or optimize_acqf_discrete(..., q=k) (GP-BUCB via X_pending)."
            )
        s = self.scalarization
        if self._projected:  # β as a host number: no conversion, fused multiply-adds
            mean, var = self._projected_moments(X)
            return s.directional_ucb_from_variances(mean, var, self._beta_value)
        if self._task_posterior:
            mean, covar = self.model.task_posterior(X)
        else:
            mean, covar = task_mean_and_covariance(self.model, X)
        mean, covar = mean[..., 0, :], covar[..., 0, :, :]
        beta = self.beta if self.beta.dtype == mean.dtype else self.beta.to(mean)
        if self.bound == "directional":
            directions = self._directions
            if directions is not None and directions.dtype != mean.dtype:
                directions = s.directions(mean)
            var = project_covariance(covar, directions)
            return s.directional_ucb_from_variances(mean, var, beta)
        width = spectral_norm_psd(covar).clamp_min(1e-30).sqrt()
        lipschitz = self._lipschitz if self._lipschitz.dtype == mean.dtype else s.lipschitz.to(mean)
        return s(mean) + lipschitz * beta * width


    def _projected_moments(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """``batch_shape x n`` means and ``batch_shape x k`` variances along the projection at
        checked ``batch_shape x 1 x d`` candidates
        (:func:`~botorch_mtucb.acquisition.moments.projected_moments`)."""
        return projected_moments(self.model, X, self._projection, self._input_dim)


def _model_like(model: Model) -> Tensor:
    """A tensor with the model's dtype and device (its training inputs, else a parameter)."""
    if isinstance(model, ExactGP) and model.train_inputs:
        return model.train_inputs[0]
    for tensor in model.parameters():
        return tensor.detach()
    for tensor in model.buffers():
        if tensor.is_floating_point():
            return tensor
    return torch.empty(0, dtype=torch.float64)


def _check_model(model: Model) -> None:
    """Refuse models whose posterior is known to lose the cross-task covariance."""
    if isinstance(model, KroneckerMultiTaskGP):
        raise ValueError(
            "KroneckerMultiTaskGP is not supported: its posterior() keeps only the diagonal of "
            "the task covariance, so the spectral norm ‖Γ(x,x)‖ would be wrong. Use "
            "botorch_mtucb.models.ExactMultiTaskGP with an ICMKernel (the same ICM model, "
            "with the full task block)."
        )
    if isinstance(model, ModelListGP):
        for sub in model.models:
            _check_model(sub)


def spectral_norm_psd(covar: Tensor) -> Tensor:
    """‖Γ‖ = largest eigenvalue of a symmetric PSD matrix (clamped at 0), differentiable.

    Args:
        covar: ``batch_shape x n x n`` symmetric PSD matrices (symmetrised first).

    Returns:
        ``batch_shape`` spectral norms.

    Example:
        >>> spectral_norm_psd(torch.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor(3.)
    """
    sym = 0.5 * (covar + covar.transpose(-1, -2))
    return torch.linalg.eigvalsh(sym)[..., -1].clamp_min(0.0)


def task_mean_and_covariance(model: Model, X: Tensor) -> tuple[Tensor, Tensor]:
    """Posterior mean and per-point n × n task covariance at ``batch_shape x q x d`` inputs.

    Uses ``model.task_posterior`` for a
    :class:`~botorch_mtucb.protocols.TaskPosteriorModel`, otherwise the MVN of
    ``model.posterior(X)`` (only for q = 1, where the whole covariance is the task block;
    a ``PosteriorList`` gives the block-diagonal covariance of its parts).

    Args:
        model: A multi-output BoTorch model.
        X: ``batch_shape x q x d`` inputs (``q = 1`` unless the model is a
            ``TaskPosteriorModel``).

    Returns:
        ``(mean, covar)`` of shapes ``batch_shape x q x n`` and ``batch_shape x q x n x n``.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> train_X = torch.rand(6, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(train_X, torch.randn(6, 2, dtype=torch.float64))
        >>> mean, covar = task_mean_and_covariance(model, torch.rand(4, 1, 2, dtype=torch.float64))
        >>> mean.shape, covar.shape
        (torch.Size([4, 1, 2]), torch.Size([4, 1, 2, 2]))
    """
    if isinstance(model, TaskPosteriorModel):
        return model.task_posterior(X)
    if X.shape[-2] != 1:
        raise ValueError(
            f"Per-point task blocks need q = 1 for a {type(model).__name__}, got "
            f"X of shape {tuple(X.shape)}."
        )
    mean, covar = _block_from_posterior(model.posterior(X))
    return mean, covar.unsqueeze(-3)


def _block_from_posterior(posterior: Posterior) -> tuple[Tensor, Tensor]:
    """``(batch x 1 x n mean, batch x n x n covariance)`` from a q = 1 posterior."""
    if isinstance(posterior, PosteriorList):
        parts = [_block_from_posterior(p) for p in posterior.posteriors]
        mean = torch.cat([m for m, _ in parts], dim=-1)
        return mean, _block_diag([c for _, c in parts])
    dist = posterior.distribution if isinstance(posterior, GPyTorchPosterior) else None
    if not isinstance(dist, MultivariateNormal):
        raise ValueError(
            f"The model's posterior ({type(posterior).__name__}) carries no Gaussian task "
            "covariance; ScalarizedMultiTaskUCB needs a GPyTorchPosterior (e.g. drop non-linear "
            "outcome transforms such as Log)."
        )
    mean = posterior.mean
    n = mean.shape[-1]
    covar = dist.covariance_matrix
    if covar.shape[-1] != n:
        raise ValueError(
            f"Expected an n x n posterior covariance for q = 1 (n = {n}), got shape "
            f"{tuple(covar.shape)}."
        )
    return mean, covar


def _block_diag(blocks: list[Tensor]) -> Tensor:
    """Batched block-diagonal matrix from ``batch x n_j x n_j`` blocks."""
    batch = torch.broadcast_shapes(*[b.shape[:-2] for b in blocks])
    n = sum(b.shape[-1] for b in blocks)
    out = blocks[0].new_zeros(*batch, n, n)
    i = 0
    for b in blocks:
        j = i + b.shape[-1]
        out[..., i:j, i:j] = b
        i = j
    return out
