"""GP-BUCB pending points (``set_X_pending``) of both UCBs and ``acquisition.pending``.

References: the dense multi-task posterior written out here (Γ = k·B, vec order point-major,
Standardize statistics of the real data) on data ∪ (X_pending, μ(X_pending)); a TruncatedGP
built from scratch on X ∪ X_pending (its variance does not depend on the rewards).
"""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from gpytorch.kernels import RBFKernel

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    HeavyTailedUCB,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
)
from botorch_mtucb.acquisition.pending import (
    PendingState,
    check_pending,
    gp_bucb_inflation,
    hallucinate_mean,
)
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.models import ExactMultiTaskGP, TruncatedGP

DT = torch.float64
ETA = 0.1
LS = 0.3
B = torch.tensor([[1.0, 0.6, 0.2], [0.6, 0.8, 0.1], [0.2, 0.1, 0.5]], dtype=DT)


def _rbf(A: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * ((A[:, None, :] - C[None, :, :]) / LS).pow(2).sum(-1))


def _model(t: int = 12, seed: int = 0) -> tuple[ExactMultiTaskGP, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(t, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(5 * X[:, 0]), X.sum(-1), torch.cos(3 * X[:, 1])], -1)
    Y = 3.0 * Y + 1.0 + 0.1 * torch.randn(t, 3, generator=g, dtype=DT)
    k = RBFKernel().to(DT)
    k.lengthscale = torch.tensor(LS, dtype=DT)  # a Python float is set in float32
    model = ExactMultiTaskGP(
        X, Y, covar_module=ICMKernel(k, 3, task_covar=B), noise=ETA,
        outcome_transform=Standardize(m=3),
    ).eval()
    return model, X, Y


def _dense_posterior(X, Y, Xp, Xq, m, s):
    """Mean (q x n) and blocks (q x n x n) of the ICM GP on (X, Y) ∪ (Xp, μ(Xp)), original scale.

    ``m``, ``s``: the real data's Standardize statistics (kept by conditioning).
    """
    n = Y.shape[-1]

    def post(Xtr, Ys, Xs):
        G = torch.kron(_rbf(Xtr, Xtr), B) + ETA * torch.eye(Xtr.shape[0] * n, dtype=DT)
        Gx = torch.kron(_rbf(Xs, Xtr), B)  # (q n) x (t n)
        mean = (Gx @ torch.linalg.solve(G, Ys.reshape(-1))).reshape(-1, n)
        cov = torch.kron(_rbf(Xs, Xs), B) - Gx @ torch.linalg.solve(G, Gx.T)
        idx = torch.arange(Xs.shape[0])
        blocks = cov.reshape(Xs.shape[0], n, Xs.shape[0], n)[idx, :, idx, :]
        return mean, blocks

    Ys = (Y - m) / s
    mp, _ = post(X, Ys, Xp)  # hallucinated means, standardized
    mean, blocks = post(torch.cat([X, Xp]), torch.cat([Ys, mp]), Xq)
    return mean * s + m, blocks * s[:, None] * s[None, :]


