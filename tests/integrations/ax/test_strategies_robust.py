"""The robust default of ``heavy_tailed_generation_strategy`` in Ax: model, acquisition, best point.

References: ``robust_gp`` / ``recommend`` called directly on the data Ax gave the model; the
trusted rows and their best posterior mean found by a Python loop over rows; LogEI's closed
form ``log(σ (z Φ(z) + φ(z)))``, ``z = (μ − best_f) / σ``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
import torch

pytest.importorskip("ax")

from ax.adapter.cross_validation import (  # noqa: E402
    AssessModelFitResult,
    assess_model_fit,
    compute_diagnostics,
    cross_validate,
)
from ax.api.client import Client  # noqa: E402
from ax.api.configs import RangeParameterConfig  # noqa: E402
from botorch.acquisition.analytic import LogExpectedImprovement  # noqa: E402
from botorch.acquisition.objective import ScalarizedPosteriorTransform  # noqa: E402
from botorch.models import SingleTaskGP  # noqa: E402
from botorch.utils.datasets import SupervisedDataset  # noqa: E402

from botorch_mtucb.acquisition import HeavyTailedUCB  # noqa: E402
from botorch_mtucb.acquisition.robust import DEFAULT_ROBUST_ACQUISITION  # noqa: E402
from botorch_mtucb.integrations.ax import (  # noqa: E402
    HEAVY_TAILED_TRANSFORMS,
    JointSurrogate,
    heavy_tailed_generation_strategy,
)
from botorch_mtucb.integrations.ax.acquisition import RobustAcquisition  # noqa: E402
from botorch_mtucb.integrations.ax.input_constructors import (  # noqa: E402
    construct_robust_acquisition,
    robust_best_index,
)
from botorch_mtucb.integrations.ax.models import AxRobustGP  # noqa: E402
from botorch_mtucb.integrations.ax.objective import FIT_STREAM, seeded_trial  # noqa: E402
from botorch_mtucb.integrations.ax.strategies import recommended_parameterization  # noqa: E402
from botorch_mtucb.models import recommend, robust_gp  # noqa: E402
from tests.integrations.ax.helpers import FAST_OPT  # noqa: E402

DT = torch.float64
KIND_CLASS = {"logei": LogExpectedImprovement, "ucb": HeavyTailedUCB}
UNIT = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _bo_kwargs(gs):
    return gs._nodes[1].generator_specs[0].generator_kwargs


def _data(n: int = 16, seed: int = 0, failure: int | None = 3):
    """Smooth f on [0, 1]^2 with small noise; row ``failure`` a sensor failure (+40)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=DT)
    Y = (torch.sin(4 * X[:, :1]) - (X[:, 1:] - 0.5) ** 2
         + 0.02 * torch.randn(n, 1, generator=g, dtype=DT))
    if failure is not None:
        Y[failure] = 40.0
    return X, Y


def _trusted_best(model, X, flags, maximize):
    """Brute force: rows whose readings are not all flagged, and the best mean among them."""
    T = model.train_X
    with torch.no_grad():
        mean = model.posterior(X).mean.reshape(-1)
    best, index = None, None
    for i in range(X.shape[0]):
        readings = [j for j in range(T.shape[0]) if bool((T[j] == X[i]).all())]
        if readings and all(bool(flags[j]) for j in readings):
            continue
        value = float(mean[i]) if maximize else -float(mean[i])
        if best is None or value > best:
            best, index = value, i
    return index, best


# --------------------------------------------------------------------------- strategy


