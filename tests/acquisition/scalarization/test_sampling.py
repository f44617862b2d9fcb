"""Tests for the weight distributions P_λ and the per-round sampler (paper 000, §5, App. E)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    LinearScalarization,
    ScalarizationSampler,
    sample_scalarization_weights,
)

DT = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- sampler


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_sampler_on_simplex_and_seeded(kind):
    W = sample_scalarization_weights(5, 1000, kind=kind, generator=_gen(3))
    assert W.shape == (1000, 5) and W.dtype == DT
    assert (W > 0).all()
    torch.testing.assert_close(W.sum(-1), torch.ones(1000, dtype=DT))
    W2 = sample_scalarization_weights(5, 1000, kind=kind, generator=_gen(3))
    assert torch.equal(W, W2)
    W3 = sample_scalarization_weights(5, 1000, kind=kind, generator=_gen(4))
    assert not torch.equal(W, W3)


def _ratio_cdf(a: np.ndarray) -> np.ndarray:
    """CDF of U1/(U1+U2) for independent U1, U2 ~ U[0,1] (derived by hand).

    P(U1 ≤ c U2), c = a/(1−a): c/2 if c ≤ 1, else 1 − 1/(2c).
    """
    a = np.clip(a, 1e-300, 1 - 1e-16)
    c = a / (1 - a)
    return np.where(c <= 1, c / 2, 1 - 1 / (2 * c))


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_sampler_law_n2_matches_exact_cdf(kind):
    # n = 2: linear λ_1 = u1/(u1+u2); Chebyshev λ_1 = (1/u1)/(1/u1+1/u2) = u2/(u1+u2):
    # both have the law of U1/(U1+U2), whose CDF is derived in _ratio_cdf.
    W = sample_scalarization_weights(2, 20000, kind=kind, generator=_gen(5))
    res = stats.kstest(W[:, 0].numpy(), _ratio_cdf)
    assert res.pvalue > 1e-3
    # the test has power: a uniform λ_1 is rejected
    res_bad = stats.kstest(np.random.default_rng(0).uniform(size=20000), _ratio_cdf)
    assert res_bad.pvalue < 1e-6


@pytest.mark.parametrize("kind", ["linear", "chebyshev"])
def test_sampler_law_n3_matches_independent_construction(kind):
    # Two-sample KS against the construction of §5 / Appendix E written in numpy.
    rng = np.random.default_rng(7)
    u = rng.uniform(size=(20000, 3))
    if kind == "chebyshev":
        alpha = u.sum(1, keepdims=True) / u
        ref = alpha / alpha.sum(1, keepdims=True)
    else:
        ref = u / u.sum(1, keepdims=True)
    W = sample_scalarization_weights(3, 20000, kind=kind, generator=_gen(8))
    for i in range(3):
        assert stats.ks_2samp(W[:, i].numpy(), ref[:, i]).pvalue > 1e-3
    # and the two kinds really differ at n = 3 (the test can tell them apart)
    other = sample_scalarization_weights(
        3, 20000, kind="linear" if kind == "chebyshev" else "chebyshev",
        generator=_gen(9),
    )
    assert stats.ks_2samp(other[:, 0].numpy(), ref[:, 0]).pvalue < 1e-6


def test_sampler_bad_args():
    with pytest.raises(ValueError, match="`n`"):
        sample_scalarization_weights(0, 3)
    with pytest.raises(ValueError, match="num_samples"):
        sample_scalarization_weights(2, 0)
    with pytest.raises(ValueError, match="kind"):
        sample_scalarization_weights(2, 3, kind="uniform")


def test_scalarization_sampler_draws_fresh_weights():
    g = _gen(10)
    sampler = ScalarizationSampler(3, "chebyshev", ref_point=[0.0, 0.0, 0.0],
                                   minimize=[True, False, False])
    s1, s2 = sampler(g), sampler(g)
    assert isinstance(s1, ChebyshevScalarization)
    assert not torch.equal(s1.weights, s2.weights)
    assert s1.minimize.tolist() == [True, False, False]
    g2 = _gen(10)
    expected = sample_scalarization_weights(3, 1, "chebyshev", g2)[0]
    torch.testing.assert_close(s1.weights, expected)
    assert isinstance(ScalarizationSampler(2, "linear")(g), LinearScalarization)


def test_sampler_from_data_matches_from_data():
    g = torch.Generator().manual_seed(4)
    Y = torch.randn(12, 3, generator=g, dtype=DT)
    sampler = ScalarizationSampler(3, ref_point="data", front="observed")
    s = sampler(_gen(7), Y)
    w = sample_scalarization_weights(3, 1, "chebyshev", _gen(7))[0]
    ref = ChebyshevScalarization.from_data(w, Y, augmentation=0.05)
    torch.testing.assert_close(s.weights, ref.weights)
    torch.testing.assert_close(s.ref_point, ref.ref_point)
    assert sampler.uses_data and s.augmentation == 0.05
    with pytest.raises(ValueError, match="needs `Y`"):
        sampler(_gen(0))
    with pytest.raises(ValueError, match="'data'"):
        ScalarizationSampler(3, ref_point="nadir")
    with pytest.raises(ValueError, match="'data'"):
        ScalarizationSampler(3, kind="linear", ref_point="data")
    fixed = ScalarizationSampler(2, ref_point=[0.0, 0.0], augmentation=0.1)(_gen(0))
    assert fixed.augmentation == 0.1 and not ScalarizationSampler(2, ref_point=[0, 0]).uses_data


def test_sampler_predicted_front_matches_from_data_with_the_payoff_table():
    """front="predicted": the observed and predicted non-dominated points set z and the
    ranges (``from_data(..., predicted=P, span="front")``); P must be given each draw."""
    from botorch_mtucb.acquisition.protocols import ModelAnchoredSampler

    g = torch.Generator().manual_seed(5)
    Y = torch.randn(10, 2, generator=g, dtype=DT)
    P = Y.max(dim=0).values + torch.tensor([[0.5, -3.0], [-3.0, 0.5]], dtype=DT)
    sampler = ScalarizationSampler(2, ref_point="data", front="predicted")
    assert isinstance(sampler, ModelAnchoredSampler) and sampler.uses_model
    s = sampler(_gen(7), Y, predicted=P)
    w = sample_scalarization_weights(2, 1, "chebyshev", _gen(7))[0]
    ref = ChebyshevScalarization.from_data(w, Y, augmentation=0.05, predicted=P, span="front")
    torch.testing.assert_close(s.weights, ref.weights)
    torch.testing.assert_close(s.ref_point, ref.ref_point)
    observed = ScalarizationSampler(2, ref_point="data", front="observed")(_gen(7), Y)
    assert not torch.allclose(observed.ref_point, s.ref_point)  # the predicted front counts
    assert not ScalarizationSampler(2, ref_point="data", front="observed").uses_model
    with pytest.raises(ValueError, match="needs `predicted`"):
        sampler(_gen(0), Y)
    with pytest.raises(ValueError, match="only used with `front='predicted'`"):
        ScalarizationSampler(2, ref_point="data", front="observed")(_gen(0), Y, predicted=P)
    with pytest.raises(ValueError, match="`front` must be"):
        ScalarizationSampler(2, ref_point="data", front="model")
    with pytest.raises(ValueError, match="needs `ref_point='data'`"):
        ScalarizationSampler(2, ref_point=[0.0, 0.0], front="predicted")


def test_data_sampler_defaults_to_the_loops_predicted_front_minimize_or_not():
    """ref_point="data" defaults to front="predicted", as run_bo_loop's default sampler, with or
    without ``minimize`` (a hand-built sampler following the README proposes what the loop
    does); the front plays no part with a fixed reference point or the linear law."""
    from botorch_mtucb.loop.defaults import default_sampler

    for minimize in (None, [True, False]):
        sampler = ScalarizationSampler(2, ref_point="data", minimize=minimize)
        assert sampler.front == "predicted" and sampler.uses_model
    assert default_sampler(2).front == ScalarizationSampler(2, ref_point="data").front
    assert ScalarizationSampler(2, ref_point=[0.0, 0.0]).front == "observed"
    assert ScalarizationSampler(2, "linear").front == "observed"
    Y = torch.randn(6, 2, generator=_gen(1), dtype=DT)
    with pytest.raises(ValueError, match="needs `predicted`"):
        ScalarizationSampler(2, ref_point="data", minimize=[True, True])(_gen(0), Y)


def test_numpy_integer_counts_are_accepted():
    import numpy as np

    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    W = sample_scalarization_weights(np.int64(3), np.int64(5), generator=g1)
    torch.testing.assert_close(W, sample_scalarization_weights(3, 5, generator=g2))
    assert ScalarizationSampler(np.int64(2), ref_point="data").num_objectives == 2
