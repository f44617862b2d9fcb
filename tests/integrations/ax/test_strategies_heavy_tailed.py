"""``heavy_tailed_generation_strategy``'s data-driven default in ``ax.Client`` loops.

References: the inputs and rewards reported to Ax, mapped to the unit cube by hand (linear and
log-scale parameters); the median and the median-of-means moment written out with Python loops;
the data-driven ``TruncatedGP`` built directly on the same data (same fitted posterior).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
import torch

pytest.importorskip("ax")

from ax.adapter.registry import MBM_X_trans  # noqa: E402
from ax.adapter.transforms.derelativize import Derelativize  # noqa: E402
from ax.api.client import Client  # noqa: E402
from ax.api.configs import RangeParameterConfig  # noqa: E402
from botorch.test_functions import Branin  # noqa: E402
from botorch.utils.datasets import SupervisedDataset  # noqa: E402
from gpytorch.kernels import ScaleKernel  # noqa: E402

from botorch_mtucb.acquisition import HeavyTailedUCB  # noqa: E402
from botorch_mtucb.features import NystromFeatures  # noqa: E402
from botorch_mtucb.integrations.ax import (  # noqa: E402
    AxAdaptiveTruncationGP,
    AxTruncatedGP,
    heavy_tailed_generation_strategy,
)
from botorch_mtucb.models import TruncatedGP  # noqa: E402
from tests.integrations.ax.helpers import FAST_OPT  # noqa: E402

DT = torch.float64
BRANIN = Branin().to(DT)
X0, X1 = (-5.0, 10.0), (1.0, 16.0)  # x1 on a log scale; Branin is evaluated at x1 − 1


def _branin_client(gs, seed: int = 0) -> Client:
    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name="x0", parameter_type="float", bounds=X0),
            RangeParameterConfig(name="x1", parameter_type="float", bounds=X1, scaling="log"),
        ]
    )
    client.configure_optimization(objective="-branin")
    client.set_generation_strategy(gs)
    return client


def _rewards(seed: int):
    """Branin + N(0, 1) noise; 2 % of the rewards (and trial 3) gross outliers of ±1000·|N|."""
    g = torch.Generator().manual_seed(seed)

    def reward(index: int, p: dict[str, float]) -> float:
        f = float(BRANIN(torch.tensor([[p["x0"], p["x1"] - 1.0]], dtype=DT))[0])
        z = torch.randn(3, generator=g, dtype=DT)
        outlier = index == 3 or float(torch.rand(1, generator=g, dtype=DT)) < 0.02
        return f + float(z[0]) + (1000.0 * float(z[1].abs()) * (1 if z[2] > 0 else -1)
                                  if outlier else 0.0)

    return reward


def _unit(x: list[float]) -> list[float]:
    """Brute force: UnitX after Ax's Log for x1."""
    lo, hi = math.log10(X1[0]), math.log10(X1[1])
    return [(x[0] - X0[0]) / (X0[1] - X0[0]), (math.log10(x[1]) - lo) / (hi - lo)]


