"""The lazy joint covariance ``K_qq ⊗ B − R Rᵀ`` of an ICM posterior at large ``q·n``.

Reference: the same model's dense joint covariance (``LAZY_JOINT_SIZE`` raised above ``q·n``),
itself tested against brute force in ``test_exact.py``; for a ``q`` too large to form densely,
the per-point blocks of ``task_posterior``.
"""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models.transforms import Normalize, Standardize
from linear_operator.operators import DenseLinearOperator

import botorch_mtucb.multitask.solver_cache as solver_cache
import botorch_mtucb.multitask.solvers.exact as exact_solvers
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP, practical_multitask_gp
from botorch_mtucb.multitask.solvers.exact import DenseSolver, ICMCholeskySolver, ICMSolver
from botorch_mtucb.multitask.solvers.nystrom_icm import ICMNystromSolver
from botorch_mtucb.multitask.utils import KroneckerLowRankCovariance

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _data(batch=(), t=12, n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(*batch, t, 2, generator=g, dtype=DT)
    f = torch.stack([torch.sin(6 * X[..., 0]), X[..., 1], torch.cos(5 * X.sum(-1))], -1)[..., :n]
    return X, 3.0 * f + 0.1 * torch.randn(f.shape, generator=g, dtype=DT) + 1.0


def _model(kind: str):
    if kind == "practical":
        return practical_multitask_gp(*_data(), BOUNDS, fit=False)
    if kind == "batched":
        X, Y = _data(batch=(2,))
        return ExactMultiTaskGP(X, Y, outcome_transform=Standardize(
            m=3, batch_shape=torch.Size([2])))
    if kind == "conditioned":  # an appended Schur block (ICMSolver.extend)
        model = ExactMultiTaskGP(*_data(), input_transform=Normalize(d=2),
                                 outcome_transform=Standardize(m=3))
        model.posterior(torch.rand(1, 2, dtype=DT))  # the solver exists before conditioning
        Xn, Yn = _data(t=3, seed=5)
        return model.condition_on_observations(Xn, Yn)
    if kind in ("independent", "per_task"):  # several separable terms: the dense solver
        X, Y = _data()
        return practical_multitask_gp(X, Y, BOUNDS, independent=kind == "independent",
                                      per_task=kind == "per_task", fit=False)
    if kind == "known_noise":
        X, Y = _data()
        return ExactMultiTaskGP(X, Y, train_Yvar=torch.full_like(Y, 0.04),
                                outcome_transform=Standardize(m=3))
    if kind == "nystrom":  # MT-BKB: the same structure with the Nyström embedding
        return NystromMultiTaskGP(*_data(t=20), generator=0, outcome_transform=Standardize(m=3))
    return ExactMultiTaskGP(*_data(n=2), outcome_transform=Standardize(m=2))


def _cholesky(num_tasks: int, num_points: int) -> str:
    return "cholesky"


def _both(model, X, monkeypatch, **kwargs):
    """The dense and the lazy posterior of ``model`` at ``X``."""
    with torch.no_grad():
        monkeypatch.setattr(solver_cache, "LAZY_JOINT_SIZE", 10**9)
        dense = model.posterior(X, **kwargs)
        monkeypatch.setattr(solver_cache, "LAZY_JOINT_SIZE", 0)
        lazy = model.posterior(X, **kwargs)
    return dense, lazy


@pytest.mark.parametrize("kind", ["practical", "batched", "conditioned", "cholesky",
                                  "nystrom", "independent", "per_task", "known_noise"])
@pytest.mark.parametrize("options", [
    {},
    {"output_indices": [1]},
    {"output_indices": [1, 0]},
    {"observation_noise": True},
])
def test_lazy_joint_equals_the_dense_joint(kind, options, monkeypatch):
    if kind == "cholesky":  # the n-Cholesky ICM solver instead of the eigen one
        monkeypatch.setattr(exact_solvers, "POSTERIOR_EIGH_MAX_POINTS", 0)
        monkeypatch.setattr(exact_solvers, "icm_likelihood_method", _cholesky)
    model = _model(kind)
    X = torch.rand(2, 5, 2, generator=torch.Generator().manual_seed(3), dtype=DT)
    dense, lazy = _both(model, X, monkeypatch, **options)
    expected = {"cholesky": ICMCholeskySolver, "nystrom": ICMNystromSolver,
                "independent": DenseSolver, "per_task": DenseSolver,
                "known_noise": DenseSolver}.get(kind, ICMSolver)
    assert type(model.solver()) is expected
    if kind == "conditioned":
        assert model.solver().block_size == 3
    with torch.no_grad():  # the lazy route was taken (LAZY_JOINT_SIZE is 0 here)
        assert isinstance(model._predict_joint(model.transform_inputs(X))[1],
                          KroneckerLowRankCovariance)
    torch.testing.assert_close(lazy.mean, dense.mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(lazy.variance, dense.variance, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(lazy.mvn.covariance_matrix, dense.mvn.covariance_matrix,
                               rtol=1e-10, atol=1e-12)
    base = torch.randn(4, *dense.base_sample_shape, generator=torch.Generator().manual_seed(4),
                       dtype=DT)
    torch.testing.assert_close(lazy.rsample_from_base_samples(torch.Size([4]), base),
                               dense.rsample_from_base_samples(torch.Size([4]), base),
                               rtol=1e-6, atol=1e-8)


def test_lazy_joint_with_noise_tensor_and_posterior_transform(monkeypatch):
    model = _model("practical")
    X = torch.rand(6, 2, generator=torch.Generator().manual_seed(6), dtype=DT)
    noise = torch.rand(6, 3, generator=torch.Generator().manual_seed(7), dtype=DT)
    dense, lazy = _both(model, X, monkeypatch, observation_noise=noise)
    torch.testing.assert_close(lazy.mvn.covariance_matrix, dense.mvn.covariance_matrix,
                               rtol=1e-10, atol=1e-12)
    tf = ScalarizedPosteriorTransform(torch.tensor([0.5, -1.0, 2.0], dtype=DT))
    dense, lazy = _both(model, X, monkeypatch, posterior_transform=tf)
    torch.testing.assert_close(lazy.mean, dense.mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(lazy.mvn.covariance_matrix, dense.mvn.covariance_matrix,
                               rtol=1e-10, atol=1e-12)


def test_large_q_posterior_stays_lazy_and_matches_the_task_blocks():
    """q·n = 60,000: the dense joint would take 29 GB; the lazy one gives the mean and the
    variances, equal to the per-point blocks of ``task_posterior``."""
    model = practical_multitask_gp(*_data(), BOUNDS, fit=False)
    X = torch.rand(20_000, 2, generator=torch.Generator().manual_seed(8), dtype=DT)
    with torch.no_grad():
        post = model.posterior(X)
        mean, blocks = model.task_posterior(X)
        assert post.mean.shape == (20_000, 3)
        torch.testing.assert_close(post.mean, mean, rtol=0, atol=1e-12)
        torch.testing.assert_close(post.variance, blocks.diagonal(dim1=-2, dim2=-1),
                                   rtol=1e-9, atol=1e-12)


def test_kronecker_low_rank_covariance_against_its_definition():
    """``from_directions``: ``Σ_i (ξ_i K − A_i A_iᵀ) ⊗ u_i u_iᵀ`` entry by entry."""
    g = torch.Generator().manual_seed(9)
    q, n, r = 4, 3, 2
    G = torch.randn(q, q, generator=g, dtype=DT)
    K = G @ G.T
    U = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=DT))[0]
    xi = torch.rand(n, generator=g, dtype=DT) + 0.5
    A = torch.randn(n, q, r, generator=g, dtype=DT)
    cov = KroneckerLowRankCovariance.from_directions(DenseLinearOperator(K), U, xi, A)
    expected = sum(
        torch.kron(xi[i] * K - A[i] @ A[i].T, torch.outer(U[:, i], U[:, i])) for i in range(n)
    )
    torch.testing.assert_close(cov.operator().to_dense(), expected, rtol=1e-12, atol=1e-12)
    keep = torch.tensor([2, 0])
    flat = (torch.arange(q)[:, None] * n + keep[None, :]).reshape(-1)
    torch.testing.assert_close(cov.subset(keep).operator().to_dense(),
                               expected[flat][:, flat], rtol=1e-12, atol=1e-12)
