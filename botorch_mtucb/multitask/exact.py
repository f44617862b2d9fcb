"""Exact multi-task GP / kernel regression: the MT-KB model (paper 000, §3.1, §3.3, App. A).

:class:`ExactMultiTaskGP` computes the posterior of paper 000, eq. (1) with the ICM solver
when the kernel is one separable term Γ = k·B and the noise one shared η, else with the dense
Cholesky solver (:mod:`botorch_mtucb.multitask.solvers.exact`).
"""

from __future__ import annotations

import copy

import torch
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from gpytorch.means import Mean, MultitaskMean
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.kernels.independent import IndependentTasksKernel
from botorch_mtucb.linalg.icm_cholesky import take_icm_factors
from botorch_mtucb.multitask.base import MultiTaskGPBase
from botorch_mtucb.multitask.solvers.base import MultiTaskSolver
from botorch_mtucb.multitask.solvers.exact import (
    DenseSolver,
    ICMSolver,
    extend_solver,
    icm_factor_key,
    icm_solver,
)
from botorch_mtucb.utils.model_data import original_train_inputs

__all__ = ["ExactMultiTaskGP"]


class ExactMultiTaskGP(MultiTaskGPBase):
    r"""Exact multi-task GP with a matrix-valued kernel Γ: the model behind MT-KB.

    For vector observations ``y_s ∈ R^n`` at ``x_s`` and regulariser (Gaussian noise
    variance) η, the posterior is (paper 000, eq. (1) and §3.1)

    .. math::
        μ_t(x) = G_t(x)^T (G_t + η I_{nt})^{-1} Y_t, \qquad
        Γ_t(x, x') = Γ(x, x') − G_t(x)^T (G_t + η I_{nt})^{-1} G_t(x').

    For kernels with one separable term Γ = k·B (``ICMKernel``, ``TaskSimilarityKernel``,
    ``IndependentTasksKernel`` with a shared scalar kernel) the model never forms the
    ``nt x nt`` system: one eigendecomposition of the ``t x t`` matrix ``K_t`` serves all ``n``
    eigen-directions of ``B`` (§3.3, Appendix A). Other kernels use a dense Cholesky.

    The posterior is a ``GPyTorchPosterior`` over a ``MultitaskMultivariateNormal`` whose
    covariance is joint over the ``q`` points and ``n`` tasks, in GPyTorch's interleaved order
    (index ``point·n + task``). The model subclasses ``BatchedMultiOutputGPyTorchModel`` so that
    Ax treats it as one joint model instead of splitting it into a ``ModelListGP``.

    Hyperparameters can be fitted with
    ``fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))``. With batched
    training data (``batch_shape x N x d``) the default kernel and η are one per member
    (``batch_shape``) and ``fit_gpytorch_mll`` fits each member on its own marginal likelihood
    (BoTorch's batched path); a user kernel without the data's batch shape is shared, and the
    fit then maximises the members' summed marginal likelihood. The model pickles and moves
    with ``.to(dtype)``; float32 data are factorised in float64 where float32 would lose
    accuracy (ill-conditioning, or targets far from zero relative to their spread).

    Example:
        >>> model = ExactMultiTaskGP(train_X, train_Y)  # N x d, N x n
        >>> post = model.posterior(torch.rand(5, 1, d, dtype=torch.float64))
        >>> post.mean.shape  # 5 x 1 x n
        >>> mean, blocks = model.task_posterior(torch.rand(5, d, dtype=torch.float64))
        >>> model = model.condition_on_observations(x_new, y_new)  # m x d, m x n
    """

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
        """
        Args:
            train_X: ``N x d`` training inputs, or ``batch_shape x N x d`` for a batch of
                training sets (one independent model per member).
            train_Y: ``[batch_shape x] N x n`` training observations (all ``n`` tasks observed
                at each input).
            covar_module: Multi-task kernel with ``num_tasks = n``. Default: ``ICMKernel`` over
                an RBF kernel (BoTorch's dimension-scaled lengthscale prior) with a learnable
                full-rank task matrix ``B``; for batched data with ``batch_shape`` (one ``B``
                and lengthscale per member, and one η per member, each fitted by
                ``fit_gpytorch_mll`` on its member's marginal likelihood). A kernel without
                the data's batch shape is shared by the members, and so is η.
            noise: Regulariser / Gaussian noise variance η > 0 (paper 000 uses 0.1).
            learn_noise: Make η a learnable hyperparameter (initialised at ``noise``).
            input_transform: BoTorch input transform.
            outcome_transform: BoTorch outcome transform (e.g. ``Standardize(m=n)``).
            mean_module: Prior mean; zero by default (the paper's estimator). A scalar
                ``Mean`` is shared by all tasks; a ``MultitaskMean`` is used as is.
            train_Yvar: Known ``N x n`` noise variances of ``train_Y`` (replaces ``noise``).
                The ICM eigen identity needs one shared η, so heteroscedastic known noise
                takes the generic ``nt x nt`` Cholesky path; constant ``train_Yvar`` keeps the
                fast path. ``noise`` then reads their average, and ``observation_noise=True``
                adds each task's average variance. New rows need ``noise`` in
                ``condition_on_observations``.
        """
        super().__init__(
            train_X,
            train_Y,
            covar_module=covar_module,
            noise=noise,
            learn_noise=learn_noise,
            input_transform=input_transform,
            outcome_transform=outcome_transform,
            mean_module=mean_module,
            train_Yvar=train_Yvar,
        )

    def _build_solver(self) -> MultiTaskSolver:
        kernel, X, resid, noise = self._solver_inputs(*self._base_train_data())
        icm = kernel.icm_components()
        eta = self._icm_noise(noise)
        if icm is not None and eta is not None:  # the eigen identity needs one η per member
            k, B = icm
            if eta.dim() > 0:  # one η (and B) per member of batched training data
                return ICMSolver(k, B, X, resid, eta)
            # the factorisation of a fit's last likelihood evaluation, if at these values
            stored = take_icm_factors(self, icm_factor_key(kernel, X, noise))
            return icm_solver(k, B, X, resid, noise, stored=stored)
        return DenseSolver(kernel, X, resid, noise)

    def _after_conditioning(
        self, new: ExactMultiTaskGP, old_solver: MultiTaskSolver, Xt: Tensor
    ) -> None:
        """Seed ``new``'s solver cache by extending this model's factorisation."""
        train_X = new.train_inputs[0]
        cdt = old_solver.dtype
        if new._working_dtype(train_X) != cdt:
            return  # the new data needs another precision: the next query builds from scratch
        with torch.no_grad():
            solver = extend_solver(
                old_solver, Xt.to(cdt), train_X.to(cdt), new._train_resid().to(cdt)
            )
        new._solver_cache = (new._cache_key(), solver)

    def subset_output(self, idcs: list[int]) -> ExactMultiTaskGP:
        """A model of the tasks ``idcs`` only, where that loses nothing: independent tasks.

        With an :class:`~botorch_mtucb.kernels.IndependentTasksKernel` (Γ = diag(k_i)) the tasks
        do not share information, so the subset model has the same posterior on its tasks.
        Coupled kernels (ICM, sums) refuse: use ``posterior(X, output_indices=...)``.

        Args:
            idcs: Task indices to keep (distinct, in ``[0, n)``).
        """
        n = self.num_tasks
        idcs = [int(i) for i in idcs]
        if not idcs or len(set(idcs)) != len(idcs) or min(idcs) < 0 or max(idcs) >= n:
            raise ValueError(f"`idcs` must be distinct task indices in [0, {n - 1}], got {idcs}.")
        kernel = self.covar_module
        if not isinstance(kernel, IndependentTasksKernel) or self.batch_shape != torch.Size():
            raise NotImplementedError(
                f"subset_output needs independent tasks (IndependentTasksKernel) and no batch; "
                f"this model's {type(kernel).__name__} couples its tasks: use "
                "`posterior(X, output_indices=...)` (it subsets an outcome transform such as "
                "Standardize)."
            )
        self.eval()
        X = original_train_inputs(self)
        # The targets and known noise as the model holds them (outcome-transformed), and the
        # transform subset with its statistics: refitting it on the targets would change the
        # scale the kernel and η were fitted in (after conditioning, the targets are not the
        # data the transform was fitted on).
        Y, Yvar = self.train_targets, self.likelihood.noise if self.known_noise else None
        tf = getattr(self, "outcome_transform", None)
        mean = None if self._zero_mean else MultitaskMean(
            [self.mean_module.base_means[i] for i in idcs], num_tasks=len(idcs)
        )
        subset = type(self)(
            X,
            Y[..., idcs],
            covar_module=IndependentTasksKernel([kernel.data_covar_modules[i] for i in idcs]),
            noise=self.noise.detach() if not self.known_noise else 0.1,
            learn_noise=self.learn_noise,
            input_transform=copy.deepcopy(getattr(self, "input_transform", None)),
            mean_module=mean,
            train_Yvar=None if Yvar is None else Yvar[..., idcs],
        )
        if tf is not None:
            subset.outcome_transform = tf.subset_output(idcs).eval()
        return subset.eval()