def test_set_x_pending_matches_dense_conditioning_on_hallucinated_means():
    model, X, Y = _model()
    m, s = Y.mean(0), Y.std(0)
    lam = torch.tensor([0.2, 0.5, 0.3], dtype=DT)
    z = Y.min(0).values - 1.0
    Xp = torch.tensor([[0.2, 0.8], [0.9, 0.1], [0.5, 0.5]], dtype=DT)
    Xq = torch.cat([torch.rand(7, 2, generator=torch.Generator().manual_seed(3), dtype=DT), Xp])
    mean_ref, blocks_ref = _dense_posterior(X, Y, Xp, Xq, m, s)
    mean0, blocks0 = _dense_posterior(X, Y, Xp[:0], Xq, m, s)
    torch.testing.assert_close(mean_ref, mean0, atol=1e-8, rtol=0)  # the mean does not move
    var_ref, var0 = blocks_ref.diagonal(dim1=-2, dim2=-1), blocks0.diagonal(dim1=-2, dim2=-1)
    assert (var_ref <= var0 + 1e-12).all() and (var_ref[-3:] < 0.9 * var0[-3:]).all()
    beta = 1.7
    for s_lam in (ChebyshevScalarization(lam, z), LinearScalarization(lam)):
        acqf = ScalarizedMultiTaskUCB(model, s_lam, beta=beta)
        before = acqf(Xq.unsqueeze(1))
        acqf.set_X_pending(Xp)
        mean, blocks = acqf.model.task_posterior(Xq.unsqueeze(1))
        torch.testing.assert_close(mean[:, 0], mean_ref, atol=1e-8, rtol=0)
        torch.testing.assert_close(blocks[:, 0], blocks_ref, atol=1e-8, rtol=0)
        if isinstance(s_lam, ChebyshevScalarization):
            ref = (lam * (mean_ref + beta * var_ref.sqrt() - z)).min(-1).values
        else:
            ref = mean_ref @ lam + beta * torch.einsum("i,qij,j->q", lam, blocks_ref, lam).sqrt()
        after = acqf(Xq.unsqueeze(1))
        torch.testing.assert_close(after, ref, atol=1e-8, rtol=0)
        assert (after <= before + 1e-10).all() and (after[-3:] < before[-3:]).all()
        assert acqf.model is not model and torch.equal(acqf.X_pending, Xp)
        acqf.set_X_pending(None)  # clearing restores the original model and values
        assert acqf.model is model and acqf.X_pending is None
        torch.testing.assert_close(acqf(Xq.unsqueeze(1)), before, atol=0, rtol=0)
    assert model.train_inputs[0].shape[0] == X.shape[0]  # the caller's model is untouched


