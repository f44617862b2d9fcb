"""NystromMultiTaskGP on batched training data: a NystromMultiTaskBatch.

The reference of a batch is its members built separately, in row-major order, from the same
slices and one generator seeded the same way (so the dictionaries are drawn from the same
numbers): posteriors to 1e-10 over batch shapes, dtypes and transforms; then conditioning
rounds, fantasies, state round trips and the refusals. The acquisitions on a batch are in
``test_nystrom_batch_acquisitions.py``.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.errors import BotorchTensorDimensionError
from botorch.models.transforms import Log, Normalize, Standardize
from botorch.models.transforms.input import Warp
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import (
    LinearScalarization,
    ScalarizedMultiTaskUCB,
    TheoremThreeBeta,
)
from botorch_mtucb.acquisition.pending import _rng_untouched
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import NystromMultiTaskBatch, NystromMultiTaskGP
from botorch_mtucb.protocols import (
    InformationGainModel,
    NystromRadiusModel,
    ProjectedTaskPosteriorModel,
    TaskPosteriorModel,
)

DT = torch.float64
N_TASKS = 2


def _kernel(dtype=DT) -> ICMKernel:
    k = RBFKernel().to(dtype)
    k.lengthscale = 0.25
    B = torch.tensor([[1.0, 0.6], [0.6, 0.8]], dtype=dtype)
    return ICMKernel(k, N_TASKS, task_covar=B)


def _data(batch, t=14, seed=0, dtype=DT):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(*batch, t, 2, generator=g, dtype=dtype)
    Y = torch.stack([torch.sin(5 * X[..., 0]) + X[..., 1], torch.cos(4 * X.sum(-1))], -1)
    return X, Y + 0.1 * torch.randn(*batch, t, N_TASKS, generator=g, dtype=dtype), g


def _transforms(kind, batch, X):
    """(batch keywords, per-member keywords for member i) of a transform setting."""
    bs = torch.Size(batch)
    if kind == "none":
        return {}, lambda i: {}
    if kind == "batched":  # per-member statistics, as BoTorch's batched transforms
        return (dict(outcome_transform=Standardize(m=N_TASKS, batch_shape=bs),
                     input_transform=Normalize(d=2, batch_shape=bs)),
                lambda i: dict(outcome_transform=Standardize(m=N_TASKS),
                               input_transform=Normalize(d=2)))
    # an unbatched learned Normalize learns one set of bounds from all members (BoTorch)
    flat = X.reshape(-1, 2)
    bounds = torch.stack([flat.min(0).values, flat.max(0).values])
    return (dict(outcome_transform=Standardize(m=N_TASKS, batch_shape=bs),
                 input_transform=Normalize(d=2)),
            lambda i: dict(outcome_transform=Standardize(m=N_TASKS),
                           input_transform=Normalize(d=2, bounds=bounds)))


def _pair(batch, kind="none", seed=3, dtype=DT, q=2.0):
    """A batch and its members built separately (same slices, same generator state)."""
    X, Y, g = _data(batch, dtype=dtype)
    kw, member_kw = _transforms(kind, batch, X)
    model = NystromMultiTaskGP(X, Y, covar_module=_kernel(dtype), q=q, generator=seed, **kw)
    gen = torch.Generator().manual_seed(seed)
    M = torch.Size(batch).numel()
    Xf, Yf = X.reshape(M, -1, 2), Y.reshape(M, -1, N_TASKS)
    refs = [NystromMultiTaskGP(Xf[i], Yf[i], covar_module=_kernel(dtype), q=q, generator=gen,
                               **member_kw(i)) for i in range(M)]
    return model, refs, X, Y, g


def _close(a, b, tol=1e-10):
    torch.testing.assert_close(a, b, atol=tol, rtol=0)


@pytest.mark.filterwarnings("ignore:MT-BKB's Nyström posterior needs more precision")
@pytest.mark.parametrize("kind", ["none", "batched", "shared-normalize"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("batch", [(3,), (2, 3)])
def test_members_equal_separately_built_models(batch, dtype, kind):
    model, refs, X, _, g = _pair(batch, kind, dtype=dtype)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    assert isinstance(model, NystromMultiTaskBatch) and not isinstance(model, NystromMultiTaskGP)
    assert model.batch_shape == torch.Size(batch) and model.num_outputs == N_TASKS
    for proto in (TaskPosteriorModel, ProjectedTaskPosteriorModel, InformationGainModel,
                  NystromRadiusModel):
        assert isinstance(model, proto)
    sizes = torch.tensor([r.dictionary_size for r in refs]).reshape(batch)
    assert torch.equal(model.dictionary_size, sizes)
    assert len({tuple(m.dictionary_indices.tolist()) for m in model.members}) > 1  # their own
    for mem, ref in zip(model.members, refs, strict=True):
        assert torch.equal(mem.dictionary_indices, ref.dictionary_indices)
        assert torch.equal(mem.dictionary_probabilities, ref.dictionary_probabilities)
    W = torch.tensor([[1.0, 0.3], [-0.5, 1.0]], dtype=dtype)
    for lead in [(), (4,)]:
        Xs = torch.rand(*lead, *batch, 3, 2, generator=g, dtype=dtype)
        post = model.posterior(Xs)
        assert post.mean.shape == (*lead, *batch, 3, N_TASKS)
        mean, blocks = model.task_posterior(Xs)
        pmean, quad = model.projected_task_posterior(Xs, W)
        Xf = Xs.reshape(*lead, -1, 3, 2)
        for i, ref in enumerate(refs):
            idx = (..., *torch.unravel_index(torch.tensor(i), batch), slice(None), slice(None))
            r = ref.posterior(Xf[..., i, :, :])
            _close(post.mean[idx], r.mean, tol)
            _close(post.mvn.covariance_matrix[idx], r.mvn.covariance_matrix, tol)
            rm, rb = ref.task_posterior(Xf[..., i, :, :])
            _close(mean[idx], rm, tol)
            _close(blocks[(*idx, slice(None))], rb, tol)
            rpm, rq = ref.projected_task_posterior(Xf[..., i, :, :], W)
            _close(pmean[idx], rpm, tol)
            _close(quad[idx], rq, tol)
    for name in ("information_gain", "noise", "log_det_variance_sum"):
        got = getattr(model, name)
        got = got() if callable(got) else got
        want = [getattr(r, name) for r in refs]
        want = torch.stack([w() if callable(w) else w for w in want]).reshape(batch)
        assert got.shape == torch.Size(batch)
        _close(got, want, tol)


def test_posterior_broadcasting_noise_transform_and_output_indices():
    model, refs, _, _, g = _pair((3,), "batched")
    Xq = torch.rand(4, 2, generator=g, dtype=DT)  # q x d: the same points for every member
    post = model.posterior(Xq)
    assert post.mean.shape == (3, 4, N_TASKS)
    for i, ref in enumerate(refs):
        _close(post.mean[i], ref.posterior(Xq).mean)
    one = torch.rand(5, 1, 4, 2, generator=g, dtype=DT)  # batch dimension of size 1
    _close(model.posterior(one).mean, model.posterior(one.expand(5, 3, 4, 2)).mean)
    Xs = torch.rand(2, 3, 4, 2, generator=g, dtype=DT)
    extra = torch.rand(2, 3, 4, N_TASKS, generator=g, dtype=DT)
    w = torch.tensor([0.3, 0.7], dtype=DT)
    tf = ScalarizedPosteriorTransform(weights=w)
    for i, ref in enumerate(refs):
        for noise in (True, extra[:, i]):
            got = model.posterior(Xs, observation_noise=True if noise is True else extra)
            want = ref.posterior(Xs[:, i], observation_noise=noise)
            _close(got.mvn.covariance_matrix[:, i], want.mvn.covariance_matrix)
        got = model.posterior(Xs, posterior_transform=tf)
        want = ref.posterior(Xs[:, i], posterior_transform=tf)
        _close(got.mean[:, i], want.mean)
        _close(got.variance[:, i], want.variance)
    plain, plain_refs, *_ = _pair((3,), "none")
    sub = plain.posterior(Xs, output_indices=[1])
    assert sub.mean.shape == (2, 3, 4, 1)
    _close(sub.mean[:, 2], plain_refs[2].posterior(Xs[:, 2], output_indices=[1]).mean)
    with pytest.raises(ValueError, match="does not broadcast with the batch"):
        model.posterior(torch.rand(2, 4, 2, dtype=DT))
    with pytest.raises(NotImplementedError, match="couples its tasks"):
        model.subset_output([0])


def test_gradients_flow_to_the_inputs():
    model, refs, *_ = _pair((2,), "batched")
    Xs = torch.rand(2, 3, 2, dtype=DT, requires_grad=True)
    model.posterior(Xs).mean.sum().backward()
    Xr = Xs.detach().clone().requires_grad_(True)
    sum(r.posterior(Xr[i]).mean.sum() for i, r in enumerate(refs)).backward()
    _close(Xs.grad, Xr.grad)


@pytest.mark.parametrize("kind", ["none", "batched"])
def test_conditioning_rounds_follow_the_members_in_order(kind):
    model, refs, _, _, g = _pair((3,), kind)
    Xn = torch.rand(3, 1, 2, generator=g, dtype=DT)
    Yn = torch.randn(3, 1, N_TASKS, generator=g, dtype=DT)
    new = model.condition_on_observations(Xn, Yn)
    new_refs = [r.condition_on_observations(Xn[i], Yn[i]) for i, r in enumerate(refs)]
    assert new.batch_shape == torch.Size([3])
    Xs = torch.rand(3, 4, 2, generator=g, dtype=DT)
    post = new.posterior(Xs)
    for i, (mem, ref) in enumerate(zip(new.members, new_refs, strict=True)):
        assert torch.equal(mem.dictionary_indices, ref.dictionary_indices)  # a fresh draw
        _close(post.mean[i], ref.posterior(Xs[i]).mean)
        _close(post.variance[i], ref.posterior(Xs[i]).variance)
        _close(mem.log_det_variance_sum, ref.log_det_variance_sum)
    assert not torch.equal(new.log_det_variance_sum, model.log_det_variance_sum)


@pytest.mark.parametrize("batch", [(3,), (2, 3)])
def test_fantasize_equals_explicit_conditioning(batch):
    model, refs, _, _, g = _pair(batch, "batched")
    Xf = torch.rand(*batch, 2, 2, generator=g, dtype=DT)
    fm = model.fantasize(Xf, SobolQMCNormalSampler(torch.Size([5]), seed=7))
    assert fm.batch_shape == torch.Size([5, *batch])
    Y = SobolQMCNormalSampler(torch.Size([5]), seed=7)(model.posterior(Xf, observation_noise=True))
    cond = model.condition_on_observations(Xf, Y)
    Xs = torch.rand(3, 5, *batch, 4, 2, generator=g, dtype=DT)
    post, ref_post = fm.posterior(Xs), cond.posterior(Xs)
    _close(post.mean, ref_post.mean)
    _close(post.mvn.covariance_matrix, ref_post.mvn.covariance_matrix)
    M = len(refs)
    Xm, Ym = Xf.reshape(M, 2, 2), Y.reshape(5, M, 2, N_TASKS)
    Xsm = Xs.reshape(3, 5, M, 4, 2)
    for i, (mem, ref) in enumerate(zip(fm.members, refs, strict=True)):
        assert torch.equal(mem.dictionary_indices, ref.dictionary_indices)  # fantasies keep it
        one = ref.condition_on_observations(Xm[i], Ym[:, i]).posterior(Xsm[:, :, i])
        _close(post.mean.reshape(3, 5, M, 4, N_TASKS)[:, :, i], one.mean)
    assert fm.information_gain().shape == fm.batch_shape
    # known fantasy noise: passed on to each member's update
    noise = torch.rand(*batch, 2, N_TASKS, generator=g, dtype=DT) + 0.05
    fn = model.fantasize(Xf, SobolQMCNormalSampler(torch.Size([5]), seed=7),
                         observation_noise=noise)
    post_n = model.posterior(Xf, observation_noise=noise)
    Yn = SobolQMCNormalSampler(torch.Size([5]), seed=7)(post_n)
    one = refs[-1].condition_on_observations(Xm[-1], Yn.reshape(5, M, 2, N_TASKS)[:, -1],
                                             noise=noise.reshape(M, 2, N_TASKS)[-1].expand(5, 2, 2))
    _close(fn.posterior(Xs).variance.reshape(3, 5, M, 4, N_TASKS)[:, :, -1],
           one.posterior(Xsm[:, :, -1]).variance)
    # a second fantasy on the fantasy model (whose fantasies carry an autograd graph)
    fm2 = fm.fantasize(torch.rand(5, *batch, 1, 2, dtype=DT),
                       SobolQMCNormalSampler(torch.Size([2]), seed=1))
    assert fm2.batch_shape == torch.Size([2, 5, *batch])
    assert fm2.posterior(torch.rand(2, 5, *batch, 3, 2, dtype=DT)).mean.shape == (
        2, 5, *batch, 3, N_TASKS)


@pytest.mark.filterwarnings("ignore:MT-BKB's Nyström posterior needs more precision")
@pytest.mark.parametrize("kind", ["none", "batched"])
def test_state_dict_round_trip_copy_pickle_and_dtype(kind):
    model, _, _, _, g = _pair((2, 3), kind, seed=3)
    other, *_ = _pair((2, 3), kind, seed=4)  # another generator: other dictionaries
    Xs = torch.rand(2, 3, 4, 2, generator=g, dtype=DT)
    ref = model.posterior(Xs)
    assert not torch.equal(other.dictionary_size, model.dictionary_size) or not all(
        torch.equal(a.dictionary_indices, b.dictionary_indices)
        for a, b in zip(model.members, other.members, strict=True))
    assert (other.posterior(Xs).mean - ref.mean).abs().max() > 1e-6
    other.load_state_dict(model.state_dict())
    for a, b in zip(model.members, other.members, strict=True):
        assert torch.equal(a.dictionary_indices, b.dictionary_indices)
        assert torch.equal(a.dictionary_probabilities, b.dictionary_probabilities)
    for clone in (other, copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        post = clone.posterior(Xs)
        _close(post.mean, ref.mean, 1e-12)
        _close(post.mvn.covariance_matrix, ref.mvn.covariance_matrix, 1e-12)
    low = copy.deepcopy(model).to(torch.float32)
    post = low.posterior(Xs.float())
    assert post.mean.dtype == torch.float32
    torch.testing.assert_close(post.mean.double(), ref.mean, atol=1e-4, rtol=1e-3)
    smaller, *_ = _pair((3,), kind)
    with pytest.raises(ValueError, match="does not fit a batch"):
        smaller.load_state_dict(model.state_dict())
    state = {**model.state_dict(), "members.9.x": torch.zeros(1)}
    with pytest.raises(RuntimeError, match="Unexpected key"):
        other.load_state_dict(state)


def test_copies_share_one_generator_and_resample_in_member_order():
    model, refs, *_ = _pair((3,), "none")
    gens = {id(m.generator) for m in model.members}
    assert len(gens) == 1 and model.generator is model.members[0].generator
    clone = copy.deepcopy(model)
    assert len({id(m.generator) for m in clone.members}) == 1
    assert clone.generator is not model.generator
    model.resample_dictionary()
    for mem, ref in zip(model.members, refs, strict=True):
        ref.resample_dictionary()
        assert torch.equal(mem.dictionary_indices, ref.dictionary_indices)


def test_per_member_attributes_are_absent_with_a_pointer():
    model, *_ = _pair((2,), "none")
    assert not hasattr(model, "dictionary_indices") and not hasattr(model, "likelihood")
    with pytest.raises(AttributeError, match=r"members\[i\].dictionary_indices"):
        model.dictionary_indices  # noqa: B018
    with pytest.raises(AttributeError, match="dictionary_probabilities"):
        model.dictionary_probabilities  # noqa: B018
    with pytest.raises(AttributeError, match="fit each member"):
        model.likelihood  # noqa: B018


def test_theory_schedules_refuse_a_batch_and_pending_rng_is_restored():
    model, _, _, _, g = _pair((3,), "none")
    s = LinearScalarization(torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="single scalar"):  # η is batch-shaped
        ScalarizedMultiTaskUCB(model, s, beta=TheoremThreeBeta(b=1.0, sigma=0.1))
    with pytest.raises(ValueError, match="single finite number"):  # β would be batch-shaped
        ScalarizedMultiTaskUCB(model, s, beta=TheoremThreeBeta(b=1.0, sigma=0.1, eta=0.1))
    state = model.generator.get_state()
    with _rng_untouched(model, torch.device("cpu")):
        model.condition_on_observations(torch.rand(3, 1, 2, generator=g, dtype=DT),
                                        torch.rand(3, 1, 2, generator=g, dtype=DT))
        assert not torch.equal(model.generator.get_state(), state)  # the rounds drew
    assert torch.equal(model.generator.get_state(), state)


def test_bad_batched_input():
    X, Y, _ = _data((2,))
    with pytest.raises(ValueError, match="same batch shape"):
        NystromMultiTaskGP(X, Y[:1])
    with pytest.raises(ValueError, match="same batch shape"):
        NystromMultiTaskGP(X[0], Y)
    with pytest.raises(ValueError, match="no member"):
        NystromMultiTaskGP(X[:0], Y[:0])
    with pytest.raises(ValueError, match="generator"):
        NystromMultiTaskGP(X, Y, generator="seed")
    batched_rbf = RBFKernel(batch_shape=torch.Size([2])).to(DT)
    with pytest.raises(ValueError, match="`covar_module` must be unbatched"):
        NystromMultiTaskGP(X, Y, covar_module=ICMKernel(batched_rbf, N_TASKS))
    with pytest.raises(ValueError, match=r"Standardize\(m, batch_shape"):
        NystromMultiTaskGP(X, Y, outcome_transform=Standardize(m=N_TASKS))
    with pytest.raises(ValueError, match="needs batch_shape"):
        NystromMultiTaskGP(X, Y, input_transform=Normalize(d=2, batch_shape=torch.Size([3])))
    with pytest.raises(NotImplementedError, match="learnable parameters"):
        NystromMultiTaskGP(X, Y, input_transform=Warp(d=2, indices=[0]))
    with pytest.raises(TypeError, match="NystromMultiTaskGP"):
        NystromMultiTaskGP(X, Y, not_an_argument=1)
    model = NystromMultiTaskGP(X, Y, generator=0, outcome_transform=Log())  # stateless: copied
    with pytest.raises(NotImplementedError, match="Gaussian member posteriors"):
        model.posterior(torch.rand(2, 1, 2, dtype=DT))
    with pytest.raises(BotorchTensorDimensionError, match="must be batch'"):
        model.posterior(torch.rand(2, dtype=DT))
    with pytest.raises(ValueError, match="does not broadcast"):
        model.condition_on_observations(torch.rand(3, 1, 2, dtype=DT),
                                        torch.rand(3, 1, 2, dtype=DT))
