"""Batches of the heavy-tailed models: BoTorch's fantasy and batched-conditioning models.

* :class:`HeavyTailedBatch` — a batch of heavy-tailed models, each member holding its own
  stores (truncation depends on the rewards, so each fantasy is its own truncated model);
* :func:`fantasize` — BoTorch's ``Model.fantasize`` for models without a GPyTorch likelihood.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.models.model import FantasizeMixin, Model
from botorch.models.utils.assorted import fantasize as fantasize_flag
from botorch.posteriors.gpytorch import GPyTorchPosterior
from torch import Tensor

__all__ = ["HeavyTailedBatch", "fantasize"]


def fantasize(model: Model, X: Tensor, sampler, observation_noise: Tensor | None = None,
               **kwargs: Any) -> Model:
    """BoTorch's ``Model.fantasize`` for the heavy-tailed models (no GPyTorch likelihood).

    ``Y ~ sampler(posterior(X, observation_noise=True))`` (noise variance ``λ``), shape
    ``num_fantasies x batch x q x 1``, then the batched ``condition_on_observations``: a
    fantasy model of batch shape ``num_fantasies x batch``.

    Args:
        model: A heavy-tailed model or batch.
        X: ``batch x q x d`` fantasy inputs.
        sampler: A BoTorch ``MCSampler``.
        observation_noise: Only ``None`` (the noise is the regulariser ``λ``).
        kwargs: Passed to ``condition_on_observations``.
    """
    if observation_noise is not None:
        raise ValueError("Heavy-tailed models fantasize with noise variance λ: "
                         "`observation_noise` must be None.")
    kwargs.pop("propagate_grads", None)
    with fantasize_flag():
        Y = sampler(model.posterior(X, observation_noise=True))
    return model.condition_on_observations(X, Y, **kwargs)


class HeavyTailedBatch(Model, FantasizeMixin):
    """A batch of heavy-tailed models (BoTorch's fantasy / batched-conditioning model).

    Truncation depends on the rewards, so each member of a fantasy batch is its own truncated
    model (``TruncatedGP`` / ``AdaptiveTruncationGP`` conditioned on its slice of the
    fantasies). ``posterior`` at ``batch' x batch_shape x q x d`` (``batch'`` broadcast) stacks
    the members' posteriors along ``batch_shape``: a Python loop over the members (the number of
    fantasies times the batch), not over observations. Members share the regulariser ``λ``.

    Built by ``model.condition_on_observations(X, Y)`` with ``X`` ``batch x q x d`` and ``Y``
    ``num_fantasies x batch x q x 1``, and by ``model.fantasize(X, sampler)`` (batch shape
    ``num_fantasies x batch``).
    """

    _num_outputs = 1
    fantasize = fantasize

    def __init__(self, members: list[Model], batch_shape: torch.Size) -> None:
        """
        Args:
            members: ``prod(batch_shape)`` models in row-major order of ``batch_shape``.
            batch_shape: The batch shape.
        """
        super().__init__()
        if len(members) != batch_shape.numel():
            raise ValueError(f"{len(members)} members for batch shape {tuple(batch_shape)}.")
        self.members = torch.nn.ModuleList(members)
        self._batch_shape = torch.Size(batch_shape)

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return self._batch_shape

    @property
    def lam(self) -> float:
        return self.members[0].lam

    def _moments_out(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        bs, (q, d) = self._batch_shape, X.shape[-2:]
        try:
            shape = torch.broadcast_shapes(X.shape[:-2], bs)
        except RuntimeError:
            raise ValueError(
                f"`X` of shape {tuple(X.shape)} does not broadcast with the model's batch shape "
                f"{tuple(bs)} (expected batch' x {' x '.join(map(str, bs))} x q x d)."
            ) from None
        Xe = X.expand(*shape, q, d).reshape(-1, bs.numel(), q, d)
        outs = [m._moments_out(Xe[:, i], full) for i, m in enumerate(self.members)]
        mean = torch.stack([o[0] for o in outs], 1).reshape(*shape, q)
        var = torch.stack([o[1] for o in outs], 1)
        return mean, var.reshape(*shape, q, q) if full else var.reshape(*shape, q)

    def posterior(self, X: Tensor, output_indices: list[int] | None = None,
                  observation_noise: bool | Tensor = False, posterior_transform=None,
                  **kwargs: Any) -> GPyTorchPosterior:
        """Joint posterior at ``batch' x batch_shape x q x d`` (as a member model)."""
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        mean, cov = self._moments_out(X, full=True)
        post = self.members[0]._make_posterior(mean, cov, self.lam, observation_noise)
        return post if posterior_transform is None else posterior_transform(post)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal mean and variance, each ``batch' x batch_shape x q``."""
        return self._moments_out(X, full=False)

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs: Any) -> HeavyTailedBatch:
        """Condition every member on its slice: ``X`` ``... x q x d``, ``Y`` ``... x q x 1``
        (leading shapes broadcast to ``batch' x batch_shape``; new batch shape
        ``batch' x batch_shape``). Nyström members keep their dictionaries unless
        ``resample_dictionary=True``."""
        if kwargs.get("noise") is not None:
            raise ValueError("Heavy-tailed models have no per-observation noise: `noise` must "
                             "be None.")
        bs = self._batch_shape
        if X.dim() < 2 or Y.dim() < 2 or Y.shape[-1] != 1 or Y.shape[-2] != X.shape[-2]:
            raise ValueError(f"`X` must be ... x q x d and `Y` ... x q x 1 with the same q; got "
                             f"{tuple(X.shape)} and {tuple(Y.shape)}.")
        try:
            shape = torch.broadcast_shapes(X.shape[:-2], Y.shape[:-2], bs)
        except RuntimeError:
            raise ValueError(
                f"The batch shapes of `X` {tuple(X.shape[:-2])} and `Y` {tuple(Y.shape[:-2])} "
                f"do not broadcast with the model's batch shape {tuple(bs)}."
            ) from None
        if shape[len(shape) - len(bs):] != bs:
            raise ValueError(f"Batch shape {tuple(shape)} does not end with {tuple(bs)}.")
        q, M = X.shape[-2], bs.numel()
        Xe = X.expand(*shape, q, X.shape[-1]).reshape(-1, q, X.shape[-1])
        Ye = Y.expand(*shape, q, 1).reshape(-1, q, 1)
        kwargs.pop("noise", None)
        kwargs.setdefault("resample_dictionary", False)  # Nyström members keep theirs
        members = [self.members[j % M].condition_on_observations(Xe[j], Ye[j], **kwargs)
                   for j in range(Xe.shape[0])]
        return HeavyTailedBatch(members, torch.Size(shape))

    def subset_output(self, idcs: list[int]) -> Model:
        if list(idcs) != [0]:
            raise ValueError(f"This model has a single output; got output indices {idcs}.")
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")
