"""The face ``botorch_mtucb.integrations.ax``: every public name, from its defining module, and
the one-time registration done on import.

References: the names the face exported before the package was split (written out), the
modules that define them, and the registries of BoTorch and Ax read directly.
"""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("ax")

from ax.storage.botorch_modular_registry import CLASS_TO_REGISTRY  # noqa: E402
from ax.storage.json_store.registry import (  # noqa: E402
    CORE_DECODER_REGISTRY,
    CORE_ENCODER_REGISTRY,
)
from botorch.acquisition.input_constructors import ACQF_INPUT_CONSTRUCTOR_REGISTRY  # noqa: E402

import botorch_mtucb.integrations.ax as face  # noqa: E402
from botorch_mtucb.acquisition import HeavyTailedUCB, ScalarizedMultiTaskUCB  # noqa: E402
from botorch_mtucb.integrations.ax.input_constructors import (  # noqa: E402
    register_input_constructors,
)
from tests.integrations.ax.helpers import mt_model, truncated_gp  # noqa: E402

HOMES = {
    "HEAVY_TAILED_TRANSFORMS": "strategies",
    "recommended_parameterization": "strategies",
    "AxAdaptiveTruncationGP": "models",
    "AxExactMultiTaskGP": "models",
    "AxPracticalMultiTaskGP": "models",
    "AxRobustGP": "models",
    "AxTruncatedGP": "models",
    "DesignSizedGenerationStrategy": "strategies",
    "JointSurrogate": "surrogate",
    "RobustAcquisition": "acquisition",
    "UCBAcquisition": "acquisition",
    "construct_inputs_heavy_tailed_ucb": "input_constructors",
    "construct_inputs_scalarized_mtucb": "input_constructors",
    "construct_robust_acquisition": "input_constructors",
    "heavy_tailed_generation_strategy": "strategies",
    "mtucb_generation_strategy": "strategies",
    "multitask_gp_generation_strategy": "strategies",
    "register_ax_storage": "storage",
}


def test_every_public_name_comes_from_its_defining_module() -> None:
    assert sorted(face.__all__) == sorted(HOMES)
    for name, home in HOMES.items():
        module = importlib.import_module(f"botorch_mtucb.integrations.ax.{home}")
        assert name in module.__all__, (name, home)
        obj = getattr(face, name)
        assert obj is getattr(module, name)
        if hasattr(obj, "__module__") and not isinstance(obj, list):
            assert obj.__module__ == module.__name__, (name, obj.__module__)


def test_import_registers_constructors_and_storage() -> None:
    model, ds = mt_model()
    inputs = ACQF_INPUT_CONSTRUCTOR_REGISTRY[ScalarizedMultiTaskUCB](
        model=model, training_data=ds, seed=0)
    assert sorted(inputs) == ["X_pending", "bound", "model", "scalarization"]
    inputs = ACQF_INPUT_CONSTRUCTOR_REGISTRY[HeavyTailedUCB](model=truncated_gp())
    assert sorted(inputs) == ["X_pending", "beta", "maximize", "model"]
    for base, classes in (
        ("Acquisition", [face.UCBAcquisition]),
        ("AcquisitionFunction", [ScalarizedMultiTaskUCB, HeavyTailedUCB]),
        ("Model", [face.AxExactMultiTaskGP, face.AxPracticalMultiTaskGP, face.AxTruncatedGP,
                   face.AxAdaptiveTruncationGP]),
    ):
        registry = next(v for k, v in CLASS_TO_REGISTRY.items() if k.__name__ == base)
        assert all(registry[cls] == cls.__name__ for cls in classes), base
    assert face.JointSurrogate in CORE_ENCODER_REGISTRY
    assert face.DesignSizedGenerationStrategy in CORE_ENCODER_REGISTRY
    assert "JointSurrogate" in CORE_DECODER_REGISTRY
    # Registering again is harmless (idempotent).
    registered = dict(ACQF_INPUT_CONSTRUCTOR_REGISTRY)
    register_input_constructors()
    face.register_ax_storage()
    assert dict(ACQF_INPUT_CONSTRUCTOR_REGISTRY) == registered
