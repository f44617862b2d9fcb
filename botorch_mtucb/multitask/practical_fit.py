r"""Fitting the multi-task GPs cheaply: a lean likelihood closure, warm starts, L-BFGS memory.

The hyperparameters of a multi-task GP (paper 000, eq. (1), with Γ = Σ_j k_j B_j) are fitted
by maximising the normalised marginal log likelihood

.. math::
    \frac{1}{Nn}\Big(\log \mathcal N(\mathrm{vec}\,Y;\ μ,\ Σ) + \sum \log p(θ)\Big),
    \qquad Σ = \sum_j K_j ⊗ B_j + ηI,

with BoTorch's ``fit_gpytorch_mll`` (L-BFGS-B). Most of the cost of one evaluation through
GPyTorch is generic machinery (lazy kernel tensors, multitask distributions, broadcasting)
around a few small dense operations. Four levers, none of which changes the objective:

* below :data:`~botorch_mtucb.multitask.fit_closure.CLOSED_FORM_MAX_POINTS` observations,
  the closed-form objective of :mod:`~botorch_mtucb.multitask.fit_closure` (value and
  gradient written out on the flat hyperparameter vector, no autograd), driven by scipy's
  L-BFGS-B with BoTorch's bounds and start, the per-task constant mean profiled out (its
  generalised least-squares value at every evaluation: the same maximum of the likelihood on
  a shorter L-BFGS-B path); ``fit_gpytorch_mll`` takes over when it does not cover the model
  or does not converge;
* :func:`practical_mll_closure`: the same objective as GPyTorch's
  ``ExactMarginalLogLikelihood`` written directly on the kernel matrices
  (:func:`practical_mll`): for one ICM term through
  :func:`~botorch_mtucb.linalg.icm_inv_quad_logdet` (two small ``eigh`` or ``n`` Choleskys
  of ``ξ_i K + ηI``, whichever is cheaper; the factorisation is kept for the posterior),
  otherwise a dense Cholesky factor of Σ. Value and gradient equal GPyTorch's.
* warm starts (:func:`copy_hyperparameters`, ``warm_start`` of :func:`fit_practical_model`):
  L-BFGS-B starts from a previous fit's hyperparameters instead of the fixed initial values;
  the optimiser, its tolerances and the fallback of ``fit_gpytorch_mll`` are BoTorch's, so
  the result is a local optimum of the same objective (possibly another one than a cold
  fit's).
* a longer L-BFGS memory (:func:`lbfgs_memory`: ``maxcor`` = the number of hyperparameters,
  10 to 100, instead of scipy's 10): the practical model has d + n² + 2n + 1 of them and an
  ill-conditioned likelihood surface, on which a 10-pair memory converges slowly.

:func:`~botorch_mtucb.multitask.practical.practical_multitask_gp` and
:class:`~botorch_mtucb.multitask.practical.WarmStartPracticalFactory` fit through
:func:`fit_practical_model`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.optim.closures import ForwardBackwardClosure
from botorch.optim.utils import get_parameters_and_bounds
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator import to_dense
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from botorch_mtucb.linalg.icm_cholesky import icm_factor_cache
from botorch_mtucb.linalg.icm_likelihood import icm_inv_quad_logdet
from botorch_mtucb.multitask.base import MultiTaskGPBase
from botorch_mtucb.multitask.fit_closure import (
    _plain_exact_mll,
    fit_icm_lbfgsb,
    icm_fit_objective,
)
from botorch_mtucb.multitask.fit_closure_lmc import lmc_fit_objective
from botorch_mtucb.multitask.solvers.exact import icm_factor_key

__all__ = [
    "FIT_KWARGS",
    "check_fit_kwargs",
    "copy_hyperparameters",
    "fit_practical_model",
    "lbfgs_memory",
    "practical_mll",
    "practical_mll_closure",
]

_LOG_2PI = math.log(2.0 * math.pi)

#: The keyword arguments ``fit_gpytorch_mll`` acts on for an exact marginal likelihood (its
#: own and those of its default fitting routine); it silently ignores any other.
FIT_KWARGS = frozenset({
    "closure", "optimizer", "closure_kwargs", "optimizer_kwargs", "max_attempts",
    "pick_best_of_all_attempts", "warning_handler", "caught_exception_types",
})


def check_fit_kwargs(fit_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``fit_kwargs`` checked against :data:`FIT_KWARGS`; a new dict (empty for ``None``).

    Raises:
        TypeError: If ``fit_kwargs`` is not a dict.
        ValueError: If it holds a key ``fit_gpytorch_mll`` would ignore.

    Example:
        >>> check_fit_kwargs({"optimizer_kwargs": {"options": {"maxiter": 50}}})
    """
    if fit_kwargs is None:
        return {}
    if not isinstance(fit_kwargs, dict):
        raise TypeError(f"`fit_kwargs` must be a dict, got {type(fit_kwargs).__name__}.")
    unknown = sorted(set(fit_kwargs) - FIT_KWARGS)
    if unknown:
        raise ValueError(
            f"`fit_kwargs` has keys that fit_gpytorch_mll does not use: {unknown}; expected "
            f"some of {sorted(FIT_KWARGS)}."
        )
    return dict(fit_kwargs)


