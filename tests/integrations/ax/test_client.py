"""End-to-end ``ax.Client`` loops with the package's generation strategies.

References: brute-force formulas written out here (Chebyshev / linear UCB with the signs,
Pareto front by pairwise comparison, nadir reference point), models rebuilt from scratch on
the augmented data (GP-BUCB hallucination), the raw values reported to Ax (data order and
scale seen by the heavy-tailed model), Ax's own StandardizeY statistics (reference point =
the user's objective thresholds).
"""

from __future__ import annotations

import math
import runpy
import warnings
from pathlib import Path

import pytest
import torch

pytest.importorskip("ax")

from ax.api.client import Client  # noqa: E402
from ax.api.configs import RangeParameterConfig  # noqa: E402
from botorch.acquisition.multi_objective.logei import (  # noqa: E402
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.models import ModelListGP  # noqa: E402
from botorch.test_functions.multi_objective import BraninCurrin  # noqa: E402
from gpytorch.kernels import MaternKernel  # noqa: E402

from botorch_mtucb.acquisition import (  # noqa: E402
    ChebyshevScalarization,
    HeavyTailedUCB,
    ScalarizedMultiTaskUCB,
    sample_scalarization_weights,
)
from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors  # noqa: E402
from botorch_mtucb.features import QuadratureFourierFeatures  # noqa: E402
from botorch_mtucb.integrations.ax import (  # noqa: E402
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    DesignSizedGenerationStrategy,
    heavy_tailed_generation_strategy,
    mtucb_generation_strategy,
    multitask_gp_generation_strategy,
)
from botorch_mtucb.integrations.ax.objective import trial_generator  # noqa: E402
from botorch_mtucb.models import (  # noqa: E402
    AdaptiveTruncationGP,
    ExactMultiTaskGP,
    TruncatedGP,
)
from tests.integrations.ax.helpers import DT, FAST_OPT, pareto_min, unit_box  # noqa: E402


# ----------------------------------------------------------------------------- Ax loops
def test_client_loop_branin_currin_mtucb(monkeypatch) -> None:
    """8 trials of "-a, -b" on BraninCurrin: 4 Sobol, then MT-UCB (two of them generated
    together, so the second sees the first as pending)."""
    from botorch_mtucb.acquisition import ScalarizationSampler

    boxes = []
    real_anchors = ScalarizationSampler.anchors

    def spy(self, model, bounds, Y, **kwargs):
        boxes.append(bounds)
        return real_anchors(self, model, bounds, Y, **kwargs)

    monkeypatch.setattr(ScalarizationSampler, "anchors", spy)
    problem = BraninCurrin()
    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective="-a, -b")
    client.set_generation_strategy(
        mtucb_generation_strategy(num_initial_trials=4, seed=0, optimizer_options=FAST_OPT)
    )
    observed: dict[int, torch.Tensor] = {}
    weights, batch = [], []
    box = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)  # unit_box(), Ax's digest
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (4, 1, 2, 1):
            trials = client.get_next_trials(max_trials=k)
            assert len(trials) == k
            if k <= 2:  # BO trials: inspect what Ax built
                gen = client._generation_strategy.adapter.generator
                model, acq = gen.surrogate.model, gen._acquisition
                assert type(acq.acqf) is ScalarizedMultiTaskUCB  # our acquisition ...
                assert isinstance(model, ExactMultiTaskGP)  # ... on our joint model,
                assert not isinstance(model, ModelListGP) and model.num_outputs == 2
                assert isinstance(model, AxPracticalMultiTaskGP)  # the practical default:
                assert isinstance(model.covar_module.data_covar_module, MaternKernel)
                assert model.learn_noise and hasattr(model.likelihood, "noise_prior")
                sc = acq.acqf.scalarization
                assert sc.minimize.tolist() == [True, True]  # "-a, -b"
                # No user thresholds: the scale-free s_λ from the data in Ax's units and the
                # model's payoff table on Ax's search box (the unit square here), with the
                # trial's λ and anchor seed (t = observations + pending), not Ax's inferred z.
                Y_ax = gen.surrogate.training_data[0].Y
                t = Y_ax.shape[0] + (k - 1 if k == 2 else 0)
                lam = sample_scalarization_weights(2, 1, generator=trial_generator(0, t))[0]
                P = predicted_anchors(model, box, Y_ax, minimize=[True, True], seed=0 + t)
                ref = ChebyshevScalarization.from_data(lam, Y_ax, minimize=[True, True],
                                                       predicted=P, span="front")
                tol = {"atol": 1e-6, "rtol": 1e-4}  # L-BFGS-B is not bitwise reproducible
                torch.testing.assert_close(sc.ref_point, ref.ref_point.to(sc.ref_point), **tol)
                torch.testing.assert_close(sc.weights, ref.weights.to(sc.weights), **tol)
                assert sc.augmentation == 0.05
                assert acq.acqf.beta == ScalarizedMultiTaskUCB.__init__.__defaults__[0]
                weights.append(sc.weights)
            if k == 2:
                batch = [
                    torch.tensor([p["x0"], p["x1"]], dtype=DT) for p in trials.values()
                ]
            for idx, p in trials.items():
                x = torch.tensor([[p["x0"], p["x1"]]], dtype=DT)
                assert ((x >= 0) & (x <= 1)).all()
                observed[idx] = problem(x)[0]
                client.complete_trial(
                    idx, raw_data={"a": float(observed[idx][0]), "b": float(observed[idx][1])}
                )
        front = client.get_pareto_frontier(use_model_predictions=False)
    assert len(observed) == 8
    # the payoff table was computed on Ax's search box for every BO trial (4 of them)
    assert len(boxes) == 4 and all(torch.equal(b.cpu(), box) for b in boxes)
    assert not torch.allclose(batch[0], batch[1])  # pending point not proposed again
    W = torch.stack(weights)
    assert torch.cdist(W, W)[~torch.eye(len(W), dtype=torch.bool)].min() > 1e-6  # fresh λ
    idx = sorted(observed)
    expected = {idx[i] for i in pareto_min(torch.stack([observed[i] for i in idx]))}
    assert {row[2] for row in front} == expected
    for _, values, i, _ in front:
        assert values["a"][0] == pytest.approx(float(observed[i][0]))


