"""Batched training data (``batch x N x d``) for the models that answer it with a batch of
per-slice members (:class:`~botorch_mtucb.models.HeavyTailedBatch`,
:class:`~botorch_mtucb.models.NystromMultiTaskBatch`): the constructor's dispatch test and
the shape check, in one place."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import Tensor

__all__ = ["ConstructorSignature", "batch_of_training_data", "has_batched_training_data"]


def has_batched_training_data(args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether a constructor call's ``train_X`` / ``train_Y`` (positional or keyword) has more
    than two dimensions (the model's ``__new__`` then returns a batch of members)."""
    X = args[0] if args else kwargs.get("train_X")
    Y = args[1] if len(args) > 1 else kwargs.get("train_Y")
    return any(isinstance(T, Tensor) and T.dim() > 2 for T in (X, Y))


def batch_of_training_data(X: Any, Y: Any, y_columns: str) -> torch.Size:
    """The common, non-empty batch shape of ``train_X`` (``batch x N x d``) and ``train_Y``
    (``batch x N x`` ``y_columns``).

    Raises:
        ValueError: if either is not a tensor, the batch shapes differ, or the batch is empty.
    """
    if not isinstance(X, Tensor) or not isinstance(Y, Tensor):
        raise ValueError("`train_X` and `train_Y` must be tensors for batched training data.")
    if X.dim() < 3 or Y.dim() != X.dim() or X.shape[:-2] != Y.shape[:-2]:
        raise ValueError(
            f"Batched training data needs `train_X` batch x N x d and `train_Y` batch x N x "
            f"{y_columns} with the same batch shape; got `train_X` {tuple(X.shape)} and "
            f"`train_Y` {tuple(Y.shape)}."
        )
    batch = X.shape[:-2]
    if batch.numel() == 0:
        raise ValueError(f"The batch shape {tuple(batch)} of `train_X` has no member.")
    return batch


class ConstructorSignature:
    """``cls.__signature__``: the arguments of ``cls.__init__`` (without ``self``).

    The models that dispatch batched training data in ``__new__(cls, *args, **kwargs)``
    (:class:`~botorch_mtucb.heavy_tailed.base.HeavyTailedModel`,
    :class:`~botorch_mtucb.models.NystromMultiTaskGP`) would otherwise report that as the
    class's signature to :func:`inspect.signature`, Sphinx and Ax (which reads the
    constructor's arguments, e.g. ``input_transform``). Read on the class only; an instance
    has no ``__signature__``.
    """

    def __get__(self, instance: Any, owner: type) -> inspect.Signature:
        if instance is not None:
            raise AttributeError("__signature__")
        sig = inspect.signature(owner.__init__)
        params = list(sig.parameters.values())[1:]
        return sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