def test_default_is_the_robust_model_with_the_default_acquisition() -> None:
    gs = heavy_tailed_generation_strategy(seed=4)
    assert gs.name == "Sobol+RobustGP"
    kw = _bo_kwargs(gs)
    surrogate = kw["surrogate"]
    assert type(surrogate) is JointSurrogate and surrogate.seed == 4
    (config,) = surrogate.surrogate_spec.model_configs
    assert config.botorch_model_class is AxRobustGP and config.model_options == {}
    assert config.input_transform_classes is None
    assert kw["botorch_acqf_class"] is KIND_CLASS[DEFAULT_ROBUST_ACQUISITION]
    assert kw["acquisition_class"] is RobustAcquisition
    assert kw["botorch_acqf_options"] == {"kind": DEFAULT_ROBUST_ACQUISITION, "seed": 4}
    assert kw["transforms"] == HEAVY_TAILED_TRANSFORMS
    ucb = _bo_kwargs(heavy_tailed_generation_strategy(acquisition="ucb", beta=2.0))
    assert ucb["botorch_acqf_class"] is HeavyTailedUCB
    assert ucb["botorch_acqf_options"] == {"kind": "ucb", "seed": None, "beta": 2.0}
    # moments given: paper 001's truncated model, as before
    assert heavy_tailed_generation_strategy(1.0, 4.0).name == "Sobol+TGP-UCB"
    assert heavy_tailed_generation_strategy(0.5).name == "Sobol+TGP-UCB"
    assert heavy_tailed_generation_strategy(model="truncated").name == "Sobol+TGP-UCB"


def test_robust_strategy_refuses_options_it_does_not_take() -> None:
    with pytest.raises(ValueError, match="model='robust' assumes"):
        heavy_tailed_generation_strategy(1.0, 4.0, model="robust")
    with pytest.raises(ValueError, match="'threshold' and 'bounds'"):
        heavy_tailed_generation_strategy(model_options={"lam": 0.1})
    with pytest.raises(ValueError, match="`acquisition` must be"):
        heavy_tailed_generation_strategy(acquisition="ei")
    with pytest.raises(ValueError, match="`acquisition` is an option of model='robust'"):
        heavy_tailed_generation_strategy(model="truncated", acquisition="ucb")
    with pytest.raises(ValueError, match="`model` must be 'robust'"):
        heavy_tailed_generation_strategy(model="student_t")
    if DEFAULT_ROBUST_ACQUISITION == "logei":
        with pytest.raises(ValueError, match="`beta` is the width"):
            heavy_tailed_generation_strategy(beta=2.0)


def test_robust_strategy_with_one_sobol_trial() -> None:
    """``num_initial_trials=1`` (documented ≥ 1): the first BO trial fits the robust model on
    the one reading there is (SingleTaskGP's fit: nothing is screened below
    ``MIN_SCREENED`` readings), not an error."""
    client = Client(random_seed=0)
    client.configure_experiment(parameters=[
        RangeParameterConfig(name=n, parameter_type="float", bounds=(0.0, 1.0))
        for n in ("x0", "x1")])
    client.configure_optimization(objective="y")
    client.set_generation_strategy(heavy_tailed_generation_strategy(
        num_initial_trials=1, seed=0, optimizer_options=FAST_OPT))
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            for idx, p in client.get_next_trials(max_trials=1).items():
                client.complete_trial(idx, raw_data={"y": _f(p)})
            surrogate = getattr(client._generation_strategy.adapter.generator, "surrogate", None)
            seen.append(None if surrogate is None else surrogate.model.train_X.shape[0])
    nodes = client.summarize()["generation_node"].tolist()
    assert "Sobol" in nodes[0] and all("BoTorch" in g for g in nodes[1:])
    assert seen[1:] == [1, 2]


# --------------------------------------------------------------------------- model