@pytest.mark.parametrize("model", ["practical", "paper"])
def test_client_loop_multitask_gp_strategy_models(model: str) -> None:
    """Ax's own qLogNEHVI on our joint model: the practical one by default, the
    paper's estimator with model="paper"; 4 Sobol + 3 BO trials."""
    problem = BraninCurrin()
    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective="-a, -b")
    options = {} if model == "practical" else {"model": "paper"}
    client.set_generation_strategy(multitask_gp_generation_strategy(
        num_initial_trials=4, seed=0, optimizer_options=FAST_OPT, **options
    ))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(7):
            for idx, p in client.get_next_trials(max_trials=1).items():
                y = problem(torch.tensor([[p["x0"], p["x1"]]], dtype=DT))[0]
                client.complete_trial(idx, raw_data={"a": float(y[0]), "b": float(y[1])})
    gen = client._generation_strategy.adapter.generator
    m = gen.surrogate.model
    assert gen.botorch_acqf_class is qLogNoisyExpectedHypervolumeImprovement
    assert gen._acquisition.acqf.model is m and m.num_outputs == 2
    assert m.train_inputs[0].shape[-2] == 6  # one joint model on all observed trials
    if model == "practical":
        assert type(m) is AxPracticalMultiTaskGP
        assert isinstance(m.covar_module.data_covar_module, MaternKernel)
        assert m.learn_noise and hasattr(m.likelihood, "noise_prior") and not m._zero_mean
    else:
        assert type(m) is AxExactMultiTaskGP and m._zero_mean and not m.learn_noise
        assert m.noise.item() == pytest.approx(0.1)  # the paper's fixed η
    nodes = client.summarize()["generation_node"].tolist()
    assert all("Sobol" in g for g in nodes[:4]) and all("BoTorch" in g for g in nodes[4:])
    with pytest.raises(ValueError, match="`model` must be 'practical' or 'paper'"):
        multitask_gp_generation_strategy(model="sparse")