def test_incremental_pending_equals_conditioning_from_scratch():
    model, _, _ = _model()
    Xp = torch.rand(4, 2, generator=torch.Generator().manual_seed(5), dtype=DT)
    state = PendingState(model)
    state.update(Xp[:1])
    state.update(Xp[:3])  # extends: only rows 1, 2 are hallucinated on the conditioned model
    inc = state.update(Xp)
    ref = hallucinate_mean(model, Xp)
    Xq = torch.rand(9, 1, 2, generator=torch.Generator().manual_seed(6), dtype=DT)
    for a, b in zip(inc.task_posterior(Xq), ref.task_posterior(Xq), strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    other = state.update(Xp[2:])  # not an extension: rebuilt from the base model
    for a, b in zip(other.task_posterior(Xq), hallucinate_mean(model, Xp[2:]).task_posterior(Xq),
                    strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_sequential_batches_are_distinct_continuous_and_discrete():
    model, _, Y = _model()
    s = ChebyshevScalarization(torch.tensor([0.3, 0.3, 0.4], dtype=DT), Y.min(0).values)
    acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    torch.manual_seed(0)
    cand, _ = optimize_acqf(acqf, bounds, q=3, num_restarts=4, raw_samples=64, sequential=True)
    assert cand.shape == (3, 2) and torch.pdist(cand).min() > 1e-3
    assert acqf.X_pending is None  # BoTorch resets the base pending points
    arms = torch.rand(40, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    chosen, _ = optimize_acqf_discrete(acqf, q=3, choices=arms)
    assert chosen.shape == (3, 2) and torch.pdist(chosen).min() > 0
    # Without pending points the greedy choice would repeat the same arm.
    best = arms[acqf(arms.unsqueeze(1)).argmax()]
    torch.testing.assert_close(chosen[0], best)
    with pytest.raises(ValueError, match="q = 1 only"):
        acqf(torch.rand(5, 3, 2, dtype=DT))  # joint q > 1 stays refused


def test_pending_beta_inflation():
    model, _, Y = _model()
    s = LinearScalarization(torch.tensor([0.3, 0.3, 0.4], dtype=DT))
    Xp = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=DT)
    acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0, pending_beta_inflation=1.5)
    acqf.set_X_pending(Xp)
    assert float(acqf.beta) == pytest.approx(3.0) and float(acqf.beta_real_data) == 2.0
    acqf.set_X_pending(None)
    assert float(acqf.beta) == 2.0
    # "gp-bucb": exp(½ log det(I + η⁻¹ Γ_t(X_p, X_p))) on the model's (standardized) scale.
    acqf = ScalarizedMultiTaskUCB(
        model, s, beta=2.0, X_pending=Xp, pending_beta_inflation="gp-bucb"
    )
    X, Ys = model.train_inputs[0], model.train_targets
    G = torch.kron(_rbf(X, X), B) + ETA * torch.eye(X.shape[0] * 3, dtype=DT)
    Gp = torch.kron(_rbf(Xp, X), B)
    Spp = torch.kron(_rbf(Xp, Xp), B) - Gp @ torch.linalg.solve(G, Gp.T)
    C = 0.5 * torch.logdet(torch.eye(6, dtype=DT) + Spp / ETA)
    assert float(acqf.beta) == pytest.approx(2.0 * math.exp(float(C)), rel=1e-8)
    torch.testing.assert_close(gp_bucb_inflation(model, acqf.model), C.exp())
    assert Ys.shape[0] == X.shape[0]
    for bad in (0.5, float("inf"), "other", True):
        with pytest.raises(ValueError, match="pending_beta_inflation"):
            ScalarizedMultiTaskUCB(model, s, beta=2.0, pending_beta_inflation=bad)
    # "gp-bucb" needs information_gain(): refused at construction for a ModelListGP
    from botorch.models import ModelListGP, SingleTaskGP

    Xtr = model.train_inputs[0]
    mlist = ModelListGP(*[SingleTaskGP(Xtr, Y[:, i:i + 1]) for i in range(3)])
    with pytest.raises(ValueError, match="information_gain"):
        ScalarizedMultiTaskUCB(mlist, s, beta=2.0, pending_beta_inflation="gp-bucb")
    acqf = ScalarizedMultiTaskUCB(mlist, s, beta=2.0, X_pending=Xp)  # numeric: fine
    assert acqf.model is not mlist and len(acqf.model.models) == 3


def test_heavy_tailed_pending_keeps_mean_and_shrinks_variance():
    g = torch.Generator().manual_seed(3)
    X = torch.rand(8, 1, generator=g, dtype=DT)
    Y = torch.sin(6 * X) + 2.0 * torch.randn(8, 1, generator=g, dtype=DT)
    model = TruncatedGP(X, Y, alpha=1.0, v=4.0, constants="authors")
    Xp = torch.tensor([[0.3], [0.7]], dtype=DT)
    ref = TruncatedGP(torch.cat([X, Xp]), torch.zeros(10, 1, dtype=DT), alpha=1.0, v=4.0)
    Xq = torch.linspace(0, 1, 11, dtype=DT).reshape(11, 1, 1)
    mean, var = model.mean_and_variance(Xq)
    _, ref_var = ref.mean_and_variance(Xq)
    for maximize in (True, False):
        acqf = HeavyTailedUCB(model, maximize=maximize, X_pending=Xp, pending_beta_inflation=1.2)
        sign = 1.0 if maximize else -1.0
        expected = sign * mean[:, 0] + 1.2 * model.beta() * ref_var[:, 0].clamp_min(1e-12).sqrt()
        torch.testing.assert_close(acqf(Xq), expected, atol=1e-10, rtol=0)
        acqf.set_X_pending(None)
        expected = sign * mean[:, 0] + model.beta() * var[:, 0].clamp_min(1e-12).sqrt()
        torch.testing.assert_close(acqf(Xq), expected, atol=1e-10, rtol=0)
    arms = torch.linspace(0, 1, 30, dtype=DT).unsqueeze(-1)
    chosen, _ = optimize_acqf_discrete(HeavyTailedUCB(model), q=3, choices=arms)
    assert torch.pdist(chosen).min() > 0
    with pytest.raises(ValueError, match="pending_beta_inflation"):
        HeavyTailedUCB(model, pending_beta_inflation="gp-bucb")


def test_check_pending_errors_name_the_argument():
    assert check_pending(None, 2) is None
    assert check_pending(torch.empty(0, 2, dtype=DT), 2) is None
    for bad in (torch.zeros(3, dtype=DT), torch.zeros(2, 3, dtype=DT),
                torch.zeros(2, 2, dtype=torch.long), torch.full((1, 2), float("nan"))):
        with pytest.raises(ValueError, match="X_pending"):
            check_pending(bad, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_pending_points_on_cuda_match_cpu():
    model, X, Y = _model()
    k = RBFKernel().to(DT)
    k.lengthscale = torch.tensor(LS, dtype=DT)
    dev = torch.device("cuda")
    gpu = ExactMultiTaskGP(
        X.to(dev), Y.to(dev), covar_module=ICMKernel(k, 3, task_covar=B), noise=ETA,
        outcome_transform=Standardize(m=3),
    ).eval()
    s = ChebyshevScalarization(torch.tensor([0.3, 0.3, 0.4], dtype=DT), Y.min(0).values)
    Xp = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=DT)
    Xq = torch.rand(9, 1, 2, generator=torch.Generator().manual_seed(8), dtype=DT)
    cpu_acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0, X_pending=Xp)
    gpu_acqf = ScalarizedMultiTaskUCB(gpu, s, beta=2.0, X_pending=Xp.to(dev))
    assert gpu_acqf.beta.device.type == "cuda"
    torch.testing.assert_close(gpu_acqf(Xq.to(dev)).cpu(), cpu_acqf(Xq), atol=1e-8, rtol=0)


