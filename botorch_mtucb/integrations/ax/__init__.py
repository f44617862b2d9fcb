"""Ax integration: MT-UCB and TGP-UCB / ATA-GP-UCB as Ax generation strategies.

Gives one-call ``GenerationStrategy`` helpers (a Sobol design, then the package's model and
acquisition in Ax's modular BoTorch generator): :func:`mtucb_generation_strategy` (paper 000,
several objectives), :func:`multitask_gp_generation_strategy` (Ax's acquisition on the joint
multi-task GP) and :func:`heavy_tailed_generation_strategy` (paper 001, one objective); and
the pieces they are built from: the Ax-facing models, :class:`JointSurrogate`,
:class:`UCBAcquisition` and the BoTorch input constructors; and
:func:`recommended_parameterization`, the model's best point without Ax's fallback to the best
raw reading. Importing this package registers
the input constructors with BoTorch and the package's classes with Ax's storage.

Needs Ax: ``pip install 'botorch-mtucb[ax]'`` (``ax-platform>=1.3.1``).

Example:
    >>> from ax.api.client import Client
    >>> from ax.api.configs import RangeParameterConfig
    >>> from botorch.test_functions.multi_objective import BraninCurrin
    >>> import torch
    >>> from botorch_mtucb.integrations.ax import mtucb_generation_strategy
    >>> problem = BraninCurrin()
    >>> client = Client(random_seed=0)
    >>> client.configure_experiment(parameters=[
    ...     RangeParameterConfig(name=n, parameter_type="float", bounds=(0.0, 1.0))
    ...     for n in ("x0", "x1")])
    >>> client.configure_optimization(objective="-branin, -currin")
    >>> client.set_generation_strategy(mtucb_generation_strategy(seed=0))
    >>> for _ in range(7):
    ...     for index, p in client.get_next_trials(max_trials=1).items():
    ...         y = problem(torch.tensor([[p["x0"], p["x1"]]]))[0]
    ...         _ = client.complete_trial(index, raw_data={"branin": float(y[0]),
    ...                                                    "currin": float(y[1])})
    >>> len(client.get_pareto_frontier(use_model_predictions=False)) >= 1
    True
"""

try:
    import ax  # noqa: F401  (the optional dependency; a clear message if it is missing)
except ImportError as err:  # pragma: no cover - exercised only without Ax
    raise ImportError(
        "botorch_mtucb.integrations.ax needs Ax (ax-platform>=1.3.1): "
        "pip install 'botorch-mtucb[ax]'."
    ) from err

from botorch_mtucb.integrations.ax.acquisition import RobustAcquisition, UCBAcquisition
from botorch_mtucb.integrations.ax.input_constructors import (
    construct_inputs_heavy_tailed_ucb,
    construct_inputs_scalarized_mtucb,
    construct_robust_acquisition,
    register_input_constructors,
)
from botorch_mtucb.integrations.ax.models import (
    AxAdaptiveTruncationGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxRobustGP,
    AxTruncatedGP,
)
from botorch_mtucb.integrations.ax.storage import register_ax_storage
from botorch_mtucb.integrations.ax.strategies import (
    HEAVY_TAILED_TRANSFORMS,
    DesignSizedGenerationStrategy,
    heavy_tailed_generation_strategy,
    mtucb_generation_strategy,
    multitask_gp_generation_strategy,
    recommended_parameterization,
)
from botorch_mtucb.integrations.ax.surrogate import JointSurrogate

__all__ = [
    "HEAVY_TAILED_TRANSFORMS",
    "AxAdaptiveTruncationGP",
    "AxExactMultiTaskGP",
    "AxPracticalMultiTaskGP",
    "AxRobustGP",
    "AxTruncatedGP",
    "DesignSizedGenerationStrategy",
    "JointSurrogate",
    "RobustAcquisition",
    "UCBAcquisition",
    "construct_inputs_heavy_tailed_ucb",
    "construct_inputs_scalarized_mtucb",
    "construct_robust_acquisition",
    "heavy_tailed_generation_strategy",
    "mtucb_generation_strategy",
    "multitask_gp_generation_strategy",
    "recommended_parameterization",
    "register_ax_storage",
]

register_input_constructors()
register_ax_storage()
