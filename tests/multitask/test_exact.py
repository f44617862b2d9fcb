"""ExactMultiTaskGP against the brute-force nt x nt formula, BoTorch and Lemma 4."""

import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError
from botorch.fit import fit_gpytorch_mll
from botorch.models import KroneckerMultiTaskGP
from botorch.models.transforms import Normalize, Standardize
from gpytorch.kernels import MaternKernel, RBFKernel
from gpytorch.means import ConstantMean
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.kernels import (
    ICMKernel,
    IndependentTasksKernel,
    SumOfSeparableKernel,
    TaskSimilarityKernel,
)
from botorch_mtucb.models import ExactMultiTaskGP
from botorch_mtucb.settings import check_test_inputs

DT = torch.float64
ETA = 0.1


def _rbf(ls: float) -> RBFKernel:
    k = RBFKernel().to(DT)
    k.lengthscale = ls
    return k


def _psd(n: int, g: torch.Generator) -> torch.Tensor:
    A = torch.randn(n, n, generator=g, dtype=DT)
    return A.T @ A / n


def _kernels(n: int, g: torch.Generator) -> dict:
    k1, k2 = _rbf(0.3), MaternKernel(nu=2.5).to(DT)
    return {
        "icm": ICMKernel(k1, n, task_covar=_psd(n, g)),
        "similarity": TaskSimilarityKernel(k1, n, omega=0.4),
        "independent_shared": IndependentTasksKernel(k1, num_tasks=n),
        "independent": IndependentTasksKernel([k1 if i % 2 else k2 for i in range(n)]),
        "sum": SumOfSeparableKernel(
            [ICMKernel(k1, n, task_covar=_psd(n, g)), ICMKernel(k2, n, task_covar=_psd(n, g))]
        ),
    }


def brute_force(kernel, X, Y, Xs, eta=ETA):
    """DESIGN.md / paper 000 eq. (1) with the nt x nt solve (interleaved order)."""
    nt = X.shape[0] * Y.shape[1]
    G = kernel(X).to_dense() + eta * torch.eye(nt, dtype=DT)
    Gx = kernel(Xs, X).to_dense()
    mean = (Gx @ torch.linalg.solve(G, Y.reshape(-1, 1))).reshape(*Xs.shape[:-1], Y.shape[1])
    cov = kernel(Xs).to_dense() - Gx @ torch.linalg.solve(G, Gx.transpose(-1, -2))
    return mean, cov


@pytest.mark.parametrize("name", ["icm", "similarity", "independent_shared", "independent", "sum"])
def test_posterior_matches_brute_force(name):
    g = torch.Generator().manual_seed(0)
    n = 3
    kernel = _kernels(n, g)[name]
    X = torch.rand(12, 2, generator=g, dtype=DT)
    Y = torch.randn(12, n, generator=g, dtype=DT)
    Xs = torch.rand(4, 3, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, noise=ETA)
    expect_fast = name in ("icm", "similarity", "independent_shared")
    assert model.uses_icm_fast_path == expect_fast
    post = model.posterior(Xs)
    mean, cov = brute_force(kernel, X, Y, Xs)
    assert post.mean.shape == (4, 3, n)
    assert post.mvn.covariance_matrix.shape == (4, 3 * n, 3 * n)
    assert torch.allclose(post.mean, mean, atol=1e-10)
    assert torch.allclose(post.mvn.covariance_matrix, cov, atol=1e-10)
    # per-point task blocks
    tmean, blocks = model.task_posterior(Xs)
    ref_blocks = cov.reshape(4, 3, n, 3, n).diagonal(dim1=1, dim2=3).permute(0, 3, 1, 2)
    assert torch.allclose(tmean, mean, atol=1e-10)
    assert torch.allclose(blocks, ref_blocks, atol=1e-10)
    # information gain: ½ log det(I + G/η)
    G = kernel(X).to_dense()
    ig = 0.5 * torch.logdet(torch.eye(G.shape[0], dtype=DT) + G / ETA)
    assert torch.allclose(model.information_gain(), ig, atol=1e-9)


