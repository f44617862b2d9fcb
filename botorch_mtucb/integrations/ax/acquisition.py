"""The Ax ``Acquisition`` classes of the package: one arm per trial, seeded per trial.

:class:`UCBAcquisition` builds the package's UCBs through their input constructors;
:class:`RobustAcquisition` builds the robust default's acquisition
(:func:`~botorch_mtucb.integrations.ax.input_constructors.construct_robust_acquisition`).
"""

from __future__ import annotations

from typing import Any

from ax.generators.torch.botorch_modular.acquisition import Acquisition
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.models.model import Model

from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB
from botorch_mtucb.integrations.ax.input_constructors import construct_robust_acquisition
from botorch_mtucb.integrations.ax.objective import (
    ACQUISITION_STREAM,
    OPTIMIZE_STREAM,
    seeded_trial,
)

__all__ = ["RobustAcquisition", "UCBAcquisition"]


class UCBAcquisition(Acquisition):
    """Ax ``Acquisition`` for :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` and
    :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` (``acquisition_class`` of the helpers).

    Differs from Ax's ``Acquisition`` in three ways:

    * For ``ScalarizedMultiTaskUCB`` it adds two keyword arguments for the input constructor:
      ``objective_weights``, Ax's ``n_objectives x n`` objective matrix (which output each
      objective threshold belongs to: Ax gives thresholds per objective and directions per
      output), and ``user_ref_point``, the ``n_objectives`` thresholds as the user set them
      (NaN where not), before Ax infers the missing ones.
    * :meth:`optimize` refuses ``n > 1`` arms in one generator run: all arms of one run would
      share one acquisition, hence one λ, while MT-UCB draws one λ per evaluation. Several
      one-arm trials (``client.get_next_trials(max_trials=k)``) each draw their own λ and see
      the others as pending points (GP-BUCB).
    * A ``seed`` in ``botorch_acqf_options`` (an integer or ``None``; passed on to the input
      constructor of ``ScalarizedMultiTaskUCB`` only, which draws λ from it) seeds the
      trial: building the acquisition (conditioning on pending points, which may redraw
      random features) and :meth:`optimize` (``optimize_acqf``'s raw samples and initial
      conditions) run on torch's generator seeded from ``(seed, t)``, t = observed +
      pending points (the λ stream's counter), inside ``torch.random.fork_rng``. What a
      trial proposes then depends on the seed and the data only, so a saved and loaded
      strategy proposes what the original would have; the caller's random stream is left
      as it was.

    Example:
        >>> from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
        >>> from ax.generators.torch.botorch_modular.utils import ModelConfig
        >>> from botorch_mtucb.acquisition import HeavyTailedUCB
        >>> from botorch_mtucb.integrations.ax import AxTruncatedGP, UCBAcquisition
        >>> generator_kwargs = {  # the BO step of a GenerationStrategy (Generators.BOTORCH_MODULAR)
        ...     "surrogate_spec": SurrogateSpec(model_configs=[ModelConfig(
        ...         botorch_model_class=AxTruncatedGP, input_transform_classes=None)]),
        ...     "botorch_acqf_class": HeavyTailedUCB,
        ...     "acquisition_class": UCBAcquisition,
        ... }
    """

    def optimize(self, n: int, *args: Any, **kwargs: Any) -> Any:
        """Ax's ``optimize`` for ``n = 1`` arm, seeded from ``(seed, t)`` when a seed is set.

        Args:
            n: Number of arms; must be 1.
            *args: Ax's ``optimize`` arguments.
            **kwargs: Ax's ``optimize`` keyword arguments.

        Returns:
            Ax's ``(candidates 1 x d, acquisition values, weights)``.

        Raises:
            ValueError: for ``n != 1``.
        """
        if n != 1:
            raise ValueError(
                f"{self.botorch_acqf_class.__name__} proposes one arm per trial (q = 1), got "
                f"n={n}. Generate one-arm trials instead (client.get_next_trials(max_trials=k) "
                "treats the earlier ones as pending points)."
            )
        with seeded_trial(self._seed(), self._num_points(), OPTIMIZE_STREAM):
            return super().optimize(n, *args, **kwargs)

    def _seed(self) -> int | None:
        """The ``seed`` of ``botorch_acqf_options`` (``None`` when not set)."""
        seeds = {(opts or {}).get("seed") for _, opts in self.botorch_acqf_classes_with_options}
        return seeds.pop() if len(seeds) == 1 else None

    def _num_points(self) -> int:
        """t = observed rows of the surrogate's data + pending points (the λ stream's t)."""
        observed = sum(ds.Y.shape[0] for ds in self.surrogate.training_data)
        return observed + (0 if self.X_pending is None else self.X_pending.shape[0])

    def _update_objective_thresholds(self, torch_opt_config: Any) -> None:
        # Ax's thresholds as the user set them (NaN where not), before Ax infers the others.
        user = self._objective_thresholds
        self._user_objective_thresholds = None if user is None else user.clone()
        super()._update_objective_thresholds(torch_opt_config)

    def _construct_botorch_acquisition(
        self,
        botorch_acqf_class: type[AcquisitionFunction],
        botorch_acqf_options: dict[str, Any],
        model: Model,
    ) -> AcquisitionFunction:
        if issubclass(botorch_acqf_class, ScalarizedMultiTaskUCB):
            botorch_acqf_options = {
                "objective_weights": self._objective_weights,
                "user_ref_point": getattr(self, "_user_objective_thresholds", None),
                **botorch_acqf_options,
            }
        else:  # the seed is this class's option; the other input constructors take none
            botorch_acqf_options = {k: v for k, v in botorch_acqf_options.items() if k != "seed"}
        with seeded_trial(self._seed(), self._num_points(), ACQUISITION_STREAM):
            return super()._construct_botorch_acquisition(
                botorch_acqf_class=botorch_acqf_class,
                botorch_acqf_options=botorch_acqf_options,
                model=model,
            )


