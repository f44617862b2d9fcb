"""Declared interfaces: the β schedules and UCBs use any model that offers the Protocol.

References: the Theorem-2 / Theorem-3 formulas written out by hand on duck-typed models that
come from no class of this package.
"""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models.model import Model

from botorch_mtucb.acquisition import (
    ConfidenceWidthAcquisition,
    HeavyTailedUCB,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
    TheoremThreeBeta,
    TheoremTwoBeta,
)
from botorch_mtucb.models import ExactMultiTaskGP, TruncatedGP
from botorch_mtucb.protocols import (
    DictionaryModel,
    InformationGainModel,
    NystromRadiusModel,
    RegularisedModel,
)

DT = torch.float64


class _ForeignModel(Model):
    """Offers information gain, η, ε/δ and the Theorem-3 sum, and a dictionary size."""

    num_outputs = 2
    epsilon = 0.25
    delta = 0.2

    def posterior(self, X, **kwargs):  # pragma: no cover - not used
        raise NotImplementedError

    def information_gain(self) -> torch.Tensor:
        return torch.tensor(1.7, dtype=DT)

    @property
    def noise(self) -> torch.Tensor:
        return torch.tensor(0.05, dtype=DT)

    @property
    def log_det_variance_sum(self) -> torch.Tensor:
        return torch.tensor(4.2, dtype=DT)

    @property
    def dictionary_size(self) -> int:
        return 7


def test_foreign_model_satisfies_the_protocols_and_feeds_the_radii():
    m = _ForeignModel()
    for proto in (InformationGainModel, RegularisedModel, NystromRadiusModel, DictionaryModel):
        assert isinstance(m, proto)
    b, sigma, delta = 1.5, 0.3, 0.1
    two = b + sigma / math.sqrt(0.05) * math.sqrt(2 * math.log(1 / delta) + 2 * 1.7)
    assert float(TheoremTwoBeta(b, sigma, delta=delta)(m)) == pytest.approx(two, rel=1e-12)
    eps, d = 0.25, 0.2
    rho, c = (1 + eps) / (1 - eps), 1 + 1 / math.sqrt(1 - eps)
    three = c * b + sigma / math.sqrt(0.05) * math.sqrt(2 * math.log(2 / d) + rho * 4.2)
    assert float(TheoremThreeBeta(b, sigma)(m)) == pytest.approx(three, rel=1e-12)
    assert m.dictionary_size == 7


def test_theorem_three_needs_epsilon_delta_from_a_nystrom_model():
    plain = type("Plain", (Model,), {
        "num_outputs": 2, "posterior": lambda self, X, **k: None,
        "information_gain": lambda self: torch.tensor(1.0, dtype=DT),
        "noise": property(lambda self: torch.tensor(0.05, dtype=DT)),
    })()  # information gain and η, but no ε, δ or Theorem-3 sum
    assert not isinstance(plain, NystromRadiusModel)
    with pytest.raises(ValueError, match="epsilon"):
        TheoremThreeBeta(1.0, 0.1)(plain)
    # explicit ε, δ: the exact Lemma-4 sum 2·information_gain() is used
    val = TheoremThreeBeta(1.0, 0.1, epsilon=0.25, delta=0.2)(plain)
    rho, c = (1 + 0.25) / 0.75, 1 + 1 / math.sqrt(0.75)
    ref = c + 0.1 / math.sqrt(0.05) * math.sqrt(2 * math.log(2 / 0.2) + rho * 2.0)
    assert float(val) == pytest.approx(ref, rel=1e-12)


def test_acquisitions_declare_their_width():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(6, 1, generator=g, dtype=DT)
    tgp = TruncatedGP(X, torch.randn(6, 1, generator=g, dtype=DT), alpha=1.0, v=2.0)
    assert isinstance(HeavyTailedUCB(tgp), ConfidenceWidthAcquisition)
    mt = ExactMultiTaskGP(X, torch.randn(6, 2, generator=g, dtype=DT))
    s = LinearScalarization(torch.tensor([0.5, 0.5], dtype=DT))
    assert isinstance(ScalarizedMultiTaskUCB(mt, s, beta=1.0), ConfidenceWidthAcquisition)
