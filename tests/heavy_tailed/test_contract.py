"""BoTorch's Model contract for TruncatedGP and AdaptiveTruncationGP.

Batched conditioning and fantasies against explicit conditioning of every batch member,
qKnowledgeGradient against explicitly conditioned models (and its gradient against finite
differences), qUCB against its analytic value, state_dict round trips into models built from
other data, and ``.to(dtype)`` against the float64 model — over model kinds × dtypes.
Batched *training data* (``batch x N x d``) is tested in ``test_batched_data.py``.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from botorch.acquisition import PosteriorMean, qKnowledgeGradient, qUpperConfidenceBound
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import RBFKernel

from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch
from botorch_mtucb.models import AdaptiveTruncationGP, TruncatedGP

DT, F32 = torch.float64, torch.float32
DTYPES = pytest.mark.parametrize("dtype", [DT, F32], ids=["f64", "f32"])
KINDS = ["tgp", "tgp-arms", "tgp-driven", "ata-qff", "ata-qff-arms", "ata-nystrom",
         "ata-nystrom-arms", "ata-driven"]
ARMS = torch.linspace(0, 1, 15).to(DT).unsqueeze(-1)  # float32-representable


def _rbf(ls: float = 0.2, dtype: torch.dtype = DT) -> RBFKernel:
    k = RBFKernel().to(dtype)
    k.lengthscale = ls
    return k


def _data(t: int, seed: int, dtype: torch.dtype, arms: bool):
    g = torch.Generator().manual_seed(seed)
    X = ARMS[torch.randint(0, 15, (t,), generator=g)] if arms else torch.rand(t, 1, generator=g,
                                                                            dtype=DT)
    z, w = torch.randn(t, 1, dtype=DT, generator=g), torch.rand(t, 1, dtype=DT, generator=g)
    Y = torch.sin(6 * X) + 0.3 * z / w.clamp_min(0.05).sqrt()  # heavy-tailed
    return X.to(dtype), Y.to(dtype)


def _make(kind: str, dtype: torch.dtype, t: int = 12, seed: int = 0, ls: float = 0.2,
          gen_seed: int = 1):
    arms = kind.endswith("arms")
    X, Y = _data(t, seed, dtype, arms)
    kw = {"arms": ARMS.to(dtype)} if arms else {}
    if kind.startswith("tgp"):
        if kind == "tgp-driven":
            return TruncatedGP(X, Y)
        return TruncatedGP(X, Y, 1.0, 2.0, _rbf(ls, dtype), lam=0.5, **kw)
    if kind == "ata-driven":
        return AdaptiveTruncationGP(X, Y, generator=torch.Generator().manual_seed(gen_seed))
    if "qff" in kind:
        feats = QuadratureFourierFeatures(ls, 16, 1)
    else:
        feats = NystromFeatures(_rbf(ls, dtype), generator=torch.Generator().manual_seed(gen_seed))
    return AdaptiveTruncationGP(X, Y, 1.0, 2.0, feats, lam=0.5, horizon=50, **kw)


def _test_X(kind: str, dtype: torch.dtype, shape=()) -> torch.Tensor:
    if kind.endswith("arms"):
        idx = torch.randint(0, 15, (*shape, 4), generator=torch.Generator().manual_seed(3))
        return ARMS.to(dtype)[idx]
    return torch.rand(*shape, 4, 1, generator=torch.Generator().manual_seed(3), dtype=DT).to(dtype)


def _tol(dtype: torch.dtype) -> float:
    return 1e-10 if dtype == DT else 1e-5


def _explicit(model, X, Y, **kw):
    if isinstance(model, AdaptiveTruncationGP):
        kw.setdefault("resample_dictionary", False)
    return model.condition_on_observations(X, Y, **kw)


@DTYPES
@pytest.mark.parametrize("kind", KINDS)
def test_batched_conditioning_equals_explicit_members(kind: str, dtype: torch.dtype) -> None:
    m = _make(kind, dtype)
    Xn = _test_X(kind, dtype, (3,))[:, :2]  # batch x q x d = 3 x 2 x 1
    Yn = torch.randn(4, 3, 2, 1, generator=torch.Generator().manual_seed(4), dtype=DT).to(dtype)
    with torch.no_grad():
        f = m.condition_on_observations(Xn, Yn)
    assert isinstance(f, HeavyTailedBatch) and f.batch_shape == torch.Size([4, 3])
    Xt = _test_X(kind, dtype, (4, 3))  # num_fantasies x batch x q' x d
    post, post_b = f.posterior(Xt), f.posterior(Xt[0, 0])  # the second broadcast
    assert post.mean.shape == (4, 3, 4, 1) and post_b.mean.shape == (4, 3, 4, 1)
    for i in range(4):
        for j in range(3):
            ref = _explicit(m, Xn[j], Yn[i, j])
            for p, x in ((post, Xt[i, j]), (post_b, Xt[0, 0])):
                r = ref.posterior(x)
                idx = (i, j)
                p_mean = p.mean[idx]
                p_cov = p.distribution.covariance_matrix[idx]
                torch.testing.assert_close(p_mean, r.mean, atol=_tol(dtype), rtol=0)
                torch.testing.assert_close(p_cov, r.distribution.covariance_matrix,
                                           atol=_tol(dtype), rtol=0)
    # Conditioning the batch again adds a leading batch dimension.
    Y2 = Yn[:2, None, :, :1] + torch.arange(4, dtype=dtype).reshape(4, 1, 1, 1)  # 2 x 4 x 3
    with torch.no_grad():
        g = f.condition_on_observations(Xn[:, :1], Y2)
    assert g.batch_shape == torch.Size([2, 4, 3])
    ref = _explicit(_explicit(m, Xn[2], Yn[1, 2]), Xn[2, :1], Y2[0, 1, 2])
    torch.testing.assert_close(g.posterior(Xt[0, 0]).mean[0, 1, 2], ref.posterior(Xt[0, 0]).mean,
                               atol=_tol(dtype), rtol=0)


@pytest.mark.parametrize("kind", ["tgp", "tgp-arms", "ata-qff", "ata-nystrom-arms"])
def test_fantasize_conditions_on_the_sampler_draws(kind: str) -> None:
    m = _make(kind, DT)
    sampler = SobolQMCNormalSampler(torch.Size([5]), seed=0)
    Xf = _test_X(kind, DT, (2,))[:, :3]
    with torch.no_grad():
        f = m.fantasize(Xf, sampler)
        Y = sampler(m.posterior(Xf, observation_noise=True))  # same base samples
    assert f.batch_shape == torch.Size([5, 2]) and Y.shape == (5, 2, 3, 1)
    member = f.members[3 * 2 + 1]  # fantasy 3, batch 1 (row-major)
    torch.testing.assert_close(member.train_Y[-3:], Y[3, 1], atol=1e-12, rtol=0)
    torch.testing.assert_close(member.train_X[-3:], Xf[1], atol=0, rtol=0)
    with pytest.raises(ValueError, match="observation_noise"):
        m.fantasize(Xf, sampler, observation_noise=torch.ones(1, dtype=DT))


def _kg_reference(m, X_actual, X_fant, sampler) -> torch.Tensor:
    """qKG by hand: mean over fantasies of the explicitly conditioned model's mean."""
    with torch.no_grad():
        Y = sampler(m.posterior(X_actual, observation_noise=True))  # nf x b x q x 1
        out = torch.zeros(X_actual.shape[0], dtype=DT)
        for b in range(X_actual.shape[0]):
            for i in range(Y.shape[0]):
                ref = _explicit(m, X_actual[b], Y[i, b])
                out[b] += ref.posterior(X_fant[i, b]).mean.squeeze() / Y.shape[0]
    return out


