"""The generation strategies' two steps: a Sobol design sized by d, then the BoTorch step.

A ``GenerationStrategy`` is built before it sees the experiment, so the number of Sobol
trials cannot be computed from the search space at construction. With
``num_initial_trials=None`` the helpers return a :class:`DesignSizedGenerationStrategy`: its
Sobol step is sized to :func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2·d)
trials (d = the number of tunable parameters) the first time an experiment is attached to
it (``client.set_generation_strategy`` or the first ``gen``), and the BO step starts once
half of them (at least one) have data, as with a given ``num_initial_trials``.
"""

from __future__ import annotations

from typing import Any

from ax.adapter.registry import Generators
from ax.core.experiment import Experiment
from ax.generation_strategy.generation_node import GenerationStep
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generation_strategy.transition_criterion import MinTrials

from botorch_mtucb.utils.initial_design import MIN_INITIAL_DESIGN, initial_design_size

__all__ = ["DesignSizedGenerationStrategy", "check_common", "two_step_strategy"]


class DesignSizedGenerationStrategy(GenerationStrategy):
    """A two-step strategy whose Sobol step gets ``initial_design_size(d)`` trials.

    The size is set once, when the first experiment is attached (every path Ax takes to
    attach one assigns ``_experiment``); ``initial_design_size`` is recorded in
    :attr:`num_initial_trials`.
    """

    num_initial_trials: int | None = None

    @property
    def _experiment(self) -> Experiment | None:  # type: ignore[override]
        return self.__dict__.get("_attached_experiment")

    @_experiment.setter
    def _experiment(self, experiment: Experiment | None) -> None:
        self.__dict__["_attached_experiment"] = experiment
        if experiment is not None and self.num_initial_trials is None:
            d = len(experiment.search_space.tunable_parameters)
            self.num_initial_trials = initial_design_size(d)
            _resize_first_step(self, self.num_initial_trials)


def _resize_first_step(strategy: GenerationStrategy, size: int) -> None:
    """Set the Sobol step's trial count to ``size`` and its data requirement to size // 2."""
    node = strategy._nodes[0]
    for crit in node.transition_criteria:
        if isinstance(crit, MinTrials):
            observed = getattr(crit, "count_only_trials_with_data", False)
            crit.threshold = max(1, size // 2) if observed else size
    for crit in node.pausing_criteria:
        if hasattr(crit, "threshold"):
            crit.threshold = size


def check_common(
    num_initial_trials: int | None, seed: int | None, optimizer_options: dict[str, Any] | None
) -> None:
    """Validate the helpers' shared arguments (``num_initial_trials=None``: sized by d)."""
    if num_initial_trials is not None and (
        isinstance(num_initial_trials, bool)
        or not isinstance(num_initial_trials, int)
        or num_initial_trials < 1
    ):
        raise ValueError(
            "`num_initial_trials` must be a positive integer (the model needs data) or None "
            f"(initial_design_size(d)), got {num_initial_trials!r}."
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"`seed` must be a non-negative integer or None, got {seed!r}.")
    if optimizer_options is not None and not isinstance(optimizer_options, dict):
        raise ValueError(
            f"`optimizer_options` must be a dict or None, got {type(optimizer_options).__name__}."
        )


def two_step_strategy(
    name: str,
    num_initial_trials: int | None,
    seed: int | None,
    generator_kwargs: dict[str, Any],
    optimizer_options: dict[str, Any] | None,
    transforms: list[Any] | None,
) -> GenerationStrategy:
    """Sobol (``num_initial_trials``, or sized by d when ``None``), then BOTORCH_MODULAR."""
    generator_kwargs = {**generator_kwargs, "fit_tracking_metrics": False}
    if optimizer_options:
        generator_kwargs["default_model_gen_options"] = {
            "optimizer_kwargs": dict(optimizer_options)
        }
    if transforms is not None:
        generator_kwargs["transforms"] = list(transforms)
    size = MIN_INITIAL_DESIGN if num_initial_trials is None else num_initial_trials
    nodes = [
        GenerationStep(
            generator=Generators.SOBOL,
            num_trials=size,
            min_trials_observed=max(1, size // 2),
            generator_kwargs={"seed": seed},
            should_deduplicate=True,
        ),
        GenerationStep(
            generator=Generators.BOTORCH_MODULAR,
            num_trials=-1,
            generator_kwargs=generator_kwargs,
        ),
    ]
    if num_initial_trials is None:
        return DesignSizedGenerationStrategy(name=name, nodes=nodes)
    return GenerationStrategy(name=name, nodes=nodes)