def test_icm_fast_path_equals_dense_path():
    """Same Γ = k·B through the ICM solver and through the generic (dense) solver."""
    g = torch.Generator().manual_seed(1)
    n = 4
    k, B = _rbf(0.25), _psd(n, g)
    fast = ICMKernel(k, n, task_covar=B)
    # two terms sharing one B but distinct kernel objects force the dense path
    dense = SumOfSeparableKernel(
        [ICMKernel(k, n, task_covar=0.5 * B), ICMKernel(_rbf(0.25), n, task_covar=0.5 * B)]
    )
    X = torch.rand(30, 1, generator=g, dtype=DT)
    Y = torch.randn(30, n, generator=g, dtype=DT)
    Xs = torch.rand(7, 2, 1, generator=g, dtype=DT)
    mf = ExactMultiTaskGP(X, Y, covar_module=fast)
    md = ExactMultiTaskGP(X, Y, covar_module=dense)
    assert mf.uses_icm_fast_path and not md.uses_icm_fast_path
    pf, pd = mf.posterior(Xs), md.posterior(Xs)
    assert torch.allclose(pf.mean, pd.mean, atol=1e-8)
    assert torch.allclose(pf.mvn.covariance_matrix, pd.mvn.covariance_matrix, atol=1e-8)
    assert torch.allclose(mf.information_gain(), md.information_gain(), atol=1e-8)


def test_matches_botorch_kronecker_multitask_gp():
    """Same hyperparameters as BoTorch's KroneckerMultiTaskGP; compare to its GPyTorch predictive.

    BoTorch's ``posterior()`` of that model keeps only the diagonal of the task covariance,
    so the full covariance is compared with GPyTorch's joint predictive ``model(X)``.
    """
    g = torch.Generator().manual_seed(2)
    n = 3
    X = torch.rand(15, 2, generator=g, dtype=DT)
    Y = torch.randn(15, n, generator=g, dtype=DT)
    Xs = torch.rand(5, 2, generator=g, dtype=DT)
    B = _psd(n, g) + 0.05 * torch.eye(n, dtype=DT)
    ls = torch.tensor([[0.3, 0.5]], dtype=DT)

    ref = KroneckerMultiTaskGP(X, Y)
    with torch.no_grad():
        for mean in ref.mean_module.base_means:
            mean.constant.zero_()
        ref.likelihood.task_noises = torch.full((n,), 1e-4, dtype=DT)
        ref.likelihood.noise = torch.tensor([ETA - 1e-4], dtype=DT)
        tk = ref.covar_module.task_covar_module
        tk.covar_factor.copy_(torch.linalg.cholesky(B - 1e-6 * torch.eye(n, dtype=DT)))
        tk.var = torch.full((n,), 1e-6, dtype=DT)
        ref.covar_module.data_covar_module.lengthscale = ls
    ref.eval()
    assert torch.allclose(ref.covar_module.task_covar_module.covar_matrix.to_dense(), B)

    k = RBFKernel(ard_num_dims=2).to(DT)
    k.lengthscale = ls
    ours = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(k, n, task_covar=B), noise=ETA)
    post = ours.posterior(Xs)
    with torch.no_grad():
        joint = ref(Xs)  # GPyTorch's joint predictive, full task block
        ref_post = ref.posterior(Xs)
    assert torch.allclose(post.mean, joint.mean, atol=1e-8)
    assert torch.allclose(post.mean, ref_post.mean, atol=1e-8)
    assert torch.allclose(post.mvn.covariance_matrix, joint.covariance_matrix, atol=1e-8)
    # the cross-task terms are what BoTorch's posterior() drops: they are not zero here
    ours_blocks = ours.task_posterior(Xs.unsqueeze(-2))[1]
    assert ours_blocks[..., 0, 1].abs().max() > 1e-3


def test_lemma4_sequential_log_det_identity():
    """Σ_s log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)) = log det(I_{nt} + η⁻¹ G_t) (paper 000, Lemma 4)."""
    g = torch.Generator().manual_seed(3)
    n = 3
    for kernel in _kernels(n, g).values():
        X = torch.rand(10, 2, generator=g, dtype=DT)
        Y = torch.randn(10, n, generator=g, dtype=DT)
        eye = torch.eye(n, dtype=DT)
        total = torch.logdet(eye + kernel(X[:1]).to_dense() / ETA)  # Γ_0 = prior
        model = ExactMultiTaskGP(X[:1], Y[:1], covar_module=kernel, noise=ETA)
        for s in range(1, 10):
            block = model.task_posterior(X[s : s + 1].unsqueeze(0))[1].reshape(n, n)
            total = total + torch.logdet(eye + block / ETA)
            model = model.condition_on_observations(X[s : s + 1], Y[s : s + 1])
        assert torch.allclose(total, 2 * model.information_gain(), atol=1e-8)