def test_hallucination_leaves_the_random_states_alone():
    """Nyström models resample their dictionary when conditioned: hallucinating pending points
    must not move the shared generator (nor torch's global one), so the real run is unchanged."""
    from botorch_mtucb.features import NystromFeatures
    from botorch_mtucb.models import AdaptiveTruncationGP, NystromMultiTaskGP

    g = torch.Generator().manual_seed(0)
    X = torch.rand(15, 2, generator=g, dtype=DT)
    Y = torch.randn(15, 3, generator=g, dtype=DT)
    k = RBFKernel().to(DT)
    k.lengthscale = torch.tensor(LS, dtype=DT)
    gen = torch.Generator().manual_seed(5)
    nys = NystromMultiTaskGP(X, Y, ICMKernel(k, 3, task_covar=B), noise=ETA, q=2.0, generator=gen)
    Xp = torch.rand(3, 2, generator=g, dtype=DT)
    before = gen.get_state()
    s = LinearScalarization(torch.tensor([0.3, 0.3, 0.4], dtype=DT))
    acqf = ScalarizedMultiTaskUCB(nys, s, beta=2.0, X_pending=Xp)
    assert acqf.model is not nys and torch.equal(gen.get_state(), before)
    # ...while conditioning itself does draw from it (so the check above can fail)
    nys.condition_on_observations(Xp, torch.zeros(3, 3, dtype=DT))
    assert not torch.equal(gen.get_state(), before)

    x1 = torch.rand(20, 1, generator=g, dtype=DT)
    y1 = torch.sin(6 * x1)
    kern = RBFKernel().to(DT)
    kern.lengthscale = torch.tensor(0.2, dtype=DT)
    ata = AdaptiveTruncationGP(x1, y1, 1.0, 2.0, NystromFeatures(kern, q=50.0), horizon=100,
                               constants="authors")  # no generator: torch's global one
    torch.manual_seed(11)
    state = torch.get_rng_state()
    HeavyTailedUCB(ata, X_pending=x1[:4] + 0.01)
    assert torch.equal(torch.get_rng_state(), state)
    ata.condition_on_observations(x1[:4] + 0.01, torch.zeros(4, 1, dtype=DT))  # does draw
    assert not torch.equal(torch.get_rng_state(), state)


