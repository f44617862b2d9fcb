"""TGP-UCB and ATA-GP-UCB on paper 001's synthetic Student-t problem play better than random."""

from __future__ import annotations

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP
from mtucb_bench.heavy_tailed_problems import authors_code_synthetic, sample_student_t

DT = torch.float64


def _rbf(lengthscale: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


# --------------------------------------------------------------------- end-to-end regret
def _run(model, arms, f, T, g):
    noise = sample_student_t((T,), 3, g)
    cand = arms.unsqueeze(-2)
    regret = 0.0
    for t in range(T):
        i = int(HeavyTailedUCB(model)(cand).argmax())
        regret += float(f.max() - f[i])
        model = model.condition_on_observations(arms[i : i + 1], (f[i] + noise[t]).reshape(1, 1))
    return regret / T


@pytest.mark.parametrize("name", ["tgp", "ata-qff", "ata-nystrom"])
def test_synthetic_student_t_beats_random_play(name: str) -> None:
    """Paper 001 §6 synthetic problem, authors' constants, λ = 1, T = 1000, seeds 0–4.

    Each seed draws a different f; uniform random play has expected time-average regret
    ``max f − mean f`` (exact, no simulation). Measured here (mean regret / random's):
    TGP 0.79, ATA-QFF 0.88, ATA-Nyström 0.93 (absolute: 0.40, 0.44, 0.46 vs 0.50). The
    issue's calibration (independent port of the authors' code, other f draws): TGP 0.41,
    ATA-QFF 0.45, random 0.61. With the authors' β (≈ 30–55 here) all three still explore
    heavily at T = 1000, so the assertion is the robust one: below random play on average.
    """
    T, seeds, algo, rand = 1000, range(5), [], []
    for seed in seeds:
        arms, f, g = authors_code_synthetic(seed)
        B, v = 1.0, 1.0 + 3.0  # B = max|f| = 1, v = B² + Var(t₃)
        empty_X, empty_Y = arms[:0], torch.zeros(0, 1, dtype=DT)
        kw = dict(lam=1.0, B=B, constants="authors")
        if name == "tgp":
            model = TruncatedGP(empty_X, empty_Y, 1.0, v, _rbf(), arms=arms, **kw)
        else:
            feats = (
                QuadratureFourierFeatures(0.2, 32, 1)
                if name == "ata-qff"
                else NystromFeatures(_rbf(), epsilon=0.1, generator=g)
            )
            model = AdaptiveTruncationGP(empty_X, empty_Y, 1.0, v, feats, arms=arms, horizon=T,
                                         **kw)
        algo.append(_run(model, arms, f, T, g))
        rand.append(float(f.max() - f.mean()))
    ratio = sum(algo) / sum(rand)
    assert ratio < 1.0, (name, algo, rand)
