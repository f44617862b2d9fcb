"""The Ax ``Acquisition`` of both generation strategies (q = 1, the user's thresholds kept).

Re-exported by :mod:`botorch_mtucb.integrations.ax` (which registers it with Ax's storage).
"""

from __future__ import annotations

from typing import Any

from ax.generators.torch.botorch_modular.acquisition import Acquisition
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.models.model import Model

from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB

__all__ = ["UCBAcquisition"]


class UCBAcquisition(Acquisition):
    """Ax ``Acquisition`` for the package's UCBs (used by both generation strategies).

    Two differences from Ax's ``Acquisition``:

    * It gives the MT-UCB input constructor Ax's ``n_objectives x n_outputs`` objective matrix
      (``objective_weights``) and the objective thresholds as the user set them
      (``user_ref_point``, before Ax infers the missing ones). Ax passes the thresholds one
      per *objective* but the directions one per model output; the matrix links the two, so
      the user's thresholds can serve as the Chebyshev reference point.
    * It refuses ``n > 1`` arms in one generator run (a ``BatchTrial``): one acquisition is
      built per generator run, so all its arms would share one λ, while the package draws
      one λ per evaluation (as ``run_bo_loop(q=k)`` does). Several one-arm trials
      (``get_next_trials(max_trials=k)``) work: each draws its own λ and sees the others as
      pending points (GP-BUCB).
    """

    def optimize(self, n: int, *args: Any, **kwargs: Any) -> Any:
        if n != 1:
            raise ValueError(
                f"{self.botorch_acqf_class.__name__} proposes one arm per trial (q = 1), got "
                f"n={n}. Generate one-arm trials instead (client.get_next_trials(max_trials=k) "
                "treats the earlier ones as pending points)."
            )
        return super().optimize(n, *args, **kwargs)

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
        return super()._construct_botorch_acquisition(
            botorch_acqf_class=botorch_acqf_class,
            botorch_acqf_options=botorch_acqf_options,
            model=model,
        )