@pytest.mark.parametrize("name", ["icm", "sum"])
def test_condition_on_observations_matches_scratch(name):
    g = torch.Generator().manual_seed(4)
    n = 2
    kernel = _kernels(n, g)[name]
    X = torch.rand(8, 2, generator=g, dtype=DT)
    Y = torch.randn(8, n, generator=g, dtype=DT)
    Xn, Yn = torch.rand(3, 2, generator=g, dtype=DT), torch.randn(3, n, generator=g, dtype=DT)
    Xs = torch.rand(6, 1, 2, generator=g, dtype=DT)
    X0, Y0 = X.clone(), Y.clone()
    model = ExactMultiTaskGP(X, Y, covar_module=kernel)
    model.posterior(Xs)  # build the cache that conditioning reuses
    cond = model.condition_on_observations(Xn, Yn)
    scratch = ExactMultiTaskGP(torch.cat([X, Xn]), torch.cat([Y, Yn]), covar_module=kernel)
    pc, ps = cond.posterior(Xs), scratch.posterior(Xs)
    assert torch.allclose(pc.mean, ps.mean, atol=1e-10)
    assert torch.allclose(pc.mvn.covariance_matrix, ps.mvn.covariance_matrix, atol=1e-10)
    assert torch.allclose(cond.information_gain(), scratch.information_gain(), atol=1e-10)
    # the old model and the caller's tensors are untouched
    assert model.train_inputs[0].shape[0] == 8
    assert torch.equal(X, X0) and torch.equal(Y, Y0)


def test_transforms_and_posterior_options():
    g = torch.Generator().manual_seed(5)
    n = 2
    X = 4 * torch.rand(10, 2, generator=g, dtype=DT) + 1
    Y = 5 * torch.randn(10, n, generator=g, dtype=DT) + 3
    k = RBFKernel(ard_num_dims=2).to(DT)
    k.lengthscale = 0.4
    B = torch.tensor([[1.0, 0.6], [0.6, 1.5]], dtype=DT)
    model = ExactMultiTaskGP(
        X,
        Y,
        covar_module=ICMKernel(k, n, task_covar=B),
        input_transform=Normalize(d=2),
        outcome_transform=Standardize(m=n),
    )
    # reference: the brute-force formula on transformed data, then untransformed
    lo, hi = X.min(0).values, X.max(0).values
    mu_y, sd_y = Y.mean(0), Y.std(0)
    Xt, Yt = (X - lo) / (hi - lo), (Y - mu_y) / sd_y
    Xs = 4 * torch.rand(3, 1, 2, generator=g, dtype=DT) + 1
    mean, cov = brute_force(ICMKernel(k, n, task_covar=B), Xt, Yt, (Xs - lo) / (hi - lo))
    post = model.posterior(Xs)
    assert torch.allclose(post.mean, mean * sd_y + mu_y, atol=1e-8)
    scale = torch.outer(sd_y, sd_y)
    assert torch.allclose(post.mvn.covariance_matrix, cov * scale, atol=1e-8)
    tmean, blocks = model.task_posterior(Xs)
    assert torch.allclose(tmean, post.mean, atol=1e-8)
    assert torch.allclose(blocks.squeeze(-3), post.mvn.covariance_matrix, atol=1e-8)
    # observation noise adds η (transformed scale) to the diagonal
    noisy = model.posterior(Xs, observation_noise=True).mvn.covariance_matrix
    assert torch.allclose(noisy - post.mvn.covariance_matrix, 0.1 * torch.diag(sd_y**2), atol=1e-8)

    plain = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(k, n, task_covar=B))
    sub = plain.posterior(Xs, output_indices=[1])
    full = plain.posterior(Xs)
    assert torch.allclose(sub.mean, full.mean[..., [1]])
    assert torch.allclose(sub.variance, full.variance[..., [1]])


