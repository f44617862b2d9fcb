"""recommend_pareto_set: the evaluated points whose posterior means are non-dominated."""

from __future__ import annotations

import pytest
import torch
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.model import Model
from botorch.models.transforms import Normalize
from botorch.posteriors import Posterior
from botorch.posteriors.torch import TorchPosterior
from botorch.utils.multi_objective.pareto import is_non_dominated

from botorch_mtucb.acquisition.recommend import ParetoSetRecommendation, recommend_pareto_set
from botorch_mtucb.models import ExactMultiTaskGP

DTYPE = torch.float64


def brute_force_front(mean: torch.Tensor, signs: torch.Tensor, z=None) -> list[int]:
    """Indices i of rows whose (sign-corrected) mean no other row dominates; equal rows
    kept once (first); with z, only rows weakly above s ⊙ z. Plain Python loops."""
    Y = (mean * signs).tolist()
    zs = None if z is None else (torch.as_tensor(z, dtype=DTYPE) * signs).tolist()
    keep = []
    for i, yi in enumerate(Y):
        dominated = any(
            all(a >= b for a, b in zip(yj, yi, strict=True))
            and any(a > b for a, b in zip(yj, yi, strict=True))
            for yj in Y
        )
        duplicate = any(Y[j] == yi for j in range(i))
        above = zs is None or all(a >= b for a, b in zip(yi, zs, strict=True))
        if not dominated and not duplicate and above:
            keep.append(i)
    return keep


def joint_mean(model: Model, X: torch.Tensor) -> torch.Tensor:
    """``N x n`` means from one joint posterior (a different path from the point-wise one)."""
    with torch.no_grad():
        return model.posterior(X).mean


def make_models(n: int, seed: int) -> list[Model]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(12, 3, dtype=DTYPE, generator=g)
    Y = torch.randn(12, n, dtype=DTYPE, generator=g)
    stgp = SingleTaskGP(X, Y, train_Yvar=torch.full_like(Y, 0.05))
    stgp.covar_module.lengthscale = 0.4
    exact = ExactMultiTaskGP(X, Y, noise=0.05)
    return [stgp, exact]


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_brute_force(n: int, seed: int) -> None:
    g = torch.Generator().manual_seed(100 + seed)
    X = torch.rand(40, 3, dtype=DTYPE, generator=g)
    for model in make_models(n, seed):
        mean = joint_mean(model, X)
        expected = brute_force_front(mean, torch.ones(n, dtype=DTYPE))
        rec = recommend_pareto_set(model, X, return_details=True)
        assert rec.indices.tolist() == expected
        assert torch.equal(rec.X, X[expected])
        torch.testing.assert_close(rec.mean, mean[expected])
        assert torch.equal(recommend_pareto_set(model, X), X[expected])
        assert 1 <= len(expected) < X.shape[0]  # a real filter, not everything


@pytest.mark.parametrize("minimize", [[True, False, False], [False, True, True],
                                      [True, True, True]])
def test_minimize_negates(minimize: list[bool]) -> None:
    g = torch.Generator().manual_seed(7)
    X = torch.rand(40, 3, dtype=DTYPE, generator=g)
    for model in make_models(3, 3):
        mean = joint_mean(model, X)
        signs = 1.0 - 2.0 * torch.tensor(minimize, dtype=DTYPE)
        expected = brute_force_front(mean, signs)
        rec = recommend_pareto_set(model, X, minimize=minimize, return_details=True)
        assert rec.indices.tolist() == expected
        as_tensor = recommend_pareto_set(model, X, minimize=torch.tensor(minimize))
        assert torch.equal(as_tensor, X[expected])
        assert expected != brute_force_front(mean, torch.ones(3, dtype=DTYPE))
        torch.testing.assert_close(rec.mean, mean[expected])  # original units, no sign