@pytest.mark.filterwarnings("ignore::botorch.exceptions.warnings.InputDataWarning")
def test_heavy_tailed_ucb_pending_on_a_botorch_gp_matches_a_refit_on_hallucinated_data():
    from botorch.models import SingleTaskGP

    g = torch.Generator().manual_seed(0)
    X = torch.rand(8, 1, generator=g, dtype=DT)
    Y = torch.sin(6 * X)
    model = SingleTaskGP(X, Y, outcome_transform=None).eval()
    model.covar_module.lengthscale = torch.tensor(0.2, dtype=DT)
    model.likelihood.noise = torch.tensor(0.01, dtype=DT)
    Xp = torch.tensor([[0.3], [0.7]], dtype=DT)
    acqf = HeavyTailedUCB(model, beta=2.0, X_pending=Xp)
    ref = SingleTaskGP(torch.cat([X, Xp]), torch.cat([Y, model.posterior(Xp).mean.detach()]),
                       outcome_transform=None)
    ref.load_state_dict(model.state_dict())
    ref.eval()
    Xq = torch.linspace(0, 1, 7, dtype=DT).reshape(7, 1, 1)
    with torch.no_grad():
        expected = model.posterior(Xq).mean[..., 0, 0] + 2.0 * ref.posterior(Xq).variance[
            ..., 0, 0
        ].sqrt()
    torch.testing.assert_close(acqf(Xq), expected, atol=1e-10, rtol=0)


def test_pending_points_in_another_dtype_are_cast_to_the_model():
    model, _, _ = _model()
    s = LinearScalarization(torch.tensor([0.3, 0.3, 0.4], dtype=DT))
    Xp = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=DT)
    a = ScalarizedMultiTaskUCB(model, s, beta=2.0, X_pending=Xp.float())
    b = ScalarizedMultiTaskUCB(model, s, beta=2.0, X_pending=Xp)
    assert a.X_pending.dtype == DT
    Xq = torch.rand(5, 1, 2, generator=torch.Generator().manual_seed(4), dtype=DT)
    torch.testing.assert_close(a(Xq), b(Xq), atol=1e-6, rtol=0)  # float32 rounding of X_p


def test_generators_of_a_batch_of_nystrom_members_are_restored():
    """``_model_generators`` looks into a ``HeavyTailedBatch``: every member's generator once."""
    from botorch_mtucb.acquisition.pending import _model_generators
    from botorch_mtucb.features import NystromFeatures
    from botorch_mtucb.models import AdaptiveTruncationGP, HeavyTailedBatch

    g = torch.Generator().manual_seed(3)
    x = torch.rand(12, 1, generator=g, dtype=DT)
    y = torch.sin(6 * x)
    gens = [torch.Generator().manual_seed(s) for s in (1, 2)]

    def member(gen):
        kern = RBFKernel().to(DT)
        kern.lengthscale = torch.tensor(0.2, dtype=DT)
        return AdaptiveTruncationGP(x, y, 1.0, 2.0, NystromFeatures(kern, q=20.0, generator=gen),
                                    horizon=50, constants="authors")

    batch = HeavyTailedBatch([member(gens[0]), member(gens[1]), member(gens[0])], torch.Size([3]))
    found = _model_generators(batch)
    assert len(found) == 2 and all(any(f is g for f in found) for g in gens)


def test_pending_points_on_a_batch_of_nystrom_members():
    """``X_pending`` on batched training data: each member is hallucinated at its own mean,
    exactly as the member alone would be, and the acquisition keeps the batch shape."""
    from botorch_mtucb.acquisition import LinearScalarization, ScalarizedMultiTaskUCB
    from botorch_mtucb.acquisition.pending import hallucinate_mean, posterior_mean
    from botorch_mtucb.models import NystromMultiTaskGP

    g = torch.Generator().manual_seed(0)
    X, Y = torch.rand(3, 10, 2, generator=g, dtype=DT), torch.randn(3, 10, 2, generator=g, dtype=DT)
    batch = NystromMultiTaskGP(X, Y, generator=0)
    Xp = torch.rand(2, 2, generator=g, dtype=DT)
    means = posterior_mean(batch, Xp)
    assert means.shape == (3, 2, 2)
    hallucinated = hallucinate_mean(batch, Xp)
    Xs = torch.rand(5, 2, generator=g, dtype=DT)
    for i, member in enumerate(batch.members):
        torch.testing.assert_close(means[i], member.posterior(Xp).mean, atol=1e-12, rtol=0)
        ref = hallucinate_mean(member, Xp).posterior(Xs)
        got = hallucinated.members[i].posterior(Xs)
        torch.testing.assert_close(got.mean, ref.mean, atol=1e-10, rtol=0)
        torch.testing.assert_close(got.variance, ref.variance, atol=1e-10, rtol=0)
    acqf = ScalarizedMultiTaskUCB(batch, LinearScalarization(torch.tensor([0.5, 0.5], dtype=DT)),
                                  beta=1.0)
    acqf.set_X_pending(Xp)
    assert acqf(torch.rand(4, 3, 1, 2, generator=g, dtype=DT)).shape == (4, 3)


