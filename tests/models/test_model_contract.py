"""BoTorch's Model contract on the multi-task GPs: fantasies, batched conditioning, MC acqfs."""

import pytest
import torch
from botorch.acquisition import qKnowledgeGradient, qUpperConfidenceBound
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.multi_objective.logei import (
    qLogExpectedHypervolumeImprovement,
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.acquisition.objective import GenericMCObjective, ScalarizedPosteriorTransform
from botorch.models.transforms import Normalize, Standardize
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from botorch.utils.multi_objective.box_decompositions import FastNondominatedPartitioning

from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _data(t=10, n=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(6 * X[:, 0]) + X[:, 1], torch.cos(5 * X.sum(-1))], -1)[:, :n]
    return X, Y + 0.05 * torch.randn(t, n, generator=g, dtype=DT), g


def _model(cls, X, Y, transforms=True):
    kw = dict(outcome_transform=Standardize(m=Y.shape[-1]), input_transform=Normalize(d=2))
    if cls is NystromMultiTaskGP:
        kw["generator"] = 0
    return cls(X, Y, **(kw if transforms else {}))


@pytest.mark.parametrize("transforms", [False, True])
@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_batched_conditioning_equals_explicit_conditioning(cls, transforms):
    X, Y, g = _data()
    model = _model(cls, X, Y, transforms)
    Xn = torch.rand(3, 2, 2, generator=g, dtype=DT)  # batch 3, m = 2
    Yn = torch.randn(4, 3, 2, 2, generator=g, dtype=DT)  # 4 fantasies
    cond = model.condition_on_observations(Xn, Yn)
    assert cond.batch_shape == torch.Size([4, 3])
    Xs = torch.rand(4, 3, 5, 2, generator=g, dtype=DT)
    post = cond.posterior(Xs)
    assert post.mean.shape == (4, 3, 5, 2)
    blocks_mean, blocks = cond.task_posterior(Xs)
    for f, b in [(0, 0), (3, 2), (1, 1)]:
        if cls is NystromMultiTaskGP:  # a fantasy keeps the dictionary: Gaussian update
            ref = _gaussian_update(model, Xn[b], Yn[f, b], Xs[f, b])
        else:
            one = model.condition_on_observations(Xn[b], Yn[f, b]).posterior(Xs[f, b])
            ref = one.mean, one.mvn.covariance_matrix
        torch.testing.assert_close(post.mean[f, b], ref[0], atol=1e-9, rtol=1e-8)
        torch.testing.assert_close(post.mvn.covariance_matrix[f, b], ref[1], atol=1e-9, rtol=1e-8)
        diag = ref[1].reshape(5, 2, 5, 2).diagonal(dim1=0, dim2=2).permute(2, 0, 1)
        torch.testing.assert_close(blocks[f, b], diag, atol=1e-9, rtol=1e-8)
        torch.testing.assert_close(blocks_mean[f, b], ref[0], atol=1e-9, rtol=1e-8)
    # the update survives a rebuild of the solver (e.g. after a hyperparameter change)
    cond._solver_cache = None
    torch.testing.assert_close(cond.posterior(Xs).mean, post.mean, atol=1e-9, rtol=1e-8)


