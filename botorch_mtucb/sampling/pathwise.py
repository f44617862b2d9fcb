r"""Pathwise (Matheron) posterior sampling for the package's models, registered with BoTorch.

Importing this module registers the models with BoTorch's dispatcher
``botorch.sampling.pathwise.draw_matheron_paths``, so that ``draw_matheron_paths(model,
sample_shape)`` and what is built on it (``botorch.acquisition.utils.get_optimal_samples``,
``PathwiseThompsonSampling``, and the entropy searches qJES / qPES / qMES fed by those optima,
where the model supports their conditioning) run on:

* :class:`~botorch_mtucb.models.ExactMultiTaskGP` (and so
  :func:`~botorch_mtucb.models.practical_multitask_gp`) with any separable kernel
  Γ = Σ_j k_j B_j (``ICMKernel``, ``TaskSimilarityKernel``, ``IndependentTasksKernel``,
  ``SumOfSeparableKernel``): :func:`draw_exact_multitask_paths`;
* :class:`~botorch_mtucb.models.TruncatedGP`, the GP posterior with kernel ``k`` and noise
  ``λ`` on the truncated rewards (paper 001, Algorithm 1): :func:`draw_truncated_gp_paths`;
* :class:`~botorch_mtucb.models.AdaptiveTruncationGP` with quadrature Fourier features on a
  continuous domain (paper 001, Algorithm 2): its posterior is a Bayesian linear model's,
  sampled exactly in its own features (:func:`draw_adaptive_truncation_paths`);
* :class:`~botorch_mtucb.models.HeavyTailedBatch` (batched data, fantasies): each member's
  own paths, stacked along the batch (:func:`draw_heavy_tailed_batch_paths`).

The Nyström models (MT-BKB: :class:`~botorch_mtucb.models.NystromMultiTaskGP` and its batch)
are registered by :mod:`botorch_mtucb.sampling.nystrom`, in the model's own embedding.

A path is a prior path of random Fourier features plus a Matheron update (pathwise
conditioning: Wilson et al., ICML 2020 and JMLR 2021; :mod:`botorch_mtucb.sampling.paths`):

.. math::
    f_{post}(x) = f(x) + Γ(x, X) (Γ(X, X) + Σ)^{-1} (y − f(X) − ε), \qquad ε \sim N(0, Σ),

with ``Σ = ηI`` (or the known noise variances) for the multi-task GPs (paper 000, eq. (1)) and
``Σ = λI`` with the truncated targets ``ŷ`` for TGP. For ICM (Γ = k·B, one η) the solve uses
the eigendecompositions ``K = W diag(a) Wᵀ`` and ``B = U diag(ξ) Uᵀ`` (paper 000, §3.3):
``vec⁻¹((K ⊗ B + ηI)⁻¹ vec(R)) = W [(Wᵀ R U) ⊘ (a ξᵀ + η)] Uᵀ``; other kernels factor the dense
``(N·n) x (N·n)`` matrix. The random features are BoTorch's
(``botorch.sampling.pathwise.gen_kernel_features``: ``RBFKernel``, ``MaternKernel`` and
``ScaleKernel`` over them); other scalar kernels raise ``NotImplementedError``.

Example:
    >>> from botorch.acquisition.objective import ScalarizedPosteriorTransform
    >>> from botorch.acquisition.utils import get_optimal_samples
    >>> from botorch.sampling.pathwise import draw_matheron_paths
    >>> train_X = torch.rand(10, 2, dtype=torch.float64)  # N x d
    >>> train_Y = torch.cat([train_X.sin(), train_X.cos()], dim=-1)  # N x n, n = 4
    >>> model = ExactMultiTaskGP(train_X, train_Y)
    >>> paths = draw_matheron_paths(model, torch.Size([16]))
    >>> paths(torch.rand(5, 2, dtype=torch.float64)).shape  # sample x n x q
    torch.Size([16, 4, 5])
    >>> tf = ScalarizedPosteriorTransform(torch.full((4,), 0.25, dtype=torch.float64))
    >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    >>> X_opt, f_opt = get_optimal_samples(
    ...     model, bounds, num_optima=8, raw_samples=64, num_restarts=2, posterior_transform=tf
    ... )
    >>> X_opt.shape, f_opt.shape  # num_optima x d, num_optima x n
    (torch.Size([8, 2]), torch.Size([8, 4]))
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.sampling.pathwise.features import KernelFeatureMap, gen_kernel_features
from botorch.sampling.pathwise.posterior_samplers import DrawMatheronPaths, MatheronPath
from botorch.sampling.pathwise.prior_samplers import draw_kernel_feature_paths
from botorch.sampling.pathwise.update_strategies import gaussian_update
from botorch.sampling.pathwise.utils import get_input_transform, get_output_transform
from gpytorch.kernels import Kernel
from linear_operator import to_dense
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Size, Tensor
from torch.nn import Module

from botorch_mtucb.heavy_tailed.adaptive import AdaptiveTruncationGP
from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.kernels.base import MultiTaskKernel, kron_interleaved
from botorch_mtucb.multitask.base import MultiTaskGPBase
from botorch_mtucb.multitask.exact import ExactMultiTaskGP
from botorch_mtucb.sampling.paths import (
    BatchMembersPath,
    ConstantShift,
    FeatureSpacePath,
    SeparablePriorPath,
    SeparableUpdatePath,
)

__all__ = [
    "DEFAULT_NUM_FEATURES",
    "draw_adaptive_truncation_paths",
    "draw_exact_multitask_paths",
    "draw_heavy_tailed_batch_paths",
    "draw_truncated_gp_paths",
    "psd_sqrt",
]

#: Number of random Fourier features per scalar kernel (BoTorch's default).
DEFAULT_NUM_FEATURES = 1024

Components = list[tuple[Kernel, Tensor]]


def psd_sqrt(B: Tensor) -> Tensor:
    """Symmetric square root ``U diag(√max(ξ, 0)) Uᵀ`` of a PSD ``n x n`` matrix ``B``.

    Computed in float64 and returned in ``B``'s dtype (a singular ``B`` is fine).

    Example:
        >>> psd_sqrt(torch.tensor([[4.0, 0.0], [0.0, 9.0]]))
        tensor([[2., 0.],
                [0., 3.]])
    """
    B64 = B.detach().to(torch.float64)
    xi, U = torch.linalg.eigh(0.5 * (B64 + B64.transpose(-1, -2)))
    return ((U * xi.clamp_min(0.0).sqrt().unsqueeze(-2)) @ U.transpose(-1, -2)).to(B.dtype)


def task_components(kernel: MultiTaskKernel) -> Components:
    """The separable terms ``[(k_j, B_j)]`` (one merged term for ICM), ``B_j`` detached."""
    icm = kernel.icm_components()
    comps = [icm] if icm is not None else kernel.separable_components()
    return [(k, B.detach()) for k, B in comps]


def _feature_map(kernel: Kernel, num_inputs: int, num_features: int) -> KernelFeatureMap:
    """BoTorch's random features of ``kernel``, with an error naming an unsupported kernel.

    Raises:
        NotImplementedError: For a kernel without random features, or with ``active_dims``
            (the multi-task kernels evaluate their scalar kernels on all input dimensions).
    """
    for sub in kernel.modules():
        if isinstance(sub, Kernel) and sub.active_dims is not None:
            raise NotImplementedError(
                f"Pathwise sampling does not support `active_dims` on the scalar kernel "
                f"{type(sub).__name__} of a multi-task model."
            )
    try:
        return gen_kernel_features(kernel, num_inputs=num_inputs, num_outputs=num_features)
    except NotImplementedError as err:
        raise NotImplementedError(
            f"Pathwise sampling needs random Fourier features of {type(kernel).__name__}, and "
            "botorch.sampling.pathwise.gen_kernel_features has none (supported: RBFKernel, "
            "MaternKernel and ScaleKernel over them)."
        ) from err


def prior_path(
    comps: Components,
    num_inputs: int,
    num_outputs: int,
    sample_shape: Size,
    batch_shape: Size,
    num_features: int,
    mean_module: Module | None,
    like: Tensor,
) -> SeparablePriorPath:
    """Random-feature prior path of Γ = Σ_j k_j B_j: ``V_j = W_j B_j^{1/2}``, ``W_j`` normal."""
    maps, weights = [], []
    for k, B in comps:
        phi = _feature_map(k, num_inputs, num_features)
        W = torch.randn(
            *sample_shape, *batch_shape, phi.num_outputs, num_outputs,
            dtype=like.dtype, device=like.device,
        )
        maps.append(phi)
        weights.append(W @ psd_sqrt(B).to(like))
    return SeparablePriorPath(maps, weights, mean_module=mean_module, num_outputs=num_outputs)


def _solve(comps: Components, X: Tensor, R: Tensor, noise: Tensor) -> Tensor:
    """``A`` with ``vec(A) = (Σ_j K_j ⊗ B_j + Σ)⁻¹ vec(R)`` (interleaved, ``... x N x n``).

    One term and a scalar η: the ICM eigen identity (module docstring); else a Cholesky of
    the dense ``(N·n) x (N·n)`` matrix. ``noise``: η (0-dim) or ``batch_shape x N x n``.
    """
    N, n = R.shape[-2:]
    if len(comps) == 1 and noise.dim() == 0:
        k, B = comps[0]
        K = to_dense(k.forward(X, X))
        a, W = torch.linalg.eigh(0.5 * (K + K.transpose(-1, -2)))
        xi, U = torch.linalg.eigh(0.5 * (B + B.transpose(-1, -2)))
        denom = a.clamp_min(0.0).unsqueeze(-1) * xi.clamp_min(0.0) + noise
        return W @ ((W.transpose(-1, -2) @ R @ U) / denom) @ U.transpose(-1, -2)
    G = sum(kron_interleaved(to_dense(k.forward(X, X)), B) for k, B in comps)
    if noise.dim() == 0:
        G = G + noise * torch.eye(N * n, dtype=G.dtype, device=G.device)
    else:
        G = G + torch.diag_embed(noise.expand(*G.shape[:-2], N, n).reshape(*G.shape[:-2], -1))
    L = psd_safe_cholesky(G)
    vec = torch.cholesky_solve(R.reshape(*R.shape[:-2], N * n, 1), L)
    return vec.reshape(R.shape)


def draw_exact_multitask_paths(
    model: ExactMultiTaskGP,
    sample_shape: Sequence[int],
    num_features: int = DEFAULT_NUM_FEATURES,
) -> MatheronPath:
    r"""Paths of an :class:`~botorch_mtucb.models.ExactMultiTaskGP` posterior (Matheron's rule).

    ``f_post(x) = m(x) + Σ_j B_j^{1/2} g_j(x) + Σ_j k_j(x, X) A B_j`` with ``g_j`` random
    Fourier draws of ``k_j`` and ``vec(A) = (Γ(X, X) + Σ)⁻¹ vec(y − f(X) − ε)``: the posterior
    of paper 000, eq. (1) in distribution, up to the random-feature approximation of the
    prior (module docstring). Input transforms are applied and outcome transforms undone as
    for BoTorch's ``SingleTaskGP``; the update is computed in the model's working dtype.

    Args:
        model: The model (its current data and hyperparameters; put in eval mode).
        sample_shape: Number of paths, e.g. ``torch.Size([16])``.
        num_features: Random Fourier features per scalar kernel (even).

    Returns:
        A BoTorch ``MatheronPath`` mapping ``batch_shape x q x d`` to
        ``sample_shape x batch_shape x n x q`` (``sample_shape x batch_shape x q`` for
        ``n = 1``), in the original outcome scale.

    Example:
        >>> train_X = torch.rand(10, 1, dtype=torch.float64)  # N x d
        >>> train_Y = torch.cat([torch.sin(6 * train_X), torch.cos(6 * train_X)], dim=-1)
        >>> model = ExactMultiTaskGP(train_X, train_Y)  # n = 2
        >>> paths = draw_exact_multitask_paths(model, torch.Size([16]))
        >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x n x q
        torch.Size([16, 2, 5])
    """
    sample_shape = Size(sample_shape)
    model.eval()
    X = model.train_inputs[0]
    Y = model.train_targets
    n = model.num_tasks
    kernel = model.covar_module
    cdt = model._working_dtype(X)
    work = kernel if cdt == X.dtype else copy.deepcopy(kernel).to(cdt)
    noise = model.likelihood.noise if model.known_noise else model.noise
    prior = prior_path(
        task_components(kernel), X.shape[-1], n, sample_shape, X.shape[:-2], num_features,
        None if model._zero_mean else model.mean_module, X,
    )
    with torch.no_grad():
        f_X = prior.values(X)  # sample x batch x N x n, with the prior mean
        eps = noise.detach().sqrt() * torch.randn_like(f_X)
        R = (Y - f_X - eps).to(cdt)
        comps = task_components(work)
        A = _solve(comps, X.to(cdt), R, noise.detach().to(cdt))
        coefficients = [A @ B for _, B in comps]
    update = SeparableUpdatePath(
        [k for k, _ in comps], X.detach().to(cdt), coefficients, n, out_dtype=X.dtype
    )
    return MatheronPath(
        prior_paths=prior,
        update_paths=update,
        input_transform=get_input_transform(model),
        output_transform=get_output_transform(model),
    )


def draw_truncated_gp_paths(
    model: TruncatedGP,
    sample_shape: Sequence[int],
    num_features: int = DEFAULT_NUM_FEATURES,
) -> MatheronPath:
    r"""Paths of a :class:`~botorch_mtucb.models.TruncatedGP` posterior (Matheron's rule).

    The posterior ``N(μ̂_t, σ²_t)`` of paper 001, Algorithm 1 is that of a GP with kernel
    ``k`` and noise ``λ`` given the truncated targets ``ŷ``, so its paths are
    ``loc + f(x) + k(x, X) (K + λI)⁻¹ (ŷ − f(X) − ε)``, ``ε ~ N(0, λI)``, with ``f`` a
    random-feature prior path of ``k`` and the model's own Cholesky factor of ``K + λI``
    (dense path; on a finite arm set the factor is formed here).

    Args:
        model: The model.
        sample_shape: Number of paths, e.g. ``torch.Size([16])``.
        num_features: Random Fourier features of ``k`` (even).

    Returns:
        A BoTorch ``MatheronPath`` mapping ``batch_shape x q x d`` to
        ``sample_shape x batch_shape x q``, in the rewards' units.

    Example:
        >>> train_X = torch.rand(10, 1, dtype=torch.float64)  # t x d
        >>> train_Y = torch.sin(6 * train_X)  # t x 1
        >>> model = TruncatedGP(train_X, train_Y, v=1.0)
        >>> paths = draw_truncated_gp_paths(model, torch.Size([16]))
        >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x q
        torch.Size([16, 5])
    """
    sample_shape = Size(sample_shape)
    X, kernel, cdt = model.train_X, model.covar_module, model._cdtype
    work = kernel if cdt == X.dtype else copy.deepcopy(kernel).to(cdt)
    one = torch.ones(1, 1, dtype=X.dtype, device=X.device)
    prior = prior_path([(kernel, one)], X.shape[-1], 1, sample_shape, Size(), num_features,
                        None, X)
    t = X.shape[-2]
    with torch.no_grad():
        f_X = prior.values(X)  # sample x t x 1
        noise = model.train_noise.to(f_X)  # λ each, or the variances it was conditioned with
        eps = noise.sqrt().unsqueeze(-1) * torch.randn_like(f_X)
        R = (model.train_targets.unsqueeze(-1) - f_X - eps).to(cdt)
        if t == 0:
            A = R
        else:
            L = model.__dict__.get("_L") if model._arms is None else None
            if L is None:
                K = to_dense(work(X.to(cdt), X.to(cdt)))
                L = psd_safe_cholesky(K + torch.diag_embed(noise.to(cdt)))
            A = torch.cholesky_solve(R, L)
    update = SeparableUpdatePath([work], X.detach().to(cdt), [A], 1, out_dtype=X.dtype)
    shift = ConstantShift(model.location) if model.location != 0.0 else None
    return MatheronPath(prior_paths=prior, update_paths=update, output_transform=shift)


def draw_adaptive_truncation_paths(
    model: AdaptiveTruncationGP, sample_shape: Sequence[int]
) -> FeatureSpacePath:
    r"""Exact posterior paths of an :class:`~botorch_mtucb.models.AdaptiveTruncationGP` (QFF).

    With quadrature Fourier features φ the posterior of paper 001, Algorithm 2 is
    ``N(loc + φ(x)^T θ_t, λ φ(x)^T V_t^{-1} φ(x'))``, that of the weights
    ``w ~ N(θ_t, λ V_t^{-1})``: a path is ``loc + φ(x)^T (θ_t + √λ B z)``, ``z ~ N(0, I)``,
    ``B Bᵀ = V_t^{-1}`` (the model's own factor; no random-feature approximation).

    Args:
        model: The model (quadrature Fourier features, continuous domain).
        sample_shape: Number of paths, e.g. ``torch.Size([16])``.

    Returns:
        A :class:`~botorch_mtucb.sampling.paths.FeatureSpacePath` mapping
        ``batch_shape x q x d`` to ``sample_shape x batch_shape x q``.

    Raises:
        NotImplementedError: For Nyström features (their posterior adds the Nyström residual
            ``k − φᵀφ``) or a finite arm set (the posterior lives on the arms only).

    Example:
        >>> from botorch_mtucb.features import QuadratureFourierFeatures
        >>> X = torch.rand(20, 1, dtype=torch.float64)  # t x d, in [0, 1]
        >>> Y = torch.sin(6 * X)  # t x 1
        >>> qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=16, dim=1)
        >>> model = AdaptiveTruncationGP(X, Y, alpha=0.5, v=4.0, features=qff, horizon=100)
        >>> paths = draw_adaptive_truncation_paths(model, torch.Size([16]))
        >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x q
        torch.Size([16, 5])
    """
    if model.kind != "qff" or model._arms is not None:
        what = "a finite arm set" if model._arms is not None else "Nyström features"
        raise NotImplementedError(
            f"Pathwise sampling of AdaptiveTruncationGP needs quadrature Fourier features on a "
            f"continuous domain; this model has {what}."
        )
    features = model.__dict__["_cfeat"][2]  # the features in the working dtype
    theta, B = model._theta, model._B
    z = torch.randn(*Size(sample_shape), B.shape[-1], dtype=B.dtype, device=B.device)
    weight = theta + model.lam**0.5 * (z @ B.transpose(-1, -2))
    return FeatureSpacePath(features, weight, shift=model.location, out_dtype=model._dtype)


def draw_heavy_tailed_batch_paths(
    model: HeavyTailedBatch, sample_shape: Sequence[int]
) -> BatchMembersPath:
    r"""Paths of a :class:`~botorch_mtucb.models.HeavyTailedBatch`: each member's own.

    Member ``i`` (a ``TruncatedGP`` or an ``AdaptiveTruncationGP``, truncated on its own
    rewards) gets ``draw_matheron_paths(members[i], sample_shape)``, so each member's paths
    sample that member's posterior (:func:`draw_truncated_gp_paths`,
    :func:`draw_adaptive_truncation_paths`), independently across members.

    Args:
        model: The batch.
        sample_shape: Number of paths per member, e.g. ``torch.Size([16])``.

    Returns:
        A :class:`~botorch_mtucb.sampling.paths.BatchMembersPath` mapping
        ``batch' x batch_shape x q x d`` (or ``q x d``) to
        ``sample_shape x batch' x batch_shape x q``.

    Raises:
        NotImplementedError: If a member has no paths (e.g. Nyström features).

    Example:
        >>> from botorch_mtucb.models import TruncatedGP
        >>> X = torch.rand(3, 10, 1, dtype=torch.float64)
        >>> batch = TruncatedGP(X, torch.sin(6 * X), v=1.0)  # a HeavyTailedBatch
        >>> paths = draw_heavy_tailed_batch_paths(batch, torch.Size([16]))
        >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x batch x q
        torch.Size([16, 3, 5])
    """
    sample_shape = Size(sample_shape)
    paths = [DrawMatheronPaths(m, sample_shape=sample_shape,
                               prior_sampler=draw_kernel_feature_paths,
                               update_strategy=gaussian_update) for m in model.members]
    return BatchMembersPath(paths, model.batch_shape, num_outputs=1)


def check_samplers(model: Module, prior_sampler: object, update_strategy: object) -> None:
    """These models have their own prior and update: refuse other BoTorch strategies."""
    if prior_sampler is not draw_kernel_feature_paths or update_strategy is not gaussian_update:
        raise UnsupportedError(
            f"draw_matheron_paths on {type(model).__name__} uses its own separable prior and "
            "Matheron update; custom `prior_sampler` / `update_strategy` are not supported."
        )


def register_matheron_paths(model_type: type, draw: Callable[[Any, Size], Module]) -> None:
    """Register ``draw(model, sample_shape)`` as ``draw_matheron_paths`` of ``model_type``.

    The registered dispatcher takes BoTorch's keyword arguments and refuses any other
    ``prior_sampler`` / ``update_strategy`` than BoTorch's defaults (:func:`check_samplers`):
    these models draw their own prior and update.
    """

    def dispatch(
        model: Module,
        *,
        sample_shape: Size,
        prior_sampler: object = draw_kernel_feature_paths,
        update_strategy: object = gaussian_update,
    ) -> Module:
        check_samplers(model, prior_sampler, update_strategy)
        return draw(model, sample_shape)

    DrawMatheronPaths.register(model_type)(dispatch)


@DrawMatheronPaths.register(MultiTaskGPBase)
def _draw_matheron_paths_multitask_base(model: MultiTaskGPBase, **kwargs: object) -> None:
    raise UnsupportedError(
        "Pathwise sampling is implemented for ExactMultiTaskGP and NystromMultiTaskGP, not "
        f"{type(model).__name__}."
    )


for _model_type, _draw in (
    (ExactMultiTaskGP, draw_exact_multitask_paths),
    (TruncatedGP, draw_truncated_gp_paths),
    (AdaptiveTruncationGP, draw_adaptive_truncation_paths),
    (HeavyTailedBatch, draw_heavy_tailed_batch_paths),
):
    register_matheron_paths(_model_type, _draw)