def _known_noise_data(seed: int = 4):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(5 * X[:, 0]), torch.cos(3 * X[:, 1])], -1)
    Yvar = 0.01 + 0.05 * torch.rand(10, 2, generator=g, dtype=DT)
    return X, Y, Yvar


def test_pending_on_a_known_noise_model_uses_the_average_training_variance():
    X, Y, Yvar = _known_noise_data()
    Bn = B[:2, :2]
    k = RBFKernel().to(DT)
    k.lengthscale = torch.tensor(LS, dtype=DT)
    model = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(k, 2, task_covar=Bn), train_Yvar=Yvar)
    Xp = torch.tensor([[0.3, 0.6], [0.8, 0.2]], dtype=DT)
    Xq = torch.rand(5, 2, generator=torch.Generator().manual_seed(9), dtype=DT)
    conditioned = hallucinate_mean(model.eval(), Xp)
    # reference: the same GP built on X ∪ X_pending, the pending rows' variances each task's mean
    Xa = torch.cat([X, Xp])
    Na = torch.cat([Yvar, Yvar.mean(0).expand(2, 2)]).reshape(-1)
    G = torch.kron(_rbf(Xa, Xa), Bn) + torch.diag(Na)
    Gx = torch.kron(_rbf(Xq, Xa), Bn)
    cov = torch.kron(_rbf(Xq, Xq), Bn) - Gx @ torch.linalg.solve(G, Gx.T)
    var_ref = cov.diagonal().reshape(5, 2)
    var = conditioned.posterior(Xq).variance
    torch.testing.assert_close(var, var_ref, atol=1e-10, rtol=0)
    torch.testing.assert_close(  # the mean does not move
        conditioned.posterior(Xq).mean, model.posterior(Xq).mean, atol=1e-10, rtol=0
    )
    # the UCB takes pending points, one at a time as optimize_acqf(sequential=True) gives them
    acqf = ScalarizedMultiTaskUCB(model, LinearScalarization(torch.tensor([0.5, 0.5], dtype=DT)))
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    batch, _ = optimize_acqf(acqf, bounds, q=3, num_restarts=2, raw_samples=16, sequential=True)
    assert batch.shape == (3, 2)


def test_pending_on_a_known_noise_singletaskgp():
    from botorch.models import SingleTaskGP

    X, Y, Yvar = _known_noise_data()
    Xp = torch.tensor([[0.3, 0.6]], dtype=DT)
    for cols in ([0], [0, 1]):  # one output, and two outputs (batched over the outputs)
        model = SingleTaskGP(X, Y[:, cols], train_Yvar=Yvar[:, cols]).eval()
        conditioned = hallucinate_mean(model, Xp)
        ref = SingleTaskGP(  # same hyperparameters, the pending row's variance the mean's
            torch.cat([X, Xp]), torch.cat([Y[:, cols], model.posterior(Xp).mean.detach()]),
            train_Yvar=torch.cat([Yvar[:, cols], Yvar[:, cols].mean(0, keepdim=True)]),
            outcome_transform=None,
        )
        ref.outcome_transform = model.outcome_transform  # the real data's statistics
        ref.load_state_dict(model.state_dict(), strict=False)
        ref.likelihood.noise = torch.cat(  # transformed units, as the model holds them
            [model.likelihood.noise, model.likelihood.noise.mean(-1, keepdim=True)], dim=-1
        )
        Xq = torch.rand(4, 2, generator=torch.Generator().manual_seed(2), dtype=DT)
        torch.testing.assert_close(
            conditioned.posterior(Xq).variance, ref.eval().posterior(Xq).variance,
            atol=1e-10, rtol=0,
        )