def test_ref_point_filters() -> None:
    g = torch.Generator().manual_seed(11)
    X = torch.rand(40, 3, dtype=DTYPE, generator=g)
    model = make_models(2, 5)[1]
    mean = joint_mean(model, X)
    z = mean.median(dim=0).values
    minimize = [False, True]
    signs = torch.tensor([1.0, -1.0], dtype=DTYPE)
    expected = brute_force_front(mean, signs, z)
    got = recommend_pareto_set(model, X, minimize=minimize, ref_point=z, return_details=True)
    assert got.indices.tolist() == expected
    everything = brute_force_front(mean, signs)
    assert set(expected) < set(everything)  # the filter removed something


def test_ref_point_as_a_list_is_read_in_float64() -> None:
    """A list z equal to a point's mean keeps it (weak dominance), as the float64 tensor does;
    read in float32, 0.1 would become 0.10000000149 and drop the point."""
    from botorch.models.deterministic import GenericDeterministicModel

    model = GenericDeterministicModel(lambda X: torch.cat([X, 1 - X], -1), num_outputs=2)
    X = torch.tensor([[0.1], [0.5]], dtype=DTYPE)
    from_list = recommend_pareto_set(model, X, ref_point=[0.1, 0.0])
    from_tensor = recommend_pareto_set(model, X, ref_point=torch.tensor([0.1, 0.0], dtype=DTYPE))
    torch.testing.assert_close(from_list, X)
    torch.testing.assert_close(from_tensor, X)


def test_an_objective_constant_in_the_data_is_a_tie() -> None:
    """After a few loop rounds the practical model's means of an objective that is constant in
    the data differ by about 1e-7, below its posterior standard deviation (1e-5): ties, so
    the set is the best point of the other objective, not every point."""
    from botorch_mtucb.loop import run_bo_loop

    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)

    def observe(X):
        return torch.stack([-(X - 0.3).pow(2).sum(-1), torch.ones(len(X), dtype=X.dtype)], -1)

    h = run_bo_loop(observe, num_rounds=3, bounds=bounds,
                    generator=torch.Generator().manual_seed(0))
    X = h.observed_X
    with torch.no_grad():
        means = h.model.posterior(X.unsqueeze(-2)).mean.squeeze(-2)
    assert 0 < float(means[:, 1].max() - means[:, 1].min()) < 1e-5  # the model's noise
    rec = recommend_pareto_set(h.model, X, return_details=True)
    assert rec.indices.tolist() == [int(means[:, 0].argmax())]


