r"""Posterior paths of the MT-BKB (Nyström) multi-task GPs, in the model's own embedding.

The posterior of :class:`~botorch_mtucb.models.NystromMultiTaskGP` (paper 000, §3.2) is that
of the Nyström-embedded (deterministic-training-conditional) model

.. math::
    f(x) = m(x) + Ψ(x)^T w + r(x), \qquad w \sim N(0, I_r), \qquad
    r \sim GP(0,\ Γ − Ψ^TΨ) \text{ independent of } w, \qquad
    y_s = m(x_s) + Ψ(x_s)^T w + ε_s,

with ``Ψ(x) = M Γ(X_S, x)`` the embedding in the solver's reduced coordinates
(``M Γ(X_S, X_S) Mᵀ = I_r``; ``X_S`` the basis points of the dictionary) and ``r`` not
observed. Given the data the weights are those of a Bayesian linear model,
``w ~ N(α, η (V + ηI)^{-1})`` with ``V = Σ_s Ψ(x_s)Ψ(x_s)ᵀ`` and
``α = (V + ηI)^{-1} Σ_s Ψ(x_s) y_s``, and ``r`` keeps its prior: this is the model's
``μ̃_t``, ``Γ̃_t``. A path is

.. math::
    \tilde f(x) = m(x) + g(x) + Ψ(x)^T \big(w − M g(X_S)\big),

with ``g`` a random-Fourier-feature prior path of Γ (:mod:`botorch_mtucb.sampling.paths`):
``Cov(g(x), M g(X_S)) = Ψ(x)`` and ``Cov(M g(X_S)) = I_r``, so ``g − Ψᵀ M g(X_S)`` has
covariance ``Γ − ΨᵀΨ``. The mean and the Nyström part ``η Ψᵀ(V + ηI)^{-1}Ψ`` of the
covariance are exact; only the residual ``Γ − ΨᵀΨ``, which vanishes on the span of the
dictionary, carries the random-feature error of ``g``. The last term is
``Γ(x, X_S) vec(A)`` with ``vec(A) = Mᵀ(w − M g(X_S))``
(:class:`~botorch_mtucb.sampling.paths.SeparableUpdatePath`).

For Γ = k·B (:class:`~botorch_mtucb.multitask.solvers.nystrom_icm.ICMNystromSolver`,
paper 000, eqs. (7)–(8)) with ``B = U diag(ξ) Uᵀ`` and the rotated scalar embedding
``Z(x) = M_qᵀ k(X_S, x)`` (``ṽ = Σ_s Z(x_s)Z(x_s)ᵀ = diag(c)``), direction ``u_i`` is a scalar
linear model with features ``√ξ_i Z`` whose weights have the diagonal posterior
``N(√ξ_i (ξ_i c + η)^{-1} ∘ p_i, η (ξ_i c + η)^{-1})`` (``p_i = Σ_s Z(x_s) y_sᵀu_i``), so
``A = M_q [(C + √(ξ η (ξ c + η)^{-1}) ∘ Ξ) Uᵀ − M_qᵀ g(X_S)]`` with ``C`` the solver's
mean coefficients and ``Ξ`` standard normal (``r x n``).

A :class:`~botorch_mtucb.models.NystromMultiTaskBatch` samples each member's paths and
stacks them (:class:`~botorch_mtucb.sampling.paths.BatchMembersPath`).

Example:
    >>> from botorch.sampling.pathwise import draw_matheron_paths
    >>> from botorch_mtucb.models import NystromMultiTaskGP
    >>> X = torch.rand(12, 1, dtype=torch.float64)
    >>> Y = torch.cat([torch.sin(6 * X), torch.cos(6 * X)], dim=-1)
    >>> model = NystromMultiTaskGP(X, Y, generator=0)
    >>> paths = draw_matheron_paths(model, torch.Size([16]))
    >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x n x q
    torch.Size([16, 2, 5])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.sampling.pathwise.posterior_samplers import MatheronPath
from botorch.sampling.pathwise.utils import get_input_transform, get_output_transform
from gpytorch.kernels import Kernel
from torch import Size, Tensor

from botorch_mtucb.multitask.nystrom import NystromMultiTaskGP
from botorch_mtucb.multitask.nystrom_batch import NystromMultiTaskBatch
from botorch_mtucb.multitask.solvers.nystrom import NystromSolver
from botorch_mtucb.multitask.solvers.nystrom_icm import ICMNystromSolver
from botorch_mtucb.sampling.paths import (
    BatchMembersPath,
    SeparablePriorPath,
    SeparableUpdatePath,
)
from botorch_mtucb.sampling.pathwise import (
    DEFAULT_NUM_FEATURES,
    prior_path,
    register_matheron_paths,
    task_components,
)

__all__ = ["draw_nystrom_batch_paths", "draw_nystrom_multitask_paths"]

Update = tuple[list[Kernel], Tensor, list[Tensor]]


def _icm_update(solver: ICMNystromSolver, prior: SeparablePriorPath, sample_shape: Size) -> Update:
    """Kernels, points and coefficients of the update for Γ = k·B (module docstring)."""
    cdt, basis, rot = solver.dtype, solver.basis_X, solver.rotation
    g = prior.centred_values(basis.to(prior.dtype)).to(cdt)  # sample x s x n
    z = torch.randn(*sample_shape, *rot.coef.shape, dtype=cdt, device=basis.device)
    sd = (rot.xi * solver.noise * rot.inv).sqrt()  # r x n
    Mq = solver.Mq  # s x r
    C = (rot.coef + sd * z) @ rot.U.transpose(-1, -2) - Mq.transpose(-1, -2) @ g
    return [solver.data_kernel], basis, [Mq @ C]


def _generic_update(solver: NystromSolver, prior: SeparablePriorPath, sample_shape: Size) -> Update:
    """Kernels, points and coefficients of the update for any separable Γ (module docstring)."""
    cdt, basis, M = solver.dtype, solver.basis_X, solver.M
    s, n, r = basis.shape[-2], solver.num_tasks, solver.rank
    g = prior.centred_values(basis.to(prior.dtype)).to(cdt)  # sample x s x n
    z = torch.randn(*sample_shape, r, 1, dtype=cdt, device=basis.device)
    L = solver.factor.L  # V + ηI = L Lᵀ: (V + ηI)⁻¹ = L⁻ᵀ L⁻¹
    w = solver.alpha + solver.noise.sqrt() * torch.linalg.solve_triangular(
        L.transpose(-1, -2), z, upper=True
    )
    u = M @ g.reshape(*sample_shape, s * n, 1)
    A = (M.transpose(-1, -2) @ (w - u)).reshape(*sample_shape, s, n)
    comps = task_components(solver.kernel)
    return [k for k, _ in comps], basis, [A @ B for _, B in comps]


def draw_nystrom_multitask_paths(
    model: NystromMultiTaskGP,
    sample_shape: Sequence[int],
    num_features: int = DEFAULT_NUM_FEATURES,
) -> MatheronPath:
    r"""Paths of a :class:`~botorch_mtucb.models.NystromMultiTaskGP` posterior (MT-BKB).

    ``f̃(x) = m(x) + g(x) + Ψ(x)ᵀ(w − M g(X_S))`` with ``w`` drawn from the posterior of the
    Nyström embedding's weights (the model's own factors) and ``g`` a random-feature prior
    path of Γ (module docstring): the model's posterior ``μ̃_t``, ``Γ̃_t`` (paper 000, §3.2)
    in distribution, the Nyström part exactly and the residual ``Γ − ΨᵀΨ`` up to the
    random-feature approximation. Input transforms are applied and outcome transforms
    undone as for BoTorch's ``SingleTaskGP``; the update is computed in the solver's dtype.

    Args:
        model: The model (its current dictionary, data and hyperparameters; put in eval mode).
        sample_shape: Number of paths, e.g. ``torch.Size([16])``.
        num_features: Random Fourier features per scalar kernel of ``g`` (even).

    Returns:
        A BoTorch ``MatheronPath`` mapping ``batch_shape x q x d`` to
        ``sample_shape x batch_shape x n x q`` (``sample_shape x batch_shape x q`` for
        ``n = 1``), in the original outcome scale.

    Raises:
        UnsupportedError: For a model conditioned on batched observations (a fantasy model:
            its posterior is a Gaussian update of the Nyström one, not a Nyström posterior).

    Example:
        >>> from botorch_mtucb.models import NystromMultiTaskGP
        >>> X = torch.rand(12, 1, dtype=torch.float64)
        >>> model = NystromMultiTaskGP(X, torch.cat([X, X.square()], dim=-1), generator=0)
        >>> paths = draw_nystrom_multitask_paths(model, torch.Size([16]))
        >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x n x q
        torch.Size([16, 2, 5])
    """
    if model._conditioned_blocks:
        raise UnsupportedError(
            "Pathwise sampling of NystromMultiTaskGP needs a model conditioned on unbatched "
            "observations only; this one was conditioned on batched observations (a fantasy "
            f"model of batch shape {tuple(model.batch_shape)})."
        )
    sample_shape = Size(sample_shape)
    model.eval()
    solver = model.solver()
    X = model.train_inputs[0]
    n = model.num_tasks
    prior = prior_path(
        task_components(model.covar_module), X.shape[-1], n, sample_shape, Size(),
        num_features, None if model._zero_mean else model.mean_module, X,
    )
    with torch.no_grad():
        if isinstance(solver, ICMNystromSolver):
            kernels, points, coefficients = _icm_update(solver, prior, sample_shape)
        else:
            kernels, points, coefficients = _generic_update(solver, prior, sample_shape)
    update = SeparableUpdatePath(kernels, points.detach(), coefficients, n, out_dtype=X.dtype)
    return MatheronPath(
        prior_paths=prior,
        update_paths=update,
        input_transform=get_input_transform(model),
        output_transform=get_output_transform(model),
    )


def draw_nystrom_batch_paths(
    model: NystromMultiTaskBatch,
    sample_shape: Sequence[int],
    num_features: int = DEFAULT_NUM_FEATURES,
) -> BatchMembersPath:
    r"""Paths of a :class:`~botorch_mtucb.models.NystromMultiTaskBatch`: each member's own.

    Member ``i`` gets :func:`draw_nystrom_multitask_paths` of its posterior (its dictionary,
    transforms and hyperparameters); the paths are independent across members, as the
    members' posteriors are.

    Args:
        model: The batch (members without fantasy dimensions).
        sample_shape: Number of paths per member, e.g. ``torch.Size([16])``.
        num_features: Random Fourier features per scalar kernel (even).

    Returns:
        A :class:`~botorch_mtucb.sampling.paths.BatchMembersPath` mapping
        ``batch' x batch x m x q x d`` (``m ∈ {1, n}``; or ``q x d``) to
        ``sample_shape x batch' x batch x n x q`` (``... x batch x q`` for ``n = 1``).

    Example:
        >>> from botorch_mtucb.models import NystromMultiTaskGP
        >>> X = torch.rand(3, 12, 1, dtype=torch.float64)
        >>> batch = NystromMultiTaskGP(X, torch.cat([X, X.square()], dim=-1), generator=0)
        >>> paths = draw_nystrom_batch_paths(batch, torch.Size([16]))
        >>> paths(torch.rand(5, 1, dtype=torch.float64)).shape  # sample x batch x n x q
        torch.Size([16, 3, 2, 5])
    """
    paths = [draw_nystrom_multitask_paths(m, sample_shape, num_features) for m in model.members]
    return BatchMembersPath(paths, model._batch, num_outputs=model.num_outputs)


register_matheron_paths(NystromMultiTaskGP, draw_nystrom_multitask_paths)
register_matheron_paths(NystromMultiTaskBatch, draw_nystrom_batch_paths)
