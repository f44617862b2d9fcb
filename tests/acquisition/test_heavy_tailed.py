"""HeavyTailedUCB: values vs BoTorch's UCB, BoTorch optimisers, and end-to-end regret."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import HeavyTailedUCB
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.kernels import PrecomputedKernel
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP

DT = torch.float64


def _rbf(lengthscale: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = lengthscale
    return k


def _data(t: int = 20, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, 1, dtype=DT, generator=g)
    return X, (torch.sin(6 * X) + 0.3 * torch.randn(t, 1, dtype=DT, generator=g))


def _models(X, Y):
    qff = QuadratureFourierFeatures(0.2, 32, 1)
    nys = NystromFeatures(_rbf(), q=50.0, generator=torch.Generator().manual_seed(0))
    return {
        "tgp": TruncatedGP(X, Y, 1.0, 2.0, _rbf(), constants="authors"),
        "qff": AdaptiveTruncationGP(X, Y, 1.0, 2.0, qff, horizon=100, constants="authors"),
        "nys": AdaptiveTruncationGP(X, Y, 1.0, 2.0, nys, horizon=100, constants="authors"),
    }


@pytest.mark.parametrize("name", ["tgp", "qff", "nys"])
def test_value_is_mean_plus_beta_sigma(name: str) -> None:
    X, Y = _data()
    model = _models(X, Y)[name]
    Xt = torch.rand(7, 1, 1, dtype=DT, generator=torch.Generator().manual_seed(1))
    post = model.posterior(Xt)
    mu, sd = post.mean.reshape(-1), post.variance.reshape(-1).sqrt()
    acq = HeavyTailedUCB(model)  # β = model.beta()
    torch.testing.assert_close(acq(Xt), mu + model.beta() * sd, atol=1e-10, rtol=0)
    # BoTorch's UCB uses √β: HeavyTailedUCB(β) = UpperConfidenceBound(β²).
    torch.testing.assert_close(
        HeavyTailedUCB(model, beta=2.5)(Xt),
        UpperConfidenceBound(model, beta=2.5**2)(Xt),
        atol=1e-10,
        rtol=0,
    )


def test_generic_botorch_model_with_explicit_beta() -> None:
    X, Y = _data()
    gp = SingleTaskGP(X, Y).eval()
    Xt = torch.rand(5, 1, 1, dtype=DT)
    torch.testing.assert_close(
        HeavyTailedUCB(gp, beta=3.0)(Xt), UpperConfidenceBound(gp, beta=9.0)(Xt)
    )
    with pytest.raises(ValueError, match="beta"):
        HeavyTailedUCB(gp)  # no schedule on a SingleTaskGP


def test_cheap_construction_is_a_proper_module() -> None:
    """The direct construction sets what BoTorch's generic one does, and owns its state."""
    X, Y = _data()
    model = TruncatedGP(X, Y, 1.0, 2.0, _rbf(), constants="authors")
    a, b = HeavyTailedUCB(model, beta=1.5), HeavyTailedUCB(model, beta=2.5)
    reference = UpperConfidenceBound(model, beta=1.0)  # through nn.Module.__init__
    assert set(reference.__dict__) - {"beta"} <= set(a.__dict__)
    assert a.model is model and dict(a.named_children()) == {"model": model}
    assert set(a.state_dict()) == {"beta", *(f"model.{k}" for k in model.state_dict())}
    assert float(a.beta) == 1.5 and float(b.beta) == 2.5
    seen = []
    a.register_forward_hook(lambda *args: seen.append(1))
    Xt = torch.rand(4, 1, 1, dtype=DT, generator=torch.Generator().manual_seed(2))
    b(Xt)
    assert not seen and not b._forward_hooks  # hooks are per instance
    a(Xt)
    assert seen == [1]
    assert a._buffers is not b._buffers and a._modules is not b._modules
    other = TruncatedGP(X[:9], 2.0 * Y[:9], 1.0, 2.0, _rbf(), constants="authors")
    a.model = other  # reassigned through nn.Module.__setattr__: read back consistently
    assert a.model is other and dict(a.named_children()) == {"model": other}
    torch.testing.assert_close(a(Xt), HeavyTailedUCB(other, beta=1.5)(Xt))


