"""``posterior(X, output_indices=...)`` and ``subset_output`` with outcome transforms."""

import pytest
import torch
from botorch.models.transforms import Log, Normalize, Standardize
from botorch.models.transforms.outcome import ChainedOutcomeTransform, OutcomeTransform
from gpytorch.kernels import MaternKernel, RBFKernel

from botorch_mtucb.kernels import IndependentTasksKernel
from botorch_mtucb.models import ExactMultiTaskGP, NystromMultiTaskGP, practical_multitask_gp

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
SCALE = torch.tensor([1.0, 5.0, 0.1], dtype=DT)
SHIFT = torch.tensor([3.0, -2.0, 7.0], dtype=DT)


def _data(batch=(), t=12):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(*batch, t, 2, generator=g, dtype=DT)
    f = torch.stack([torch.sin(6 * X[..., 0]), X[..., 1], torch.cos(5 * X.sum(-1))], -1)
    return X, (f + 0.1 * torch.randn(f.shape, generator=g, dtype=DT)) * SCALE + SHIFT


def _selected(post, idcs):
    """The full posterior's mean and joint covariance restricted to the tasks ``idcs``."""
    mean = post.mean
    q, n = mean.shape[-2:]
    cov = post.mvn.covariance_matrix.reshape(*mean.shape[:-2], q, n, q, n)
    cov = cov[..., idcs, :, :][..., idcs]
    return mean[..., idcs], cov.reshape(*mean.shape[:-2], q * len(idcs), q * len(idcs))


def _models():
    X, Y = _data()
    Xb, Yb = _data(batch=(2,))
    return {
        "practical": practical_multitask_gp(X, Y, BOUNDS, fit=False),
        "exact-standardize": ExactMultiTaskGP(X, Y, outcome_transform=Standardize(m=3),
                                              input_transform=Normalize(d=2)),
        "exact-batched": ExactMultiTaskGP(
            Xb, Yb, outcome_transform=Standardize(m=3, batch_shape=torch.Size([2]))
        ),
        "nystrom": NystromMultiTaskGP(X, Y, generator=0, outcome_transform=Standardize(m=3)),
        "nystrom-batched": NystromMultiTaskGP(
            Xb, Yb, generator=0, outcome_transform=Standardize(m=3, batch_shape=torch.Size([2]))
        ),
        "chained": ExactMultiTaskGP(X, Y, outcome_transform=ChainedOutcomeTransform(
            s1=Standardize(m=3), s2=Standardize(m=3))),
    }


@pytest.mark.parametrize("name", list(_models()))
@pytest.mark.parametrize("idcs", [[1], [2, 0], [0, 1, 2]])
def test_output_indices_with_an_outcome_transform(name, idcs):
    model = _models()[name]
    Xs = torch.rand(4, 1, 3, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    full = model.posterior(Xs)
    post = model.posterior(Xs, output_indices=idcs)
    mean, cov = _selected(full, idcs)
    if len(idcs) == 1:
        assert post.mean.shape == (*mean.shape[:-1], 1)
    torch.testing.assert_close(post.mean, mean, atol=1e-10, rtol=0)
    torch.testing.assert_close(post.mvn.covariance_matrix, cov, atol=1e-10, rtol=0)
    noisy = model.posterior(Xs, output_indices=idcs, observation_noise=True)
    nmean, ncov = _selected(model.posterior(Xs, observation_noise=True), idcs)
    torch.testing.assert_close(noisy.mvn.covariance_matrix, ncov, atol=1e-10, rtol=0)


class _Unsplittable(Standardize):
    """A per-output transform that does not implement ``subset_output``."""

    def subset_output(self, idcs):
        return OutcomeTransform.subset_output(self, idcs)


def test_output_indices_with_a_nonlinear_transform_and_refusal_without_subset_output():
    X, Y = _data()
    model = ExactMultiTaskGP(X, Y - Y.min() + 1.0, outcome_transform=Log())
    Xs = torch.rand(4, 1, 2, dtype=DT)
    torch.testing.assert_close(model.posterior(Xs, output_indices=[2, 0]).mean,
                               model.posterior(Xs).mean[..., [2, 0]])
    model = ExactMultiTaskGP(X, Y, outcome_transform=_Unsplittable(m=3))
    with pytest.raises(NotImplementedError, match="`output_indices`.*_Unsplittable"):
        model.posterior(X[:2], output_indices=[0])


def test_subset_output_recommendation_works_on_the_practical_model():
    X, Y = _data()
    model = practical_multitask_gp(X, Y, BOUNDS, fit=False)
    with pytest.raises(NotImplementedError, match=r"posterior\(X, output_indices=\.\.\.\)"):
        model.subset_output([0, 2])
    Xs = torch.rand(5, 1, 2, dtype=DT)
    post = model.posterior(Xs, output_indices=[0, 2])  # the recommended call
    torch.testing.assert_close(post.mean, model.posterior(Xs).mean[..., [0, 2]])


def test_subset_output_of_independent_tasks_subsets_standardize():
    X, Y = _data()
    kernel = IndependentTasksKernel([RBFKernel(), MaternKernel(), RBFKernel()]).to(DT)
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, outcome_transform=Standardize(m=3))
    sub = model.subset_output([2, 0])
    tf, stf = model.outcome_transform, sub.outcome_transform
    torch.testing.assert_close(stf.means, tf.means[..., [2, 0]])
    torch.testing.assert_close(stf.stdvs, tf.stdvs[..., [2, 0]])
    Xs = torch.rand(4, 2, 2, dtype=DT)
    mean, cov = _selected(model.posterior(Xs), [2, 0])
    torch.testing.assert_close(sub.posterior(Xs).mean, mean)
    torch.testing.assert_close(sub.posterior(Xs).mvn.covariance_matrix, cov)


@pytest.mark.parametrize("known_noise", [False, True])
def test_subset_output_after_conditioning_keeps_the_posterior(known_noise):
    """After conditioning, the targets are no longer the data Standardize was fitted on: the
    subset model keeps the transform's statistics (refitting them would change the scale of
    the kernel and η), so its posterior is the parent's on its tasks."""
    X, Y = _data()
    kernel = IndependentTasksKernel([RBFKernel(), MaternKernel(), RBFKernel()]).to(DT)
    Yvar = torch.full_like(Y, 0.05) if known_noise else None
    model = ExactMultiTaskGP(X, Y, covar_module=kernel, outcome_transform=Standardize(m=3),
                             train_Yvar=Yvar)
    g = torch.Generator().manual_seed(3)
    X_new = torch.rand(4, 2, generator=g, dtype=DT)
    Y_new = 10.0 + 3.0 * torch.randn(4, 3, generator=g, dtype=DT)  # far from the first data
    extra = {"noise": torch.full_like(Y_new, 0.05)} if known_noise else {}
    conditioned = model.condition_on_observations(X_new, Y_new, **extra)
    sub = conditioned.subset_output([2, 0])
    Xs = torch.rand(4, 2, 2, generator=g, dtype=DT)
    mean, cov = _selected(conditioned.posterior(Xs), [2, 0])
    torch.testing.assert_close(sub.posterior(Xs).mean, mean)
    torch.testing.assert_close(sub.posterior(Xs).mvn.covariance_matrix, cov)
    practical = practical_multitask_gp(X, Y, BOUNDS, independent=True)
    conditioned = practical.condition_on_observations(X_new, Y_new)
    mean, cov = _selected(conditioned.posterior(Xs), [1])
    torch.testing.assert_close(conditioned.subset_output([1]).posterior(Xs).mean, mean)
