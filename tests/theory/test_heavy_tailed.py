"""Paper 001's schedules (theory.heavy_tailed) against the formulas written out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from botorch_mtucb.heavy_tailed import schedules as old
from botorch_mtucb.theory import heavy_tailed as ht


def test_tgp_level_and_beta() -> None:
    alpha, v, lam, delta, B, log_det = 0.6, 2.5, 0.7, 0.05, 1.3, 4.2
    b = v ** (1 / 1.6) * 17 ** (1 / 3.2)
    assert ht.tgp_truncation_level(17, alpha, v) == pytest.approx(b, rel=1e-14)
    assert ht.tgp_truncation_level(0, alpha, v) == 0.0
    rounds = torch.arange(0, 6, dtype=torch.float64)
    levels = ht.tgp_truncation_levels(rounds, alpha, v)
    expected = [ht.tgp_truncation_level(s, alpha, v) for s in range(6)]
    torch.testing.assert_close(levels, torch.tensor(expected, dtype=torch.float64))
    th = B + 3 / math.sqrt(lam) * b * math.sqrt(log_det + 2 * math.log(1 / delta))
    assert ht.tgp_beta(17, alpha, v, lam, delta, B, log_det) == pytest.approx(th, rel=1e-14)
    b18 = v ** (1 / 1.6) * 18 ** (1 / 3.2)
    au = B * math.sqrt(lam) + b18 * math.sqrt(math.log(18))
    assert ht.tgp_beta(17, alpha, v, lam, delta, B, log_det, "authors") == pytest.approx(au)


@pytest.mark.parametrize("kind", ["qff", "nystrom"])
def test_ata_level_beta_and_q(kind: str) -> None:
    alpha, v, lam, delta, B, m, T, t, eps = 0.7, 2.0, 0.9, 0.1, 1.1, 20, 500, 40, 0.2
    e = (1 - alpha) / (2 * (1 + alpha))
    L = math.log((2 if kind == "qff" else 4) * m * T / delta)
    assert ht.ata_log_term(m, T, delta, kind) == pytest.approx(L, rel=1e-14)
    b = (v / L) ** (1 / (1 + alpha)) * t**e
    assert ht.ata_truncation_level(t, alpha, v, L) == pytest.approx(b, rel=1e-14)
    head = B if kind == "qff" else B * (1 + 1 / math.sqrt(1 - eps))
    moment = v ** (1 / (1 + alpha)) * L ** (alpha / (1 + alpha))
    beta = head + 4 * math.sqrt(m / lam) * moment * t**e
    got = ht.ata_beta(t, alpha, v, lam, B, m, L, kind, "theory", eps)
    assert got == pytest.approx(beta, rel=1e-14)
    La = math.log((m if kind == "qff" else m + 1) * T)
    assert ht.ata_log_term(m, T, delta, kind, "authors") == pytest.approx(La, rel=1e-14)
    beta_a = B * math.sqrt(lam) + math.sqrt(m) * v ** (1 / (1 + alpha)) * La ** (
        alpha / (1 + alpha)
    ) * (t + 1) ** e
    got_a = ht.ata_beta(t, alpha, v, lam, B, m, La, kind, "authors", eps)
    assert got_a == pytest.approx(beta_a, rel=1e-14)
    rho = (1 + eps) / (1 - eps)
    assert ht.nystrom_q(T, delta, eps) == pytest.approx(6 * rho * math.log(4 * T / delta) / eps**2)
    assert ht.nystrom_q(T, delta, eps, "authors") == pytest.approx(math.log(T) / eps**2)
    assert ht.nystrom_q(1, delta, eps, "authors") == pytest.approx(1 / eps**2)  # floored


def test_edge_cases_and_validation() -> None:
    assert ht.ata_truncation_level(5, 1.0, 2.0, 0.0) == math.inf  # ln(m'T) = 0
    assert ht.ata_log_term(0, 10, 0.1, "nystrom") == pytest.approx(math.log(4 * 10 / 0.1))
    assert ht.effective_horizon(None, 0) == 1 and ht.effective_horizon(None, 7) == 7
    assert ht.effective_horizon(100, 7) == 100
    assert ht.check_heavy_tailed_params(1, 2, 3, 0.5, 0) == (1.0, 2.0, 3.0, 0.5, 0.0)
    for kwargs, match in [
        (dict(alpha=0.0), "alpha"),
        (dict(alpha="x"), "alpha"),
        (dict(v=-1.0), "`v`"),
        (dict(lam=math.inf), "lam"),
        (dict(delta=1.5), "delta"),
        (dict(B=-0.1), "`B`"),
    ]:
        args = dict(alpha=1.0, v=2.0, lam=1.0, delta=0.1, B=1.0)
        args.update(kwargs)
        with pytest.raises(ValueError, match=match):
            ht.check_heavy_tailed_params(**args)
    with pytest.raises(ValueError, match="constants"):
        ht.tgp_beta(1, 1.0, 2.0, 1.0, 0.1, 1.0, 0.0, "paper")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="epsilon"):
        ht.nystrom_q(10, 0.1, 1.0)


def test_old_module_reexports_the_same_functions() -> None:
    for name in old.__all__:
        assert getattr(old, name) is getattr(ht, name)
