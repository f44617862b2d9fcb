"""Multi-task kernels with a batch of hyperparameters (``batch_shape``): one ``B`` and one
data kernel per member, checked against each member's unbatched kernel and dense algebra."""

import pickle

import pytest
import torch
from gpytorch.kernels import RBFKernel
from gpytorch.priors import LKJCovariancePrior, SmoothedBoxPrior

from botorch_mtucb.kernels import ICMKernel, TaskSimilarityKernel, kron_interleaved

DT = torch.float64
BATCH = torch.Size([3])


def _batched_icm(rank=2, n=2, d=2):
    g = torch.Generator().manual_seed(0)
    kernel = ICMKernel(RBFKernel(ard_num_dims=d, batch_shape=BATCH), num_tasks=n, rank=rank,
                       batch_shape=BATCH).to(DT)
    with torch.no_grad():
        kernel.covar_factor.add_(torch.randn(kernel.covar_factor.shape, generator=g, dtype=DT))
        kernel.raw_var.add_(torch.randn(kernel.raw_var.shape, generator=g, dtype=DT))
        kernel.data_covar_module.raw_lengthscale.add_(
            torch.randn(kernel.data_covar_module.raw_lengthscale.shape, generator=g, dtype=DT)
        )
    return kernel


def _member(kernel, i):
    """Member ``i`` as an unbatched ICMKernel with the same hyperparameters."""
    d = kernel.data_covar_module.raw_lengthscale.shape[-1]
    one = ICMKernel(RBFKernel(ard_num_dims=d), num_tasks=kernel.num_tasks,
                    rank=kernel.rank).to(DT)
    one.load_state_dict({k: v[i] if v.dim() and v.shape[0] == BATCH[0] else v
                         for k, v in kernel.state_dict().items()})
    return one


def test_icm_kernel_parameters_have_the_batch_shape():
    kernel = ICMKernel(RBFKernel(batch_shape=BATCH), num_tasks=3, rank=2, batch_shape=BATCH)
    assert kernel.batch_shape == BATCH
    assert kernel.covar_factor.shape == (3, 3, 2) and kernel.raw_var.shape == (3, 3)
    assert kernel.task_covar_matrix.shape == (3, 3, 3)
    # every member starts from the same (full-rank) factor
    torch.testing.assert_close(kernel.covar_factor[1], kernel.covar_factor[0])


@pytest.mark.parametrize("batched_x", [True, False])
def test_batched_icm_kernel_equals_each_members_kernel(batched_x):
    kernel = _batched_icm()
    g = torch.Generator().manual_seed(1)
    X = torch.rand(3, 4, 2, generator=g, dtype=DT) if batched_x else torch.rand(
        4, 2, generator=g, dtype=DT)
    full = kernel(X).to_dense()
    diag = kernel(X, diag=True)
    assert full.shape == (3, 8, 8) and diag.shape == (3, 8)
    for i in range(3):
        one = _member(kernel, i)
        Xi = X[i] if batched_x else X
        B = kernel.task_covar_matrix[i]
        torch.testing.assert_close(one.task_covar_matrix, B)
        K = one.data_covar_module(Xi).to_dense()
        torch.testing.assert_close(full[i], kron_interleaved(K, B))
        torch.testing.assert_close(full[i], one(Xi).to_dense())
        torch.testing.assert_close(diag[i], torch.diagonal(full[i]))
    # extra leading test dimensions broadcast against the members
    X5 = torch.rand(5, 3, 4, 2, generator=g, dtype=DT)
    assert kernel(X5).to_dense().shape == (5, 3, 8, 8)
    assert kernel(X5, diag=True).shape == (5, 3, 8)


def test_batched_icm_likelihood_operator_matches_dense_per_member():
    """``K ⊗ B + ηI`` with one ``B`` and one η per member: the ICM inverse quadratic form and
    log determinant (used by ``ExactMarginalLogLikelihood``) against dense algebra."""
    kernel = _batched_icm()
    g = torch.Generator().manual_seed(2)
    X = torch.rand(3, 5, 2, generator=g, dtype=DT)
    eta = torch.tensor([[0.05], [0.1], [0.3]], dtype=DT)  # batch x 1
    r = torch.randn(3, 10, 1, generator=g, dtype=DT)
    op = kernel.forward(X, X).add_diagonal(eta)
    assert type(op).__name__ == "ICMAddedDiagLinearOperator"
    quad, logdet = op.inv_quad_logdet(r, logdet=True)
    for i in range(3):
        S = kernel(X[i]).to_dense()[i] + eta[i] * torch.eye(10, dtype=DT)
        torch.testing.assert_close(quad[i], (r[i].T @ torch.linalg.solve(S, r[i])).squeeze())
        torch.testing.assert_close(logdet[i], torch.logdet(S))


def test_task_similarity_kernel_with_a_learnable_omega_per_member():
    kernel = TaskSimilarityKernel(RBFKernel(), num_tasks=2, omega=0.3, learn_omega=True,
                                  batch_shape=BATCH)
    assert kernel.omega.shape == BATCH
    torch.testing.assert_close(kernel.omega, torch.full(BATCH, 0.3), rtol=1e-5, atol=1e-6)
    kernel.omega = torch.tensor([0.2, 0.5, 0.9])
    B = kernel.task_covar_matrix
    assert B.shape == (3, 2, 2)
    for i, w in enumerate((0.2, 0.5, 0.9)):
        ref = w * torch.eye(2) + (1 - w) * torch.ones(2, 2) / 2
        torch.testing.assert_close(B[i], ref.to(B), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="omega"):
        kernel.omega = torch.tensor([0.2, 1.5, 0.9])


def test_icm_kernel_with_a_task_prior_pickles():
    prior = LKJCovariancePrior(2, 0.5, SmoothedBoxPrior(0.1, 2.0))
    kernel = ICMKernel(RBFKernel(), num_tasks=2, task_covar_prior=prior)
    copy = pickle.loads(pickle.dumps(kernel))
    torch.testing.assert_close(copy.task_covar_matrix, kernel.task_covar_matrix)
    (name, module, _, closure, _), = copy.named_priors()
    torch.testing.assert_close(closure(module), kernel.task_covar_matrix)
