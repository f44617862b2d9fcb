"""One joint multi-task model in Ax, also when some metric values are missing.

Ax builds one dataset per metric and drops the rows whose value is NaN or missing; once the
metrics' inputs differ it would fit a ``ModelListGP`` of independent models, which loses the
coupling Γ of the objectives and which the MT-UCB acquisition cannot use as one joint model.
:class:`~botorch_mtucb.integrations.ax.JointSurrogate` merges the datasets into one block
design first (Ax's ``convert_to_block_design(force=True)``: the inputs at which every metric
was observed), so the surrogate stays one
:class:`~botorch_mtucb.integrations.ax.AxExactMultiTaskGP` (or a subclass). With a ``seed``,
the fit of the trial after t observations runs on torch's generator seeded from (seed, t)
(:func:`~botorch_mtucb.integrations.ax.objective.seeded_trial`), so a fit depends on the data
and the seed only, also after the strategy is saved and loaded.

Its best in-sample point (what
:func:`~botorch_mtucb.integrations.ax.strategies.recommended_parameterization` returns, and
Ax's ``client.get_best_parameterization()`` once the model's cross-validation is judged
adequate, the best raw reading otherwise) follows
:func:`~botorch_mtucb.models.recommend` for the package's single-output models: the
evaluated point with the best posterior mean among those with a trusted reading.

Ax's cross-validation (``refit_on_cv=False``) builds each fold's model on the other readings
and loads the full model's ``state_dict`` into it, so the fold keeps the full model's
hyperparameters. The heavy-tailed models' state also carries their training data and what
they derived from it (screened targets, centre, truncation level), so a plain load would put
the held-out reading back in and every fold would predict in-sample. For them
:class:`JointSurrogate` loads only the hyperparameters, the kernel's and the regulariser λ:
each fold model keeps the fold's readings, screened and centred on their own, a true
leave-one-out with the full model's hyperparameters, as Ax's own models get.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import torch
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig, convert_to_block_design
from ax.generators.utils import filter_constraints_and_fixed_features
from torch import Tensor

from botorch_mtucb.heavy_tailed.base import HeavyTailedModel
from botorch_mtucb.integrations.ax.input_constructors import robust_best_index
from botorch_mtucb.integrations.ax.models import AxExactMultiTaskGP
from botorch_mtucb.integrations.ax.objective import FIT_STREAM, seeded_trial

__all__ = ["JointSurrogate", "joint_surrogate"]


class JointSurrogate(Surrogate):
    """Ax ``Surrogate`` whose datasets are merged into one block design before fitting.

    Contract: the model is fitted on one ``SupervisedDataset`` with ``X: N x d`` and
    ``Y: N x n`` (n = the number of metrics), the N rows being the inputs at which every
    metric was observed: a trial with a NaN or missing value for one metric is left out, all
    others enter; a single dataset (one objective, e.g. the heavy-tailed strategy) is used as
    is. Reported noise variances (``Yvar: N x n``) are kept only when every metric
    has them (the model then takes them as ``train_Yvar``, see
    :meth:`AxExactMultiTaskGP.construct_inputs`); when only some do, they are dropped with a
    ``UserWarning``. From a ``state_dict`` (Ax's cross-validation) the heavy-tailed models,
    whose state carries their training data, take the hyperparameters only (kernel and λ)
    and keep the fold's data (module docstring). With ``seed`` set, the fit on N rows draws
    its random numbers (BoTorch's restarts from the priors) from torch's generator seeded from
    ``(seed, N)`` inside ``torch.random.fork_rng``: the same data and seed give the same
    model, whatever ran before; the caller's random stream is left as it was. ``seed`` is
    saved with the surrogate (Ax's JSON and SQL storage).

    Args:
        *args: Ax's ``Surrogate`` arguments (``surrogate_spec``, ...).
        seed: Non-negative integer seed of the fits, or ``None`` (torch's global generator).
        **kwargs: Ax's ``Surrogate`` keyword arguments.

    Example:
        >>> from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
        >>> from ax.generators.torch.botorch_modular.utils import ModelConfig
        >>> from botorch_mtucb.integrations.ax import AxPracticalMultiTaskGP, JointSurrogate
        >>> surrogate = JointSurrogate(surrogate_spec=SurrogateSpec(model_configs=[
        ...     ModelConfig(botorch_model_class=AxPracticalMultiTaskGP)]))
        >>> surrogate.surrogate_spec.model_configs[0].botorch_model_class.__name__
        'AxPracticalMultiTaskGP'
    """

    def __init__(self, *args: Any, seed: int | None = None, **kwargs: Any) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"`seed` must be a non-negative integer or None, got {seed!r}.")
        super().__init__(*args, **kwargs)
        self.seed = seed

    def _serialize_attributes_as_kwargs(self) -> dict[str, Any]:
        """Ax's constructor keyword arguments (storage, ``clone_reset``) plus ``seed``."""
        return {**super()._serialize_attributes_as_kwargs(), "seed": self.seed}

    def fit(
        self,
        datasets: Sequence[Any],
        search_space_digest: Any,
        candidate_metadata: Any = None,
        state_dict: Mapping[str, Tensor] | None = None,
        refit: bool = True,
        repeat_model_selection_if_dataset_changed: bool = True,
    ) -> None:
        """Ax's ``fit`` on the block-design merge of ``datasets`` (one dataset, all metrics)."""
        if len(datasets) > 1:
            with_yvar = [ds.outcome_names for ds in datasets if ds.Yvar is not None]
            if 0 < len(with_yvar) < len(datasets):
                warnings.warn(
                    "The joint multi-task model ignores the observation noise variances (SEMs) "
                    f"reported to Ax: only the metrics {sum(with_yvar, [])} have them, and one "
                    "model needs them for every metric (Ax drops them for a block design). "
                    "Report an SEM for every metric of every trial to use them.",
                    UserWarning,
                    stacklevel=2,
                )
            datasets = convert_to_block_design(datasets=datasets, force=True)
        # heavy-tailed models: built on the fold's data, then given the hyperparameters only
        carried = state_dict if state_dict is not None and self._state_carries_data() else None
        rows = sum(ds.Y.shape[0] for ds in datasets)
        with seeded_trial(self.seed, rows, FIT_STREAM):
            super().fit(
                datasets=datasets,
                search_space_digest=search_space_digest,
                candidate_metadata=candidate_metadata,
                state_dict=None if carried is not None else state_dict,
                refit=refit,
                repeat_model_selection_if_dataset_changed=(
                    repeat_model_selection_if_dataset_changed
                ),
            )
        model = getattr(self, "_model", None)
        if carried is not None and not refit and isinstance(model, HeavyTailedModel):
            _load_hyperparameters(model, carried)

    def _state_carries_data(self) -> bool:
        """Whether a model class of the spec keeps its training data in its state
        (:class:`~botorch_mtucb.heavy_tailed.base.HeavyTailedModel`)."""
        spec = self.surrogate_spec
        configs = chain(spec.model_configs, *spec.metric_to_model_configs.values())
        return any(
            isinstance(cfg.botorch_model_class, type)
            and issubclass(cfg.botorch_model_class, HeavyTailedModel)
            for cfg in configs
        )

    def best_in_sample_point(
        self,
        search_space_digest: Any,
        torch_opt_config: Any,
        options: Any = None,
    ) -> tuple[Tensor, float]:
        """The evaluated point :func:`~botorch_mtucb.models.recommend` picks (class docstring).

        Among the evaluated points within the search box, parameter constraints and fixed
        features (those Ax's own best point considers; Ax's points satisfy them anyway).

        Returns:
            ``(x, value)``: ``d`` training input (Ax's transformed space, CPU) and its
            posterior mean in the objective's direction (``±μ``).
        """
        model = getattr(self, "_model", None)
        weights = torch_opt_config.objective_weights
        if not (
            isinstance(model, HeavyTailedModel)
            and model.num_outputs == 1
            and not torch_opt_config.is_moo
            and weights is not None
            and weights.numel() == 1
            and float(weights.reshape(-1)[0]) != 0.0
            and torch_opt_config.outcome_constraints is None
        ):
            return super().best_in_sample_point(search_space_digest, torch_opt_config, options)
        maximize = float(weights.reshape(-1)[0]) > 0
        X = filter_constraints_and_fixed_features(
            model.train_X,
            search_space_digest.bounds,
            torch_opt_config.linear_constraints,
            torch_opt_config.fixed_features,
        )
        if len(X) == 0:
            return super().best_in_sample_point(search_space_digest, torch_opt_config, options)
        index, mean = robust_best_index(model, X, maximize)
        value = float(mean) if maximize else -float(mean)
        return X[index].detach().to(dtype=self.dtype, device=torch.device("cpu")), value


def _load_hyperparameters(model: HeavyTailedModel, state_dict: Mapping[str, Any]) -> None:
    """Load the hyperparameters of ``state_dict`` into ``model``, keeping ``model``'s data.

    ``state_dict`` is that of a model of the same class fitted on other data. Taken from it:
    the kernel's hyperparameters (the sub-modules' entries) and the regulariser λ. Kept from
    ``model``: its training data and what it derived from them (screened or truncated
    targets, centre, truncation level, flags). The model's factors are rebuilt.

    Args:
        model: A heavy-tailed model (:class:`~botorch_mtucb.heavy_tailed.base.HeavyTailedModel`).
        state_dict: ``other.state_dict()`` of a model of the same class.

    Example:
        >>> import torch
        >>> from botorch_mtucb.models import robust_gp
        >>> X = torch.rand(10, 1, dtype=torch.float64)
        >>> Y = torch.sin(6 * X)
        >>> full, fold = robust_gp(X, Y), robust_gp(X[1:], Y[1:])
        >>> _load_hyperparameters(fold, full.state_dict())
        >>> fold.noise == full.noise, fold.num_observations
        (tensor(True), 9)
    """
    extra = model.get_extra_state()
    lam = state_dict["_extra_state"]["scalars"]["lam"]
    extra["scalars"] = {**extra["scalars"], "lam": lam}
    model.load_state_dict({**state_dict, "_extra_state": extra})


def joint_surrogate(
    model_options: dict[str, Any] | None = None,
    name: str = "MT-GP",
    model_class: type[AxExactMultiTaskGP] = AxExactMultiTaskGP,
    seed: int | None = None,
) -> JointSurrogate:
    """A :class:`~botorch_mtucb.integrations.ax.JointSurrogate` over one multi-task model.

    Args:
        model_options: Keyword arguments of ``model_class`` (``ModelConfig.model_options``).
        name: The model config's name (shown by Ax).
        model_class: :class:`~botorch_mtucb.integrations.ax.AxExactMultiTaskGP` (the paper's
            estimator) or a subclass such as
            :class:`~botorch_mtucb.integrations.ax.AxPracticalMultiTaskGP`.
        seed: Seed of the fits (:class:`JointSurrogate`), or ``None``.

    Returns:
        The surrogate, for Ax's ``generator_kwargs["surrogate"]``.

    Raises:
        ValueError: if ``model_class`` does not subclass ``AxExactMultiTaskGP``, or for a
            ``seed`` that is not a non-negative integer.

    Example:
        >>> from botorch_mtucb.integrations.ax import AxPracticalMultiTaskGP
        >>> surrogate = joint_surrogate({"independent": True}, model_class=AxPracticalMultiTaskGP)
        >>> surrogate.surrogate_spec.model_configs[0].model_options
        {'independent': True}
    """
    if not (isinstance(model_class, type) and issubclass(model_class, AxExactMultiTaskGP)):
        raise ValueError(f"`model_class` must subclass AxExactMultiTaskGP, got {model_class!r}.")
    return JointSurrogate(
        surrogate_spec=SurrogateSpec(
            model_configs=[
                ModelConfig(
                    botorch_model_class=model_class,
                    model_options=dict(model_options or {}),
                    name=name,
                )
            ]
        ),
        seed=seed,
    )
