"""The Ax-facing models: construct_inputs, reported noise (SEMs) as known noise, Ax's fit step.

References: the SEMs the test reports, scaled by Ax's own ``StandardizeY`` statistics (the
model's units: Ax standardizes, the model adds no outcome transform), the dense GP posterior
``μ* + K*ᵀ(K + diag(Yvar))⁻¹(y − μ)`` written out from the fitted kernel, and
``practical_multitask_gp`` built and fitted outside Ax (same hyperparameters and posterior).
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

pytest.importorskip("ax")

from ax.api.client import Client  # noqa: E402
from ax.generators.torch.botorch_modular.utils import fit_botorch_model  # noqa: E402
from botorch.fit import fit_gpytorch_mll  # noqa: E402
from botorch.models.transforms import Normalize, Standardize  # noqa: E402
from botorch.test_functions.multi_objective import BraninCurrin  # noqa: E402
from botorch.utils.datasets import SupervisedDataset  # noqa: E402
from gpytorch.mlls import ExactMarginalLogLikelihood  # noqa: E402

from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB  # noqa: E402
from botorch_mtucb.integrations.ax import (  # noqa: E402
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxTruncatedGP,
    mtucb_generation_strategy,
)
from botorch_mtucb.models import practical_multitask_gp  # noqa: E402
from botorch_mtucb.multitask.practical_fit import fit_practical_model  # noqa: E402
from tests.integrations.ax.helpers import DT, FAST_OPT, mt_model, unit_box  # noqa: E402

PROBLEM = BraninCurrin()


def _sems(idx: int) -> tuple[float, float]:
    """Heteroscedastic SEMs of trial ``idx`` (different per trial and metric)."""
    return 0.5 + 0.25 * idx, 0.02 * (1 + idx % 3)


def _loop(model: str, report, steps=(4, 1, 2, 1), **options) -> tuple[Client, dict, list]:
    """A Client loop on BraninCurrin reporting ``report(idx, y)``; returns the client, the
    parameters of each trial and the warnings."""
    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective="-a, -b")
    client.set_generation_strategy(mtucb_generation_strategy(
        num_initial_trials=4, seed=0, optimizer_options=FAST_OPT, model=model, **options
    ))
    params = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in steps:  # the k = 2 step: the second trial sees the first as pending
            for idx, p in client.get_next_trials(max_trials=k).items():
                params[idx] = (p["x0"], p["x1"])
                y = PROBLEM(torch.tensor([[p["x0"], p["x1"]]], dtype=DT))[0]
                client.complete_trial(idx, raw_data=report(idx, y))
    return client, params, [str(w.message) for w in caught]


def _with_sems(idx: int, y: torch.Tensor) -> dict:
    sa, sb = _sems(idx)
    return {"a": (float(y[0]), sa), "b": (float(y[1]), sb)}


@pytest.mark.parametrize("model", ["practical", "paper"])
def test_reported_sems_are_the_models_known_noise(model: str) -> None:
    client, params, messages = _loop(model, _with_sems)
    assert not [m for m in messages if "ignores the observation noise" in m]
    adapter = client._generation_strategy.adapter
    gen = adapter.generator
    m = gen.surrogate.model
    assert type(m) is {"practical": AxPracticalMultiTaskGP, "paper": AxExactMultiTaskGP}[model]
    assert m.known_noise and not m.learn_noise
    assert type(gen._acquisition.acqf) is ScalarizedMultiTaskUCB
    assert not hasattr(m, "outcome_transform")  # Ax's StandardizeY is the only scaling
    data = gen.surrogate.training_data[0]
    std = adapter.transforms["StandardizeY"].Ystd
    # The trial of each training row (by its parameters), then SEM² / Ystd² per metric.
    trials = sorted(params)
    P = torch.tensor([params[i] for i in trials], dtype=DT)
    rows = torch.cdist(data.X, P).argmin(-1).tolist()
    assert len(set(rows)) == len(rows) == data.X.shape[0] == len(trials) - 1  # last: no data
    expected = torch.tensor(
        [[s**2 / std[name] ** 2 for s, name in zip(_sems(trials[r]), ("a", "b"), strict=True)]
         for r in rows], dtype=DT,
    )
    torch.testing.assert_close(m.likelihood.noise.detach(), expected, rtol=1e-10, atol=0.0)
    # The variances enter the posterior: the dense GP with diag(Yvar) written out.
    m.eval()
    Xs = torch.rand(5, 2, generator=torch.Generator().manual_seed(0), dtype=DT)
    with torch.no_grad():
        Xt, Xst = m.train_inputs[0], m.transform_inputs(Xs)
        K = m.covar_module(torch.cat([Xt, Xst])).to_dense()
        N, n = data.Y.shape
        Ktt, Kst, Kss = K[: N * n, : N * n], K[N * n :, : N * n], K[N * n :, N * n :]
        resid = (data.Y - m.mean_module(Xt)).reshape(-1)
        A = Ktt + torch.diag(expected.reshape(-1))
        mean = m.mean_module(Xst).reshape(-1) + Kst @ torch.linalg.solve(A, resid)
        var = (Kss - Kst @ torch.linalg.solve(A, Kst.T)).diagonal()
        post = m.posterior(Xs)
        torch.testing.assert_close(post.mean.reshape(-1), mean, rtol=1e-6, atol=1e-8)
        torch.testing.assert_close(post.variance.reshape(-1), var, rtol=1e-6, atol=1e-9)


def test_partial_or_mixed_sems_keep_the_learned_noise_with_a_warning() -> None:
    def partial(idx: int, y: torch.Tensor) -> dict:  # b never has an SEM
        return {"a": (float(y[0]), 0.3), "b": float(y[1])}

    def mixed(idx: int, y: torch.Tensor) -> dict:  # b's SEM missing in odd trials
        sa, sb = _sems(idx)
        return {"a": (float(y[0]), sa), "b": (float(y[1]), sb if idx % 2 == 0 else float("nan"))}

    for report, text in ((partial, "only the metrics ['a'] have them"),
                         (mixed, "not every observation of every metric")):
        client, _, messages = _loop("practical", report, steps=(4, 1))
        assert any("ignores the observation noise" in m and text in m for m in messages)
        m = client._generation_strategy.adapter.generator.surrogate.model
        assert not m.known_noise and m.learn_noise and hasattr(m.likelihood, "noise_prior")


def test_explicit_noise_options_drop_the_sems_with_a_warning() -> None:
    client, _, messages = _loop(
        "paper", _with_sems, steps=(4, 1), model_options={"learn_noise": True}
    )
    assert any("explicit options win" in m for m in messages)
    m = client._generation_strategy.adapter.generator.surrogate.model
    assert not m.known_noise and m.learn_noise
    ds = _dataset(torch.full((6, 2), 0.01, dtype=DT))
    with pytest.warns(UserWarning, match="explicit options win"):
        kw = AxExactMultiTaskGP.construct_inputs(ds, noise=0.05)
    assert "train_Yvar" not in kw
    assert AxExactMultiTaskGP(**kw).noise.item() == pytest.approx(0.05)


def _dataset(Yvar: torch.Tensor | None, n: int = 2) -> SupervisedDataset:
    g = torch.Generator().manual_seed(1)
    X, Y = torch.rand(6, 2, generator=g, dtype=DT), torch.randn(6, n, generator=g, dtype=DT)
    return SupervisedDataset(X, Y, Yvar=Yvar, feature_names=["x0", "x1"],
                             outcome_names=[f"y{i}" for i in range(n)])


def test_construct_inputs_yvar_floor_and_no_mutation() -> None:
    Yvar = torch.linspace(0.0, 0.5, 12, dtype=DT).reshape(6, 2)  # one SEM of 0
    original = Yvar.clone()
    ds = _dataset(Yvar)
    with pytest.warns(UserWarning, match="raised to 1e-06"):
        kw = AxPracticalMultiTaskGP.construct_inputs(ds)
    assert torch.equal(ds.Yvar, original)  # the caller's tensor is untouched
    torch.testing.assert_close(kw["train_Yvar"], original.clamp_min(1e-6), rtol=0, atol=0)
    model = AxPracticalMultiTaskGP(**kw)
    assert model.known_noise and not model.learn_noise
    assert not hasattr(model.likelihood, "noise_prior")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # all positive: no warning, passed unchanged
        kw = AxExactMultiTaskGP.construct_inputs(_dataset(original + 0.1))
    torch.testing.assert_close(kw["train_Yvar"], original + 0.1, rtol=0, atol=0)


def test_known_noise_conditioning_defaults_to_the_task_average() -> None:
    Yvar = 0.01 + 0.1 * torch.rand(6, 2, generator=torch.Generator().manual_seed(2), dtype=DT)
    model = AxExactMultiTaskGP(**AxExactMultiTaskGP.construct_inputs(_dataset(Yvar)))
    X = torch.rand(2, 2, generator=torch.Generator().manual_seed(3), dtype=DT)
    Y = torch.zeros(2, 2, dtype=DT)
    new = model.condition_on_observations(X, Y)
    explicit = model.condition_on_observations(X, Y, noise=Yvar.mean(0).expand(2, 2))
    torch.testing.assert_close(new.likelihood.noise[-2:], Yvar.mean(0).expand(2, 2))
    Xs = torch.rand(4, 2, generator=torch.Generator().manual_seed(4), dtype=DT)
    torch.testing.assert_close(new.posterior(Xs).variance, explicit.posterior(Xs).variance)


def test_heavy_tailed_models_always_drop_the_sems() -> None:
    ds = _dataset(torch.full((6, 1), 0.01, dtype=DT), n=1)
    with pytest.warns(UserWarning, match="heavy-tailed BO assumes only a bound v"):
        kw = AxTruncatedGP.construct_inputs(ds, alpha=0.5, v=2.0)
    assert "train_Yvar" not in kw


def test_ax_models_construct_inputs_and_fit() -> None:
    model, ds = mt_model()
    Yvar = torch.full_like(ds.Y, 0.01)
    Yvar[2, 1] = float("nan")  # one SEM missing: all are ignored (see above)
    ds_var = SupervisedDataset(ds.X, ds.Y, Yvar=Yvar,
                               feature_names=ds.feature_names, outcome_names=ds.outcome_names)
    with pytest.warns(UserWarning, match="ignores the observation noise"):
        kw = AxExactMultiTaskGP.construct_inputs(ds_var, noise=0.05)
    assert "train_Yvar" not in kw and kw["noise"] == 0.05
    assert AxExactMultiTaskGP(**kw).noise.item() == pytest.approx(0.05)
    with pytest.raises(ValueError, match="continuous"):
        AxExactMultiTaskGP.construct_inputs(ds, categorical_features=[0])
    ds1 = SupervisedDataset(ds.X, ds.Y[:, :1], feature_names=ds.feature_names,
                            outcome_names=["a"])
    ht = AxTruncatedGP(**AxTruncatedGP.construct_inputs(ds1, alpha=0.5, v=2.0))
    before = {k: v.clone() for k, v in ht.state_dict().items() if torch.is_tensor(v)}
    fit_botorch_model(ht, mll_class=ExactMarginalLogLikelihood)  # registered no-op
    after = {k: v for k, v in ht.state_dict().items() if torch.is_tensor(v)}
    assert before and before.keys() == after.keys()
    assert all(torch.equal(before[k], v) for k, v in after.items())


def test_ax_practical_model_is_practical_multitask_gp() -> None:
    """Built as Ax builds it (construct_inputs + Normalize/Standardize submodules) and fitted,
    it has the same hyperparameters and posterior as ``practical_multitask_gp``."""
    _, ds = mt_model(n_obs=10)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    ax_model = AxPracticalMultiTaskGP(
        **AxPracticalMultiTaskGP.construct_inputs(ds),
        input_transform=Normalize(2, bounds=bounds), outcome_transform=Standardize(m=2),
    )
    assert ax_model.learn_noise and hasattr(ax_model.likelihood, "noise_prior")
    ax_default = copy.deepcopy(ax_model)
    fit_practical_model(ax_model)  # practical_multitask_gp's own fit procedure
    ref = practical_multitask_gp(ds.X, ds.Y, bounds)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(ax_model.state_dict()[k], v)
    X = torch.rand(5, 2, generator=torch.Generator().manual_seed(0), dtype=DT)
    torch.testing.assert_close(ax_model.posterior(X).mean, ref.posterior(X).mean)
    # Ax's own fit (plain fit_gpytorch_mll, L-BFGS-B memory 10) reaches the same optimum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(ax_default.likelihood, ax_default))
    ax_default.eval()
    torch.testing.assert_close(ax_default.posterior(X).mean, ref.posterior(X).mean,
                               atol=1e-3, rtol=1e-3)

    def mll(m):
        m.train()
        out = ExactMarginalLogLikelihood(m.likelihood, m)(m(*m.train_inputs), m.train_targets)
        m.eval()
        return float(out)

    assert abs(mll(ax_default) - mll(ref)) < 1e-4
    ind = AxPracticalMultiTaskGP(**AxPracticalMultiTaskGP.construct_inputs(ds, independent=True))
    assert ind.covar_module.task_covar_matrix.equal(torch.eye(2, dtype=DT))
