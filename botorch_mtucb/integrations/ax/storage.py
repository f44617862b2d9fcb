"""Ax storage (JSON and SQL) for experiments and strategies that use the package's components.

Ax saves a generation strategy with its generator keyword arguments: the *classes* of the
BoTorch model, the acquisition function and the Ax ``Acquisition`` (encoded through Ax's
``botorch_modular_registry``) and *instances* such as the ``Surrogate`` and the
``botorch_acqf_options`` (encoded through Ax's ``CORE_ENCODER_REGISTRY`` /
``CORE_DECODER_REGISTRY``, which ``Client.save_to_json_file`` / ``Client.load_from_json_file``
and the SQL store use). :func:`~botorch_mtucb.integrations.ax.register_ax_storage` adds:

* the model classes, :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`,
  :class:`~botorch_mtucb.acquisition.HeavyTailedUCB`,
  :class:`~botorch_mtucb.integrations.ax.UCBAcquisition` and
  :class:`~botorch_mtucb.integrations.ax.RobustAcquisition`;
* :class:`~botorch_mtucb.integrations.ax.JointSurrogate` (Ax's ``surrogate_to_dict``);
* :class:`~botorch_mtucb.integrations.ax.DesignSizedGenerationStrategy` (Ax's
  ``generation_strategy_to_dict`` plus ``num_initial_trials``; ``Client.load_from_json_file``
  rebuilds a plain ``GenerationStrategy`` whose Sobol step keeps its size, and
  ``object_from_json`` a ``DesignSizedGenerationStrategy``);
* the β schedules (:class:`~botorch_mtucb.acquisition.ConstantBeta`,
  :class:`~botorch_mtucb.acquisition.TheoremTwoBeta`,
  :class:`~botorch_mtucb.acquisition.TheoremThreeBeta`) and
  :class:`~botorch_mtucb.features.QuadratureFourierFeatures`, by their constructor arguments.

Refused with a ``JSONEncodeError`` naming the workaround (save the experiment alone, build the
strategy again in code after loading), because their state is not a set of constructor
arguments: :class:`~botorch_mtucb.features.NystromFeatures` and ``torch.nn.Module`` s (kernels,
means) in the model options of a ``JointSurrogate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from ax.exceptions.storage import JSONEncodeError
from ax.generators.torch.botorch_modular.acquisition import Acquisition
from ax.storage.botorch_modular_registry import (
    register_acquisition,
    register_acquisition_function,
    register_model,
)
from ax.storage.json_store.encoders import generation_strategy_to_dict, surrogate_to_dict
from ax.storage.json_store.registry import CORE_DECODER_REGISTRY, CORE_ENCODER_REGISTRY

from botorch_mtucb.acquisition import (
    ConstantBeta,
    HeavyTailedUCB,
    ScalarizedMultiTaskUCB,
    TheoremThreeBeta,
    TheoremTwoBeta,
)
from botorch_mtucb.features import NystromFeatures, QuadratureFourierFeatures
from botorch_mtucb.features.quadrature_fourier import MAX_QFF_FEATURES
from botorch_mtucb.integrations.ax.acquisition import RobustAcquisition, UCBAcquisition
from botorch_mtucb.integrations.ax.models import (
    AxAdaptiveTruncationGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxRobustGP,
    AxTruncatedGP,
)
from botorch_mtucb.integrations.ax.strategies import DesignSizedGenerationStrategy
from botorch_mtucb.integrations.ax.surrogate import JointSurrogate
from botorch_mtucb.models import AdaptiveTruncationGP, ExactMultiTaskGP, RobustGP, TruncatedGP

__all__ = ["STORAGE_DECODERS", "STORAGE_ENCODERS", "register_ax_storage"]

_WORKAROUND = (
    "Save the experiment alone (ax.storage.json_store.save.save_experiment) and build the "
    "generation strategy again in code after loading (client.set_generation_strategy(...))."
)

#: Constructor arguments stored as same-named attributes (what the JSON holds).
_INIT_ARGS: dict[type, tuple[str, ...]] = {
    ConstantBeta: ("value",),
    TheoremTwoBeta: ("b", "sigma", "eta", "delta"),
    TheoremThreeBeta: ("b", "sigma", "epsilon", "delta", "eta"),
}


def _init_args_to_dict(obj: Any) -> dict[str, Any]:
    """``{"__type": class name, **constructor arguments}`` of a β schedule."""
    return {"__type": type(obj).__name__, **{k: getattr(obj, k) for k in _INIT_ARGS[type(obj)]}}


def _qff_to_dict(obj: QuadratureFourierFeatures) -> dict[str, Any]:
    """A QFF map is determined by its lengthscales, node count and dimension."""
    num_features = 2 * obj.num_nodes**obj.dim
    return {
        "__type": "QuadratureFourierFeatures",
        "lengthscale": obj.lengthscale.tolist(),
        "num_nodes": obj.num_nodes,
        "dim": obj.dim,
        "max_features": max(MAX_QFF_FEATURES, num_features),
    }


def _refuse_nystrom_features(obj: NystromFeatures) -> dict[str, Any]:
    raise JSONEncodeError(
        "NystromFeatures cannot be saved to JSON: the map holds a data-dependent dictionary, "
        f"not constructor arguments. Use QuadratureFourierFeatures, or: {_WORKAROUND}"
    )


def _joint_surrogate_to_dict(surrogate: JointSurrogate) -> dict[str, Any]:
    """Ax's ``surrogate_to_dict``, after checking that the model options can be stored."""
    for config in surrogate.surrogate_spec.model_configs:
        bad = [k for k, v in config.model_options.items() if isinstance(v, torch.nn.Module)]
        if bad:
            raise JSONEncodeError(
                f"The model options {bad} of the JointSurrogate ({config.name}) are torch "
                "modules (e.g. a covar_module instance), which Ax cannot store as JSON. "
                f"Leave them at the model's defaults, or: {_WORKAROUND}"
            )
    return surrogate_to_dict(surrogate)


