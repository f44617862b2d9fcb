"""The members of a batched ``NystromMultiTaskGP``: per-member modules and transforms.

Used by :class:`~botorch_mtucb.multitask.nystrom_batch.NystromMultiTaskBatch`: the
transforms are fitted on the batched data the way BoTorch's batched models fit them, then cut
into one unbatched transform per member (a batched statistic gives each member its slice, an
unbatched one is shared by value).
"""

from __future__ import annotations

import copy
import inspect
from numbers import Integral

import torch
from botorch.models.transforms.input import AffineInputTransform, InputTransform
from botorch.models.transforms.outcome import (
    ChainedOutcomeTransform,
    OutcomeTransform,
    Standardize,
)
from torch import Tensor

from botorch_mtucb.utils.batched_data import batch_of_training_data

__all__ = [
    "batched_members",
    "member_input_transforms",
    "member_module_copies",
    "member_outcome_transform",
]


def _index(i: int, batch: torch.Size) -> tuple[int, ...]:
    return tuple(int(j) for j in torch.unravel_index(torch.tensor(i), batch))


def member_module_copies(module: torch.nn.Module, M: int, name: str) -> list[torch.nn.Module]:
    """``M`` independent copies of an unbatched kernel or mean (one per member).

    Raises:
        ValueError: if ``module`` or one of its sub-modules has a batch shape.
    """
    for sub in module.modules():
        shape = getattr(sub, "batch_shape", torch.Size())
        if isinstance(shape, torch.Size) and len(shape):
            raise ValueError(
                f"`{name}` must be unbatched for batched training data (each member gets its "
                f"own copy), got a {type(sub).__name__} with batch_shape {tuple(shape)}."
            )
    return [copy.deepcopy(module) for _ in range(M)]


def member_input_transforms(tf: InputTransform, X: Tensor) -> list[InputTransform]:
    """One unbatched input transform per member, from ``tf`` fitted on ``X`` (``batch x N x d``).

    A copy of ``tf`` is applied to the batched inputs (a transform in train mode learns its
    statistics there, as in a BoTorch model's constructor). For each
    affine part (``Normalize``, ``InputStandardize``): with ``batch_shape == batch`` member
    ``i`` gets its slice (and keeps learning on its own data, giving the same statistics); an
    unbatched one keeps the statistics learned from all members, fixed.

    Raises:
        ValueError: if an affine part has another batch shape.
        NotImplementedError: for a part with learnable parameters (e.g. ``Warp``).
    """
    batch = X.shape[:-2]
    fitted = copy.deepcopy(tf).to(X)
    for sub in fitted.modules():
        if isinstance(sub, AffineInputTransform):
            if len(sub.batch_shape) and sub.batch_shape != batch:
                raise ValueError(
                    f"`input_transform` {type(sub).__name__} has batch_shape "
                    f"{tuple(sub.batch_shape)}; batched training data of batch "
                    f"{tuple(batch)} needs batch_shape {tuple(batch)} or ()."
                )
        elif any(True for _ in sub.parameters(recurse=False)):
            raise NotImplementedError(
                f"`input_transform` {type(sub).__name__} has learnable parameters; batched "
                "training data supports Normalize, InputStandardize and parameter-free "
                "transforms."
            )
    with torch.no_grad():
        fitted(X)
    out = []
    for i in range(batch.numel()):
        member = copy.deepcopy(fitted)
        for sub in member.modules():
            if not isinstance(sub, AffineInputTransform):
                continue
            if len(sub.batch_shape):
                idx = _index(i, batch)
                sub._offset = sub._offset[idx].clone()
                sub._coefficient = sub._coefficient[idx].clone()
                sub.batch_shape = torch.Size()
            else:  # statistics of all members (BoTorch's unbatched semantics), kept fixed
                sub.learn_coefficients = False
        out.append(member)
    return out


