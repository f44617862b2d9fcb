"""ATA-GP-UCB's finite-arm path (``heavy_tailed/adaptive_arms.py``): the low-rank arm basis
against the arm features themselves, the arm-space fit against the authors' ``V`` over the pulled
points, and the dictionary mask against the dictionary."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.models import AdaptiveTruncationGP

DT = torch.float64
LAM = 0.6


def _rbf(lengthscale: float = 0.15) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def _model(kind: str, T: int = 80, seed: int = 2):
    g = torch.Generator().manual_seed(seed)
    arms = torch.linspace(0, 1, 20, dtype=DT).unsqueeze(-1)
    idx = torch.randint(0, 20, (T,), generator=g)
    y = torch.sin(5 * arms[idx]) + 0.3 * torch.randn(T, 1, dtype=DT, generator=g)
    y[::9] *= 40.0  # outliers: the per-direction truncation acts
    if kind == "qff":
        feats = QuadratureFourierFeatures(0.15, 16, 1)
    else:
        feats = NystromFeatures(_rbf(), q=2.0, generator=torch.Generator().manual_seed(0))
    model = AdaptiveTruncationGP(arms[idx], y, 1.0, 2.0, feats, lam=LAM, arms=arms, horizon=200)
    return model, arms, idx, y


def _atol(model, kind: str, qff_tol: float) -> float:
    """Nyström: the arm kernel ``K_A[:, D]`` and ``k(arms, D)`` differ at round-off, amplified by
    ``(K_D^{1/2})⁺`` (its largest entry ``s_max`` ≈ 4e5 here): ``100 · 1e-16 · s_max``."""
    return qff_tol if kind == "qff" else 1e-14 * float(model.features.factor[1].max())


@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_arm_basis_factors_the_arm_features(kind: str) -> None:
    model, arms, idx, y = _model(kind)
    Fp, W = model._arm_basis()
    F = model.__dict__["_cfeat"][2](arms)  # A x m, computed directly
    torch.testing.assert_close(Fp @ W.T, F, atol=_atol(model, kind, 1e-12), rtol=0)
    torch.testing.assert_close(W.T @ W, torch.eye(W.shape[-1], dtype=DT), atol=1e-12, rtol=0)
    assert model._arm_basis()[0] is Fp  # cached while the features do not change


@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_arm_space_fit_equals_authors_update_over_the_pulled_points(kind: str) -> None:
    model, arms, idx, y = _model(kind)
    F = model.__dict__["_cfeat"][2](arms)
    Phi = F[idx]  # t x m
    e, Q = torch.linalg.eigh(Phi.T @ Phi + LAM * torch.eye(F.shape[-1], dtype=DT))
    Vmh = (Q * e.rsqrt()) @ Q.T
    U = (Vmh @ Phi.T) * y[:, 0]  # m x t, u_{i,τ} y_τ
    b = model.truncation_level()
    assert (U.abs() > b).any() and (U.abs() <= b).any()
    theta = Vmh @ torch.where(U.abs() <= b, U, torch.zeros_like(U)).sum(-1)
    var = LAM * (F @ (Q * e.rsqrt())).square().sum(-1)
    if kind == "nystrom":
        with torch.no_grad():
            var = var + _rbf()(arms, arms, diag=True) - F.square().sum(-1)
    mean, v = model.mean_and_variance(arms.unsqueeze(-2))
    atol = _atol(model, kind, 1e-10)
    torch.testing.assert_close(mean[:, 0], F @ theta, atol=atol, rtol=0)
    torch.testing.assert_close(v[:, 0], var, atol=atol, rtol=0)


def test_dictionary_mask_marks_the_dictionary_arms() -> None:
    model, arms, idx, y = _model("nystrom")
    mask = model._dictionary_mask()
    D = model.features.dictionary
    assert mask.sum() == D.shape[0] > 0
    torch.testing.assert_close(arms[mask], torch.sort(D, dim=0).values, atol=0, rtol=0)
    new = model.condition_on_observations(arms[4:5], torch.tensor([[0.2]], dtype=DT))
    new_mask = new._dictionary_mask()
    torch.testing.assert_close(arms[new_mask], torch.sort(new.features.dictionary, dim=0).values,
                               atol=0, rtol=0)
    assert not (new_mask & (new._counts == 0)).any()  # only pulled arms can enter