def practical_mll(mll: ExactMarginalLogLikelihood, train_X: Tensor | None = None) -> Tensor:
    r"""``mll(model(X), y)`` of a multi-task GP in train mode, without GPyTorch's machinery.

    With the training inputs ``x`` (input-transformed), the standardised targets ``Y``
    (``N x n``), the prior mean ``μ`` and Γ = Σ_j k_j B_j (paper 000, eq. (1)):

    .. math::
        \frac{1}{Nn}\Big(-\tfrac12\big(r^\top Σ^{-1} r + \log\det Σ + Nn\log 2π\big)
        + \sum_{\text{priors}} \log p(θ)\Big),\quad r = \mathrm{vec}(Y − μ),\;
        Σ = \sum_j K_j ⊗ B_j + ηI,

    interleaved order (index ``point·n + task``). One ICM term (all k_j one object) is evaluated
    by :func:`~botorch_mtucb.linalg.icm_inv_quad_logdet` (``eigh`` of the ``N x N`` matrix or
    ``n`` Cholesky factors of ``ξ_i K + ηI``, whichever is cheaper; closed-form backward), and
    its factorisation is kept in the model's :func:`~botorch_mtucb.linalg.icm_factor_cache`
    so that the posterior at the same hyperparameters reuses it; other kernels by a Cholesky
    factor of the ``Nn x Nn`` matrix Σ (``psd_safe_cholesky``, as GPyTorch).

    Args:
        mll: ``ExactMarginalLogLikelihood(model.likelihood, model)`` of an
            :class:`~botorch_mtucb.models.ExactMultiTaskGP` with a learned homoscedastic
            noise (the practical model), unbatched (see :func:`practical_mll_closure`).
        train_X: ``N x d`` input-transformed training inputs (computed when ``None``).

    Returns:
        The 0-dim normalised marginal log likelihood (differentiable in the hyperparameters).

    Raises:
        ValueError: If ``mll`` is not of a model :func:`practical_mll` covers.

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False).train()
        >>> value = practical_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    """
    if not _plain_exact_mll(mll):
        raise ValueError(
            "`mll` must be ExactMarginalLogLikelihood of an unbatched multi-task GP with a "
            "homoscedastic learned noise (MultitaskGaussianLikelihood, global noise only), no "
            "trainable input transform and no added loss terms."
        )
    model = mll.model
    x = model.transform_inputs(model.train_inputs[0]) if train_X is None else train_X
    Y = model.train_targets
    resid = Y if model._zero_mean else Y - model.mean_module(x)
    r = resid.reshape(-1)
    eta = model.likelihood.noise.reshape(())
    comps = model.covar_module.separable_components()
    kernel = comps[0][0]
    if all(k is kernel for k, _ in comps):
        B = sum(B for _, B in comps)
        K = to_dense(kernel.forward(x, x))
        cache = icm_factor_cache(model)
        cache.begin(icm_factor_key(model.covar_module, x, eta))
        quad, logdet = icm_inv_quad_logdet(K, B, eta, r, check_eta=False, cache=cache)
    else:
        S = sum(torch.kron(to_dense(k.forward(x, x)), B) for k, B in comps)
        S = S + eta * torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
        L = psd_safe_cholesky(S)
        z = torch.linalg.solve_triangular(L, r.unsqueeze(-1), upper=False)
        quad = z.square().sum()
        logdet = 2.0 * torch.diagonal(L).log().sum()
    res = -0.5 * (quad + logdet + r.numel() * _LOG_2PI)
    for _, module, prior, closure, _ in model.named_priors():
        res = res + prior.log_prob(closure(module)).sum()
    return res / r.numel()


