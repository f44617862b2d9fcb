"""Saving and loading Ax clients / generation strategies that use the package's components.

References: an uninterrupted client run with the same seed (the λ each trial draws depends
only on (seed, t), so a loaded client must draw the same λ), the experiment data before the
round trip, and the objects' constructor arguments.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

pytest.importorskip("ax")

from ax.api.client import Client  # noqa: E402
from ax.api.configs import RangeParameterConfig  # noqa: E402
from ax.exceptions.storage import JSONEncodeError  # noqa: E402
from ax.storage.json_store.decoder import object_from_json  # noqa: E402
from ax.storage.json_store.encoder import object_to_json  # noqa: E402
from botorch.test_functions.multi_objective import BraninCurrin  # noqa: E402
from gpytorch.kernels import MaternKernel  # noqa: E402

from botorch_mtucb.acquisition import (  # noqa: E402
    ConstantBeta,
    HeavyTailedUCB,
    ScalarizedMultiTaskUCB,
    TheoremThreeBeta,
    TheoremTwoBeta,
)
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures  # noqa: E402
from botorch_mtucb.integrations.ax import (  # noqa: E402
    AxAdaptiveTruncationGP,
    AxPracticalMultiTaskGP,
    DesignSizedGenerationStrategy,
    JointSurrogate,
    UCBAcquisition,
    heavy_tailed_generation_strategy,
    mtucb_generation_strategy,
    multitask_gp_generation_strategy,
)
from botorch_mtucb.kernels import ICMKernel  # noqa: E402
from tests.integrations.ax.helpers import FAST_OPT  # noqa: E402

DT = torch.float64
PROBLEM = BraninCurrin()


def _client_params(d: int = 2) -> list[RangeParameterConfig]:
    return [
        RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
        for i in range(d)
    ]


def _client(
    gs, d: int = 2, objective: str = "-a, -b", random_seed: int | None = 0
) -> Client:
    client = Client(random_seed=random_seed)
    client.configure_experiment(parameters=_client_params(d))
    client.configure_optimization(objective=objective)
    client.set_generation_strategy(gs)
    return client


def _run(client: Client, k: int) -> list[ScalarizedMultiTaskUCB | None]:
    """k one-arm trials on BraninCurrin; the acquisition of each (None for Sobol trials)."""
    acqfs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(k):
            for idx, p in client.get_next_trials(max_trials=1).items():
                adapter = client._generation_strategy.adapter
                acq = getattr(adapter.generator, "_acquisition", None) if adapter else None
                acqfs.append(None if acq is None else acq.acqf)
                y = PROBLEM(torch.tensor([[p["x0"], p["x1"]]], dtype=DT))[0]
                client.complete_trial(idx, raw_data={"a": float(y[0]), "b": float(y[1])})
    return acqfs


def _bo_spec(client: Client) -> dict:
    node = client._generation_strategy._nodes[1]
    return node.generator_specs[0].generator_kwargs


def _next_point(client: Client) -> tuple[float, float]:
    """The next trial's parameters (the trial is left running)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ((_, p),) = client.get_next_trials(max_trials=1).items()
    return p["x0"], p["x1"]


