"""Shared helpers of the closed-form fit objectives' tests."""

from __future__ import annotations

import torch
from botorch.optim.closures import get_loss_closure_with_grads
from botorch.optim.utils import get_parameters_and_bounds


def perturb(model, seed: int) -> None:
    """Random valid raw hyperparameters (the unenforced lengthscales stay above their bound)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            z = torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.mul_(torch.exp(0.5 * z)) if "lengthscale" in name else p.add_(0.7 * z)


def reference(mll):
    """BoTorch's own closure: −ExactMarginalLogLikelihood and its autograd gradient."""
    params = {k: p for k, p in get_parameters_and_bounds(mll)[0].items() if p.requires_grad}
    value, grads = get_loss_closure_with_grads(mll, parameters=params)()
    grad = torch.cat([g.reshape(-1) for g in grads]).cpu().numpy()
    return float(value.detach()), grad, list(params)