@pytest.mark.parametrize("kind", ["tgp", "tgp-arms", "ata-qff", "ata-nystrom-arms"])
def test_qkg_equals_explicit_fantasies(kind: str) -> None:
    m = _make(kind, DT)
    nf, b = 4, 3
    kg = qKnowledgeGradient(m, num_fantasies=nf)
    X_actual = _test_X(kind, DT, (b,))[:, :1]  # b x 1 x d
    X_fant = _test_X(kind, DT, (nf, b))[..., :1, :]  # nf x b x 1 x d
    X = torch.cat([X_actual, X_fant.permute(1, 0, 2, 3).reshape(b, nf, 1)], dim=-2)
    with torch.no_grad():
        val = kg(X)
    torch.testing.assert_close(val, _kg_reference(m, X_actual, X_fant, kg.sampler),
                               atol=1e-10, rtol=0)


def test_qkg_gradient_matches_finite_differences_and_optimizes() -> None:
    m = _make("tgp", DT, t=15)
    kg = qKnowledgeGradient(m, num_fantasies=3)
    X = torch.rand(2, 4, 1, dtype=DT, generator=torch.Generator().manual_seed(7))
    X.requires_grad_(True)
    kg(X).sum().backward()
    h, fd = 1e-6, torch.zeros_like(X)
    with torch.no_grad():
        for idx in torch.cartesian_prod(*[torch.arange(s) for s in X.shape]).tolist():
            e = torch.zeros_like(X)
            e[tuple(idx)] = h
            fd[tuple(idx)] = (kg(X + e).sum() - kg(X - e).sum()) / (2 * h)
    torch.testing.assert_close(X.grad, fd, atol=1e-6, rtol=1e-4)
    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
    x, v = optimize_acqf(kg, bounds, q=1, num_restarts=2, raw_samples=16,
                         options={"maxiter": 20})
    assert x.shape == (1, 1) and torch.isfinite(v)


