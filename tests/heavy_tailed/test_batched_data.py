"""TruncatedGP / AdaptiveTruncationGP on batched training data (``batch x N x d``).

The reference of a batched model is ``b`` models built separately, in row-major order, from
fresh copies of the same arguments (so shared Nyström generators draw the same numbers):
posterior mean and covariance to 1e-12 over both models, dense and finite-arm, declared and
data-driven modes; then broadcasting, conditioning, fantasies, state_dict, pickling, BoTorch
acquisitions and the refusals of mismatched shapes.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from botorch.acquisition import (
    AcquisitionFunction,
    UpperConfidenceBound,
    qKnowledgeGradient,
    qUpperConfidenceBound,
)
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.models import AdaptiveTruncationGP, HeavyTailedBatch, TruncatedGP
from botorch_mtucb.protocols import (
    MarginalMomentsModel,
    RegularisedModel,
    WidthScheduleModel,
)

DT = torch.float64
KINDS = ["tgp", "tgp-arms", "tgp-driven", "tgp-driven-arms", "ata-qff", "ata-qff-arms",
         "ata-nystrom", "ata-nystrom-arms", "ata-driven"]
ARMS = torch.linspace(0, 1, 15, dtype=DT).unsqueeze(-1)
ATOL = 1e-12


def _data(batch: tuple, t: int, seed: int, arms: bool):
    g = torch.Generator().manual_seed(seed)
    if arms:
        X = ARMS[torch.randint(0, 15, (*batch, t), generator=g)]
    else:
        X = torch.rand(*batch, t, 1, generator=g, dtype=DT)
    z, w = torch.randn(*batch, t, 1, generator=g, dtype=DT), torch.rand(*batch, t, 1, generator=g,
                                                                          dtype=DT)
    scale = 1.0 + torch.arange(batch[-1] if batch else 1, dtype=DT).reshape(-1, 1, 1)
    Y = scale * torch.sin(6 * X) + 0.3 * z / w.clamp_min(0.05).sqrt()  # heavy-tailed
    return X, Y


def _rbf(ls: float = 0.2) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = ls
    return k


def _build(kind: str, X, Y, ls: float = 0.2, gen_seed: int = 1):
    """A model of ``kind`` on ``(X, Y)`` from fresh argument objects."""
    kw = {"arms": ARMS.clone()} if kind.endswith("arms") else {}
    gen = torch.Generator().manual_seed(gen_seed)
    if kind.startswith("tgp-driven"):
        return TruncatedGP(X, Y, **kw)
    if kind == "tgp" or kind == "tgp-arms":
        return TruncatedGP(X, Y, 1.0, 2.0, _rbf(ls), lam=0.5, **kw)
    if kind == "ata-driven":
        return AdaptiveTruncationGP(train_X=X, train_Y=Y, generator=gen)
    feats = QuadratureFourierFeatures(ls, 16, 1) if "qff" in kind else NystromFeatures(
        _rbf(ls), generator=gen)
    return AdaptiveTruncationGP(X, Y, 1.0, 2.0, feats, lam=0.5, horizon=50, **kw)


def _pair(kind: str, batch=(3,), t: int = 10, seed: int = 0):
    """The batched model and its ``prod(batch)`` separately built members (row-major)."""
    X, Y = _data(batch, t, seed, kind.endswith("arms"))
    model = _build(kind, X, Y)
    Xf, Yf = X.reshape(-1, t, 1), Y.reshape(-1, t, 1)
    if kind.startswith("ata-nystrom") or kind == "ata-driven":
        refs = _shared_generator_refs(kind, Xf, Yf)
    else:
        refs = [_build(kind, Xf[i], Yf[i]) for i in range(Xf.shape[0])]
    return model, refs, X, Y


def _shared_generator_refs(kind: str, Xf, Yf):
    """Nyström references drawing from one generator in turn, as the batch's members do."""
    gen = torch.Generator().manual_seed(1)
    kw = {"arms": ARMS.clone()} if kind.endswith("arms") else {}
    if kind == "ata-driven":
        return [AdaptiveTruncationGP(Xf[i], Yf[i], generator=gen) for i in range(Xf.shape[0])]
    feats = NystromFeatures(_rbf(), generator=gen)
    return [AdaptiveTruncationGP(Xf[i], Yf[i], 1.0, 2.0, feats, lam=0.5, horizon=50, **kw)
            for i in range(Xf.shape[0])]