def practical_mll_closure(mll: ExactMarginalLogLikelihood) -> ForwardBackwardClosure | None:
    """A ``fit_gpytorch_mll`` closure returning ``(−practical_mll, grads)``, or ``None``.

    The gradients are those of the parameters ``fit_gpytorch_mll_scipy`` optimises (all of
    ``mll``'s parameters that require a gradient, in its order). ``None`` when
    :func:`practical_mll` does not cover the model (then BoTorch's own closure is used).
    The transformed training inputs are computed once (the input transform is fixed).

    Args:
        mll: The marginal likelihood to be fitted (model and likelihood as in
            :func:`practical_mll`).

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> mll = ExactMarginalLogLikelihood(model.likelihood, model)
        >>> _ = fit_gpytorch_mll(mll, closure=practical_mll_closure(mll))
    """
    if not _plain_exact_mll(mll):
        return None
    model = mll.model
    was_training = model.training
    model.train()
    with torch.no_grad():
        x = model.transform_inputs(model.train_inputs[0]).detach()
    model.train(was_training)
    params, _ = get_parameters_and_bounds(mll)
    params = {name: p for name, p in params.items() if p.requires_grad}
    return ForwardBackwardClosure(lambda **_: -practical_mll(mll, x), params)


def copy_hyperparameters(source: torch.nn.Module, target: torch.nn.Module) -> int:
    """Copy the raw hyperparameters (``named_parameters``) of ``source`` into ``target``.

    Only parameters present in both with the same shape are copied; buffers (the outcome
    transform's means and scales, the input transform's bounds, priors, constraints) are
    left alone, so ``target`` keeps the statistics of its own data.

    Args:
        source: A fitted model (e.g. the previous round's practical model).
        target: A model of the same structure on new data (modified in place).

    Returns:
        The number of parameter tensors copied.

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> fitted = practical_multitask_gp(train_X[:8], train_Y[:8], bounds)
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> copied = copy_hyperparameters(fitted, model)
    """
    src = dict(source.named_parameters())
    copied = 0
    with torch.no_grad():
        for name, p in target.named_parameters():
            q = src.get(name)
            if q is not None and q.shape == p.shape:
                p.copy_(q.to(p))
                copied += 1
    return copied


def lbfgs_memory(num_parameters: int) -> int:
    """L-BFGS-B memory ``maxcor`` of :func:`fit_practical_model`: ``num_parameters`` in [10, 100].

    Args:
        num_parameters: Number of scalar hyperparameters fitted.

    Example:
        >>> options = {"maxcor": lbfgs_memory(28)}  # 28
    """
    return int(min(100, max(10, num_parameters)))