def test_mean_module_and_fitting():
    g = torch.Generator().manual_seed(6)
    X = torch.rand(20, 1, generator=g, dtype=DT)
    f = torch.sin(6 * X)
    Y = torch.cat([f, 0.8 * f + 0.1], dim=-1) + 0.05 * torch.randn(20, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y, mean_module=ConstantMean(), learn_noise=True)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    before = mll(model(X), model.train_targets).item()
    fit_gpytorch_mll(mll)
    model.train()
    after = mll(model(X), model.train_targets).item()
    assert after > before
    model.eval()
    B = model.covar_module.task_covar_matrix
    corr = B[0, 1] / (B[0, 0] * B[1, 1]).sqrt()
    assert corr > 0.8  # the two tasks are strongly correlated
    # the fitted model's posterior still equals the brute-force formula with its
    # hyperparameters and its constant prior mean
    Xs = torch.rand(5, 1, 1, generator=g, dtype=DT)
    with torch.no_grad():
        m0 = model.mean_module(X)
        mean, cov = brute_force(model.covar_module, X, Y - m0, Xs, eta=model.noise.item())
        post = model.posterior(Xs)
        assert torch.allclose(post.mean, mean + model.mean_module(Xs), atol=1e-7)
        assert torch.allclose(post.mvn.covariance_matrix, cov, atol=1e-7)


def test_gradients_wrt_inputs():
    g = torch.Generator().manual_seed(7)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    Y = torch.randn(10, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y, covar_module=ICMKernel(_rbf(0.3), 2, task_covar=_psd(2, g)))
    Xs = torch.rand(3, 1, 2, generator=g, dtype=DT, requires_grad=True)

    def f(x):
        p = model.posterior(x)
        return p.mean.sum() + p.mvn.covariance_matrix.sum()

    assert torch.autograd.gradcheck(f, (Xs,))


def test_default_kernel_and_dtype():
    g = torch.Generator().manual_seed(8)
    X32 = torch.rand(6, 3, generator=g)
    Y32 = torch.randn(6, 2, generator=g)
    model = ExactMultiTaskGP(X32, Y32)
    assert isinstance(model.covar_module, ICMKernel)
    assert model.posterior(X32[:2].unsqueeze(1)).mean.dtype == torch.float32
    assert model.num_outputs == 2 and model.batch_shape == torch.Size()


def test_bad_input():
    X = torch.rand(5, 2, dtype=DT)
    Y = torch.randn(5, 2, dtype=DT)
    k = ICMKernel(RBFKernel(), 2, task_covar=torch.eye(2, dtype=DT))
    with pytest.raises(BotorchTensorDimensionError, match="same number of rows"):
        ExactMultiTaskGP(X, Y[:4], covar_module=k)
    with pytest.raises(BotorchTensorDimensionError, match="train_Y"):
        ExactMultiTaskGP(X, Y[:, 0], covar_module=k)
    Xnan = X.clone()
    Xnan[0, 0] = float("nan")
    with pytest.raises(ValueError, match="train_X.*NaN"):
        ExactMultiTaskGP(Xnan, Y, covar_module=k)
    Yinf = Y.clone()
    Yinf[1, 1] = float("inf")
    with pytest.raises(ValueError, match="train_Y.*NaN or infinite"):
        ExactMultiTaskGP(X, Yinf, covar_module=k)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="noise"):
            ExactMultiTaskGP(X, Y, covar_module=k, noise=bad)
    with pytest.raises(ValueError, match="num_tasks"):
        ExactMultiTaskGP(X, torch.randn(5, 3, dtype=DT), covar_module=k)
    with pytest.raises(ValueError, match="covar_module"):
        ExactMultiTaskGP(X, Y, covar_module=RBFKernel())
    model = ExactMultiTaskGP(X, Y, covar_module=k)
    with pytest.raises(BotorchTensorDimensionError, match="X"):
        model.posterior(torch.rand(3, 1, 3, dtype=DT))
    with pytest.raises(ValueError, match="X.*NaN"), check_test_inputs(True):
        model.posterior(torch.full((3, 1, 2), float("nan"), dtype=DT))
    with pytest.raises(ValueError, match="X.*NaN"), check_test_inputs(True):
        model.task_posterior(torch.full((3, 1, 2), float("nan"), dtype=DT))
    with pytest.raises(BotorchTensorDimensionError, match="Y"):
        model.condition_on_observations(torch.rand(2, 2, dtype=DT), torch.rand(2, 3, dtype=DT))