class RobustAcquisition(UCBAcquisition):
    """Ax ``Acquisition`` of the robust default (``acquisition_class`` of
    ``heavy_tailed_generation_strategy(model="robust")``).

    Builds :func:`~botorch_mtucb.integrations.ax.input_constructors.construct_robust_acquisition`
    on the fitted model (e.g. :class:`~botorch_mtucb.integrations.ax.models.AxRobustGP`) with
    Ax's objective direction (its ``ScalarizedPosteriorTransform``) and pending points
    (``X_pending``), instead of the BoTorch input constructor of ``botorch_acqf_class``:
    ``LogExpectedImprovement``'s would take the best *observed* reading, possibly a corrupted
    one, as the incumbent. ``botorch_acqf_options`` may hold ``kind`` (``"logei"`` /
    ``"ucb"``; default
    :data:`~botorch_mtucb.acquisition.robust.DEFAULT_ROBUST_ACQUISITION`), ``beta`` (UCB) and
    ``seed``; ``botorch_acqf_class`` must be the class that kind builds
    (``LogExpectedImprovement`` / :class:`~botorch_mtucb.acquisition.HeavyTailedUCB`). One arm
    per trial and the per-trial seeding as :class:`UCBAcquisition`.

    Example:
        >>> from botorch.acquisition.analytic import LogExpectedImprovement
        >>> from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
        >>> from ax.generators.torch.botorch_modular.utils import ModelConfig
        >>> from botorch_mtucb.integrations.ax.models import AxRobustGP
        >>> generator_kwargs = {  # the BO step of a GenerationStrategy (Generators.BOTORCH_MODULAR)
        ...     "surrogate_spec": SurrogateSpec(model_configs=[ModelConfig(
        ...         botorch_model_class=AxRobustGP, input_transform_classes=None)]),
        ...     "botorch_acqf_class": LogExpectedImprovement,
        ...     "botorch_acqf_options": {"kind": "logei"},
        ...     "acquisition_class": RobustAcquisition,
        ... }
    """

    def _construct_botorch_acquisition(
        self,
        botorch_acqf_class: type[AcquisitionFunction],
        botorch_acqf_options: dict[str, Any],
        model: Model,
    ) -> AcquisitionFunction:
        _, posterior_transform = self.get_botorch_objective_and_transform(
            botorch_acqf_class=botorch_acqf_class,
            model=model,
            objective_weights=self._objective_weights,
            outcome_constraints=self._outcome_constraints,
            X_observed=self.X_observed,
        )
        options = {k: v for k, v in botorch_acqf_options.items() if k != "seed"}
        with seeded_trial(self._seed(), self._num_points(), ACQUISITION_STREAM):
            acqf = construct_robust_acquisition(
                model,
                X_pending=self.X_pending,
                posterior_transform=posterior_transform,
                constraints_tuple=self._outcome_constraints,
                **options,
            )
        if not isinstance(acqf, botorch_acqf_class):
            raise ValueError(
                f"`botorch_acqf_class` is {botorch_acqf_class.__name__}, but the robust "
                f"acquisition of kind {options.get('kind')!r} is {type(acqf).__name__}; pass "
                "the class of that kind."
            )
        return acqf