def test_non_differentiable_conditioning_refuses_gradients() -> None:
    m = _make("ata-qff", DT)
    kg = qKnowledgeGradient(m, num_fantasies=2)
    X = torch.rand(2, 3, 1, dtype=DT, requires_grad=True)
    with pytest.raises(NotImplementedError, match="torch.no_grad"):
        kg(X)
    # the documented way round: a maximiser that asks for no gradient
    torch.manual_seed(0)
    bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
    x, v = optimize_acqf(kg, bounds, q=1, num_restarts=2, raw_samples=16,
                         options={"with_grad": False, "maxiter": 10})
    assert x.shape == (1, 1) and torch.isfinite(v)


@pytest.mark.parametrize("kind", ["tgp", "tgp-arms", "ata-qff", "ata-nystrom"])
def test_qucb_approximates_analytic_ucb(kind: str) -> None:
    m = _make(kind, DT)
    X = _test_X(kind, DT, (6,))[:, :1]  # 6 x 1 x d
    acq = qUpperConfidenceBound(m, beta=2.0, sampler=SobolQMCNormalSampler(torch.Size([4096]),
                                                                              seed=0))
    with torch.no_grad():
        mu, var = m.mean_and_variance(X)
        torch.testing.assert_close(acq(X), (mu + (2.0 * var).sqrt()).squeeze(-1),
                                   atol=5e-3, rtol=0)
    if not kind.endswith("arms"):
        bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
        x, v = optimize_acqf(acq, bounds, q=3, num_restarts=2, raw_samples=32)
        assert x.shape == (3, 1) and torch.isfinite(v)


