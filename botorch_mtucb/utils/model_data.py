"""A fitted BoTorch model's training data in the problem's units (one place for the rule).

An eval-mode BoTorch model with an ``input_transform`` holds *transformed* ``train_inputs``
and keeps the originals in ``_original_train_inputs`` (BoTorch's ``Model.eval()``; the
package's conditioning keeps them too); its ``train_targets`` are in the units of its
``outcome_transform``. The acquisition-side code that needs the evaluated points (the
scale-free scalarization, the trust region's incumbent, the suite's ``X_baseline``, the
re-proposal check) reads them here.
"""

from __future__ import annotations

from botorch.models.model import Model
from torch import Tensor

__all__ = ["original_train_inputs", "training_data"]


def original_train_inputs(model: Model) -> Tensor:
    """The ``N x d`` training inputs of ``model`` in the problem's units (detached).

    Raises:
        TypeError: If ``model`` has no ``train_inputs`` (not a GPyTorch exact GP).

    Example:
        >>> import torch
        >>> from botorch.models import SingleTaskGP
        >>> from botorch.models.transforms import Normalize
        >>> X = 10 * torch.rand(4, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(X, X.sum(-1, keepdim=True), input_transform=Normalize(2))
        >>> torch.equal(original_train_inputs(model.eval()), X)   # not the normalised inputs
        True
    """
    inputs = getattr(model, "train_inputs", None)  # GPyTorch's ExactGP attribute
    if not inputs:
        raise TypeError(
            f"Expected a GPyTorch exact GP with `train_inputs`, got {type(model).__name__}."
        )
    X = model.__dict__.get("_original_train_inputs")  # BoTorch keeps the originals here
    return (inputs[0] if X is None else X).detach()


def training_data(model: Model) -> tuple[Tensor, Tensor]:
    """Copies of the training inputs and outcomes of ``model`` in the problem's units.

    Returns:
        ``(X, Y)``: ``N x d`` inputs and ``N x n`` outcomes (the outcome transform undone).

    Raises:
        TypeError: If ``model`` is not an unbatched exact GP with ``N x n`` ``train_targets``
            (the multi-task models' layout).

    Example:
        >>> import torch
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X, Y = torch.rand(5, 1, dtype=torch.float64), torch.rand(5, 2, dtype=torch.float64)
        >>> X_, Y_ = training_data(ExactMultiTaskGP(X, Y))
        >>> X_.shape, Y_.shape
        (torch.Size([5, 1]), torch.Size([5, 2]))
    """
    X = original_train_inputs(model)
    Y = getattr(model, "train_targets", None)
    if not isinstance(Y, Tensor) or Y.dim() != 2 or Y.shape[0] != X.shape[-2]:
        raise TypeError(
            f"Expected an unbatched exact GP with N x n `train_targets`, got "
            f"{type(model).__name__} with {None if Y is None else tuple(Y.shape)}."
        )
    Y = Y.detach()
    outcome = getattr(model, "outcome_transform", None)  # BoTorch's optional attribute
    if outcome is not None:
        Y, _ = outcome.untransform(Y)
    return X.clone(), Y.clone()