def noisy_problem(seed: int):
    """Both objectives equal x on [0, 1] (the true front: the largest x), observed with
    noise of 30 % of the range; a GP with the true noise and a fixed lengthscale."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(30, 1, dtype=DTYPE, generator=g)
    Y = X.expand(-1, 2) + 0.3 * torch.randn(30, 2, dtype=DTYPE, generator=g)
    model = SingleTaskGP(X, Y, train_Yvar=torch.full_like(Y, 0.09))
    model.covar_module.lengthscale = 0.5
    return X, Y, model


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_drops_points_whose_mean_is_dominated(seed: int) -> None:
    X, Y, model = noisy_problem(seed)
    raw_front = is_non_dominated(Y).nonzero().squeeze(-1).tolist()
    mean = joint_mean(model, X)
    mean_front = brute_force_front(mean, torch.ones(2, dtype=DTYPE))
    lucky = [i for i in raw_front if i not in mean_front]
    assert lucky, "the raw-observation front should hold a point whose mean is dominated"
    rec = recommend_pareto_set(model, X, return_details=True)
    assert rec.indices.tolist() == mean_front
    assert not set(lucky) & set(rec.indices.tolist())
    # the model's answer is the true optimum (largest x); the raw front's best is not always
    assert rec.indices.tolist() == [int(X.squeeze(-1).argmax())]


def test_repeated_points_once() -> None:
    model = make_models(2, 0)[0]
    g = torch.Generator().manual_seed(2)
    X = torch.rand(20, 3, dtype=DTYPE, generator=g)
    front = recommend_pareto_set(model, X, return_details=True).indices
    X2 = torch.cat([X, X[front]])  # every front point evaluated twice
    rec = recommend_pareto_set(model, X2, return_details=True)
    assert torch.equal(rec.indices, front)


@pytest.mark.filterwarnings("ignore::botorch.exceptions.warnings.InputDataWarning")
def test_shapes_dtypes_and_devices() -> None:
    g = torch.Generator().manual_seed(3)
    X = torch.rand(10, 2, generator=g)  # float32 throughout
    Y = torch.stack([X.sum(-1), -X.prod(-1)], dim=-1)
    model = SingleTaskGP(X, Y, input_transform=Normalize(2))
    out = recommend_pareto_set(model, X)
    assert out.dim() == 2 and out.shape[-1] == 2 and out.dtype == torch.float32
    rec = recommend_pareto_set(model, X, return_details=True)
    assert isinstance(rec, ParetoSetRecommendation)
    K = rec.X.shape[0]
    assert rec.mean.shape == (K, 2) and rec.mean.dtype == torch.float32
    assert rec.indices.shape == (K,) and rec.indices.dtype == torch.long
    assert not rec.X.requires_grad and not rec.mean.requires_grad
    empty = recommend_pareto_set(model, X[:0], return_details=True)
    assert empty.X.shape == (0, 2) and empty.mean.shape == (0, 2)
    assert empty.indices.shape == (0,)
    assert recommend_pareto_set(model, X[:0]).shape == (0, 2)
    one = recommend_pareto_set(model, X[:1], return_details=True)
    assert one.indices.tolist() == [0]
    with pytest.raises(ValueError, match=r"`X` must have shape N x 2"):  # raw d, transformed
        recommend_pareto_set(model, torch.rand(3, 3))


def test_model_list() -> None:
    g = torch.Generator().manual_seed(4)
    X = torch.rand(15, 2, dtype=DTYPE, generator=g)
    models = [SingleTaskGP(X, y.unsqueeze(-1)) for y in (X.sum(-1), (1 - X).prod(-1))]
    model = ModelListGP(*models)
    mean = joint_mean(model, X)
    expected = brute_force_front(mean, torch.ones(2, dtype=DTYPE))
    assert recommend_pareto_set(model, X, return_details=True).indices.tolist() == expected
    with pytest.raises(ValueError, match="`X` must have shape N x 2"):
        recommend_pareto_set(model, X[:, :1])


class _NaNModel(Model):
    """Two outputs, NaN means (what a broken model gives)."""

    num_outputs = 2

    def posterior(self, X, **kwargs) -> Posterior:
        nan = torch.full((*X.shape[:-1], 2), float("nan"), dtype=X.dtype)
        normal = torch.distributions.Normal(nan, torch.ones_like(nan), validate_args=False)
        return TorchPosterior(normal)


def test_errors_name_the_argument() -> None:
    model = make_models(2, 0)[1]
    X = torch.rand(5, 3, dtype=DTYPE)
    with pytest.raises(TypeError, match="`X` must be a torch.Tensor"):
        recommend_pareto_set(model, X.numpy())
    with pytest.raises(TypeError, match="`X` must be a float32 or float64"):
        recommend_pareto_set(model, torch.ones(5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"`X` must have shape N x 3"):
        recommend_pareto_set(model, X[:, :2])
    with pytest.raises(ValueError, match=r"`X` must have shape N x 3"):
        recommend_pareto_set(model, X.unsqueeze(0))
    bad = X.clone()
    bad[1, 0] = float("nan")
    with pytest.raises(ValueError, match="`X` contains NaN"):
        recommend_pareto_set(model, bad)
    single = SingleTaskGP(X, X.sum(-1, keepdim=True))
    with pytest.raises(ValueError, match="`model` must have at least 2 outputs"):
        recommend_pareto_set(single, X)
    with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
        recommend_pareto_set(model, X, minimize=[True])
    with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
        recommend_pareto_set(model, X, minimize=[0, 1])  # indices are not booleans here
    with pytest.raises(ValueError, match="`ref_point` must be 2 finite numbers"):
        recommend_pareto_set(model, X, ref_point=[0.0])
    with pytest.raises(ValueError, match="`ref_point` must be 2 finite numbers"):
        recommend_pareto_set(model, X, ref_point=[0.0, float("nan")])
    with pytest.raises(ValueError, match="`model` gives NaN"):
        recommend_pareto_set(_NaNModel(), X)
