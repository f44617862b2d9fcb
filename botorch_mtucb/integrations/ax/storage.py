"""Saving Ax experiments and generation strategies that use the package's components.

Ax stores a generation strategy as JSON: its nodes hold the generator keyword arguments, i.e.
the *classes* of the BoTorch model, acquisition function and Ax ``Acquisition``, the
``Surrogate`` instance and the ``botorch_acqf_options``. Ax encodes classes through the
registries of ``ax/storage/botorch_modular_registry.py`` and instances through the JSON
``CORE_ENCODER_REGISTRY`` / ``CORE_DECODER_REGISTRY`` (``ax/storage/json_store/registry.py``),
which both ``Client.save_to_json_file`` / ``Client.load_from_json_file`` and the SQL store use
by default. :func:`register_ax_storage` (called when ``botorch_mtucb.integrations.ax`` is
imported, so import it before loading a snapshot) adds:

* the model classes (Ax's ``register_model``), :class:`ScalarizedMultiTaskUCB` and
  :class:`HeavyTailedUCB` (``register_acquisition_function``) and ``UCBAcquisition``
  (``register_acquisition``);
* :class:`JointSurrogate` (Ax's ``surrogate_to_dict``; decoded by its keyword arguments);
* :class:`DesignSizedGenerationStrategy` (Ax's ``generation_strategy_to_dict`` plus
  ``num_initial_trials``). ``Client.load_from_json_file`` rebuilds every strategy as a plain
  ``GenerationStrategy`` (Ax's ``generation_strategy_from_json`` ignores the saved type); the
  Sobol step keeps the size it got when the experiment was attached, so the loop continues
  unchanged. ``object_from_json`` rebuilds a ``DesignSizedGenerationStrategy``;
* the β schedules (:class:`ConstantBeta`, :class:`TheoremTwoBeta`, :class:`TheoremThreeBeta`)
  and :class:`QuadratureFourierFeatures`, encoded by their constructor arguments.

Refused with a clear error (``JSONEncodeError``), because their state is not a set of
constructor arguments: :class:`NystromFeatures` (a data-dependent dictionary) and
``torch.nn.Module`` s (kernels, means) in the model options of a :class:`JointSurrogate`. The
workaround is to save without them (the experiment alone: ``save_experiment``) and build the
strategy again in code after loading (``client.set_generation_strategy(...)``).
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

from botorch_mtucb.acquisition.beta import ConstantBeta, TheoremTwoBeta
from botorch_mtucb.acquisition.beta_nystrom import TheoremThreeBeta
from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.features.quadrature_fourier import MAX_QFF_FEATURES, QuadratureFourierFeatures
from botorch_mtucb.heavy_tailed.adaptive import AdaptiveTruncationGP
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.integrations.ax.models import (
    AxAdaptiveTruncationGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxTruncatedGP,
)
from botorch_mtucb.integrations.ax.strategy import DesignSizedGenerationStrategy
from botorch_mtucb.integrations.ax.surrogate import JointSurrogate
from botorch_mtucb.multitask.exact import ExactMultiTaskGP

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
)


def register_ax_storage(acquisition_classes: tuple[type[Acquisition], ...] = ()) -> None:
    """Register the package's classes with Ax's JSON (and SQL) storage; idempotent.

    Args:
        acquisition_classes: Ax ``Acquisition`` subclasses to register as well
            (``botorch_mtucb.integrations.ax`` passes ``UCBAcquisition``).
    """
    for model_class in _MODEL_CLASSES:
        register_model(model_class)
    for acqf_class in (ScalarizedMultiTaskUCB, HeavyTailedUCB):
        register_acquisition_function(acqf_class)
    for acq_class in acquisition_classes:
        register_acquisition(acq_class)
    CORE_ENCODER_REGISTRY.update(STORAGE_ENCODERS)
    CORE_DECODER_REGISTRY.update(STORAGE_DECODERS)