def _gaussian_update(model, X1, Y1, Xs):
    """μ' = μ + Γ(x, X1)(Γ(X1, X1) + η·σ²)⁻¹(Y1 − μ(X1)), in the original outcome scale."""
    n, m, q = Y1.shape[-1], X1.shape[0], Xs.shape[0]
    post = model.posterior(torch.cat([Xs, X1]))
    mean, cov = post.mean, post.mvn.covariance_matrix
    noise = model.noise * torch.ones(n, dtype=DT)
    if hasattr(model, "outcome_transform"):
        noise = noise * model.outcome_transform.stdvs.reshape(-1) ** 2
    S = cov[q * n :, q * n :] + torch.diag(noise.repeat(m))
    C = cov[: q * n, q * n :]
    mu = mean[:q].reshape(-1) + C @ torch.linalg.solve(S, (Y1 - mean[q:]).reshape(-1))
    return mu.reshape(q, n), cov[: q * n, : q * n] - C @ torch.linalg.solve(S, C.T)


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_fantasize_and_knowledge_gradient(cls):
    X, Y, g = _data()
    model = _model(cls, X, Y)
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([8]), seed=0)
    fm = model.fantasize(torch.rand(2, 1, 2, generator=g, dtype=DT), sampler)
    assert fm.batch_shape == torch.Size([8, 2])
    assert fm.posterior(torch.rand(8, 2, 3, 2, dtype=DT)).mean.shape == (8, 2, 3, 2)
    tf = ScalarizedPosteriorTransform(weights=torch.tensor([0.5, 0.5], dtype=DT))
    acqf = qKnowledgeGradient(model, num_fantasies=4, posterior_transform=tf)
    torch.manual_seed(0)
    x, v = optimize_acqf(acqf, BOUNDS, q=1, num_restarts=2, raw_samples=16,
                         options={"maxiter": 5})
    assert x.shape == (1, 2) and torch.isfinite(v)


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_knowledge_gradient_gradient_is_its_finite_difference(cls):
    """qKG's gradient in the candidate point (what ``optimize_acqf`` follows) equals the
    central finite difference of its value: the fantasy model keeps the graph from the
    fantasised points although the model's other caches are detached."""
    from botorch.acquisition.active_learning import qNegIntegratedPosteriorVariance

    X, Y, g = _data()
    model = _model(cls, X, Y)
    tf = ScalarizedPosteriorTransform(weights=torch.tensor([1.0, 1.0], dtype=DT))
    Xq = torch.rand(2, 4, 2, generator=g, dtype=DT)  # the candidate and 3 fantasy points
    move = torch.zeros_like(Xq)
    move[:, 0, :] = 1.0  # the candidate only
    mc_points = torch.rand(16, 2, generator=g, dtype=DT)
    for acqf, Xin, dirn in (
        (qKnowledgeGradient(model, num_fantasies=3, posterior_transform=tf), Xq, move),
        (qNegIntegratedPosteriorVariance(model, mc_points, posterior_transform=tf), Xq[:, :1],
         move[:, :1]),
    ):
        x = Xin.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(acqf(x).sum(), x)
        eps = 1e-5
        with torch.no_grad():
            fd = (acqf(Xin + eps * dirn).sum() - acqf(Xin - eps * dirn).sum()) / (2 * eps)
        assert float((grad * dirn).sum()) == pytest.approx(float(fd), rel=1e-4, abs=1e-7)


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_a_fantasy_model_conditions_and_fantasizes_again(cls):
    """Fantasies carry the posterior's autograd graph (a non-leaf tensor cannot be
    deep-copied): conditioning a fantasy model again equals the Gaussian update of its
    posterior, and a fantasy of a fantasy works (a look-ahead of depth two)."""
    X, Y, g = _data()
    model = _model(cls, X, Y)
    Xf = torch.rand(3, 1, 2, generator=g, dtype=DT, requires_grad=True)  # as in qKG
    fm = model.fantasize(Xf, SobolQMCNormalSampler(torch.Size([4]), seed=0),
                         propagate_grads=True)
    assert fm.train_targets.grad_fn is not None  # the case that failed
    X1 = torch.rand(4, 3, 1, 2, generator=g, dtype=DT)
    Y1 = torch.randn(4, 3, 1, 2, generator=g, dtype=DT)
    fm2 = fm.condition_on_observations(X1, Y1)
    assert fm2.batch_shape == torch.Size([4, 3])
    Xs = torch.rand(4, 3, 5, 2, generator=g, dtype=DT)
    post = fm2.posterior(Xs)
    for f, b in [(0, 0), (3, 2)]:
        joint = fm.posterior(torch.cat([Xs[f, b], X1[f, b]]).expand(4, 3, 6, 2))
        mean, cov = joint.mean[f, b], joint.mvn.covariance_matrix[f, b]
        noise = model.noise * model.outcome_transform.stdvs.reshape(-1) ** 2
        S, C = cov[10:, 10:] + torch.diag(noise), cov[:10, 10:]
        mu = mean[:5].reshape(-1) + C @ torch.linalg.solve(S, (Y1[f, b] - mean[5:]).reshape(-1))
        var = (cov[:10, :10] - C @ torch.linalg.solve(S, C.T)).diagonal()
        torch.testing.assert_close(post.mean[f, b].reshape(-1), mu, atol=1e-9, rtol=1e-8)
        torch.testing.assert_close(post.variance[f, b].reshape(-1), var, atol=1e-9, rtol=1e-8)
    deeper = fm.fantasize(torch.rand(4, 3, 1, 2, dtype=DT),
                          SobolQMCNormalSampler(torch.Size([2]), seed=1))
    assert deeper.batch_shape == (2, 4, 3)
    assert torch.isfinite(deeper.posterior(torch.rand(2, 4, 3, 2, 2, dtype=DT)).mean).all()