def _test_X(kind: str, shape=(), q: int = 4, seed: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if kind.endswith("arms"):
        return ARMS[torch.randint(0, 15, (*shape, q), generator=g)]
    return torch.rand(*shape, q, 1, generator=g, dtype=DT)


def _assert_posterior(p, r, idx=()) -> None:
    torch.testing.assert_close(p.mean[idx], r.mean, atol=ATOL, rtol=0)
    torch.testing.assert_close(p.distribution.covariance_matrix[idx],
                               r.distribution.covariance_matrix, atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_batched_model_equals_separately_built_models(kind: str) -> None:
    model, refs, X, Y = _pair(kind)
    assert isinstance(model, HeavyTailedBatch) and model.batch_shape == torch.Size([3])
    assert not isinstance(model, (TruncatedGP, AdaptiveTruncationGP))  # documented
    assert all(type(m) is type(refs[0]) for m in model.members)
    for proto in (MarginalMomentsModel, RegularisedModel, WidthScheduleModel):
        assert isinstance(model, proto)
    torch.testing.assert_close(model.train_X, X, atol=0, rtol=0)
    torch.testing.assert_close(model.train_Y, Y, atol=ATOL, rtol=0)  # y − loc + loc
    assert model.num_observations == 10
    Xt = _test_X(kind, (3,))  # each member at its own points
    post, post_noisy = model.posterior(Xt), model.posterior(Xt, observation_noise=True)
    mean, var = model.mean_and_variance(Xt)
    assert post.mean.shape == (3, 4, 1) and mean.shape == var.shape == (3, 4)
    for i, ref in enumerate(refs):
        _assert_posterior(post, ref.posterior(Xt[i]), i)
        _assert_posterior(post_noisy, ref.posterior(Xt[i], observation_noise=True), i)
        rm, rv = ref.mean_and_variance(Xt[i])
        torch.testing.assert_close(mean[i], rm, atol=ATOL, rtol=0)
        torch.testing.assert_close(var[i], rv, atol=ATOL, rtol=0)
        torch.testing.assert_close(model.noise[i], ref.noise, atol=0, rtol=0)
        assert model.members[i].truncation_level() == ref.truncation_level()
    # Each member is fitted / truncated on its own slice: the members differ.
    assert float((post.mean[0] - post.mean[2]).detach().abs().max()) > 1e-3
    if "driven" in kind:
        assert len({m.v for m in model.members}) == 3  # v̂ estimated per slice
        assert len({m.location for m in model.members}) == 3
    beta = model.beta()
    betas = [r.beta() for r in refs]
    if isinstance(beta, float):
        assert all(b == beta for b in betas)
    else:
        torch.testing.assert_close(beta, torch.tensor(betas, dtype=DT).unsqueeze(-1))


@pytest.mark.parametrize("kind", ["tgp", "tgp-driven-arms", "ata-qff-arms", "ata-nystrom"])
def test_two_batch_dimensions_and_batched_X_broadcasting(kind: str) -> None:
    model, refs, X, _ = _pair(kind, batch=(2, 2))
    assert model.batch_shape == torch.Size([2, 2])
    Xq = _test_X(kind)  # q x d: broadcast over the batch
    Xb = _test_X(kind, (5, 1, 2), seed=4)  # batch' x 1 x 2 x q x d
    pq, pb = model.posterior(Xq), model.posterior(Xb)
    assert pq.mean.shape == (2, 2, 4, 1) and pb.mean.shape == (5, 2, 2, 4, 1)
    for i in range(2):
        for j in range(2):
            ref = refs[2 * i + j]
            _assert_posterior(pq, ref.posterior(Xq), (i, j))
            for k in (0, 4):
                _assert_posterior(pb, ref.posterior(Xb[k, 0, j]), (k, i, j))
    with pytest.raises(ValueError, match="broadcast"):
        model.posterior(_test_X(kind, (3,)))


@pytest.mark.parametrize("kind", ["tgp", "tgp-arms", "tgp-driven", "ata-qff", "ata-nystrom-arms",
                                  "ata-driven"])
def test_conditioning_a_batched_model_equals_conditioning_each_member(kind: str) -> None:
    model, refs, _, _ = _pair(kind)
    Xn, Yn = _data((3,), 2, 5, kind.endswith("arms"))
    with torch.no_grad():
        cond = model.condition_on_observations(Xn, Yn)  # real data: each member its own slice
        crefs = [r.condition_on_observations(Xn[i], Yn[i]) for i, r in enumerate(refs)]
    assert cond.batch_shape == torch.Size([3]) and cond.num_observations == 12
    Xt = _test_X(kind, (3,))
    post = cond.posterior(Xt)
    for i, r in enumerate(crefs):
        _assert_posterior(post, r.posterior(Xt[i]), i)
    torch.testing.assert_close(model.posterior(Xt).mean[0], refs[0].posterior(Xt[0]).mean,
                               atol=ATOL, rtol=0)  # the batched model itself is unchanged


@pytest.mark.parametrize("kind", ["tgp", "tgp-driven-arms", "ata-qff", "ata-nystrom"])
def test_fantasize_a_batched_model(kind: str) -> None:
    model, refs, _, _ = _pair(kind)
    sampler = SobolQMCNormalSampler(torch.Size([4]), seed=0)
    Xf = _test_X(kind, (3,), q=2, seed=6)
    with torch.no_grad():
        f = model.fantasize(Xf, sampler)
        Y = sampler(model.posterior(Xf, observation_noise=True))  # same base samples
    assert f.batch_shape == torch.Size([4, 3]) and Y.shape == (4, 3, 2, 1)
    Xt = _test_X(kind, (4, 3))
    post = f.posterior(Xt)
    for i in range(4):
        for j in range(3):
            member = f.members[3 * i + j]
            torch.testing.assert_close(member.train_Y[-2:], Y[i, j], atol=ATOL, rtol=0)
            kw = {"resample_dictionary": False} if kind.startswith("ata") else {}
            ref = refs[j].condition_on_observations(Xf[j], Y[i, j], **kw)
            _assert_posterior(post, ref.posterior(Xt[i, j]), (i, j))


@pytest.mark.parametrize("kind", ["tgp", "tgp-driven-arms", "ata-qff-arms", "ata-nystrom",
                                  "ata-driven"])
def test_state_dict_to_deepcopy_and_pickle(kind: str) -> None:
    model, _, _, _ = _pair(kind)
    Xt = _test_X(kind, (3,))
    ref = model.posterior(Xt)
    X2, Y2 = _data((3,), 6, 11, kind.endswith("arms"))
    fresh = _build(kind, X2, Y2, ls=0.4, gen_seed=9)
    fresh.load_state_dict(copy.deepcopy(model.state_dict()))
    _assert_posterior(fresh.posterior(Xt), ref)
    assert fresh.num_observations == 10
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        _assert_posterior(other.posterior(Xt), ref)
    m32 = copy.deepcopy(model).to(torch.float32)
    assert m32.train_X.dtype == torch.float32 and m32.noise.dtype == torch.float32
    p32 = m32.posterior(Xt.float())
    scale = float((ref.mean.abs().max() + ref.variance.max()).detach())
    assert float((p32.mean.double() - ref.mean).detach().abs().max()) < 1e-5 * scale
    small = _build(kind, X2[:2], Y2[:2])
    before = small.posterior(Xt[:2]).mean.detach()
    with pytest.raises(ValueError, match="does not fit a batch of 2"):  # before any change
        small.load_state_dict(model.state_dict())
    torch.testing.assert_close(small.posterior(Xt[:2]).mean, before, atol=0, rtol=0)


def test_a_state_with_per_member_kernels_into_a_shared_kernel_batch_is_refused() -> None:
    X, Y = _data((3,), 8, 0, False)
    source = HeavyTailedBatch([TruncatedGP(X[i], Y[i], 1.0, 2.0, _rbf(0.2 + 0.1 * i))
                               for i in range(3)], torch.Size([3]))  # a kernel per member
    target = TruncatedGP(X, Y, 1.0, 2.0, _rbf(0.4))  # one kernel shared by the members
    Xt = _test_X("tgp", (3,))
    before = target.posterior(Xt).mean.detach()
    with pytest.raises(ValueError, match="share"):
        target.load_state_dict(source.state_dict())
    torch.testing.assert_close(target.posterior(Xt).mean, before, atol=0, rtol=0)
    into = HeavyTailedBatch([TruncatedGP(X[i, :5], Y[i, :5], 1.0, 2.0, _rbf())
                             for i in range(3)], torch.Size([3]))  # per-member kernels: loads
    into.load_state_dict(source.state_dict())
    _assert_posterior(into.posterior(Xt), source.posterior(Xt))


def test_a_state_of_another_batch_shape_with_as_many_members_is_taken() -> None:
    model, _, _, _ = _pair("tgp", batch=(2, 2))
    X, Y = _data((4,), 5, 3, False)
    flat = _build("tgp", X, Y)
    flat.load_state_dict(model.state_dict())
    assert flat.batch_shape == torch.Size([2, 2])
    Xt = _test_X("tgp")
    _assert_posterior(flat.posterior(Xt), model.posterior(Xt))


@pytest.mark.parametrize("kind", ["tgp", "tgp-arms", "ata-qff", "ata-driven"])
def test_botorch_and_package_acquisitions_on_a_batched_model(kind: str) -> None:
    model, refs, _, _ = _pair(kind)
    Xt = _test_X(kind, (5, 3), q=3)  # batch' x batch x q x d
    acq = qUpperConfidenceBound(model, beta=2.0, sampler=SobolQMCNormalSampler(torch.Size([64]),
                                                                                  seed=0))
    with torch.no_grad():
        val = acq(Xt)
        assert val.shape == (5, 3)
        for j, r in enumerate(refs):
            ra = qUpperConfidenceBound(r, beta=2.0, sampler=SobolQMCNormalSampler(
                torch.Size([64]), seed=0))
            torch.testing.assert_close(val[:, j], ra(Xt[:, j]), atol=1e-10, rtol=0)
        X1 = Xt[..., :1, :]  # batch' x batch x 1 x d
        beta2 = torch.as_tensor(model.beta(), dtype=DT) ** 2
        ucb, botorch_ucb = HeavyTailedUCB(model), UpperConfidenceBound(model, beta2)
        assert ucb(X1).shape == botorch_ucb(X1).shape == (5, 3)
        for j, r in enumerate(refs):
            torch.testing.assert_close(ucb(X1)[:, j], HeavyTailedUCB(r)(X1[:, j]), atol=1e-10,
                                       rtol=0)
            beta2 = torch.tensor(r.beta() ** 2, dtype=DT)  # a float would be stored in float32
            rb = UpperConfidenceBound(r, beta2)(X1[:, j])
            torch.testing.assert_close(botorch_ucb(X1)[:, j], rb, atol=1e-10, rtol=0)
    if not kind.endswith("arms"):  # optimise the batch-averaged qUCB (gradients through it)

        class BatchMean(AcquisitionFunction):
            def forward(self, X: torch.Tensor) -> torch.Tensor:
                return acq(X.unsqueeze(-3)).mean(-1)

        bounds = torch.tensor([[0.0], [1.0]], dtype=DT)
        x, v = optimize_acqf(BatchMean(model), bounds, q=2, num_restarts=2, raw_samples=16,
                             options={"maxiter": 20})
        assert x.shape == (2, 1) and torch.isfinite(v)
        with torch.no_grad():
            member_mean = sum(qUpperConfidenceBound(r, beta=2.0, sampler=SobolQMCNormalSampler(
                torch.Size([64]), seed=0))(x) for r in refs) / 3
        torch.testing.assert_close(v, member_mean.squeeze(), atol=1e-10, rtol=0)


def test_batched_per_observation_keyword_is_sliced() -> None:
    X, Y = _data((2,), 8, 2, False)
    var = torch.rand(2, 8, dtype=DT, generator=torch.Generator().manual_seed(0)) + 0.1
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    model = AdaptiveTruncationGP(X, Y, 1.0, 2.0, NystromFeatures(_rbf(), generator=g1),
                                 dictionary_variances=var)
    feats = NystromFeatures(_rbf(), generator=g2)
    refs = [AdaptiveTruncationGP(X[i], Y[i], 1.0, 2.0, feats, dictionary_variances=var[i])
            for i in range(2)]
    Xt = _test_X("ata-nystrom", (2,))
    for i, r in enumerate(refs):
        _assert_posterior(model.posterior(Xt), r.posterior(Xt[i]), i)
    with pytest.raises(ValueError, match="dictionary_variances"):
        AdaptiveTruncationGP(X, Y, 1.0, 2.0, NystromFeatures(_rbf()),
                             dictionary_variances=var[:1].expand(3, 8))


def test_mismatched_batch_shapes_are_refused_clearly() -> None:
    X, Y = _data((3,), 6, 0, False)
    for bad_X, bad_Y in ((X, Y[:2]), (X, Y[0]), (X[0], Y), (X, Y.unsqueeze(0))):
        with pytest.raises(ValueError, match="same batch shape"):
            TruncatedGP(bad_X, bad_Y, 1.0, 2.0)
        with pytest.raises(ValueError, match="same batch shape"):
            AdaptiveTruncationGP(bad_X, bad_Y)
    with pytest.raises(ValueError, match="no member"):
        TruncatedGP(X[:0], Y[:0])
    with pytest.raises(ValueError, match="train_Y"):  # a member's own check names the argument
        TruncatedGP(X, Y[:, :5])
    model = TruncatedGP(X, Y, 1.0, 2.0)
    with pytest.raises(ValueError, match="do not broadcast"):
        model.condition_on_observations(X[:2, :1], Y[:2, :1])
    with pytest.raises(ValueError, match="different regularisers"):
        TruncatedGP(X, Y).lam  # noqa: B018  (data-driven: λ fitted per member)
    assert model.lam == 1.0 and model.noise.shape == (3,)
    X_before, Y_before = X.clone(), Y.clone()
    TruncatedGP(X, Y).condition_on_observations(X[:, :1], Y[:, :1])
    assert torch.equal(X, X_before) and torch.equal(Y, Y_before)  # the caller's tensors


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", ["tgp", "tgp-driven-arms", "ata-qff-arms", "ata-nystrom"])
def test_batched_model_to_cuda_matches_cpu(kind: str) -> None:
    model, _, _, _ = _pair(kind)
    g = copy.deepcopy(model).to("cuda")
    assert g.train_X.device.type == "cuda" and g.noise.device.type == "cuda"
    Xt = _test_X(kind, (3,))
    p, r = g.posterior(Xt.cuda()), model.posterior(Xt)
    torch.testing.assert_close(p.mean.cpu(), r.mean, atol=1e-10, rtol=0)
    torch.testing.assert_close(p.variance.cpu(), r.variance, atol=1e-10, rtol=0)


def test_a_batched_kernel_gives_each_member_its_slice() -> None:
    X, Y = _data((2, 2), 8, 1, False)
    kern = RBFKernel(batch_shape=torch.Size([2, 2])).to(DT)
    ls = torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=DT)
    kern.lengthscale = ls.reshape(2, 2, 1, 1)
    model = TruncatedGP(X, Y, 1.0, 2.0, kern, lam=0.5)
    Xt = _test_X("tgp")
    post = model.posterior(Xt)
    for i in range(2):
        for j in range(2):
            k = RBFKernel().to(DT)
            k.lengthscale = ls[i, j].reshape(1, 1)  # a float would be rounded to float32
            ref = TruncatedGP(X[i, j], Y[i, j], 1.0, 2.0, k, lam=0.5)
            _assert_posterior(post, ref.posterior(Xt), (i, j))
    with pytest.raises(ValueError, match="batched kernel .`covar_module`"):
        TruncatedGP(X, Y, covar_module=RBFKernel(batch_shape=torch.Size([3])).to(DT))
    with pytest.raises(ValueError, match="NystromFeatures with a batched base kernel"):
        AdaptiveTruncationGP(X, Y, 1.0, 2.0, NystromFeatures(kern))
    with pytest.raises(ValueError, match="batched kernel .`covar_module`"):  # positional
        TruncatedGP(X, Y, 1.0, 2.0, RBFKernel(batch_shape=torch.Size([2])).to(DT))


@pytest.mark.parametrize("kind", ["tgp", "ata-qff-arms"])
def test_qkg_on_a_batched_model_equals_each_members_qkg(kind: str) -> None:
    """BoTorch's look-ahead machinery (fantasize, fantasy posterior) through the batch."""
    model, refs, _, _ = _pair(kind)
    X = _test_X(kind, (3,), q=4, seed=8)  # batch x (q + num_fantasies) x d, q = 1
    with torch.no_grad():
        val = qKnowledgeGradient(model, num_fantasies=3, sampler=SobolQMCNormalSampler(
            torch.Size([3]), seed=0))(X)
        assert val.shape == (3,)
        for j, r in enumerate(refs):
            sampler = SobolQMCNormalSampler(torch.Size([3]), seed=0)  # the same fantasies
            ref = qKnowledgeGradient(r, num_fantasies=3, sampler=sampler)(X[j : j + 1])
            torch.testing.assert_close(val[j : j + 1], ref, atol=1e-10, rtol=0)
