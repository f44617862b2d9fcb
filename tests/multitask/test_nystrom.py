"""NystromMultiTaskGP (MT-BKB) against ExactMultiTaskGP, Theorem 3 / Lemma 10 and the loop."""

import math

import pytest
import torch
from botorch.models.transforms import Normalize, Standardize
from gpytorch.kernels import MaternKernel, RBFKernel

from botorch_mtucb.acquisition import ScalarizationSampler
from botorch_mtucb.kernels import ICMKernel, SumOfSeparableKernel
from botorch_mtucb.loop import FiniteArmOptimizer, gaussian_observer, run_bo_loop
from botorch_mtucb.loop import scalarized_ucb_factory as ucb_factory
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP
from botorch_mtucb.theory import theorem3_q

DT = torch.float64
ETA = 0.1
HUGE_Q = 1e15  # every p = min(q‖Γ̃‖, 1) is 1


def _rbf(ls: float) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = ls
    return k


def _icm(n: int, g: torch.Generator, ls: float = 0.3) -> ICMKernel:
    A = torch.randn(n, n, generator=g, dtype=DT)
    return ICMKernel(_rbf(ls), n, task_covar=A @ A.T / n + 0.1 * torch.eye(n, dtype=DT))


def _sum(n: int, g: torch.Generator) -> SumOfSeparableKernel:
    A1, A2 = (torch.randn(n, n, generator=g, dtype=DT) for _ in range(2))
    return SumOfSeparableKernel(
        [
            ICMKernel(_rbf(0.3), n, task_covar=A1 @ A1.T / n),
            ICMKernel(MaternKernel(nu=2.5).to(DT), n, task_covar=A2 @ A2.T / n),
        ]
    )


@pytest.mark.parametrize("name", ["icm", "sum"])
def test_all_points_with_p_one_equals_exact_model(name):
    g = torch.Generator().manual_seed(0)
    n = 2
    kernel = _icm(n, g) if name == "icm" else _sum(n, g)
    X = torch.rand(25, 2, generator=g, dtype=DT)
    Y = torch.randn(25, n, generator=g, dtype=DT)
    Xs = torch.rand(3, 4, 2, generator=g, dtype=DT)
    kw = {"covar_module": kernel, "noise": ETA}
    nys = NystromMultiTaskGP(X, Y, q=HUGE_Q, generator=0, **kw)
    exact = ExactMultiTaskGP(X, Y, **kw)
    assert torch.equal(nys.dictionary_indices, torch.arange(25))
    assert torch.equal(nys.dictionary_probabilities, torch.ones(25, dtype=DT))
    assert nys.uses_icm_fast_path == (name == "icm")
    p1, p2 = nys.posterior(Xs), exact.posterior(Xs)
    assert p1.mean.shape == (3, 4, n) and p1.mvn.covariance_matrix.shape == (3, 4 * n, 4 * n)
    assert torch.allclose(p1.mean, p2.mean, atol=1e-8)
    assert torch.allclose(p1.mvn.covariance_matrix, p2.mvn.covariance_matrix, atol=1e-9)
    m1, c1 = nys.task_posterior(Xs)
    m2, c2 = exact.task_posterior(Xs)
    assert torch.allclose(m1, m2, atol=1e-8) and torch.allclose(c1, c2, atol=1e-9)
    assert torch.allclose(nys.information_gain(), exact.information_gain(), atol=1e-7)