def _fit_closed_form(mll: ExactMarginalLogLikelihood, kwargs: dict[str, Any]) -> bool:
    """Fit ``mll`` by L-BFGS-B on :class:`~botorch_mtucb.multitask.fit_closure.ICMFitObjective`
    (or, for a sum of separable kernels,
    :class:`~botorch_mtucb.multitask.fit_closure_lmc.LMCFitObjective`)
    with the constant mean profiled out (the same objective's maximum; otherwise the start,
    bounds and options of ``fit_gpytorch_mll``'s scipy path);
    ``False`` (parameters untouched) when it does not cover the model or ``kwargs`` (anything
    beyond ``optimizer_kwargs={"options": ...}``), or when L-BFGS-B fails."""
    optimizer_kwargs = kwargs.get("optimizer_kwargs", {})
    if set(kwargs) - {"optimizer_kwargs"} or set(optimizer_kwargs) - {"options"}:
        return False
    mll.train()
    objective = icm_fit_objective(mll, profile_mean=True) or lmc_fit_objective(
        mll, profile_mean=True
    )
    if objective is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_icm_lbfgsb(objective, optimizer_kwargs.get("options"))


def fit_practical_model(
    model: MultiTaskGPBase,
    warm_start: torch.nn.Module | None = None,
    lean: bool = True,
    fit_kwargs: dict[str, Any] | None = None,
) -> MultiTaskGPBase:
    """Fit ``model``'s hyperparameters (in place, L-BFGS-B as ``fit_gpytorch_mll``), optionally
    warm.

    With ``lean`` and no ``fit_kwargs`` beyond ``optimizer_kwargs={"options": ...}``, a model
    that :func:`~botorch_mtucb.multitask.fit_closure.icm_fit_objective` covers (the practical
    ICM model below :data:`~botorch_mtucb.multitask.fit_closure.CLOSED_FORM_MAX_POINTS`
    points) or :func:`~botorch_mtucb.multitask.fit_closure_lmc.lmc_fit_objective` covers
    (the practical model with ``per_task`` or ``independent``) is fitted by scipy's L-BFGS-B
    on the closed-form objective (the same negative marginal log likelihood, bounds and
    options as ``fit_gpytorch_mll``'s scipy path, with the constant mean profiled out: its
    maximiser is the same);
    if that does not converge (or stop at ``maxiter``), the fit falls back to
    ``fit_gpytorch_mll`` with its retries. Every other model is fitted by
    ``fit_gpytorch_mll``.

    Args:
        model: A model built with ``practical_multitask_gp(..., fit=False)`` (or any
            multi-task GP); left in eval mode.
        warm_start: A fitted model of the same structure whose hyperparameters start the
            optimisation (:func:`copy_hyperparameters`); ``None`` starts from ``model``'s own.
        lean: Use the closed-form objective or, where it does not apply,
            :func:`practical_mll_closure` (same objective, less overhead) when it covers the
            model; ``False``: ``fit_gpytorch_mll`` with BoTorch's own closure.
        fit_kwargs: Extra keyword arguments for ``fit_gpytorch_mll`` (keys in
            :data:`FIT_KWARGS`); without ``optimizer_kwargs`` the L-BFGS-B memory is
            :func:`lbfgs_memory`.

    Raises:
        ValueError: If ``fit_kwargs`` has a key not in :data:`FIT_KWARGS`.

    Returns:
        ``model``, fitted (skipped when N < 2, as in ``practical_multitask_gp``), eval mode.

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> first = practical_multitask_gp(train_X[:8], train_Y[:8], bounds)
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> model = fit_practical_model(model, warm_start=first)
    """
    if warm_start is not None:
        copy_hyperparameters(warm_start, model)
    if model.train_inputs[0].shape[-2] >= 2:
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        kwargs = check_fit_kwargs(fit_kwargs)
        if "optimizer_kwargs" not in kwargs:
            size = sum(p.numel() for p in model.parameters() if p.requires_grad)
            kwargs["optimizer_kwargs"] = {"options": {"maxcor": lbfgs_memory(size)}}
        if lean and _fit_closed_form(mll, kwargs):
            model.eval()
            return model
        if lean and "closure" not in kwargs:
            kwargs["closure"] = practical_mll_closure(mll)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(mll, **kwargs)
    model.eval()
    return model
