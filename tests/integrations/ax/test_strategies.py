"""The generation-strategy helpers: their two steps and the arguments they refuse.

Reference: the nodes of the returned ``GenerationStrategy`` read back from Ax (generator,
trial counts, the generator keyword arguments handed to the BoTorch step).
"""

from __future__ import annotations

import pytest

pytest.importorskip("ax")

from ax.generators.torch.botorch_modular.surrogate import Surrogate  # noqa: E402

from botorch_mtucb.acquisition import HeavyTailedUCB, ScalarizedMultiTaskUCB  # noqa: E402
from botorch_mtucb.integrations.ax import (  # noqa: E402
    HEAVY_TAILED_TRANSFORMS,
    AxPracticalMultiTaskGP,
    AxTruncatedGP,
    DesignSizedGenerationStrategy,
    JointSurrogate,
    UCBAcquisition,
    heavy_tailed_generation_strategy,
    mtucb_generation_strategy,
    multitask_gp_generation_strategy,
)


def _bo_kwargs(gs):
    sobol, bo = gs._nodes
    return sobol, bo.generator_specs[0].generator_kwargs


def test_helpers_build_sobol_then_botorch_modular() -> None:
    gs = mtucb_generation_strategy(num_initial_trials=6, seed=3,
                                   optimizer_options={"num_restarts": 2})
    assert isinstance(gs, DesignSizedGenerationStrategy) and gs.name == "Sobol+MT-UCB"
    assert gs.num_initial_trials == 6  # the given size, kept when attached
    sobol, kw = _bo_kwargs(gs)
    assert sobol.generator_specs[0].generator_kwargs == {"seed": 3}
    assert isinstance(kw["surrogate"], JointSurrogate)
    config = kw["surrogate"].surrogate_spec.model_configs[0]
    assert config.botorch_model_class is AxPracticalMultiTaskGP and config.name == "MT-KB"
    assert kw["botorch_acqf_class"] is ScalarizedMultiTaskUCB
    assert kw["acquisition_class"] is UCBAcquisition and kw["fit_tracking_metrics"] is False
    assert kw["botorch_acqf_options"] == {"scalarization": "chebyshev", "bound": "directional",
                                          "seed": 3, "reference": "data"}
    assert kw["default_model_gen_options"] == {"optimizer_kwargs": {"num_restarts": 2}}
    gs = multitask_gp_generation_strategy()
    assert isinstance(gs, DesignSizedGenerationStrategy) and gs.num_initial_trials is None
    _, kw = _bo_kwargs(gs)
    assert type(kw["surrogate"]) is JointSurrogate and isinstance(kw["surrogate"], Surrogate)
    assert "botorch_acqf_class" not in kw  # Ax chooses the acquisition
    gs = heavy_tailed_generation_strategy(1.0, 4.0, num_initial_trials=5)
    assert gs.name == "Sobol+TGP-UCB"
    _, kw = _bo_kwargs(gs)
    assert type(kw["surrogate"]) is JointSurrogate and kw["surrogate"].seed is None
    config = kw["surrogate"].surrogate_spec.model_configs[0]
    assert config.botorch_model_class is AxTruncatedGP
    assert config.model_options == {"alpha": 1.0, "v": 4.0}
    assert config.input_transform_classes is None  # the inputs arrive through UnitX
    assert kw["botorch_acqf_class"] is HeavyTailedUCB
    assert kw["transforms"] == HEAVY_TAILED_TRANSFORMS


def test_strategies_refuse_bad_arguments() -> None:
    with pytest.raises(ValueError, match="num_initial_trials"):
        mtucb_generation_strategy(num_initial_trials=0)
    with pytest.raises(ValueError, match="scalarization"):
        mtucb_generation_strategy(scalarization="pareto")
    with pytest.raises(ValueError, match="bound"):
        mtucb_generation_strategy(bound="frobenius")
    with pytest.raises(ValueError, match="`model` must be 'practical' or 'paper'"):
        mtucb_generation_strategy(model="sparse")
    with pytest.raises(ValueError, match="`reference` must be 'data' or 'thresholds'"):
        mtucb_generation_strategy(reference="nadir")
    with pytest.raises(ValueError, match="`beta` must be"):
        mtucb_generation_strategy(beta=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        heavy_tailed_generation_strategy(alpha=1.5, v=1.0)
    with pytest.raises(ValueError, match="features"):
        heavy_tailed_generation_strategy(alpha=1.0, v=1.0, model="adaptive_truncation")


def test_strategies_refuse_bad_model_and_optimizer_options_when_built() -> None:
    """Options the BO step would refuse after the Sobol trials are refused at construction,
    each error naming the option."""
    cases = [
        (lambda: heavy_tailed_generation_strategy(model="truncated", model_options={"foo": 1}),
         ValueError, r"keys \['foo'\] are not arguments of AxTruncatedGP"),
        (lambda: heavy_tailed_generation_strategy(1.0, 1.0, model_options={"constants": "x"}),
         ValueError, "`constants`"),
        (lambda: heavy_tailed_generation_strategy(model_options={"threshold": -1.0}),
         ValueError, r"`model_options\['threshold'\]`"),
        (lambda: heavy_tailed_generation_strategy(model_options={"threshold": "x"}),
         ValueError, r"`model_options\['threshold'\]`"),
        (lambda: mtucb_generation_strategy(model_options={"foo": 1}),
         ValueError, "not arguments of AxPracticalMultiTaskGP"),
        (lambda: multitask_gp_generation_strategy(model="paper", model_options={"independent": 1}),
         ValueError, "not arguments of AxExactMultiTaskGP"),
        (lambda: mtucb_generation_strategy(optimizer_options={"num_restarts": 0}),
         ValueError, r"`optimizer_options\['num_restarts'\]`"),
        (lambda: mtucb_generation_strategy(beta="x"), TypeError, "`beta`"),
        (lambda: heavy_tailed_generation_strategy(beta="x"), TypeError, "`beta`"),
    ]
    for build, error, match in cases:
        with pytest.raises(error, match=match):
            build()
    gs = mtucb_generation_strategy(model_options={"independent": True}, beta=2)
    assert _bo_kwargs(gs)[1]["botorch_acqf_options"]["beta"] == 2.0