def test_transforms_and_posterior_options_match_exact_model():
    g = torch.Generator().manual_seed(1)
    n = 3
    X = 5 * torch.rand(20, 2, generator=g, dtype=DT) + 2
    Y = 10 * torch.randn(20, n, generator=g, dtype=DT) + 4

    def kw():
        return {
            "covar_module": _icm(n, torch.Generator().manual_seed(2)),
            "input_transform": Normalize(d=2),
            "outcome_transform": Standardize(m=n),
        }

    nys = NystromMultiTaskGP(X, Y, q=HUGE_Q, generator=3, **kw())
    exact = ExactMultiTaskGP(X, Y, **kw())
    Xs = 5 * torch.rand(4, 1, 2, generator=g, dtype=DT) + 2
    for opts in ({}, {"observation_noise": True}):
        a, b = nys.posterior(Xs, **opts), exact.posterior(Xs, **opts)
        assert torch.allclose(a.mean, b.mean, atol=1e-7)
        assert torch.allclose(a.variance, b.variance, atol=1e-7)
    m1, c1 = nys.task_posterior(Xs[:, 0])
    m2, c2 = exact.task_posterior(Xs[:, 0])
    assert torch.allclose(m1, m2, atol=1e-7) and torch.allclose(c1, c2, atol=1e-6)
    # conditioning keeps matching (outcome transform applied to the new Y)
    x, y = 5 * torch.rand(1, 2, generator=g, dtype=DT) + 2, torch.randn(1, n, dtype=DT)
    a = nys.condition_on_observations(x, y).posterior(Xs)
    b = exact.condition_on_observations(x, y).posterior(Xs)
    assert torch.allclose(a.mean, b.mean, atol=1e-7)
    assert torch.allclose(a.variance, b.variance, atol=1e-7)


