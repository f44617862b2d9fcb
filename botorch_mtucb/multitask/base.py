r"""The shared base of the multi-task GPs of paper 000: BoTorch plumbing around a solver.

For vector observations ``y_s ∈ R^n`` and a matrix-valued kernel Γ, the models' posterior is
(paper 000, eq. (1))

.. math::
    μ_t(x) = G_t(x)^T (G_t + ηI_{nt})^{-1} Y_t, \qquad
    Γ_t(x, x') = Γ(x, x') − G_t(x)^T (G_t + ηI_{nt})^{-1} G_t(x'),

or its Nyström approximation (MT-BKB). :class:`MultiTaskGPBase` holds what both estimators
share (data, noise, transforms, caching, ``posterior``, the task-posterior protocols and
conditioning); the numerical work is a
:class:`~botorch_mtucb.multitask.solvers.base.MultiTaskSolver`'s.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from botorch.exceptions.warnings import InputDataWarning
from botorch.models.gpytorch import BatchedMultiOutputGPyTorchModel
from botorch.models.model import FantasizeMixin
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.constraints import GreaterThan
from gpytorch.distributions import MultitaskMultivariateNormal
from gpytorch.likelihoods import Likelihood, MultitaskGaussianLikelihood
from gpytorch.means import Mean, MultitaskMean
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.kernels.icm import ICMKernel
from botorch_mtucb.linalg.icm_likelihood import ICMMultitaskMultivariateNormal
from botorch_mtucb.linalg.precision import PRECISION_BUDGET, working_dtype
from botorch_mtucb.multitask.conditioning import MultiTaskConditioningMixin
from botorch_mtucb.multitask.likelihoods import FixedNoiseMultitaskGaussianLikelihood
from botorch_mtucb.multitask.solver_cache import SolverCacheMixin
from botorch_mtucb.multitask.solvers.base import MultiTaskSolver, dense
from botorch_mtucb.multitask.utils import (
    ZeroMultitaskMean,
    joint_task_mvn,
    validate_train_data,
)
from botorch_mtucb.utils.validation import check_finite, check_test_tensor

__all__ = ["MultiTaskGPBase"]


class MultiTaskGPBase(
    SolverCacheMixin,
    MultiTaskConditioningMixin, BatchedMultiOutputGPyTorchModel, ExactGP, FantasizeMixin
):
    """BoTorch plumbing shared by the exact (MT-KB) and Nyström (MT-BKB) multi-task GPs.

    Training data, noise η, transforms, the prior (used by ``ExactMarginalLogLikelihood``), the
    cached posterior solver, ``posterior`` / ``task_posterior`` / ``projected_task_posterior``
    and ``condition_on_observations``. A subclass declares how its posterior is computed by
    implementing two methods:

    * :meth:`_build_solver` — the
      :class:`~botorch_mtucb.multitask.solvers.base.MultiTaskSolver` for the current training
      data and hyperparameters;
    * :meth:`_after_conditioning` — what a conditioned copy inherits from this model (e.g. an
      extended factorisation, or the variances its dictionary is drawn from).

    and may refine :meth:`_working_dtype` (the precision of the factorisation) and
    :meth:`_deepcopy_memo` (objects that conditioned copies share).

    Example:
        >>> from botorch_mtucb.multitask.solvers.exact import DenseSolver
        >>> class DenseMultiTaskGP(MultiTaskGPBase):  # the exact posterior, always dense
        ...     def _build_solver(self):
        ...         return DenseSolver(*self._solver_inputs(*self._base_train_data()))
        ...     def _after_conditioning(self, new, old_solver, Xt):
        ...         pass  # ``new`` builds its own solver when first queried
        >>> model = DenseMultiTaskGP(train_X, train_Y)  # N x d, N x n
        >>> mean, blocks = model.task_posterior(X)  # b x q x n, b x q x n x n
    """

    _supports_batched_models = True
    _supports_cache_root = False  # the tasks are coupled (as BoTorch's MultiTaskGP)

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        covar_module: MultiTaskKernel | None = None,
        noise: float | Tensor = 0.1,
        learn_noise: bool = False,
        input_transform: InputTransform | None = None,
        outcome_transform: OutcomeTransform | None = None,
        mean_module: Mean | None = None,
        train_Yvar: Tensor | None = None,
    ) -> None:
        """Validate the data and build the GPyTorch parts (see the subclasses' arguments)."""
        validate_train_data(train_X, train_Y, allow_batch=True)
        noise_t = _checked_noise(train_X, train_Y, train_Yvar, noise, learn_noise)
        n = train_Y.shape[-1]
        d = train_X.shape[-1]
        with torch.no_grad():
            transformed_X = self.transform_inputs(X=train_X, input_transform=input_transform)
        if outcome_transform is not None:
            outcome_transform.train()
            train_Y, train_Yvar = outcome_transform(train_Y, train_Yvar, X=transformed_X)
        _check_target_resolution(train_Y)
        batch = train_X.shape[:-2]
        covar_module = _checked_kernel(covar_module, transformed_X.shape[-1], n, batch)
        self._num_outputs = n
        self._input_batch_shape = batch
        # η per member when the kernel's hyperparameters are (the default kernel's are)
        lik_batch = batch if covar_module.batch_shape == batch else torch.Size()
        self._aug_batch_shape = torch.Size()  # set below, once all modules exist
        ExactGP.__init__(self, train_X, train_Y, _likelihood(n, train_Yvar, lik_batch))
        if train_Yvar is None:
            self.likelihood.noise = noise_t.to(dtype=torch.get_default_dtype()).expand(
                *lik_batch, 1
            )
            self.likelihood.raw_noise.requires_grad_(learn_noise)
        self.learn_noise = learn_noise
        self._zero_mean = mean_module is None  # the paper's estimator: skip adding zeros
        if mean_module is None:
            mean_module = ZeroMultitaskMean(num_tasks=n)
        elif not isinstance(mean_module, MultitaskMean):
            mean_module = MultitaskMean(mean_module, num_tasks=n)
        self.mean_module = mean_module
        self.covar_module = covar_module
        if input_transform is not None:
            self.input_transform = input_transform
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        self._solver_cache: tuple[tuple, MultiTaskSolver] | None = None
        # batched blocks (fantasies) this model was conditioned on: (X, Y, noise), transformed
        self._conditioned_blocks: list[tuple[Tensor, Tensor, Tensor | None]] = []
        self._d = d
        self._base_batch_shape = train_X.shape[:-2]  # of the data the model was built with
        self._validate_batch(train_X)
        self.to(train_X)
        if train_Yvar is None:
            self.likelihood.noise = noise_t.expand(*lik_batch, 1)
        self._aug_batch_shape = _member_batch_shape(self, batch)

    def _validate_batch(self, train_X: Tensor) -> None:
        """Hook: refuse batched training data where a subclass cannot handle it."""

    # ------------------------------------------------------------------ GPyTorch
    def forward(self, x: Tensor) -> MultitaskMultivariateNormal:
        """Prior ``MultitaskMultivariateNormal`` at ``x: batch x N x d`` (used for fitting).

        An ``ICMMultitaskMultivariateNormal``: for ICM kernels with the homoscedastic noise its
        ``log_prob`` (the exact MLL) costs one ``eigh`` of the ``N x N`` kernel matrix.
        """
        if self.training:
            x = self.transform_inputs(x)
        return ICMMultitaskMultivariateNormal(self.mean_module(x), self.covar_module(x))

    # ------------------------------------------------------------------ properties
    @property
    def known_noise(self) -> bool:
        """Whether the noise variances are given per observation (``train_Yvar``)."""
        return isinstance(self.likelihood, FixedNoiseMultitaskGaussianLikelihood)

    @property
    def noise(self) -> Tensor:
        """The regulariser η (a scalar tensor, in the outcome-transformed space).

        With known noise (``train_Yvar``) the average of the noise variances. A model with
        one η per member of batched training data returns them as ``batch_shape x 1 x 1``
        (the shape that broadcasts against the members' ``batch_shape x q x n`` outputs).
        """
        if self.known_noise:
            return self.likelihood.noise.mean()
        noise = self.likelihood.noise  # [batch_shape x] 1
        if noise.dim() == 1:
            return noise.reshape(())
        return noise.unsqueeze(-1)

    def _noise_diagonal(self, rows: int) -> Tensor:
        """The noise of the first ``rows`` training rows: η (0-dim) when homoscedastic, else
        the interleaved ``[batch_shape x] rows·n`` variances (constant known noise keeps the
        fast path; one η per batch member gives each member's constant diagonal)."""
        if not self.known_noise:
            eta = self.noise
            if eta.dim() == 0:
                return eta
            return eta.reshape(*eta.shape[:-2], 1).expand(
                *eta.shape[:-2], rows * self.num_tasks
            )
        Yvar = self.likelihood.noise  # [fantasy dims x] [batch_shape x] N x n
        Yvar = Yvar[(0,) * (Yvar.dim() - 2 - len(self._base_batch_shape))][..., :rows, :]
        if bool((Yvar == Yvar.reshape(-1)[0]).all()):
            return Yvar.reshape(-1)[0]
        return Yvar.reshape(*Yvar.shape[:-2], -1)

    def _icm_noise(self, noise: Tensor) -> Tensor | None:
        """The η of the ICM eigen identity from :meth:`_noise_diagonal`'s ``noise`` (in the
        working dtype): 0-dim, ``batch_shape x 1 x 1`` for one η per batch member, or ``None``
        for heteroscedastic known noise (the identity needs one η per training set)."""
        if noise.dim() == 0:
            return noise
        if self.known_noise:
            return None
        return noise[..., :1].unsqueeze(-1)

    def _observation_noise(self, mean: Tensor, observation_noise: bool | Tensor) -> bool | Tensor:
        """``observation_noise=True`` of a known-noise model: each task's average variance
        (per member of batched training data)."""
        if observation_noise is True and self.known_noise:
            Yvar = self.likelihood.noise  # [fantasy dims x] [batch_shape x] N x n
            Yvar = Yvar[(0,) * (Yvar.dim() - 2 - len(self._base_batch_shape))]
            return Yvar.mean(-2, keepdim=True).expand(mean.shape)
        return observation_noise

    @property
    def num_tasks(self) -> int:
        return self._num_outputs

    @property
    def uses_icm_fast_path(self) -> bool:
        """Whether the posterior uses the ICM eigen identity (no ``nt x nt`` system)."""
        return self.covar_module.icm_components() is not None

    def _train_resid(self) -> Tensor:
        X = self.train_inputs[0]
        if self._zero_mean:
            return self.train_targets
        return self.train_targets - self.mean_module(X)

    def _prior_mean(self, X: Tensor, mean: Tensor) -> Tensor:
        """``mean`` plus the prior mean at ``X`` (nothing to add for the zero prior)."""
        return mean if self._zero_mean else mean + self.mean_module(X)

    def _working_dtype(self, X: Tensor) -> torch.dtype:
        """Dtype of the factorisation (:func:`~botorch_mtucb.linalg.working_dtype`).

        κ ≤ (tr Γ(X, X) + η)/η bounds the condition number of ``G_t + ηI``; the error of the
        mean relative to the targets' spread is that of the solve times
        :func:`_target_offset_ratio` (targets far from zero lose their variation first).
        """
        if X.dtype == torch.float64:
            return X.dtype
        with torch.no_grad():
            trace = dense(self.covar_module.forward(X, X, diag=True)).sum(-1).max()
            eta = self._noise_diagonal(X.shape[-2]).min()
            kappa = float((trace + eta) / eta)
            ratio = _target_offset_ratio(self._train_resid()[..., : X.shape[-2], :])
        what = f"{type(self).__name__}'s posterior"
        if ratio > 2.0:
            what += f" (targets' size up to {ratio:.3g} times their spread)"
        return working_dtype(X.dtype, kappa * ratio, what)

    def _solver_inputs(
        self, X: Tensor, resid: Tensor | None = None
    ) -> tuple[MultiTaskKernel, Tensor, Tensor, Tensor]:
        """Kernel, training inputs, residuals and η in the working dtype of the factorisation."""
        resid = self._train_resid() if resid is None else resid
        noise = self._noise_diagonal(X.shape[-2])
        cdt = self._working_dtype(X)
        kernel = self.covar_module
        if cdt != X.dtype:  # a float64 copy of the kernel: accurate, no hyperparameter grads
            kernel = copy.deepcopy(kernel).to(cdt)
            X, resid, noise = X.to(cdt), resid.detach().to(cdt), noise.detach().to(cdt)
        return kernel, X, resid, noise

    # ------------------------------------------------------------------ state
    def _extract_targets_and_noise(self) -> tuple[Tensor, Tensor | None]:
        """Targets ``batch_shape x N x n`` (this model stores them so) for BoTorch's
        ``load_state_dict(keep_transforms=True)``, which assumes another layout by default."""
        return self.train_targets, None

    def _restore_targets_and_noise(self, Y: Tensor, Yvar: Tensor | None, strict: bool) -> None:
        self.set_train_data(targets=Y, strict=strict)
        self._solver_cache = None

    def load_state_dict(self, state_dict, strict: bool = True, keep_transforms: bool = True,
                        assign: bool = False) -> None:
        """BoTorch's ``load_state_dict`` (transforms kept by default); drops the solver cache."""
        super().load_state_dict(state_dict, strict=strict, keep_transforms=keep_transforms,
                                assign=assign)
        self._solver_cache = None

    # ------------------------------------------------------------------ posterior
    def _check_X(self, X: Tensor) -> Tensor:
        """Test inputs checked (:func:`~botorch_mtucb.utils.validation.check_test_tensor`:
        a float32 / float64 tensor without NaN or inf; shape ``batch_shape x q x d`` with a
        ``batch_shape`` that broadcasts with the model's), returned in the model's dtype.

        Raises:
            TypeError: If ``X`` is not a float32 / float64 tensor.
            ValueError: If ``X`` holds NaN or infinite values.
            BotorchTensorDimensionError: If ``X`` has the wrong shape.
        """
        X = check_test_tensor(X, "X")
        if X.dim() < 2 or X.shape[-1] != self._d:
            raise BotorchTensorDimensionError(
                f"`X` must have shape `batch_shape x q x {self._d}`, got {tuple(X.shape)}."
            )
        batch = self.batch_shape
        try:
            torch.broadcast_shapes(X.shape[:-2], batch)
        except RuntimeError:
            raise BotorchTensorDimensionError(
                f"`X` must have shape `batch_shape x q x {self._d}` with a `batch_shape` "
                f"broadcastable to the model's batch shape {tuple(batch)} (e.g. "
                f"{(*batch, 'q', self._d)}), got {tuple(X.shape)}."
            ) from None
        if self.training:  # before any input transform: in train mode they may learn bounds
            self.eval()
        return X.to(self.train_targets.dtype)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Exact joint posterior over ``q`` points and ``n`` tasks.

        Args:
            X: ``batch_shape x q x d`` inputs.
            output_indices: Tasks to keep (all by default). An outcome transform is subset to
                them (``subset_output``: ``Standardize`` keeps their means and scales).
            observation_noise: If ``True``, add η to the diagonal; if a tensor of shape
                ``batch_shape x q x n``, add it as (outcome-transformed) noise variances.
            posterior_transform: Applied last (e.g. ``ScalarizedPosteriorTransform``).

        Returns:
            ``GPyTorchPosterior`` with mean ``batch_shape x q x n'`` and an interleaved
            ``batch_shape x (q·n') x (q·n')`` covariance (``n'`` = number of kept tasks).

        Above ``q·n =`` :data:`~botorch_mtucb.multitask.solver_cache.LAZY_JOINT_SIZE` the
        joint covariance of the ``q`` points stays lazy, ``Σ_j K_j ⊗ B_j − R Rᵀ`` (the
        prior's Kronecker terms minus a low rank ``t·n`` term), whose mean and variances cost
        O(q·n·t·n) memory (a sample still factors it densely): on the exact posterior and on
        MT-BKB's ICM one. Elsewhere (batched fantasies or conditioning, MT-BKB with another
        kernel, a batch of task matrices) and below the threshold it is formed densely. To
        predict at many points independently, pass them as ``Q x 1 x d`` (or call
        :meth:`task_posterior`), which forms only the ``n x n`` block of each point.
        """
        X = self._check_X(X)
        if X.shape[:-2].numel() == 0:  # GPyTorch's multitask distributions need a batch
            raise ValueError(
                f"`X` has an empty batch_shape {tuple(X.shape[:-2])}: `posterior` needs at least "
                "one batch element (an empty `q` is fine, and `task_posterior` accepts both)."
            )
        X = self.transform_inputs(X)
        mean, cov = self._predict_joint(X)
        mean = self._prior_mean(X, mean)
        observation_noise = self._observation_noise(mean, observation_noise)
        mvn = joint_task_mvn(mean, cov, self.noise, observation_noise, output_indices)
        posterior = GPyTorchPosterior(distribution=mvn)
        if hasattr(self, "outcome_transform"):
            tf = self.outcome_transform
            if output_indices is not None:
                tf = _subset_outcome_transform(tf, output_indices)
            posterior = tf.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            posterior = posterior_transform(posterior)
        return posterior

    def task_posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and per-point ``n x n`` task covariance Γ_t(x, x).

        The fast path used by :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`: for
        ``q = 1`` this is the whole posterior, and no cross-point covariance is formed.

        Args:
            X: ``batch_shape x q x d`` inputs.

        Returns:
            ``(mean, task_covar)`` of shapes ``batch_shape x q x n`` and
            ``batch_shape x q x n x n``, in the original outcome scale.
        """
        X = self._check_X(X)
        tf = self._standardize_or_none(X)
        if tf is False:
            post = self.posterior(X.unsqueeze(-2))
            n = self.num_tasks
            return post.mean.squeeze(-2), post.mvn.covariance_matrix.reshape(
                *X.shape[:-1], n, n
            )
        Xt = self.transform_inputs(X)
        mean, blocks = self._predict(Xt, full_cov=False)
        mean = self._prior_mean(Xt, mean)
        if tf is not None:
            std = tf.stdvs  # [batch_shape x] 1 x n
            mean = mean * std + tf.means
            blocks = blocks * std.unsqueeze(-1) * std.unsqueeze(-2)
        return mean, blocks

    def projected_task_posterior(self, X: Tensor, directions: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and the variances ``wᵀ Γ_t(x, x) w`` along given task directions.

        What the directional UCBs need (paper 000, App. B.1: Chebyshev takes ``W = I``, the
        per-task variances σ_i²; linear takes ``W = λ``), without forming the ``n x n`` blocks:
        on the ICM path ``wᵀΓ_t(x, x)w = Σ_i s_i(x) (u_iᵀ w)²``.

        Args:
            X: ``batch_shape x q x d`` inputs.
            directions: ``n x k`` matrix ``W`` of directions, in the original outcome scale
                (``k = 0``: the mean alone; the dense solvers then skip the variances).

        Returns:
            ``(mean, quad)`` of shapes ``batch_shape x q x n`` and ``batch_shape x q x k``.
        """
        X = self._check_X(X)
        if X.shape[:-1].numel() == 0:  # no points: empty results
            mean, _ = self._empty_prediction(X, full_cov=False)
            return mean, X.new_zeros(*mean.shape[:-1], directions.shape[-1])
        fast = self._projected_predictor(directions)  # frozen ICM path, cached per solver
        if fast is not None:
            return fast(X)
        tf = self._standardize_or_none(X)
        if tf is False:
            mean, blocks = self.task_posterior(X)
            return mean, torch.einsum("...ab,ak,bk->...k", blocks, directions, directions)
        Xt = self.transform_inputs(X)
        W = directions.to(X)
        if tf is not None:
            W = tf.stdvs.transpose(-1, -2) * W  # [batch_shape x] n x k
        solver = self.solver()
        mean, quad = solver.projected_variances(Xt.to(solver.dtype), W.to(solver.dtype))
        mean, quad = mean.to(X.dtype), quad.to(X.dtype)
        mean = self._prior_mean(Xt, mean)
        if tf is not None:
            mean = mean * tf.stdvs + tf.means
        return mean, quad

    def information_gain(self) -> Tensor:
        """½ log det(I_{nt} + η⁻¹ G_t): the information gain of the training data.

        By Lemma 4 of paper 000, twice this equals Σ_s log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)).
        Computed on the outcome-transformed scale (where η lives).
        """
        return self.solver().information_gain()

    def subset_output(self, idcs: list[int]) -> MultiTaskGPBase:
        """Not supported: the tasks are coupled, so a subset model would lose information."""
        raise NotImplementedError(
            f"{type(self).__name__} couples its tasks; use `posterior(X, output_indices=...)` "
            "(it subsets an outcome transform such as Standardize)."
        )


def _subset_outcome_transform(tf: OutcomeTransform, output_indices: list[int]) -> OutcomeTransform:
    """``tf`` restricted to the outputs ``output_indices`` (its ``subset_output``), in eval mode.

    Raises:
        NotImplementedError: If ``tf`` cannot be subset per output.
    """
    try:
        sub = tf.subset_output([int(i) for i in output_indices])
    except NotImplementedError:
        raise NotImplementedError(
            f"`output_indices` needs an outcome transform that can be subset per output "
            f"(e.g. Standardize); {type(tf).__name__} does not implement `subset_output`."
        ) from None
    return sub.eval()


def _checked_noise(
    train_X: Tensor,
    train_Y: Tensor,
    train_Yvar: Tensor | None,
    noise: float | Tensor,
    learn_noise: bool,
) -> Tensor:
    """η as a tensor of ``train_X``'s dtype, after checking it and the known noise.

    Raises:
        InputDataError: If ``train_Yvar``'s dtype is not ``train_Y``'s.
        ValueError: If ``train_Yvar`` is not positive of the shape of ``train_Y``, contradicts
            ``learn_noise``, or ``noise`` is not a positive finite scalar.
    """
    if train_Yvar is not None:
        check_finite(train_Yvar, "train_Yvar")
        if train_Yvar.dtype != train_Y.dtype:
            raise InputDataError(
                "Expected all inputs to share the same dtype. Got "
                f"{train_Y.dtype} for `train_Y` and {train_Yvar.dtype} for `train_Yvar`."
            )
        if train_Yvar.shape != train_Y.shape or not bool((train_Yvar > 0).all()):
            raise ValueError(
                "`train_Yvar` must hold positive noise variances of the shape of `train_Y` "
                f"{tuple(train_Y.shape)}, got shape {tuple(train_Yvar.shape)}."
            )
        if learn_noise:
            raise ValueError("`learn_noise=True` contradicts a known `train_Yvar`.")
    noise_t = torch.as_tensor(noise, dtype=train_X.dtype, device=train_X.device)
    if noise_t.numel() != 1 or not torch.isfinite(noise_t) or noise_t.item() <= 0:
        raise ValueError(f"`noise` (η) must be a positive finite scalar, got {noise!r}.")
    return noise_t


def _target_offset_ratio(Y: Tensor) -> float:
    """``max_i √(1 + (ȳ_i / s_i)²)``: the size of each task's targets (root mean square)
    relative to their spread (standard deviation ``s_i``, floored at 1e-7 of the size): 1 for
    centred targets, large for targets offset far from zero.

    A solve with ``Y`` loses ``κ · eps`` of ``‖Y‖``; relative to the targets' variation, which
    is what the posterior mean resolves, that is ``κ · eps`` times this ratio.

    Args:
        Y: ``batch_shape x N x n`` targets (1 is returned for ``N < 2``).

    Example:
        >>> round(_target_offset_ratio(torch.tensor([[1e5], [1e5 + 2.0]], dtype=torch.float64)))
        70711
    """
    if Y.shape[-2] < 2:
        return 1.0
    Y = Y.detach().to(torch.float64)
    size = Y.square().mean(dim=-2).sqrt()
    spread = Y.std(dim=-2).maximum(1e-7 * size)
    ratio = (size / spread).nan_to_num(nan=1.0).max()
    return max(1.0, float(ratio))


def _check_target_resolution(train_Y: Tensor) -> None:
    """Warn when (outcome-transformed) targets sit so far from zero that their dtype's
    resolution there is coarse against their spread (paper 000, eq. (1)'s zero prior mean
    then interpolates digits the data no longer hold)."""
    if train_Y.dtype == torch.float64:
        return
    ratio = _target_offset_ratio(train_Y)
    if ratio * torch.finfo(train_Y.dtype).eps > PRECISION_BUDGET:
        warnings.warn(
            f"`train_Y` is far from standardised for {train_Y.dtype}: its values reach "
            f"{ratio:.3g} times their spread, so {train_Y.dtype} keeps little of their variation. "
            "Centre them (outcome_transform=Standardize(m=n)) or use float64 data.",
            InputDataWarning,
            stacklevel=4,
        )


def _checked_kernel(
    covar_module: MultiTaskKernel | None, d: int, n: int, batch: torch.Size
) -> MultiTaskKernel:
    """``covar_module`` checked for ``n`` tasks; ``None`` gives the default ICM kernel over
    BoTorch's dimension-scaled RBF on ``d`` (transformed) inputs with a full-rank ``B``, with
    one set of hyperparameters per member of training data of batch shape ``batch``.

    Raises:
        ValueError: If ``covar_module`` is not a multi-task kernel of ``n`` tasks.
    """
    if covar_module is None:
        covar_module = ICMKernel(
            get_covar_module_with_dim_scaled_prior(ard_num_dims=d, batch_shape=batch),
            num_tasks=n, rank=n, batch_shape=batch,
        )
    if not isinstance(covar_module, MultiTaskKernel):
        raise ValueError(
            "`covar_module` must be a botorch_mtucb multi-task kernel (e.g. ICMKernel), "
            f"got {type(covar_module).__name__}."
        )
    if covar_module.num_tasks != n:
        raise ValueError(
            f"`covar_module` has num_tasks={covar_module.num_tasks} but `train_Y` has "
            f"{n} columns."
        )
    return covar_module


def _likelihood(n: int, train_Yvar: Tensor | None, batch: torch.Size) -> Likelihood:
    """The homoscedastic ``n``-task Gaussian likelihood (one global η, or one per member of
    the batch shape ``batch``), or the known-noise likelihood of the (outcome-transformed)
    ``train_Yvar``."""
    if train_Yvar is None:
        return MultitaskGaussianLikelihood(
            num_tasks=n, rank=0, has_global_noise=True, has_task_noise=False,
            noise_constraint=GreaterThan(1e-9), batch_shape=batch,
        )
    return FixedNoiseMultitaskGaussianLikelihood(train_Yvar)


def _member_batch_shape(model: torch.nn.Module, batch: torch.Size) -> torch.Size:
    """``batch`` when every trainable parameter of ``model`` is one per member of training data
    of that batch shape (leading dimensions ``batch``), else ``torch.Size()``.

    BoTorch's ``fit_gpytorch_mll`` reads this as the model's ``_aug_batch_shape``: with more
    than one member it fits each member's hyperparameters on its own marginal likelihood
    (batched L-BFGS-B); with shared hyperparameters it maximises the members' summed marginal
    likelihood.
    """
    if not len(batch):
        return torch.Size()
    params = [p for p in model.parameters() if p.requires_grad]
    if all(p.shape[: len(batch)] == batch for p in params):
        return batch
    return torch.Size()