def test_client_json_round_trip_continues_the_mtucb_loop(tmp_path: Path) -> None:
    """6 trials (5 Sobol + 1 BO), save, load, 3 more: same components, same λ stream."""
    path = str(tmp_path / "client.json")
    client = _client(mtucb_generation_strategy(seed=0, optimizer_options=FAST_OPT))
    _run(client, 6)
    client.save_to_json_file(path)
    # The loaded client has no random_seed: what it proposes must not depend on torch's
    # global generator, whatever state earlier code left it in.
    torch.manual_seed(123)
    torch.rand(7)
    loaded = Client.load_from_json_file(path)
    before = client._experiment.lookup_data().df.sort_values(["trial_index", "metric_name"])
    after = loaded._experiment.lookup_data().df.sort_values(["trial_index", "metric_name"])
    # Ax's JSON stores the data frame with 10 significant decimals (pandas' to_json).
    assert after["mean"].tolist() == pytest.approx(before["mean"].tolist(), rel=1e-9)
    kwargs = _bo_spec(loaded)
    surrogate = kwargs["surrogate"]
    assert type(surrogate) is JointSurrogate
    assert surrogate.surrogate_spec.model_configs[0].botorch_model_class is AxPracticalMultiTaskGP
    assert kwargs["botorch_acqf_class"] is ScalarizedMultiTaskUCB
    assert kwargs["acquisition_class"] is UCBAcquisition
    assert kwargs["botorch_acqf_options"] == _bo_spec(client)["botorch_acqf_options"]
    # Continue both: the loaded client proposes with our model and acquisition and draws the
    # λ the uninterrupted client draws at the same trials.
    resumed, reference = _run(loaded, 3), _run(client, 3)
    for acqf, ref in zip(resumed, reference, strict=True):
        assert type(acqf) is ScalarizedMultiTaskUCB
        assert type(acqf.model) is AxPracticalMultiTaskGP
        assert isinstance(acqf.model.covar_module.data_covar_module, MaternKernel)
        torch.testing.assert_close(acqf.scalarization.weights, ref.scalarization.weights)
    assert len(loaded._experiment.trials) == 9
    for i in range(6, 9):  # the same proposals, up to the rounding of Ax's stored data
        got = loaded._experiment.trials[i].arm.parameters
        want = client._experiment.trials[i].arm.parameters
        assert [got["x0"], got["x1"]] == pytest.approx([want["x0"], want["x1"]], abs=1e-10)
    nodes = loaded.summarize()["generation_node"].tolist()
    assert all("Sobol" in g for g in nodes[:5]) and all("BoTorch" in g for g in nodes[5:])


def test_seeded_mtucb_client_proposes_the_same_point_after_save_and_load(tmp_path: Path) -> None:
    """The original client and every load of its file propose the same next point.

    Each load starts from a different global torch state, as in a new process or after other
    code ran. Two loads read the same bytes: equal exactly. The original keeps its data in
    memory while Ax's JSON stores the data frame with 10 significant decimals: equal up to
    the effect of that rounding.
    """
    path = str(tmp_path / "client.json")
    client = _client(mtucb_generation_strategy(seed=0, optimizer_options=FAST_OPT))
    _run(client, 6)  # 5 Sobol + 1 BO trial
    client.save_to_json_file(path)
    torch.manual_seed(123)
    torch.rand(7)
    first = _next_point(Client.load_from_json_file(path))
    torch.manual_seed(7)
    second = _next_point(Client.load_from_json_file(path))
    torch.rand(7)
    original = _next_point(client)
    assert first == second
    assert original == pytest.approx(first, rel=0.0, abs=1e-10)