def test_client_default_sobol_design_is_sized_by_d() -> None:
    """Without num_initial_trials: initial_design_size(d) Sobol trials (5 at d = 2, 6 at d = 3),
    then the BO step; the strategy records the size once it sees the experiment."""
    from botorch_mtucb.utils import initial_design_size

    problem = BraninCurrin()
    for d, make in ((3, lambda: mtucb_generation_strategy(seed=0, optimizer_options=FAST_OPT)),
                    (2, lambda: multitask_gp_generation_strategy(seed=0))):
        gs = make()
        assert isinstance(gs, DesignSizedGenerationStrategy) and gs.num_initial_trials is None
        client = Client(random_seed=0)
        client.configure_experiment(parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(d)
        ])
        client.configure_optimization(objective="-a, -b")
        client.set_generation_strategy(gs)
        size = initial_design_size(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(size + 1):
                for idx, p in client.get_next_trials(max_trials=1).items():
                    y = problem(torch.tensor([[p["x0"], p["x1"]]], dtype=DT))[0]
                    client.complete_trial(idx, raw_data={"a": float(y[0]), "b": float(y[1])})
        assert gs.num_initial_trials == size == (6 if d == 3 else 5)
        summary = client.summarize()
        gen_nodes = summary["generation_node"].tolist()
        assert all("Sobol" in g for g in gen_nodes[:size]) and "BoTorch" in gen_nodes[size]
    gs = heavy_tailed_generation_strategy(1.0, 1.0)
    assert isinstance(gs, DesignSizedGenerationStrategy)
    fixed = mtucb_generation_strategy(num_initial_trials=4)
    assert fixed.num_initial_trials == 4


@pytest.mark.parametrize("order", ["constraints first", "strategy first"])
def test_client_outcome_constraints_refused_before_the_first_trial(order: str) -> None:
    """A strategy whose BO step refuses outcome constraints says so when it meets the
    experiment (at attach, or at the first trial when the constraints come later), not after
    the Sobol trials; Ax's own acquisition on the joint model takes them."""
    make = {
        "mtucb": lambda: mtucb_generation_strategy(num_initial_trials=2, seed=0),
        "robust": lambda: heavy_tailed_generation_strategy(seed=0),
        "truncated": lambda: heavy_tailed_generation_strategy(1.0, 1.0, seed=0),
    }
    for name, build in make.items():
        client = Client(random_seed=0)
        client.configure_experiment(parameters=unit_box())
        objective = "-a, -b" if name == "mtucb" else "-a"
        if order == "constraints first":
            client.configure_optimization(objective=objective, outcome_constraints=["c <= 1"])
            with pytest.raises(ValueError, match=r"outcome constraints.*\['c <= 1'\]"):
                client.set_generation_strategy(build())
            continue
        client.configure_optimization(objective=objective)
        client.set_generation_strategy(build())
        client.configure_optimization(objective=objective, outcome_constraints=["c <= 1"])
        with pytest.raises(ValueError, match="does not support outcome constraints"):
            client.get_next_trials(max_trials=1)
        assert len(client._experiment.trials) == 0, name
    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective="-a, -b", outcome_constraints=["c <= 1"])
    client.set_generation_strategy(multitask_gp_generation_strategy(num_initial_trials=2))
    assert len(client.get_next_trials(max_trials=1)) == 1


@pytest.mark.parametrize(
    ("build", "objective", "match"),
    [
        (lambda: heavy_tailed_generation_strategy(seed=0), "-a, -b", "one objective on one"),
        (lambda: heavy_tailed_generation_strategy(seed=0), "a + b", "one objective on one"),
        (lambda: heavy_tailed_generation_strategy(1.0, 1.0, seed=0), "a, b", "one objective"),
        (lambda: mtucb_generation_strategy(seed=0), "a", "needs a multi-objective"),
    ],
)
def test_client_objectives_the_bo_step_cannot_serve_are_refused_at_once(
    build, objective: str, match: str
) -> None:
    """A single-objective strategy on several objectives (or a scalarized one), or MT-UCB on
    one objective, is refused when the strategy meets the experiment, not after its Sobol
    trials."""
    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective=objective)
    with pytest.raises(ValueError, match=match):
        client.set_generation_strategy(build())