def _median_of_means(y: list[float], alpha: float = 1.0, delta: float = 0.1) -> float:
    """Median of the K group means of |y − median|^{1+α} (groups s mod K), written out."""
    loc = sorted(y)[(len(y) - 1) // 2]
    K = max(1, min(math.ceil(8 * math.log(1 / delta)), len(y) // 2))
    means = []
    for k in range(K):
        group = [abs(y[s] - loc) ** (1 + alpha) for s in range(k, len(y), K)]
        means.append(sum(group) / len(group))
    return sorted(means)[(K - 1) // 2]


def test_data_driven_default_client_loop_branin_with_gross_outliers() -> None:
    """5 Sobol + 7 BO trials, minimised: each model is TruncatedGP's data-driven mode."""
    gs = heavy_tailed_generation_strategy(seed=0, model="truncated", optimizer_options=FAST_OPT)
    (config,) = _model_configs(gs)
    assert config.botorch_model_class is AxTruncatedGP and config.model_options == {}
    client, reward = _branin_client(gs), _rewards(0)
    reported: dict[int, tuple[list[float], float]] = {}
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(12):
            ((idx, p),) = client.get_next_trials(max_trials=1).items()
            gen = getattr(client._generation_strategy.adapter, "generator", None)
            if idx >= 5:  # a BO trial: the model Ax just built from trials 0..idx-1
                model, acqf = gen.surrogate.model, gen._acquisition.acqf
                assert type(model) is AxTruncatedGP and type(acqf) is HeavyTailedUCB
                X = torch.tensor([_unit(reported[i][0]) for i in range(idx)], dtype=DT)
                y = [reported[i][1] for i in range(idx)]
                # Unit cube (UnitX after Log), raw rewards with their outliers, trial order.
                torch.testing.assert_close(model.train_X, X)
                assert bool((model.train_X >= 0).all() and (model.train_X <= 1).all())
                torch.testing.assert_close(model.train_Y, torch.tensor(y, dtype=DT)[:, None])
                # Data-driven: median centring, median-of-means v, winsorised at the current
                # level, fitted kernel, practical width β = 1 (minimised: −μ + σ).
                assert model.alpha == 1.0 and model._loc == sorted(y)[(idx - 1) // 2]
                assert model.v == pytest.approx(_median_of_means(y), rel=1e-12)
                assert (model.constants, model.level, model.clip) == ("practical", "current", True)
                assert isinstance(model.covar_module, ScaleKernel)
                assert model.beta() == 1.0 and acqf._beta_float == 1.0 and not acqf.maximize
                direct = TruncatedGP(X, model.train_Y)
                Xt = torch.rand(9, 1, 2, generator=torch.Generator().manual_seed(idx), dtype=DT)
                for a, b in zip(model.mean_and_variance(Xt), direct.mean_and_variance(Xt),
                                strict=True):
                    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8)
                checked += 1
            reported[idx] = ([p["x0"], p["x1"]], reward(idx, p))
            assert X0[0] <= p["x0"] <= X0[1] and X1[0] <= p["x1"] <= X1[1]
            client.complete_trial(idx, raw_data={"branin": reported[idx][1]})
    assert checked == 7 and len(client._experiment.trials) == 12
    assert max(abs(r[1]) for r in reported.values()) > 500  # the outliers reached the model
    nodes = client.summarize()["generation_node"].tolist()
    assert all("Sobol" in g for g in nodes[:5]) and all("BoTorch" in g for g in nodes[5:])


def test_data_driven_adaptive_truncation_needs_no_features() -> None:
    """ATA-GP-UCB's data-driven mode: Nyström features on a fitted kernel, β = 1; alpha alone."""
    gs = heavy_tailed_generation_strategy(
        0.5, num_initial_trials=4, seed=1, model="adaptive_truncation",
        optimizer_options=FAST_OPT,
    )
    (config,) = _model_configs(gs)
    assert config.botorch_model_class is AxAdaptiveTruncationGP
    assert config.model_options == {"alpha": 0.5}
    client, reward = _branin_client(gs, seed=1), _rewards(1)
    y = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            ((idx, p),) = client.get_next_trials(max_trials=1).items()
            y.append(reward(idx, p))
            client.complete_trial(idx, raw_data={"branin": y[-1]})
    gen = client._generation_strategy.adapter.generator
    model, acqf = gen.surrogate.model, gen._acquisition.acqf
    assert type(model) is AxAdaptiveTruncationGP and type(acqf) is HeavyTailedUCB
    assert isinstance(model.features, NystromFeatures) and model.constants == "practical"
    assert isinstance(model.nystrom_kernel, ScaleKernel)  # fitted, not the fixed SE kernel
    assert model.alpha == 0.5  # v estimated for the given order
    assert model.v == pytest.approx(_median_of_means(y[:5], alpha=0.5), rel=1e-12)
    assert model.beta() == 1.0 and len(client._experiment.trials) == 6


def test_declared_mode_unchanged_and_bad_moments_refused() -> None:
    """Positional (alpha, v) give the paper's model options as before; v alone is refused."""
    gs = heavy_tailed_generation_strategy(1.0, 4.0, model_options={"constants": "authors"})
    (config,) = _model_configs(gs)
    assert config.model_options == {"alpha": 1.0, "v": 4.0, "constants": "authors"}
    with pytest.raises(ValueError, match="`v` .* needs its moment order `alpha`"):
        heavy_tailed_generation_strategy(v=4.0)
    with pytest.raises(ValueError, match="alpha"):
        heavy_tailed_generation_strategy(alpha=0.0)
    with pytest.raises(ValueError, match="lam"):
        heavy_tailed_generation_strategy(model="truncated", model_options={"lam": -1.0})
    # The model options build the declared / data-driven model directly (Ax's route).
    g = torch.Generator().manual_seed(0)
    X, Y = torch.rand(8, 2, generator=g, dtype=DT), torch.randn(8, 1, generator=g, dtype=DT)
    ds = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["y"])
    declared = AxTruncatedGP(**AxTruncatedGP.construct_inputs(ds, **config.model_options))
    assert (declared.v, declared.constants, declared.clip, declared._loc) == (
        4.0, "authors", False, 0.0)
    driven = AxTruncatedGP(**AxTruncatedGP.construct_inputs(ds))
    assert driven.v == pytest.approx(_median_of_means(Y[:, 0].tolist()), rel=1e-12)


def test_inputs_outside_the_unit_cube_are_refused_without_unitx() -> None:
    """Dropping UnitX leaves raw inputs in [-1, 2]^2: the default kernel refuses them."""
    gs = heavy_tailed_generation_strategy(
        num_initial_trials=3, seed=0, optimizer_options=FAST_OPT, model="truncated",
        transforms=[*MBM_X_trans, Derelativize],
    )
    client = Client(random_seed=0)
    client.configure_experiment(parameters=[
        RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(-1.0, 2.0))
        for i in range(2)
    ])
    client.configure_optimization(objective="y")
    client.set_generation_strategy(gs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            for idx, p in client.get_next_trials(max_trials=1).items():
                client.complete_trial(idx, raw_data={"y": p["x0"] + p["x1"]})
        with pytest.raises(ValueError, match="unit cube"):
            client.get_next_trials(max_trials=1)


def test_data_driven_strategy_json_round_trip(tmp_path: Path) -> None:
    """Saved after 6 trials and loaded: the loaded client keeps building the data-driven model."""
    path = str(tmp_path / "client.json")
    client, reward = _branin_client(
        heavy_tailed_generation_strategy(seed=2, model="truncated", optimizer_options=FAST_OPT),
        seed=2,
    ), _rewards(2)

    def run(c: Client, k: int) -> None:
        for _ in range(k):
            for idx, p in c.get_next_trials(max_trials=1).items():
                c.complete_trial(idx, raw_data={"branin": reward(idx, p)})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(client, 6)
        client.save_to_json_file(path)
        loaded = Client.load_from_json_file(path)
        run(loaded, 2)
    model = loaded._generation_strategy.adapter.generator.surrogate.model
    assert type(model) is AxTruncatedGP and model.constants == "practical" and model.clip
    assert model.train_Y.shape == (7, 1) and len(loaded._experiment.trials) == 8


def _model_configs(gs) -> list:
    surrogate = gs._nodes[1].generator_specs[0].generator_kwargs["surrogate"]
    return surrogate.surrogate_spec.model_configs
