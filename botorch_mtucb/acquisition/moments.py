r"""Per-candidate moments for the q = 1 acquisitions, on the fastest path a model offers.

A :class:`~botorch_mtucb.protocols.ProjectedTaskPosteriorModel` gives the posterior mean and
the variances ``wⱼᵀ Γ_t(x, x) wⱼ`` along an ``n x k`` matrix of directions W without forming a
posterior object; with ``W = I`` these are the per-objective marginal variances σ_i²(x). A
model in eval mode that has a frozen predictor for W (the ICM models', and the dense
solver's for sums of stationary separable terms, e.g. the per-task model: one cached per
solver and per W tensor) is evaluated through it directly, which skips the model's input
checks and conversions; :func:`projected_moments` falls back to
``model.projected_task_posterior`` otherwise.
"""

from __future__ import annotations

from botorch.models import KroneckerMultiTaskGP, ModelListGP
from botorch.models.model import Model
from torch import Tensor

__all__ = ["projected_moments", "refuse_kronecker_multitask_gp"]


def refuse_kronecker_multitask_gp(model: Model, user: str) -> None:
    """Raise a clear ``ValueError`` for BoTorch's ``KroneckerMultiTaskGP`` (also in a
    ``ModelListGP``): the gradient of its posterior at ``batch_shape x 1 x d`` candidates,
    which ``optimize_acqf`` needs, fails inside linear_operator (BoTorch 0.18).

    Args:
        model: The model given to ``user``.
        user: What refuses it, for the message.

    Example:
        >>> from botorch.models import KroneckerMultiTaskGP
        >>> X = torch.rand(5, 2, dtype=torch.float64)
        >>> refuse_kronecker_multitask_gp(KroneckerMultiTaskGP(X, X), "this")
        Traceback (most recent call last):
        ...
        ValueError: this does not take BoTorch's KroneckerMultiTaskGP: ...
    """
    if isinstance(model, ModelListGP):
        for member in model.models:
            refuse_kronecker_multitask_gp(member, user)
    if isinstance(model, KroneckerMultiTaskGP):
        raise ValueError(
            f"{user} does not take BoTorch's KroneckerMultiTaskGP: the gradient of its "
            "posterior at batch_shape x 1 x d candidates fails in linear_operator, so "
            "optimize_acqf cannot maximise over it. Use botorch_mtucb.models.ExactMultiTaskGP "
            "with an ICMKernel or practical_multitask_gp (the same ICM model)."
        )


def projected_moments(
    model: Model, X: Tensor, directions: Tensor, input_dim: int | None
) -> tuple[Tensor, Tensor]:
    r"""Means and projected variances at checked ``batch_shape x 1 x d`` candidates.

    Args:
        model: A :class:`~botorch_mtucb.protocols.ProjectedTaskPosteriorModel`.
        X: ``batch_shape x 1 x d`` candidates, finite.
        directions: ``n x k`` directions W in the model's dtype and device (the same tensor on
            every call: the model caches its predictor per W tensor).
        input_dim: ``d`` of the model's inputs, or ``None`` if unknown (then the general path
            checks ``X``).

    Returns:
        ``(mean, quad)``: ``batch_shape x n`` posterior means and ``batch_shape x k`` values
        ``wⱼᵀ Γ_t(x, x) wⱼ``, in the original outcome scale.

    Example:
        >>> from botorch_mtucb.models import practical_multitask_gp
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> model = practical_multitask_gp(X, torch.stack([X.sum(-1), X.prod(-1)], -1))
        >>> eye = torch.eye(2, dtype=torch.float64)
        >>> mean, var = projected_moments(model, torch.rand(5, 1, 2, dtype=torch.float64), eye, 2)
        >>> mean.shape, var.shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
    """
    fetch = getattr(model, "_projected_predictor", None)
    if (
        fetch is not None
        and not model.training
        and X.dtype == directions.dtype
        and X.device == directions.device
        and X.shape[-1] == input_dim
        and X.numel() > 0
    ):
        predictor = fetch(directions)
        if predictor is not None:
            return predictor(X[..., 0, :])
    mean, quad = model.projected_task_posterior(X, directions)
    return mean.squeeze(-2), quad.squeeze(-2)
