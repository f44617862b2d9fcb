"""A fitted BoTorch model's training data in the problem's units (one place for the rule).

An eval-mode BoTorch model with an ``input_transform`` holds *transformed* ``train_inputs``
and keeps the originals in ``_original_train_inputs`` (BoTorch's ``Model.eval()``; the
package's conditioning keeps them too); its ``train_targets`` are in the units of its
``outcome_transform``. The acquisition-side code that needs the evaluated points (the
scale-free scalarization, the trust region's incumbent, the suite's ``X_baseline``, the
re-proposal check) reads them here.
"""

from __future__ import annotations

import torch
from botorch.models.gpytorch import BatchedMultiOutputGPyTorchModel
from botorch.models.model import Model, ModelList
from torch import Tensor

__all__ = ["original_train_inputs", "training_data"]


def original_train_inputs(model: Model) -> Tensor:
    """The ``N x d`` training inputs of ``model`` in the problem's units (detached).

    A BoTorch multi-output model that batches its outputs (``SingleTaskGP`` on ``N x n``
    targets: inputs expanded to ``n x N x d``) gives its ``N x d`` inputs once; a
    ``ModelList`` gives its members' common inputs.

    Raises:
        TypeError: If ``model`` has no ``train_inputs`` (not a GPyTorch exact GP), or is a
            ``ModelList`` whose members were trained on different inputs.

    Example:
        >>> import torch
        >>> from botorch.models import SingleTaskGP
        >>> from botorch.models.transforms import Normalize
        >>> X = 10 * torch.rand(4, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(X, X.sum(-1, keepdim=True), input_transform=Normalize(2))
        >>> torch.equal(original_train_inputs(model.eval()), X)   # not the normalised inputs
        True
    """
    if isinstance(model, ModelList):
        return _common(model, [original_train_inputs(m) for m in model.models])
    inputs = getattr(model, "train_inputs", None)  # GPyTorch's ExactGP attribute
    if not inputs:
        raise TypeError(
            f"Expected a GPyTorch exact GP with `train_inputs`, got {type(model).__name__}."
        )
    X = model.__dict__.get("_original_train_inputs")  # BoTorch keeps the originals here
    X = inputs[0] if X is None else X
    if _batched_outputs(model) and X.dim() >= 3 and X.shape[-3] == model._num_outputs:
        X = X[..., 0, :, :]  # the same inputs, expanded once per output
    return X.detach()


def training_data(model: Model) -> tuple[Tensor, Tensor]:
    """Copies of the training inputs and outcomes of ``model`` in the problem's units.

    Covers the package's multi-task models (``N x n`` ``train_targets``), BoTorch's
    single-output and output-batched models (``N`` and ``n x N`` targets) and a
    ``ModelList`` of such models trained on the same inputs (its members' outcomes side by
    side).

    Returns:
        ``(X, Y)``: ``N x d`` inputs and ``N x n`` outcomes (the outcome transform undone).

    Raises:
        TypeError: If ``model`` is none of these (e.g. batched training data), naming what it
            holds.

    Example:
        >>> import torch
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X, Y = torch.rand(5, 1, dtype=torch.float64), torch.rand(5, 2, dtype=torch.float64)
        >>> X_, Y_ = training_data(ExactMultiTaskGP(X, Y))
        >>> X_.shape, Y_.shape
        (torch.Size([5, 1]), torch.Size([5, 2]))
    """
    if isinstance(model, ModelList):
        parts = [training_data(m) for m in model.models]
        X = _common(model, [x for x, _ in parts])
        return X, torch.cat([y for _, y in parts], dim=-1)
    X = original_train_inputs(model)
    Y = getattr(model, "train_targets", None)
    if isinstance(Y, Tensor) and _batched_outputs(model) and Y.dim() == 2:
        Y = Y.transpose(-1, -2)  # n x N: one row of targets per output
    elif isinstance(Y, Tensor) and Y.dim() == 1:
        Y = Y.unsqueeze(-1)  # one output
    if not isinstance(Y, Tensor) or Y.dim() != 2 or Y.shape[0] != X.shape[-2] or X.dim() != 2:
        raise TypeError(
            f"Expected an unbatched exact GP with N x n `train_targets` (or N, or n x N for "
            f"BoTorch's output-batched models), got {type(model).__name__} with inputs "
            f"{tuple(X.shape)} and targets {None if Y is None else tuple(Y.shape)}."
        )
    Y = Y.detach()
    outcome = getattr(model, "outcome_transform", None)  # BoTorch's optional attribute
    if outcome is not None:
        Y, _ = outcome.untransform(Y)
    return X.clone(), Y.clone()


def _batched_outputs(model: Model) -> bool:
    """Whether ``model`` is a BoTorch model that batches several outputs: its training inputs
    are expanded to ``n x N x d`` and its targets are ``n x N`` (the package's multi-task
    models, also BoTorch batched multi-output models, keep ``N x d`` and ``N x n``)."""
    if not isinstance(model, BatchedMultiOutputGPyTorchModel) or model._num_outputs < 2:
        return False
    inputs = model.train_inputs[0]
    return inputs.dim() >= 3 and inputs.shape[-3] == model._num_outputs


def _common(model: ModelList, inputs: list[Tensor]) -> Tensor:
    """The members' inputs when they are all the same (else a ``TypeError``)."""
    first = inputs[0]
    if any(x.shape != first.shape or not torch.equal(x, first.to(x)) for x in inputs[1:]):
        raise TypeError(
            f"The members of the {type(model).__name__} were trained on different inputs, so "
            "its evaluated points are not defined; give every member the same training X."
        )
    return first