def test_client_user_thresholds_are_the_chebyshev_reference_point() -> None:
    """Objective order ("-b, -a") differs from Ax's output order; thresholds land right."""
    problem = BraninCurrin()
    client = Client(random_seed=1)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective="-b, -a", outcome_constraints=["a <= 120",
                                                                           "b <= 9.5"])
    client.configure_tracking_metrics(["c"])  # reported, not modelled (not an objective)
    client.set_generation_strategy(
        mtucb_generation_strategy(
            num_initial_trials=3, seed=1, optimizer_options=FAST_OPT,
            model_options={"noise": 0.05}, model="paper",  # the paper's fixed η
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (3, 1):
            for idx, p in client.get_next_trials(max_trials=k).items():
                y = problem(torch.tensor([[p["x0"], p["x1"]]], dtype=DT))[0]
                client.complete_trial(
                    idx, raw_data={"a": float(y[0]), "b": float(y[1]), "c": p["x0"]}
                )
    adapter = client._generation_strategy.adapter
    model = adapter.generator.surrogate.model
    assert type(model) is AxExactMultiTaskGP
    assert adapter.outcomes == ["a", "b"] and model.noise.item() == pytest.approx(0.05)
    sc = adapter.generator._acquisition.acqf.scalarization
    std = adapter.transforms["StandardizeY"]
    raw = [float(sc.ref_point[i]) * std.Ystd[m] + std.Ymean[m]
           for i, m in enumerate(adapter.outcomes)]
    assert dict(zip(adapter.outcomes, raw, strict=True)) == pytest.approx(
        {"a": 120.0, "b": 9.5}
    )
    with pytest.raises(ValueError, match="one arm per trial"):
        adapter.gen(n=2)  # a batch trial would repeat the point: refused


def test_client_loop_heavy_tailed_noisy_objective() -> None:
    """8 trials minimising a noisy loss (Student-t(3) noise) on [-1, 2]^2 with TGP-UCB."""
    g = torch.Generator().manual_seed(0)

    def loss(p: dict[str, float]) -> float:
        u0, u1 = (p["x0"] + 1) / 3, (p["x1"] + 1) / 3
        z = torch.randn(4, generator=g, dtype=DT)
        t3 = float(z[0] / (z[1:].square().sum() / 3).sqrt())
        return -math.sin(3 * u0) * math.cos(2 * u1) + 0.5 * t3

    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box(-1.0, 2.0))
    client.configure_optimization(objective="-loss")
    alpha, v = 1.0, 1.0 + 0.25 * 3.0  # |f| <= 1, E(0.5 T_3)^2 = 0.75
    client.set_generation_strategy(
        heavy_tailed_generation_strategy(
            alpha, v, num_initial_trials=4, seed=0, optimizer_options=FAST_OPT,
            model_options={"constants": "authors"},
        )
    )
    reported: dict[int, tuple[list[float], float]] = {}
    batch = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (4, 1, 2, 1):
            trials = client.get_next_trials(max_trials=k)
            if k <= 2:
                gen = client._generation_strategy.adapter.generator
                model, acqf = gen.surrogate.model, gen._acquisition.acqf
                assert type(acqf) is HeavyTailedUCB and isinstance(model, TruncatedGP)
                # Rows = rounds in trial order, inputs mapped to [0, 1]^2 by UnitX, rewards
                # in their raw units (no standardisation: b_t refers to the units of v).
                done = sorted(reported)
                X_ref = torch.tensor([reported[i][0] for i in done], dtype=DT)
                Y_ref = torch.tensor([[reported[i][1]] for i in done], dtype=DT)
                torch.testing.assert_close(model.train_X, (X_ref + 1) / 3)
                torch.testing.assert_close(model.train_Y, Y_ref)
                # Minimisation: the acquisition maximises −μ + β σ.
                assert acqf.model is model and acqf.maximize is False
                assert acqf._beta_float == pytest.approx(model.beta())
            if k == 2:
                batch = [(p["x0"], p["x1"]) for p in trials.values()]
            for idx, p in trials.items():
                assert all(-1.0 <= p[n] <= 2.0 for n in ("x0", "x1"))
                reported[idx] = ([p["x0"], p["x1"]], loss(p))
                client.complete_trial(idx, raw_data={"loss": reported[idx][1]})
        best_params, best_values, best_idx, _ = client.get_best_parameterization(
            use_model_predictions=False
        )
    assert len(reported) == 8 and batch[0] != batch[1]
    assert best_idx == min(reported, key=lambda i: reported[i][1])
    assert best_params == {"x0": reported[best_idx][0][0], "x1": reported[best_idx][0][1]}


def test_client_adaptive_truncation_gp_runs() -> None:
    """ATA-GP-UCB (QFF features) through the same helper: 3 Sobol + 2 BO trials, maximised."""
    client = Client(random_seed=2)
    client.configure_experiment(parameters=unit_box())
    client.configure_optimization(objective="y")
    features = QuadratureFourierFeatures(lengthscale=0.3, num_nodes=6, dim=2)
    client.set_generation_strategy(
        heavy_tailed_generation_strategy(
            0.5, 2.0, num_initial_trials=3, seed=2, model="adaptive_truncation",
            model_options={"features": features, "constants": "authors"},
            optimizer_options=FAST_OPT,
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (3, 1, 1):
            trials = client.get_next_trials(max_trials=k)
            for idx, p in trials.items():
                assert all(0.0 <= p[n] <= 1.0 for n in ("x0", "x1"))
                client.complete_trial(idx, raw_data={"y": p["x0"] - (p["x1"] - 0.5) ** 2})
    gen = client._generation_strategy.adapter.generator
    assert type(gen._acquisition.acqf) is HeavyTailedUCB
    assert isinstance(gen.surrogate.model, AdaptiveTruncationGP)
    assert gen._acquisition.acqf.model is gen.surrogate.model  # maximised, none pending
    assert len(client._experiment.trials) == 5


def test_example_script_runs(capsys) -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "ax_mtucb.py"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runpy.run_path(str(example))["main"](trials=4, initial=3)
    out = capsys.readouterr().out
    assert "Branin-Currin: 4 trials" in out and "Heavy-tailed: 4 trials" in out


@pytest.mark.parametrize("model", ["robust", "truncated"])
def test_heavy_tailed_strategy_takes_integer_and_log_integer_parameters(model: str) -> None:
    """Integer ranges (also on a log scale) reach the model in the unit cube (IntToFloat
    before UnitX) and come back as integers within their bounds."""
    def reward(p: dict) -> float:
        assert isinstance(p["k"], int) and 1 <= p["k"] <= 8
        assert isinstance(p["w"], int) and 1 <= p["w"] <= 64
        return -((p["z"] - 0.3) ** 2) - 0.1 * (p["k"] - 4) ** 2 - 0.01 * p["w"]

    X = _heavy_tailed_run([
        RangeParameterConfig(name="z", parameter_type="float", bounds=(0.0, 1.0)),
        RangeParameterConfig(name="k", parameter_type="int", bounds=(1, 8)),
        RangeParameterConfig(name="w", parameter_type="int", bounds=(1, 64), scaling="log"),
    ], model, 4, 6, reward)
    assert X.shape == (5, 3) and bool(((X >= 0) & (X <= 1)).all())  # the 6th trial's model


def _heavy_tailed_run(
    parameters: list, model: str, initial: int, trials: int, reward
) -> torch.Tensor:
    """``trials`` trials of the heavy-tailed strategy (``model``) on ``parameters`` with the
    objective ``y = reward(parameters)``; the last trial's training inputs."""
    client = Client(random_seed=0)
    client.configure_experiment(parameters=parameters)
    client.configure_optimization(objective="y")
    kw = {} if model == "robust" else {"model": model}
    client.set_generation_strategy(heavy_tailed_generation_strategy(
        seed=0, num_initial_trials=initial, optimizer_options=FAST_OPT, **kw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(trials):
            for idx, p in client.get_next_trials(max_trials=1).items():
                client.complete_trial(idx, raw_data={"y": reward(p)})
        fitted = client._generation_strategy.adapter.generator.surrogate.model
    return fitted.train_inputs[0] if model == "robust" else fitted.train_X


@pytest.mark.parametrize("model", ["robust", "truncated"])
def test_heavy_tailed_strategy_takes_ordered_choices(model: str) -> None:
    """Ordered choices (numeric values outside [0, 1], and strings) reach the model as their
    indices scaled to the unit cube (OrderedChoiceToIntegerRange before UnitX), and come back
    as choice values."""
    from ax.api.configs import ChoiceParameterConfig

    def reward(p: dict) -> float:
        assert p["k"] in (2, 4, 8, 16) and p["s"] in ("lo", "mid", "hi")
        return -((p["z"] - 0.3) ** 2) - 0.1 * abs(p["k"] - 4) - 0.1 * (p["s"] != "mid")

    X = _heavy_tailed_run([
        RangeParameterConfig(name="z", parameter_type="float", bounds=(0.0, 1.0)),
        ChoiceParameterConfig(name="k", parameter_type="int", values=[2, 4, 8, 16],
                              is_ordered=True),
        ChoiceParameterConfig(name="s", parameter_type="str", values=["lo", "mid", "hi"],
                              is_ordered=True),
    ], model, 3, 5, reward)
    assert X.shape == (4, 3) and bool(((X >= 0) & (X <= 1)).all())  # the 5th trial's model