def _design_sized_to_dict(strategy: DesignSizedGenerationStrategy) -> dict[str, Any]:
    """Ax's ``generation_strategy_to_dict`` plus the design size (``None`` until attached)."""
    return {
        **generation_strategy_to_dict(strategy),
        "num_initial_trials": strategy.num_initial_trials,
    }


def _design_sized_from_json(
    *,
    name: str,
    nodes: list[Any],
    num_initial_trials: int | None = None,
    curr_node_name: str | None = None,
    db_id: int | None = None,
    experiment: Any = None,
    generator_runs: list[Any] | None = None,
    **ignored: Any,
) -> DesignSizedGenerationStrategy:
    """Inverse of :func:`_design_sized_to_dict` (mirrors Ax's ``generation_strategy_from_json``)."""
    gs = DesignSizedGenerationStrategy(name=name, nodes=nodes)
    gs.num_initial_trials = num_initial_trials  # before attaching: no second resize
    for node in gs._nodes:
        if node.name == curr_node_name:
            gs._curr = node
            break
    gs._db_id = db_id
    gs._experiment = experiment
    gs._generator_runs = list(generator_runs or [])
    return gs


#: JSON encoders added to Ax's ``CORE_ENCODER_REGISTRY`` (instance type -> dict).
STORAGE_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {
    JointSurrogate: _joint_surrogate_to_dict,
    DesignSizedGenerationStrategy: _design_sized_to_dict,
    QuadratureFourierFeatures: _qff_to_dict,
    NystromFeatures: _refuse_nystrom_features,
    **{cls: _init_args_to_dict for cls in _INIT_ARGS},
}

#: JSON decoders added to Ax's ``CORE_DECODER_REGISTRY`` (``__type`` -> class or factory).
STORAGE_DECODERS: dict[str, Any] = {
    "JointSurrogate": JointSurrogate,
    "DesignSizedGenerationStrategy": _design_sized_from_json,
    "QuadratureFourierFeatures": QuadratureFourierFeatures,
    **{cls.__name__: cls for cls in _INIT_ARGS},
}

_MODEL_CLASSES = (
    ExactMultiTaskGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    TruncatedGP,
    AxTruncatedGP,
    AdaptiveTruncationGP,
    AxAdaptiveTruncationGP,
    RobustGP,
    AxRobustGP,
)


def register_ax_storage(acquisition_classes: tuple[type[Acquisition], ...] = ()) -> None:
    """Register the package's classes with Ax's JSON (and SQL) storage; idempotent.

    ``import botorch_mtucb.integrations.ax`` calls it, so an experiment saved with these
    strategies loads once that module is imported. Call it again only to register further
    Ax ``Acquisition`` subclasses of your own.

    Args:
        acquisition_classes: Ax ``Acquisition`` subclasses to register besides
            :class:`~botorch_mtucb.integrations.ax.UCBAcquisition` and
            :class:`~botorch_mtucb.integrations.ax.RobustAcquisition`.

    Example:
        >>> from ax.storage.json_store.registry import CORE_ENCODER_REGISTRY
        >>> from botorch_mtucb.integrations.ax import JointSurrogate, register_ax_storage
        >>> register_ax_storage()
        >>> JointSurrogate in CORE_ENCODER_REGISTRY
        True
    """
    for model_class in _MODEL_CLASSES:
        register_model(model_class)
    for acqf_class in (ScalarizedMultiTaskUCB, HeavyTailedUCB):
        register_acquisition_function(acqf_class)
    for acq_class in (UCBAcquisition, RobustAcquisition, *acquisition_classes):
        register_acquisition(acq_class)
    CORE_ENCODER_REGISTRY.update(STORAGE_ENCODERS)
    CORE_DECODER_REGISTRY.update(STORAGE_DECODERS)
