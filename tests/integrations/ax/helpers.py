"""Shared builders of the Ax integration tests (models, datasets, search spaces).

``nadir_reference`` and ``pareto_min`` are the brute-force references: the Pareto front by
pairwise comparison and its nadir pushed back by a margin of the front's range.
"""

from __future__ import annotations

import torch
from ax.api.configs import RangeParameterConfig
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.utils.datasets import SupervisedDataset

from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB
from botorch_mtucb.models import ExactMultiTaskGP, TruncatedGP

DT = torch.float64
FAST_OPT = {"num_restarts": 2, "raw_samples": 32}


def mt_model(seed: int = 3, n_obs: int = 7) -> tuple[ExactMultiTaskGP, SupervisedDataset]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n_obs, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(5 * X[:, 0]), X.sum(-1) ** 2], dim=-1)
    Y = Y + 0.1 * torch.randn(n_obs, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y)  # default hyperparameters (no fitting needed)
    ds = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["a", "b"])
    return model, ds


def mtucb_inputs(model, ds, **kwargs):
    constructor = get_acqf_input_constructor(ScalarizedMultiTaskUCB)
    return constructor(model=model, training_data=ds, **kwargs)


def pareto_min(Y: torch.Tensor) -> set[int]:
    """Indices of non-dominated rows for minimisation, by pairwise comparison."""
    out = set()
    for i in range(Y.shape[0]):
        dominated = any(
            bool((Y[j] <= Y[i]).all() and (Y[j] < Y[i]).any()) for j in range(Y.shape[0])
        )
        if not dominated:
            out.add(i)
    return out


def nadir_reference(Y: torch.Tensor, signs: torch.Tensor, scale: float = 0.1) -> torch.Tensor:
    """Brute force: nadir of the (maximisation-aligned) Pareto front minus scale·range."""
    A = Y * signs
    front = []
    for i in range(A.shape[0]):
        if not any(
            bool((A[j] >= A[i]).all() and (A[j] > A[i]).any()) for j in range(A.shape[0])
        ):
            front.append(A[i])
    F = torch.stack(front)
    lo, hi = F.min(0).values, F.max(0).values
    if F.shape[0] == 1:  # one Pareto point: margin relative to its magnitude
        return (lo - scale * lo.abs().clamp_min(1e-9)) * signs
    return (lo - scale * (hi - lo).clamp_min(1e-9)) * signs


def unit_box(lo: float = 0.0, hi: float = 1.0) -> list[RangeParameterConfig]:
    return [
        RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(lo, hi))
        for i in range(2)
    ]


def truncated_gp() -> TruncatedGP:
    g = torch.Generator().manual_seed(3)
    X = torch.rand(8, 1, generator=g, dtype=DT)
    Y = torch.sin(6 * X) + 2.0 * torch.randn(8, 1, generator=g, dtype=DT)
    return TruncatedGP(X, Y, alpha=1.0, v=4.0, constants="authors")