def member_outcome_transform(tf: OutcomeTransform, batch: torch.Size) -> OutcomeTransform:
    """An unbatched outcome transform for one member (fitted by the member on its slice).

    ``Standardize`` must have ``batch_shape == batch`` (as BoTorch requires for batched data);
    the member gets ``Standardize`` with the same ``m``, ``outputs`` and ``min_stdv``, whose
    statistics on the member's slice equal the batched ones. Parameter- and buffer-free
    transforms are copied; ``ChainedOutcomeTransform`` part by part.

    Raises:
        ValueError: for a ``Standardize`` of another batch shape.
        NotImplementedError: for another stateful outcome transform.
    """
    if isinstance(tf, ChainedOutcomeTransform):
        return ChainedOutcomeTransform(
            **{k: member_outcome_transform(v, batch) for k, v in tf.items()}
        )
    if type(tf) is Standardize:
        if tf._batch_shape != batch:
            raise ValueError(
                f"`outcome_transform` Standardize has batch_shape {tuple(tf._batch_shape)}; "
                f"batched training data of batch {tuple(batch)} needs "
                f"Standardize(m, batch_shape=torch.Size({list(batch)}))."
            )
        return Standardize(m=tf._m, outputs=tf._outputs, min_stdv=tf._min_stdv)
    if any(True for _ in tf.parameters()) or any(True for _ in tf.buffers()):
        raise NotImplementedError(
            f"`outcome_transform` {type(tf).__name__} is stateful; batched training data "
            "supports Standardize, ChainedOutcomeTransform and stateless transforms."
        )
    return copy.deepcopy(tf)


def batched_members(model_cls: type, args: tuple, kwargs: dict) -> tuple[list, torch.Size]:
    """``model_cls(train_X[i], train_Y[i], ...)`` for every ``i`` of the data's batch.

    Members in row-major order of ``batch``, all drawing from one generator (an integer seed
    becomes one ``torch.Generator``); kernels and means copied, transforms fitted on the
    batched data and cut per member (the functions above).

    Args:
        model_cls: The model class (``NystromMultiTaskGP``).
        args: Its positional arguments (``train_X`` ``batch x N x d`` and ``train_Y``
            ``batch x N x n`` first, or as keywords).
        kwargs: Its keyword arguments.

    Returns:
        The ``prod(batch)`` members (row-major) and the batch shape.

    Raises:
        ValueError: if ``train_X`` and ``train_Y`` are not tensors of the same non-empty batch
            shape, a kernel or transform does not fit that batch, or the generator is not a
            ``torch.Generator``, an integer or ``None``.
        NotImplementedError: for a stateful transform other than ``Normalize`` /
            ``InputStandardize`` / ``Standardize``.

    Example:
        >>> from botorch_mtucb.models import NystromMultiTaskGP
        >>> Xb, Yb = train_X.expand(2, -1, -1), train_Y.expand(2, -1, -1)
        >>> members, batch = batched_members(NystromMultiTaskGP, (Xb, Yb), {"generator": 0})
    """
    try:
        bound = inspect.signature(model_cls.__init__).bind(None, *args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{model_cls.__name__}(): {err}") from None
    kw = dict(bound.arguments)
    kw.pop(next(iter(kw)))  # self
    X, Y = kw.pop("train_X"), kw.pop("train_Y")
    batch = batch_of_training_data(X, Y, "n")
    M = batch.numel()
    gen = kw.get("generator")
    if isinstance(gen, Integral) and not isinstance(gen, bool):  # one generator for all members
        kw["generator"] = torch.Generator(device=X.device).manual_seed(int(gen))
    elif gen is not None and not isinstance(gen, torch.Generator):
        raise ValueError(
            "`generator` must be a torch.Generator, an integer seed or None, got "
            f"{type(gen).__name__}."
        )
    per_member: dict[str, list] = {}
    for name in ("covar_module", "mean_module"):
        if kw.get(name) is not None:
            per_member[name] = member_module_copies(kw[name], M, name)
    if kw.get("input_transform") is not None:
        per_member["input_transform"] = member_input_transforms(kw["input_transform"], X)
    if kw.get("outcome_transform") is not None:
        per_member["outcome_transform"] = [
            member_outcome_transform(kw["outcome_transform"], batch) for _ in range(M)
        ]
    Xf, Yf = X.reshape(M, *X.shape[-2:]), Y.reshape(M, *Y.shape[-2:])
    members = [
        model_cls(Xf[i], Yf[i], **{**kw, **{k: v[i] for k, v in per_member.items()}})
        for i in range(M)
    ]
    return members, batch