def _acqfs(model, X):
    Y = model.posterior(X).mean.detach()
    part = FastNondominatedPartitioning(ref_point=Y.min(0).values - 0.1, Y=Y)
    ref = (Y.min(0).values - 0.1).tolist()
    tf = ScalarizedPosteriorTransform(weights=torch.tensor([0.5, 0.5], dtype=DT))
    obj = GenericMCObjective(lambda Z, X=None: Z.sum(-1))
    return {
        "qLogNEHVI": qLogNoisyExpectedHypervolumeImprovement(model, ref_point=ref, X_baseline=X),
        "qLogEHVI": qLogExpectedHypervolumeImprovement(model, ref_point=ref, partitioning=part),
        "qLogNParEGO": qLogNParEGO(model, X_baseline=X),
        "qLogNEI": qLogNoisyExpectedImprovement(model, X_baseline=X, objective=obj),
        "qUCB": qUpperConfidenceBound(model, beta=2.0, posterior_transform=tf),
    }


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_mc_acquisitions_with_default_arguments(cls):
    X, Y, _ = _data()
    model = _model(cls, X, Y)
    for name, acqf in _acqfs(model, X).items():
        Xq = torch.rand(3, 3, 2, dtype=DT, requires_grad=True)
        val = acqf(Xq)
        val.sum().backward()
        assert torch.isfinite(val).all() and torch.isfinite(Xq.grad).all(), name
        for q, sequential in ((1, False), (3, False), (3, True)):
            torch.manual_seed(0)
            x, _ = optimize_acqf(acqf, BOUNDS, q=q, num_restarts=2, raw_samples=16,
                                 sequential=sequential, options={"maxiter": 10})
            assert x.shape == (q, 2), name


def test_q_ucb_with_many_samples_matches_the_analytic_bound():
    """qUCB with β: E[μ + √(βπ/2)|Z − μ|] = μ + √β σ for q = 1 (BoTorch's definition)."""
    X, Y, g = _data()
    model = _model(ExactMultiTaskGP, X, Y)
    w = torch.tensor([0.3, 0.7], dtype=DT)
    tf = ScalarizedPosteriorTransform(weights=w)
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([4096]), seed=1)
    acqf = qUpperConfidenceBound(model, beta=2.0, sampler=sampler, posterior_transform=tf)
    Xs = torch.rand(5, 1, 2, generator=g, dtype=DT)
    mean, blocks = model.task_posterior(Xs)
    sigma = torch.einsum("...ab,a,b->...", blocks, w, w).sqrt().squeeze(-1)
    analytic = (mean @ w).squeeze(-1) + 2.0**0.5 * sigma
    tol = 5e-3 * float(sigma.detach().max())
    torch.testing.assert_close(acqf(Xs), analytic, atol=tol, rtol=1e-3)