def test_ax_robust_gp_is_robust_gp_on_the_unit_cube() -> None:
    X, Y = _data()
    ds = SupervisedDataset(X, Y, Yvar=torch.full_like(Y, 0.01), feature_names=["a", "b"],
                           outcome_names=["y"])
    with pytest.warns(UserWarning, match="ignores the observation noise variances"):
        inputs = AxRobustGP.construct_inputs(ds)
    assert "train_Yvar" not in inputs and torch.equal(inputs["bounds"], UNIT)
    model, direct = AxRobustGP(**inputs), robust_gp(X, Y, UNIT)
    assert torch.equal(model.suspicious, direct.suspicious) and bool(model.suspicious[3])
    Xt = torch.rand(7, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    torch.testing.assert_close(model.posterior(Xt).mean, direct.posterior(Xt).mean)
    # bounds=None: the data's own box, as robust_gp without bounds
    data_box = AxRobustGP(**AxRobustGP.construct_inputs(ds, bounds=None))
    torch.testing.assert_close(data_box.posterior(Xt).mean, robust_gp(X, Y).posterior(Xt).mean)
    # inputs outside the unit cube (no UnitX) are refused unless bounds are given
    outside = SupervisedDataset(3 * X - 1, Y, feature_names=["a", "b"], outcome_names=["y"])
    with pytest.raises(ValueError, match="unit cube"):
        AxRobustGP.construct_inputs(outside)
    box = [[-1.0, -1.0], [2.0, 2.0]]
    inputs = AxRobustGP.construct_inputs(outside, bounds=box)
    torch.testing.assert_close(inputs["bounds"], torch.tensor(box, dtype=DT))


# --------------------------------------------------------------------------- best point


@pytest.mark.parametrize("maximize", [True, False])
def test_robust_best_index_is_recommend_in_either_direction(maximize: bool) -> None:
    X, Y = _data(n=18, seed=2, failure=None)
    X[7] = X[2]  # one input read twice; only the first reading is a failure
    Y[2], Y[5] = (40.0, -40.0) if maximize else (-40.0, 40.0)
    model = robust_gp(X, Y, UNIT)
    flags = model.suspicious
    assert bool(flags[2]) and bool(flags[5]) and not bool(flags[7])
    index, mean = robust_best_index(model, X, maximize)
    ref_index, ref_best = _trusted_best(model, X, flags, maximize)
    assert index == ref_index and index != 5
    assert float(mean) == pytest.approx(ref_best if maximize else -ref_best, rel=1e-12)
    if maximize:
        assert torch.equal(X[index : index + 1], recommend(model, X))
    # every reading flagged: nothing to recommend
    model._suspicious = torch.ones_like(flags)
    with pytest.raises(ValueError, match="only suspicious readings"):
        robust_best_index(model, X, maximize)


# --------------------------------------------------------------------------- acquisition


def _log_ei(mu: torch.Tensor, sigma: torch.Tensor, best: float) -> torch.Tensor:
    z = (mu - best) / sigma
    normal = torch.distributions.Normal(0.0, 1.0)
    return torch.log(sigma * (z * normal.cdf(z) + normal.log_prob(z).exp()))


@pytest.mark.parametrize("maximize", [True, False])
def test_logei_takes_the_robust_incumbent_in_the_objective_direction(maximize: bool) -> None:
    X, Y = _data(n=16, seed=3)
    if not maximize:
        Y[3] = -40.0  # a failure that would be the best observed value when minimising
    model = robust_gp(X, Y, UNIT)
    assert bool(model.suspicious[3])
    weights = torch.tensor([1.0 if maximize else -1.0], dtype=DT)
    acqf = construct_robust_acquisition(
        model, posterior_transform=ScalarizedPosteriorTransform(weights), kind="logei"
    )
    assert type(acqf) is LogExpectedImprovement and acqf.model is model
    _, best = _trusted_best(model, X, model.suspicious, maximize)
    assert float(acqf.best_f) == pytest.approx(best, rel=1e-12)
    Xt = torch.rand(1024, 1, 2, generator=torch.Generator().manual_seed(5), dtype=DT)
    post = model.posterior(Xt)
    mu = post.mean.reshape(-1) * weights
    sigma = post.variance.reshape(-1).sqrt()
    near = (mu - best) / sigma > -4  # where the plain closed form is accurate
    assert int(near.sum()) >= 3
    torch.testing.assert_close(acqf(Xt)[near], _log_ei(mu, sigma, best)[near], rtol=1e-6,
                               atol=1e-8)


def test_pending_points_shrink_sigma_and_keep_the_incumbent() -> None:
    X, Y = _data(n=16, seed=4)
    model = robust_gp(X, Y, UNIT)
    pending = torch.tensor([[0.33, 0.61]], dtype=DT)
    plain = construct_robust_acquisition(model, kind="logei")
    acqf = construct_robust_acquisition(model, X_pending=pending, kind="logei")
    assert acqf.model is not model and float(acqf.best_f) == float(plain.best_f)
    at = pending.unsqueeze(0)
    torch.testing.assert_close(acqf.model.posterior(at).mean, model.posterior(at).mean)
    assert float(acqf.model.posterior(at).variance) < float(model.posterior(at).variance)
    assert float(acqf(at)) < float(plain(at))
    ucb = construct_robust_acquisition(
        model, X_pending=pending, kind="ucb",
        posterior_transform=ScalarizedPosteriorTransform(torch.tensor([-1.0], dtype=DT)),
    )
    assert type(ucb) is HeavyTailedUCB and ucb.maximize is False
    assert ucb._beta_float == pytest.approx(model.beta())
    assert torch.equal(ucb.X_pending, pending)


def test_robust_acquisition_refusals() -> None:
    X, Y = _data(n=8, seed=6, failure=None)
    model = robust_gp(X, Y, UNIT)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        construct_robust_acquisition(model, kind="ei")
    with pytest.raises(ValueError, match="`beta` is an option of kind='ucb'"):
        construct_robust_acquisition(model, kind="logei", beta=1.0)
    with pytest.raises(ValueError, match="outcome constraints"):
        construct_robust_acquisition(model, constraints_tuple=(torch.ones(1, 1), torch.ones(1, 1)))
    with pytest.raises(ValueError, match="single output"):
        construct_robust_acquisition(SingleTaskGP(X, torch.cat([Y, Y], dim=-1)))
    with pytest.raises(ValueError, match="X_pending"):
        construct_robust_acquisition(model, X_pending=torch.zeros(1, 3, dtype=DT))


# --------------------------------------------------------------------------- Ax client


def _planted_client(objective: str, seed: int = 0) -> Client:
    client = Client(random_seed=seed)
    client.configure_experiment(parameters=[
        RangeParameterConfig(name=n, parameter_type="float", bounds=(-1.0, 2.0))
        for n in ("x0", "x1")
    ])
    client.configure_optimization(objective=objective)
    client.set_generation_strategy(
        heavy_tailed_generation_strategy(num_initial_trials=6, seed=seed,
                                         optimizer_options=FAST_OPT)
    )
    return client


def _f(p: dict[str, float]) -> float:
    u0, u1 = (p["x0"] + 1) / 3, (p["x1"] + 1) / 3
    return math.sin(3 * u0) - (u1 - 0.6) ** 2


def _ax_fit_check_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make Ax's best-point fit check (leave-one-out + Fisher test) pass without running it:
    ``get_best_parameterization`` then answers with the model's best point. Whether the
    check passes is Ax's business; what the model answers is the package's."""
    import ax.service.utils.best_point as best_point

    good = AssessModelFitResult(good_fit_metrics_to_fisher_score={},
                                bad_fit_metrics_to_fisher_score={})
    monkeypatch.setattr(best_point, "cross_validate", lambda **kwargs: [])
    monkeypatch.setattr(best_point, "compute_diagnostics", lambda **kwargs: {})
    monkeypatch.setattr(best_point, "assess_model_fit", lambda **kwargs: good)


def test_client_best_parameterization_agrees_with_predict_and_recommend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted failure reading (+50 at trial 2): the best raw reading, but never the model's
    answer (``get_best_parameterization`` once Ax's fit check passes, and
    ``recommended_parameterization``)."""
    client = _planted_client("y")
    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(14):
            ((idx, p),) = client.get_next_trials(max_trials=1).items()
            y = 50.0 if idx == 2 else _f(p) + 0.01 * float(torch.randn(1, generator=g))
            client.complete_trial(idx, raw_data={"y": y})
        raw_idx = client.get_best_parameterization(use_model_predictions=False)[2]
        _ax_fit_check_passes(monkeypatch)
        params, values, best_idx, _ = client.get_best_parameterization()
    assert recommended_parameterization(client)[:3] == (params, values, best_idx)
    gen = client._generation_strategy.adapter.generator
    model = gen.surrogate.model
    assert type(model) is AxRobustGP
    assert type(gen._acquisition.acqf) is KIND_CLASS[DEFAULT_ROBUST_ACQUISITION]
    trials = client._experiment.trials
    n = model.train_X.shape[0]  # the model of the last generated trial: trials 0..n-1
    arms = [trials[i].arm.parameters for i in range(n)]
    unit = torch.tensor([[(a["x0"] + 1) / 3, (a["x1"] + 1) / 3] for a in arms], dtype=DT)
    torch.testing.assert_close(model.train_X, unit)  # rows = trials in order, UnitX
    assert bool(model.suspicious[2]) and raw_idx == 2  # Ax's raw answer is the failure
    # the answer is recommend's arm on the model Ax holds ...
    rec = recommend(model, model.train_X)
    rec_idx = int((model.train_X == rec).all(dim=-1).nonzero()[0])
    assert best_idx == rec_idx != 2 and params == arms[rec_idx]
    # ... and the best predicted mean among the trusted arms, as client.predict reports it
    means = torch.tensor([pr["y"][0] for pr in client.predict(points=arms)], dtype=DT)
    trusted = ~model.suspicious
    assert int(torch.where(trusted, means, -torch.inf).argmax()) == best_idx
    assert values["y"][0] == pytest.approx(float(means[best_idx]), rel=1e-9)


def test_client_minimised_with_pending_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Minimised, two trials generated at once (pending points): the failure (−50) is skipped."""
    _ax_fit_check_passes(monkeypatch)
    client = _planted_client("-loss", seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (6, 1, 2, 1, 1, 1, 1, 1):
            trials = client.get_next_trials(max_trials=k)
            if k == 2:
                assert len(trials) == 2
                acqf = client._generation_strategy.adapter.generator._acquisition.acqf
                if isinstance(acqf, LogExpectedImprovement):  # conditioned on its mean there
                    assert acqf.model.train_X.shape[0] == 8  # 7 readings + 1 pending point
                else:
                    assert acqf.X_pending.shape == (1, 2)
            for idx, p in trials.items():
                client.complete_trial(idx, raw_data={"loss": -50.0 if idx == 1 else -_f(p)})
        best_idx = client.get_best_parameterization()[2]
    gen = client._generation_strategy.adapter.generator
    model = gen.surrogate.model
    assert bool(model.suspicious[1]) and best_idx != 1
    index, _ = robust_best_index(model, model.train_X, maximize=False)
    assert best_idx == index == recommended_parameterization(client)[2]
    if DEFAULT_ROBUST_ACQUISITION == "logei":
        negate = gen._acquisition.acqf.posterior_transform
        assert float(negate.weights) == -1.0


def test_robust_default_json_round_trip(tmp_path: Path) -> None:
    path = str(tmp_path / "client.json")
    client = _planted_client("y", seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(7):
            for idx, p in client.get_next_trials(max_trials=1).items():
                client.complete_trial(idx, raw_data={"y": _f(p)})
        client.save_to_json_file(path)
        loaded = Client.load_from_json_file(path)
        for idx, p in loaded.get_next_trials(max_trials=1).items():
            loaded.complete_trial(idx, raw_data={"y": _f(p)})
    assert type(loaded._generation_strategy.adapter.generator.surrogate.model) is AxRobustGP


def _poor_fit_client() -> Client:
    """10 trials of f + 0.3 sin(12.9898 i) (deterministic noise), trial 2 a failure (+50)."""
    client = _planted_client("y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(10):
            ((idx, p),) = client.get_next_trials(max_trials=1).items()
            y = 50.0 if idx == 2 else _f(p) + 0.3 * math.sin(12.9898 * idx)
            client.complete_trial(idx, raw_data={"y": y})
    return client


def test_cross_validation_folds_never_see_the_held_out_reading() -> None:
    """Ax's leave-one-out (refit_on_cv=False) on the robust model: each fold predicts from the
    other readings only (screened and centred on their own: AxRobustGP built on the fold's
    data, same fit seed) with the full model's kernel and λ, as Ax's own models keep their
    hyperparameters. Reference: the GP mean loc + k_x^T (K + λ I)^{-1} (y − loc) by hand."""
    client = _poor_fit_client()
    adapter = client._generation_strategy.adapter
    surrogate = adapter.generator.surrogate
    full = surrogate.model
    X, y = full.train_X, full.get_extra_state()["raw_y"].reshape(-1, 1)
    n, lam = X.shape[0], float(full.noise)
    with torch.no_grad():
        in_sample = full.posterior(X).mean.reshape(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = cross_validate(adapter=adapter)
    assert len(results) == n
    gaps = []
    for res in results:
        i = res.observed.features.trial_index
        keep = torch.arange(n) != i
        ds = SupervisedDataset(X[keep], y[keep], feature_names=["x0", "x1"],
                               outcome_names=["y"])
        with seeded_trial(surrogate.seed, n - 1, FIT_STREAM):
            fold = AxRobustGP(**AxRobustGP.construct_inputs(ds))
        with torch.no_grad():
            K = full.covar_module(X[keep], X[keep]).to_dense()
            k = full.covar_module(X[i : i + 1], X[keep]).to_dense()
            centred = (fold.train_Y - fold.location).reshape(-1)
            mean = fold.location + k @ torch.linalg.solve(K + lam * torch.eye(n - 1).to(K),
                                                          centred)
        assert res.predicted.means[0] == pytest.approx(float(mean), rel=1e-6, abs=1e-9)
        gaps.append(abs(res.predicted.means[0] - float(in_sample[i])))
    assert max(gaps) > 1e-3  # in-sample predictions would agree to rounding
    # the full model is untouched by the folds
    assert adapter.generator.surrogate.model is full and full.train_X.shape[0] == n


def test_recommended_parameterization_where_ax_falls_back_to_the_raw_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ax's fit check fails here and it returns the failure; the helper returns recommend's."""
    client = _poor_fit_client()
    adapter = client._generation_strategy.adapter
    model = adapter.generator.surrogate.model
    trials = client._experiment.trials
    # the situation: Ax's check judges the fit poor, so Ax answers with the best raw reading
    fit = assess_model_fit(compute_diagnostics(cross_validate(adapter=adapter)))
    assert "y" in fit.bad_fit_metrics_to_fisher_score
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert client.get_best_parameterization()[2] == 2
    assert bool(model.suspicious[2])
    # the helper runs no cross-validation ...
    import ax.service.utils.best_point as best_point

    def _no_cv(**kwargs):
        raise AssertionError("recommended_parameterization ran Ax's cross-validation")

    monkeypatch.setattr(best_point, "cross_validate", _no_cv)
    params, values, index, name = recommended_parameterization(client)
    # ... and answers with recommend's arm (rows = trials in order), never the failure
    rec = recommend(model, model.train_X)
    rec_idx = int((model.train_X == rec).all(dim=-1).nonzero()[0])
    assert index == rec_idx != 2
    assert params == trials[index].arm.parameters and name == trials[index].arm.name
    # the best predicted mean among the trusted arms, as client.predict reports it
    n = model.train_X.shape[0]
    preds = client.predict(points=[trials[i].arm.parameters for i in range(n)])
    means = torch.tensor([pr["y"][0] for pr in preds], dtype=DT)
    sems = torch.tensor([pr["y"][1] for pr in preds], dtype=DT)
    brute, _ = _trusted_best(model, model.train_X, model.suspicious, maximize=True)
    assert int(torch.where(~model.suspicious, means, -torch.inf).argmax()) == brute == index
    assert values["y"][0] == pytest.approx(float(means[index]), rel=1e-9)
    assert values["y"][1] == pytest.approx(float(sems[index]) ** 2, rel=1e-9)
    # the strategy itself works too; after a JSON round trip (no adapter yet) the arm
    # recorded with the last generator run, the same one
    assert recommended_parameterization(client._generation_strategy)[2] == index
    path = str(tmp_path / "client.json")
    client.save_to_json_file(path)
    loaded = Client.load_from_json_file(path)
    assert loaded._generation_strategy.adapter is None
    assert recommended_parameterization(loaded)[:3:2] == (params, index)


def test_recommended_parameterization_refusals() -> None:
    with pytest.raises(ValueError, match="Client or a GenerationStrategy"):
        recommended_parameterization(object())
    client = Client(random_seed=0)
    client.configure_experiment(parameters=[
        RangeParameterConfig(name="x0", parameter_type="float", bounds=(0.0, 1.0))
    ])
    with pytest.raises(ValueError, match="without a generation strategy"):
        recommended_parameterization(client)
    client.configure_optimization(objective="y")
    client.set_generation_strategy(heavy_tailed_generation_strategy(num_initial_trials=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for idx, _ in client.get_next_trials(max_trials=2).items():
            client.complete_trial(idx, raw_data={"y": float(idx)})
    with pytest.raises(ValueError, match="Sobol step"):  # no model yet
        recommended_parameterization(client)
    client.configure_optimization(objective="y, z")
    with pytest.raises(ValueError, match="single-objective"):
        recommended_parameterization(client)


@pytest.mark.parametrize("constraint", [None, "x0 + x1 <= 1.9"])
def test_recommended_arm_skips_a_flagged_reading_with_parameter_constraints(constraint) -> None:
    """A failure reading at the best input is flagged and never recommended, with or without
    a parameter constraint (the constrained search space used to fall back to Ax's best
    point, which does not know the flags)."""
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
                    for i in range(2)],
        parameter_constraints=None if constraint is None else [constraint],
    )
    client.configure_optimization(objective="y")
    client.set_generation_strategy(heavy_tailed_generation_strategy(
        num_initial_trials=1, seed=0, optimizer_options=FAST_OPT))
    points = [(a, b) for a in (0.1, 0.5, 0.9) for b in (0.1, 0.5, 0.9)]
    points += [(0.45, 0.5), (0.55, 0.5), (0.5, 0.45), (0.5, 0.55), (0.2, 0.8), (0.8, 0.3)]
    failure = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in points:
            index = client.attach_trial({"x0": a, "x1": b})
            y = -50.0 if (a, b) == (0.5, 0.5) else -((a - 0.5) ** 2) - (b - 0.5) ** 2
            failure = index if (a, b) == (0.5, 0.5) else failure
            client.complete_trial(index, raw_data={"y": y})
        for _ in range(2):  # the Sobol trial, then one BO trial
            (index, p), = client.get_next_trials(max_trials=1).items()
            client.complete_trial(index, raw_data={"y": -((p["x0"] - 0.5) ** 2)})
        parameters, _, trial, _ = recommended_parameterization(client)
    model = client._generation_strategy.adapter.generator.surrogate.model
    assert bool(model.suspicious[failure])
    assert trial != failure and (parameters["x0"], parameters["x1"]) != (0.5, 0.5)
    X = model.train_X
    expected = recommend(model, X)[0]
    assert torch.allclose(torch.tensor([parameters["x0"], parameters["x1"]], dtype=X.dtype),
                          expected)