@pytest.mark.parametrize("model", ["truncated", "adaptive_truncation"])
def test_seeded_heavy_tailed_client_proposes_the_same_point_after_save_and_load(
    tmp_path: Path, model: str
) -> None:
    """Data-driven TGP-UCB / ATA-GP-UCB (kernel fit, Nyström features): as for MT-UCB."""
    path = str(tmp_path / "client.json")
    gs = heavy_tailed_generation_strategy(
        num_initial_trials=4, seed=1, model=model, optimizer_options=FAST_OPT
    )
    client = _client(gs, objective="y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(5):
            for idx, p in client.get_next_trials(max_trials=1).items():
                y = torch.sin(6 * torch.tensor(p["x0"])) - (p["x1"] - 0.5) ** 2
                client.complete_trial(idx, raw_data={"y": float(y)})
    client.save_to_json_file(path)
    torch.manual_seed(123)
    torch.rand(7)
    first = _next_point(Client.load_from_json_file(path))
    torch.manual_seed(7)
    second = _next_point(Client.load_from_json_file(path))
    original = _next_point(client)
    assert first == second
    assert original == pytest.approx(first, rel=0.0, abs=1e-10)


def test_seeded_mtucb_proposals_leave_the_global_generator_alone() -> None:
    """A seeded BO trial neither reads nor advances torch's global generator (the client has
    no ``random_seed``, so Ax does not fork the generator itself)."""
    proposals, after = [], []
    for state in (0, 1):
        gs = mtucb_generation_strategy(seed=0, optimizer_options=FAST_OPT)
        client = _client(gs, random_seed=None)
        _run(client, 5)  # Sobol
        torch.manual_seed(state)
        proposals.append(_next_point(client))  # the first BO trial
        after.append(torch.rand(3))
        torch.manual_seed(state)
        torch.testing.assert_close(after[-1], torch.rand(3), rtol=0.0, atol=0.0)
    assert proposals[0] == proposals[1]


def test_joint_surrogate_seed_is_stored_and_cloned() -> None:
    gs = mtucb_generation_strategy(num_initial_trials=3, seed=4)
    surrogate = _bo_spec_of(gs)["surrogate"]
    assert surrogate.seed == 4 and surrogate.clone_reset().seed == 4
    back = _bo_spec_of(object_from_json(object_to_json(gs)))["surrogate"]
    assert type(back) is JointSurrogate and back.seed == 4
    unseeded = _bo_spec_of(object_from_json(object_to_json(mtucb_generation_strategy())))
    assert unseeded["surrogate"].seed is None
    with pytest.raises(ValueError, match="`seed` must be a non-negative integer"):
        JointSurrogate(seed=-1)


def _bo_spec_of(gs) -> dict:
    return gs._nodes[1].generator_specs[0].generator_kwargs


def test_client_json_round_trip_multitask_gp_strategy(tmp_path: Path) -> None:
    """Ax's own acquisition on the joint model: saved after 6 trials, 2 more after loading."""
    path = str(tmp_path / "client.json")
    client = _client(multitask_gp_generation_strategy(seed=0, optimizer_options=FAST_OPT))
    _run(client, 6)
    client.save_to_json_file(path)
    loaded = Client.load_from_json_file(path)
    _run(loaded, 2)
    assert len(loaded._experiment.trials) == 8
    model = loaded._generation_strategy.adapter.generator.surrogate.model
    assert type(model) is AxPracticalMultiTaskGP and model.num_outputs == 2  # the default


def test_client_json_round_trip_heavy_tailed_with_qff(tmp_path: Path) -> None:
    """ATA-GP-UCB's QFF map is stored by its arguments and rebuilt with identical features."""
    path = str(tmp_path / "client.json")
    features = QuadratureFourierFeatures(lengthscale=[0.3, 0.4], num_nodes=5, dim=2)
    gs = heavy_tailed_generation_strategy(
        0.5, 2.0, num_initial_trials=3, seed=2, model="adaptive_truncation",
        model_options={"features": features, "constants": "authors"},
        optimizer_options=FAST_OPT,
    )
    client = _client(gs, objective="y")

    def run(c: Client, k: int) -> None:
        for _ in range(k):
            for idx, p in c.get_next_trials(max_trials=1).items():
                c.complete_trial(idx, raw_data={"y": p["x0"] - (p["x1"] - 0.5) ** 2})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(client, 4)
        client.save_to_json_file(path)
        loaded = Client.load_from_json_file(path)
        run(loaded, 2)
    gen = loaded._generation_strategy.adapter.generator
    assert type(gen._acquisition.acqf) is HeavyTailedUCB
    assert type(gen.surrogate.model) is AxAdaptiveTruncationGP
    rebuilt = gen.surrogate.surrogate_spec.model_configs[0].model_options["features"]
    assert rebuilt is not features and isinstance(rebuilt, QuadratureFourierFeatures)
    X = torch.rand(7, 2, generator=torch.Generator().manual_seed(0), dtype=DT)
    torch.testing.assert_close(rebuilt(X), features(X), rtol=0.0, atol=0.0)
    assert len(loaded._experiment.trials) == 6


def test_design_sized_strategy_round_trip_before_attaching() -> None:
    """An unattached strategy keeps its d-sized Sobol step through object_to/from_json."""
    gs = mtucb_generation_strategy(seed=0, optimizer_options=FAST_OPT)
    back = object_from_json(object_to_json(gs))
    assert type(back) is DesignSizedGenerationStrategy and back.num_initial_trials is None
    client = _client(back, d=3)  # attaching sizes it now: initial_design_size(3) = 6
    assert back.num_initial_trials == 6
    assert client._generation_strategy is back
    attached = object_from_json(object_to_json(back))
    assert type(attached) is DesignSizedGenerationStrategy and attached.num_initial_trials == 6


@pytest.mark.parametrize(
    "beta",
    [ConstantBeta(0.7), TheoremTwoBeta(b=2.0, sigma=0.1, eta=None, delta=0.05),
     TheoremThreeBeta(b=1.5, sigma=0.2, epsilon=0.3, delta=None, eta=0.01)],
)
def test_beta_schedules_round_trip(beta) -> None:
    gs = mtucb_generation_strategy(num_initial_trials=3, beta=beta)
    back = object_from_json(object_to_json(gs))
    options = back._nodes[1].generator_specs[0].generator_kwargs["botorch_acqf_options"]
    assert type(options["beta"]) is type(beta) and repr(options["beta"]) == repr(beta)
    assert vars(options["beta"]) == vars(beta)


def test_tensor_model_options_round_trip() -> None:
    gs = mtucb_generation_strategy(
        num_initial_trials=3, model="paper", model_options={"noise": torch.tensor(0.05, dtype=DT)}
    )
    back = object_from_json(object_to_json(gs))
    surrogate = back._nodes[1].generator_specs[0].generator_kwargs["surrogate"]
    noise = surrogate.surrogate_spec.model_configs[0].model_options["noise"]
    assert torch.is_tensor(noise) and noise.dtype == DT and noise.item() == 0.05


def test_unstorable_components_are_refused_clearly() -> None:
    kernel = ICMKernel(MaternKernel(), num_tasks=2)
    gs = mtucb_generation_strategy(num_initial_trials=3, model_options={"covar_module": kernel})
    with pytest.raises(JSONEncodeError, match=r"covar_module.*set_generation_strategy"):
        object_to_json(gs)
    features = NystromFeatures(MaternKernel())
    gs = heavy_tailed_generation_strategy(
        0.5, 2.0, num_initial_trials=3, model="adaptive_truncation",
        model_options={"features": features},
    )
    with pytest.raises(JSONEncodeError, match="NystromFeatures cannot be saved"):
        object_to_json(gs)


def test_sql_store_round_trip_continues_the_loop(tmp_path: Path) -> None:
    """The same registrations serve Ax's SQL store (SQLite file): save, load by name, go on."""
    from ax.api.configs import StorageConfig
    from ax.storage.sqa_store.db import (
        create_all_tables,
        get_engine,
        init_engine_and_session_factory,
    )

    url = f"sqlite:///{tmp_path / 'ax.db'}"
    init_engine_and_session_factory(url=url, force_init=True)
    create_all_tables(get_engine())
    storage = StorageConfig(url=url)
    client = Client(storage_config=storage)
    client.configure_experiment(parameters=_client_params(), name="mtucb_sql")
    client.configure_optimization(objective="-a, -b")
    client.set_generation_strategy(
        mtucb_generation_strategy(num_initial_trials=3, seed=0, optimizer_options=FAST_OPT)
    )
    _run(client, 4)
    loaded = Client.load_from_database("mtucb_sql", storage_config=storage)
    assert _bo_spec(loaded)["surrogate"].seed == 0  # the fits stay seeded
    resumed = _run(loaded, 2)
    assert all(type(a) is ScalarizedMultiTaskUCB for a in resumed)
    assert all(type(a.model) is AxPracticalMultiTaskGP for a in resumed)
    assert len(loaded._experiment.trials) == 6