def _clustered_data(seed: int, t: int = 400, n: int = 2):
    """A BO-like data set: most points packed near an optimum, some spread out (1-d)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.cat(
        [
            0.5 + 0.05 * torch.randn(t - t // 4, 1, generator=g, dtype=DT),
            torch.rand(t // 4, 1, generator=g, dtype=DT),
        ]
    )
    Y = torch.randn(t, n, generator=g, dtype=DT)
    return X, Y


def test_variance_bounds_of_lemma_10_at_training_points():
    """Γ_t/ρ ⪯ Γ̃_t ⪯ ρΓ_t (ε = 0.5, Theorem-3 q) for the large majority of seeds."""
    n, eps = 2, 0.5
    rho = (1 + eps) / (1 - eps)
    X, Y = _clustered_data(0)
    kernel = _icm(n, torch.Generator().manual_seed(1), ls=0.2)
    exact = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=ETA)
    _, G = exact.task_posterior(X)
    far = torch.tensor([[40.0], [-55.0]], dtype=DT)
    B = kernel.task_covar_matrix.detach()
    ok, sizes = 0, []
    for seed in range(8):
        nys = NystromMultiTaskGP(
            X, Y, covar_module=kernel, noise=ETA, epsilon=eps, horizon=400, generator=seed
        )
        assert nys.q == pytest.approx(theorem3_q(eps, 0.1, 400))
        sizes.append(nys.dictionary_size)
        _, Gt = nys.task_posterior(X)
        tol = 1e-10
        lower = torch.linalg.eigvalsh(Gt - G / rho).min()
        upper = torch.linalg.eigvalsh(rho * G - Gt).min()
        ok += bool(lower > -tol and upper > -tol)
        # far from the data the variance is the prior's
        _, Gfar = nys.task_posterior(far)
        assert torch.allclose(Gfar, B.expand(2, n, n), atol=1e-12)
    assert ok >= 7
    assert max(sizes) < 400  # the dictionary really is sparse here
    assert min(sizes) > 0
    # A far sparser dictionary (q = 2, about 10% of the points) still meets the bound on most
    # seeds, and gets visibly less exact than the Theorem-3 one.
    ok, worst = 0, 1.0
    for seed in range(8):
        nys = NystromMultiTaskGP(X, Y, covar_module=kernel, noise=ETA, q=2.0, generator=seed)
        assert nys.dictionary_size < 60
        _, Gt = nys.task_posterior(X)
        ratio = torch.linalg.eigvals(torch.linalg.solve(G, Gt)).real.detach()
        worst = max(worst, float(ratio.max()), 1 / float(ratio.min()))
        ok += bool(ratio.min() > 1 / rho - 1e-9 and ratio.max() < rho + 1e-9)
    assert ok >= 6
    assert worst > 1.001


def test_empty_dictionary_gives_prior_and_conditioning_still_works():
    g = torch.Generator().manual_seed(4)
    n = 2
    kernel = _sum(n, g)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    Y = torch.randn(10, n, generator=g, dtype=DT)
    nys = NystromMultiTaskGP(X, Y, covar_module=kernel, q=1e-14, generator=5)
    assert nys.dictionary_size == 0
    assert nys.dictionary_indices.dtype == torch.long
    Xs = torch.rand(3, 2, 2, generator=g, dtype=DT)
    post = nys.posterior(Xs)
    assert torch.equal(post.mean, torch.zeros(3, 2, n, dtype=DT))
    prior = kernel(Xs).to_dense().detach()
    assert torch.allclose(post.mvn.covariance_matrix, prior, atol=1e-12)
    assert float(nys.information_gain()) == 0.0
    nxt = nys.condition_on_observations(X[:1], Y[:1])
    assert nxt.train_targets.shape == (11, n)
    assert torch.allclose(nxt.posterior(Xs).mvn.covariance_matrix, prior, atol=1e-12)


def test_condition_carries_variances_forward_and_accumulates_log_det():
    g = torch.Generator().manual_seed(6)
    n = 2
    kernel = _icm(n, g)
    X = torch.rand(30, 1, generator=g, dtype=DT)
    Y = torch.randn(30, n, generator=g, dtype=DT)
    model = NystromMultiTaskGP(X, Y, covar_module=kernel, q=30.0, generator=7)
    x, y = torch.rand(2, 1, generator=g, dtype=DT), torch.randn(2, n, generator=g, dtype=DT)
    new = model.condition_on_observations(x, y)
    # reference: the old model's n x n blocks at the old and new points
    _, blocks = model.task_posterior(torch.cat([X, x]))
    norms = torch.linalg.matrix_norm(blocks, ord=2)
    assert torch.allclose(new.previous_variances, norms, atol=1e-10)
    eye = torch.eye(n, dtype=DT)
    inc = torch.logdet(eye + blocks[30:] / ETA).sum()
    assert torch.allclose(new.log_det_variance_sum, model.log_det_variance_sum + inc, atol=1e-9)
    # p = min(q ‖Γ̃_{t−1}‖, 1) for the drawn points; indices point into the new train_X
    probs = (30.0 * norms).clamp(max=1.0)
    assert torch.allclose(new.dictionary_probabilities, probs[new.dictionary_indices])
    assert new.dictionary_indices.max() < 32
    assert new.generator is model.generator
    # the old model is untouched
    assert model.train_targets.shape == (30, n)


def test_log_det_sum_with_full_dictionary_is_lemma_4_and_cold_start_replays_stages():
    g = torch.Generator().manual_seed(8)
    n = 2
    kernel = _icm(n, g)
    X = torch.rand(12, 2, generator=g, dtype=DT)
    Y = torch.randn(12, n, generator=g, dtype=DT)
    kw = {"covar_module": kernel, "noise": ETA, "q": HUGE_Q}
    # warm: one point at a time ⇒ Σ_s log det(I + Γ_{s−1}(x_s)/η) = log det(I + G_t/η)
    model = NystromMultiTaskGP(X[:1], Y[:1], generator=0, **kw)
    for s in range(1, 12):
        model = model.condition_on_observations(X[s : s + 1], Y[s : s + 1])
    exact = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=ETA)
    assert torch.allclose(model.log_det_variance_sum, 2 * exact.information_gain(), atol=1e-8)
    # cold: stages of 1, 2, 4, 8 points; points of stage k use the exact model of stage k−1
    cold = NystromMultiTaskGP(X, Y, generator=0, **kw)
    eye = torch.eye(n, dtype=DT)
    ref = torch.logdet(eye + kernel(X[:1]).to_dense().detach() / ETA)
    for lo, hi in ((1, 2), (2, 4), (4, 8), (8, 12)):
        stage = ExactMultiTaskGP(X[:lo], Y[:lo], covar_module=kernel, noise=ETA)
        _, b = stage.task_posterior(X[lo:hi])
        ref = ref + torch.logdet(eye + b / ETA).sum()
    assert torch.allclose(cold.log_det_variance_sum, ref, atol=1e-8)


def test_seeded_runs_are_reproducible():
    X, Y = _clustered_data(3, t=200)
    kernel = _icm(2, torch.Generator().manual_seed(0), ls=0.2)

    def run(seed):
        m = NystromMultiTaskGP(X[:150], Y[:150], covar_module=kernel, horizon=200, generator=seed)
        out = [m.dictionary_indices]
        for s in range(150, 155):
            m = m.condition_on_observations(X[s : s + 1], Y[s : s + 1])
            out.append(m.dictionary_indices)
        return out

    a, b, c = run(11), run(11), run(12)
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert any(not torch.equal(u, v) for u, v in zip(a, c, strict=True))
    # a fresh draw each round (not the same dictionary carried over)
    assert any(not torch.equal(u[: v.numel()], v) for u, v in zip(a[1:], a[2:], strict=False))


def test_resample_and_hyperparameter_change_rebuild_solver():
    X, Y = _clustered_data(5, t=120)
    kernel = _icm(2, torch.Generator().manual_seed(0), ls=0.2)
    m = NystromMultiTaskGP(X, Y, covar_module=kernel, q=20.0, generator=1)
    Xs = torch.rand(3, 1, dtype=DT)
    before = m.posterior(Xs).mean
    idx = m.dictionary_indices.clone()
    kernel.data_covar_module.lengthscale = 0.3
    assert torch.equal(m.dictionary_indices, idx)  # same dictionary, new solver
    exact_like = NystromMultiTaskGP(X, Y, covar_module=kernel, q=HUGE_Q, generator=1)
    assert not torch.allclose(m.posterior(Xs).mean, before)
    m.resample_dictionary()
    assert not torch.equal(m.dictionary_indices, idx)
    assert exact_like.dictionary_size == 120


def test_gradients_wrt_inputs():
    X, Y = _clustered_data(6, t=60)
    m = NystromMultiTaskGP(X, Y, covar_module=_icm(2, torch.Generator().manual_seed(0)), q=5.0)
    Xs = torch.rand(4, 1, 1, dtype=DT, requires_grad=True)
    mean, cov = m.task_posterior(Xs)
    (mean.sum() + cov.diagonal(dim1=-2, dim2=-1).sum()).backward()
    grad = Xs.grad.clone()
    h = 1e-6
    with torch.no_grad():
        def f(Z):
            mu, c = m.task_posterior(Z)
            return mu.sum() + c.diagonal(dim1=-2, dim2=-1).sum()

        fd = (f(Xs + h) - f(Xs - h)) / (2 * h)
    assert torch.isfinite(grad).all()
    assert torch.allclose(grad.sum(), fd, rtol=1e-4, atol=1e-6)


def test_default_kernel_dtype_and_q_schedule():
    g = torch.Generator().manual_seed(9)
    X = torch.rand(9, 3, generator=g, dtype=DT)
    Y = torch.randn(9, 2, generator=g, dtype=DT)
    m = NystromMultiTaskGP(X, Y)
    assert m.posterior(X[:2]).mean.dtype == DT
    # doubling trick without a horizon: T = 16 for t = 9
    assert m.q == pytest.approx(6 * 3 * math.log(4 * 16 / 0.1) / 0.25)
    assert NystromMultiTaskGP(X, Y, horizon=100).q == pytest.approx(theorem3_q(0.5, 0.1, 100))
    assert NystromMultiTaskGP(X, Y, horizon=4).q == pytest.approx(theorem3_q(0.5, 0.1, 16))
    assert NystromMultiTaskGP(X, Y, q=3.0).q == 3.0
    m32 = NystromMultiTaskGP(X.float(), Y.float(), generator=0)
    assert m32.posterior(X[:2].float()).mean.dtype == torch.float32


def test_bad_input():
    X = torch.rand(5, 1, dtype=DT)
    Y = torch.randn(5, 2, dtype=DT)
    for kw, match in [
        ({"q": 0.0}, "q"),
        ({"q": -1.0}, "q"),
        ({"q": float("nan")}, "q"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 1.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.5}, "delta"),
        ({"horizon": 0}, "horizon"),
        ({"horizon": 2.5}, "horizon"),
        ({"generator": "seed"}, "generator"),
        ({"pinv_method": "svd"}, "pinv_method"),
        ({"pinv_rtol": -1.0}, "pinv_rtol"),
    ]:
        with pytest.raises(ValueError, match=match):
            NystromMultiTaskGP(X, Y, **kw)
    with pytest.raises(ValueError, match="train_X"):
        NystromMultiTaskGP(X * float("nan"), Y)
    with pytest.raises(ValueError, match="epsilon"):
        theorem3_q(1.2, 0.1, 10)
    m = NystromMultiTaskGP(X, Y)
    with pytest.raises(ValueError, match="Y"):
        m.condition_on_observations(X[:1], Y[:1] * float("inf"))


def _grid_problem():
    grid = torch.linspace(0, 1, 41, dtype=DT).unsqueeze(-1)
    kernel = ICMKernel(_rbf(0.2), 2, task_covar=torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=DT))

    def f(X):
        return torch.cat([torch.sin(6 * X), torch.cos(5 * X)], dim=-1)

    return grid, kernel, f


def test_loop_runs_mt_bkb_by_swapping_the_model_class():
    """With every p = 1 the MT-BKB loop makes the same choices as MT-KB."""
    grid, kernel, f = _grid_problem()

    def run(factory):
        return run_bo_loop(
            observe=gaussian_observer(f, 0.1, torch.Generator().manual_seed(1)),
            initial_X=grid[[3, 30]],
            num_rounds=8,
            model_factory=factory,
            acquisition_factory=ucb_factory(1.0),
            optimizer=FiniteArmOptimizer(grid),
            scalarization_sampler=ScalarizationSampler(2, "linear"),
            true_f=f,
            generator=torch.Generator().manual_seed(2),
        )

    exact = run(lambda X, Y: ExactMultiTaskGP(X, Y, covar_module=kernel, noise=ETA))
    nys = run(lambda X, Y: NystromMultiTaskGP(X, Y, covar_module=kernel, noise=ETA, q=HUGE_Q))
    assert torch.equal(exact.X, nys.X)
    assert isinstance(nys.model, NystromMultiTaskGP)
    assert nys.model.train_targets.shape[0] == 10
    # and with the Theorem-3 q (sparse dictionaries) the loop runs and records regret
    sparse = run(lambda X, Y: NystromMultiTaskGP(X, Y, covar_module=kernel, generator=3))
    assert sparse.regrets.shape == (8,)


def test_a_fantasy_model_can_be_fantasized_again():
    """Fantasies carry the posterior's autograd graph; conditioning a fantasy model must not
    deep-copy them (a non-leaf tensor cannot be deep-copied)."""
    from botorch.sampling import SobolQMCNormalSampler

    g = torch.Generator().manual_seed(2)
    X, Y = torch.rand(10, 2, generator=g, dtype=DT), torch.randn(10, 2, generator=g, dtype=DT)
    model = NystromMultiTaskGP(X, Y, covar_module=_icm(2, g), generator=0)
    fm = model.fantasize(torch.rand(3, 2, 2, generator=g, dtype=DT),
                         SobolQMCNormalSampler(torch.Size([4]), seed=0))
    assert fm.train_targets.grad_fn is not None  # the case that failed
    Xf, Yf = torch.rand(4, 3, 1, 2, generator=g, dtype=DT), torch.randn(4, 3, 1, 2, dtype=DT)
    fm2 = fm.condition_on_observations(Xf, Yf)
    assert fm2.batch_shape == torch.Size([4, 3])
    Xs = torch.rand(4, 3, 5, 2, generator=g, dtype=DT)
    post = fm2.posterior(Xs)
    for f, b in [(0, 0), (3, 2)]:  # the Gaussian update of fm's posterior on (Xf, Yf)
        joint = fm.posterior(torch.cat([Xs[f, b], Xf[f, b]]).expand(4, 3, 6, 2))
        mean, cov = joint.mean[f, b], joint.mvn.covariance_matrix[f, b]
        S = cov[10:, 10:] + model.noise * torch.eye(2, dtype=DT)
        C = cov[:10, 10:]
        mu = mean[:5].reshape(-1) + C @ torch.linalg.solve(S, (Yf[f, b] - mean[5:]).reshape(-1))
        torch.testing.assert_close(post.mean[f, b].reshape(-1), mu, atol=1e-9, rtol=1e-8)
        var = (cov[:10, :10] - C @ torch.linalg.solve(S, C.T)).diagonal()
        torch.testing.assert_close(post.variance[f, b].reshape(-1), var, atol=1e-9, rtol=1e-8)
    assert fm.fantasize(torch.rand(4, 3, 1, 2, dtype=DT),
                        SobolQMCNormalSampler(torch.Size([2]), seed=1)).batch_shape == (2, 4, 3)


def test_class_signature_is_the_constructors() -> None:
    """The batched ``__new__`` does not hide the constructor's arguments: Ax reads them to
    decide which keyword arguments (e.g. ``input_transform``) the model takes."""
    import inspect

    params = inspect.signature(NystromMultiTaskGP).parameters
    assert list(params)[:2] == ["train_X", "train_Y"]
    assert {"input_transform", "outcome_transform", "generator", "epsilon"} <= set(params)
    model = NystromMultiTaskGP(torch.rand(4, 2, dtype=torch.float64),
                               torch.rand(4, 2, dtype=torch.float64))
    assert not hasattr(model, "__signature__")


@pytest.mark.parametrize("rows", [6, 12])
def test_set_train_data_restarts_the_dictionary_on_new_inputs(rows) -> None:
    """GPyTorch's ``set_train_data`` with new inputs (fewer or more rows): the dictionary
    state follows the new data (every row can enter it), so with q large enough to take every
    row the posterior is the exact one on the new data."""
    g = torch.Generator().manual_seed(5)
    X = torch.rand(8, 2, generator=g, dtype=torch.float64)
    Y = torch.stack([torch.sin(5 * X[:, 0]), torch.cos(4 * X[:, 1])], -1)
    model = NystromMultiTaskGP(X, Y, q=1e9, generator=torch.Generator().manual_seed(0))
    Xt = torch.rand(4, 2, generator=g, dtype=torch.float64)
    model.posterior(Xt)  # builds the solver cache
    X2 = torch.rand(rows, 2, generator=g, dtype=torch.float64)
    Y2 = torch.rand(rows, 2, generator=g, dtype=torch.float64)
    model.set_train_data(inputs=X2, targets=Y2, strict=False)
    assert model.previous_variances.shape == (rows,)
    assert model.dictionary_indices.tolist() == list(range(rows))
    exact = ExactMultiTaskGP(X2, Y2)
    torch.testing.assert_close(model.posterior(Xt).mean, exact.posterior(Xt).mean)
    torch.testing.assert_close(model.posterior(Xt).variance, exact.posterior(Xt).variance)