@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_round_trip_into_a_model_built_from_other_data(kind: str) -> None:
    m = _make(kind, DT)
    Xn, Yn = _data(3, 9, DT, kind.endswith("arms"))
    m = m.condition_on_observations(Xn[:1], Yn[:1]).condition_on_observations(Xn[1:], Yn[1:])
    fresh = _make(kind, DT, t=5, seed=11, ls=0.4, gen_seed=99)
    fresh.load_state_dict(copy.deepcopy(m.state_dict()))
    Xt = _test_X(kind, DT, (2,))
    p, r = fresh.posterior(Xt), m.posterior(Xt)
    torch.testing.assert_close(p.mean, r.mean, atol=1e-12, rtol=0)
    torch.testing.assert_close(p.distribution.covariance_matrix,
                               r.distribution.covariance_matrix, atol=1e-12, rtol=0)
    assert fresh.num_observations == m.num_observations == 15
    torch.testing.assert_close(fresh.train_Y, m.train_Y, atol=0, rtol=0)
    assert fresh.truncation_level() == m.truncation_level()
    # The state dict is a snapshot: conditioning the loaded model leaves the source alone.
    fresh.condition_on_observations(Xn[:1], Yn[:1] + 5.0)
    torch.testing.assert_close(m.posterior(Xt).mean, r.mean, atol=0, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_to_float32_matches_the_float64_model(kind: str) -> None:
    m64 = _make(kind, DT)
    m32 = copy.deepcopy(m64).to(F32)
    assert m32.train_X.dtype == F32 and m32.train_Y.dtype == F32
    Xt = _test_X(kind, DT, (2,))
    p32, p64 = m32.posterior(Xt.to(F32)), m64.posterior(Xt)
    assert p32.mean.dtype == F32
    scale = float(p64.mean.abs().max() + p64.variance.max())
    assert float((p32.mean.double() - p64.mean).abs().max()) < 1e-5 * scale
    assert float((p32.variance.double() - p64.variance).abs().max()) < 1e-5 * scale
    back = m32.to(DT)  # float32-rounded data, float64 again
    assert back.train_X.dtype == DT
    assert float((back.posterior(Xt).mean - p64.mean).abs().max()) < 1e-5 * scale


def test_to_float32_of_an_ill_conditioned_model_warns_and_stays_accurate() -> None:
    from linear_operator.utils.warnings import NumericalWarning

    X, Y = _data(200, 5, DT, arms=True)
    X, Y = X.float().double(), Y.float().double()
    m64 = TruncatedGP(X, Y, 1.0, 2.0, _rbf(), lam=1e-6)
    with pytest.warns(NumericalWarning, match="float64"):
        m32 = copy.deepcopy(m64).to(F32)
    assert m32._cdtype == DT and m32.train_X.dtype == F32
    Xt = ARMS.unsqueeze(-2)
    mu32, mu64 = m32.posterior(Xt.float()).mean, m64.posterior(Xt).mean
    assert float((mu32.double() - mu64).abs().max()) < 1e-5 * float(mu64.abs().max())


@pytest.mark.parametrize("kind", ["tgp", "ata-nystrom-arms"])
def test_fantasy_batch_deepcopies_pickles_and_refuses_bad_input(kind: str) -> None:
    m = _make(kind, DT)
    Xn = _test_X(kind, DT, (2,))[:, :1]
    with torch.no_grad():
        f = m.fantasize(Xn, SobolQMCNormalSampler(torch.Size([3]), seed=1))
    Xt = _test_X(kind, DT)
    for g in (copy.deepcopy(f), pickle.loads(pickle.dumps(f))):
        torch.testing.assert_close(g.posterior(Xt).mean, f.posterior(Xt).mean, atol=0, rtol=0)
    assert PosteriorMean(f)(Xt[:1].expand(3, 2, 1, 1)).shape == (3, 2)
    with pytest.raises(ValueError, match="broadcast"):
        f.posterior(Xt.expand(4, 4, 4, 1))
    with pytest.raises(ValueError, match="noise"):  # noise variances must be non-negative
        m.condition_on_observations(Xn, torch.zeros(3, 2, 1, 1, dtype=DT), noise=-torch.ones(1))
    with pytest.raises(ValueError, match="single output"):
        f.posterior(Xt, output_indices=[1])


def test_state_dict_loads_into_a_model_nested_in_another_module() -> None:
    """The rebuild runs in a load_state_dict post-hook, so it also works from a parent."""
    m = _make("tgp-arms", DT)
    parent = torch.nn.ModuleDict({"model": _make("tgp-arms", DT, t=4, seed=8, ls=0.5)})
    parent.load_state_dict({f"model.{k}": v for k, v in m.state_dict().items()})
    Xt = _test_X("tgp-arms", DT)
    torch.testing.assert_close(parent["model"].posterior(Xt).mean, m.posterior(Xt).mean,
                               atol=1e-12, rtol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", KINDS)
def test_to_cuda_matches_cpu(kind: str) -> None:
    m = _make(kind, DT)
    g = copy.deepcopy(m).to("cuda")
    assert g.train_X.device.type == "cuda"
    Xt = _test_X(kind, DT, (2,))
    p, r = g.posterior(Xt.cuda()), m.posterior(Xt)
    torch.testing.assert_close(p.mean.cpu(), r.mean, atol=1e-10, rtol=0)
    torch.testing.assert_close(p.variance.cpu(), r.variance, atol=1e-10, rtol=0)


def test_loading_a_nystrom_state_into_a_qff_model_is_refused_clearly() -> None:
    nys, qff = _make("ata-nystrom", DT), _make("ata-qff", DT)
    before = qff.posterior(_test_X("ata-qff", DT)).mean
    with pytest.raises(ValueError, match="NystromFeatures"):
        qff.load_state_dict(nys.state_dict(), strict=False)
    assert qff.kind == "qff"  # refused before anything changed
    torch.testing.assert_close(qff.posterior(_test_X("ata-qff", DT)).mean, before, atol=0, rtol=0)


@pytest.mark.parametrize("kind", ["tgp-driven", "ata-qff-arms", "ata-nystrom"])
def test_state_dict_survives_torch_save_and_a_weights_only_load(kind: str) -> None:
    import io

    m = _make(kind, DT)
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    fresh = _make(kind, DT, t=5, seed=3, ls=0.4, gen_seed=7)
    fresh.load_state_dict(torch.load(buf, weights_only=True))
    Xt = _test_X(kind, DT)
    torch.testing.assert_close(fresh.posterior(Xt).mean, m.posterior(Xt).mean, atol=1e-12,
                               rtol=0)