@pytest.mark.parametrize("transforms", [False, True])
@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_state_dict_round_trip_copy_pickle_and_dtype(cls, transforms):
    import copy
    import pickle
    import warnings

    from linear_operator.utils.warnings import NumericalWarning

    # N == n (2 points, 2 tasks) is where a transposed target layout would go unnoticed
    for t in (2, 10):
        X, Y, g = _data(t=t)
        model = _build(cls, X, Y, transforms, generator=0)
        Xs = torch.rand(4, 1, 2, generator=g, dtype=DT)
        ref = model.posterior(Xs)
        other = _build(cls, X, Y, transforms, generator=1)
        other.load_state_dict(model.state_dict())
        if cls is NystromMultiTaskGP:  # the dictionary travels with the state
            assert torch.equal(other.dictionary_indices, model.dictionary_indices)
        for clone in (other, copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            post = clone.posterior(Xs)
            torch.testing.assert_close(post.mean, ref.mean, atol=1e-12, rtol=0)
            torch.testing.assert_close(post.variance, ref.variance, atol=1e-12, rtol=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumericalWarning)
            low = copy.deepcopy(model).to(torch.float32)
            post = low.posterior(Xs)
        assert post.mean.dtype == torch.float32
        torch.testing.assert_close(post.mean.double(), ref.mean, atol=1e-4, rtol=1e-3)


def _build(cls, X, Y, transforms, generator):
    kw = dict(outcome_transform=Standardize(m=2), input_transform=Normalize(d=2))
    kw = kw if transforms else {}
    if cls is NystromMultiTaskGP:
        kw.update(generator=generator, q=2.0)  # q = 2: a dictionary that depends on the seed
    return cls(X, Y, **kw)


def test_subset_output_for_independent_tasks_and_refusal_otherwise():
    from gpytorch.kernels import MaternKernel, RBFKernel

    from botorch_mtucb.kernels import IndependentTasksKernel

    g = torch.Generator().manual_seed(4)
    X = 3 * torch.rand(10, 2, generator=g, dtype=DT)
    Y = torch.randn(10, 3, generator=g, dtype=DT)
    kernel = IndependentTasksKernel([RBFKernel().to(DT), MaternKernel().to(DT), RBFKernel().to(DT)])
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, outcome_transform=Standardize(m=3),
                             input_transform=Normalize(d=2))
    sub = model.subset_output([2, 0])
    Xs = torch.rand(4, 2, 2, generator=g, dtype=DT)
    post, spost = model.posterior(Xs), sub.posterior(Xs)
    assert sub.num_outputs == 2
    torch.testing.assert_close(spost.mean, post.mean[..., [2, 0]])
    torch.testing.assert_close(spost.variance, post.variance[..., [2, 0]])
    with pytest.raises(ValueError, match="idcs"):
        model.subset_output([0, 0])
    for coupled in (ExactMultiTaskGP(X, Y), NystromMultiTaskGP(X, Y, generator=0)):
        with pytest.raises(NotImplementedError, match="couples its tasks"):
            coupled.subset_output([0])


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_posterior_batch_shapes_and_observation_noise(cls):
    X, Y, g = _data()
    model = _model(cls, X, Y)
    for batch in [(), (3,), (2, 3)]:
        Xs = torch.rand(*batch, 4, 2, generator=g, dtype=DT)
        post = model.posterior(Xs)
        assert post.mean.shape == (*batch, 4, 2)
        assert post.mvn.covariance_matrix.shape == (*batch, 8, 8)
        flat = model.posterior(Xs.reshape(-1, 4, 2))
        torch.testing.assert_close(post.mean.reshape(-1, 4, 2), flat.mean)
        noisy = model.posterior(Xs, observation_noise=True)
        added = noisy.variance - post.variance  # η in the standardised scale, per task
        eta = model.noise * model.outcome_transform.stdvs.reshape(-1) ** 2
        torch.testing.assert_close(added, eta.expand_as(added))
        extra = torch.rand(*batch, 4, 2, generator=g, dtype=DT)
        tnoisy = model.posterior(Xs, observation_noise=extra)
        torch.testing.assert_close(
            tnoisy.variance - post.variance, extra * model.outcome_transform.stdvs.reshape(-1) ** 2
        )