def test_input_shapes_as_t_batch_mode_transform() -> None:
    X, Y = _data()
    acq = HeavyTailedUCB(TruncatedGP(X, Y, 1.0, 2.0, _rbf(), constants="authors"))
    Xt = torch.rand(3, 1, dtype=DT, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(acq(Xt[:1]), acq(Xt[:1].unsqueeze(0)))  # 1 x d: one point
    assert acq(Xt.reshape(3, 1, 1, 1)).shape == (3, 1)  # extra batch dimensions
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        acq(Xt.reshape(-1))
    with pytest.raises(AssertionError, match="q=1"):
        acq(Xt.reshape(1, 3, 1))


@pytest.mark.parametrize("beta", [-1.0, float("nan"), float("inf")])
def test_bad_beta(beta: float) -> None:
    X, Y = _data()
    with pytest.raises(ValueError, match="beta"):
        HeavyTailedUCB(TruncatedGP(X, Y, 1.0, 2.0), beta=beta)


@pytest.mark.parametrize("name", ["tgp", "qff", "nys"])
def test_optimize_acqf_on_box(name: str) -> None:
    X, Y = _data(15, 2)
    model = _models(X, Y)[name]
    acq = HeavyTailedUCB(model)
    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
    torch.manual_seed(0)  # optimize_acqf draws its raw samples from the global RNG
    x, val = optimize_acqf(acq, bounds, q=1, num_restarts=8, raw_samples=256)
    grid = torch.linspace(0, 1, 2001, dtype=DT).reshape(-1, 1, 1)
    best = acq(grid).max()
    assert 0.0 <= x.item() <= 1.0
    assert val.item() >= best.item() - 1e-4  # gradient ascent reaches the grid optimum


def test_optimize_acqf_discrete_on_arms() -> None:
    arms = torch.linspace(0, 1, 30, dtype=DT).unsqueeze(-1)
    with torch.no_grad():
        K = _rbf()(arms, arms).to_dense()
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 30, (40,), generator=g)
    Y = torch.randn(40, 1, dtype=DT, generator=g)
    choices = torch.arange(30, dtype=DT).unsqueeze(-1)
    for model in (
        TruncatedGP(idx[:, None].to(DT), Y, 1.0, 2.0, PrecomputedKernel(K), constants="authors"),
        AdaptiveTruncationGP(idx[:, None].to(DT), Y, 1.0, 2.0,
                             NystromFeatures(PrecomputedKernel(K), generator=g), horizon=100),
        AdaptiveTruncationGP(arms[idx], Y, 1.0, 2.0, QuadratureFourierFeatures(0.2, 32, 1),
                             arms=arms, horizon=100),
    ):
        acq = HeavyTailedUCB(model)
        cand = choices if model.train_X.shape[-1] == 1 and model.train_X.max() > 1 else arms
        x, val = optimize_acqf_discrete(acq, q=1, choices=cand)
        vals = acq(cand.unsqueeze(-2))
        assert torch.equal(x[0], cand[vals.argmax()])
        torch.testing.assert_close(val.reshape(()), vals.max())


def test_batch_beta_broadcasts_against_the_candidates_batch() -> None:
    """A ``b``-element β pairs with the candidates' batch (BoTorch's convention): one β per
    candidate of a ``b x 1 x d`` set, or one per member of a batched model; the batched
    model's own ``b x 1`` β() gives the same values."""
    from botorch_mtucb.models import TruncatedGP

    g = torch.Generator().manual_seed(0)
    X = torch.rand(10, 2, generator=g, dtype=torch.float64)
    model = TruncatedGP(X, torch.sin(6 * X[:, :1]), alpha=1.0, v=2.0)
    beta = torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64)
    T = torch.rand(3, 1, 2, generator=g, dtype=torch.float64)
    mean, var = model.mean_and_variance(T)
    expected = (mean + beta.unsqueeze(-1) * var.sqrt()).squeeze(-1)
    torch.testing.assert_close(HeavyTailedUCB(model, beta=beta)(T), expected)
    assert HeavyTailedUCB(model, beta=beta)(torch.rand(4, 3, 1, 2, dtype=torch.float64)).shape == (
        4, 3)
    Xb = torch.rand(3, 10, 2, generator=g, dtype=torch.float64)
    batched = TruncatedGP(Xb, torch.sin(6 * Xb[..., :1]), alpha=1.0, v=2.0)
    Tb = torch.rand(5, 1, 1, 2, generator=g, dtype=torch.float64)
    out = HeavyTailedUCB(batched, beta=beta)(Tb)
    assert out.shape == (5, 3)
    own = HeavyTailedUCB(batched, beta=beta.unsqueeze(-1))(Tb)  # the b x 1 layout of beta()
    torch.testing.assert_close(out, own)
    single = HeavyTailedUCB(batched, beta=4.0)(Tb)
    torch.testing.assert_close(out[:, 2], single[:, 2])
