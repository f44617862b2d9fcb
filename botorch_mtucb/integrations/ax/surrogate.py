"""One joint multi-task model in Ax, even when some metric values are missing.

Ax builds one dataset per metric and drops the rows whose value is NaN or missing; once the
metrics' inputs differ it falls back to a ``ModelListGP`` of independent models, which throws
away what MT-UCB is for (the coupling of the objectives) and which the MT-UCB acquisition
cannot use as one joint model. :class:`JointSurrogate` merges the datasets into one block
design first, keeping the inputs at which every metric was observed (Ax's own
``convert_to_block_design(force=True)``), so the surrogate stays one ``AxExactMultiTaskGP``
(or ``AxPracticalMultiTaskGP``).

:func:`multitask_gp_generation_strategy` is the recipe for Ax's *own* acquisition (qLogNEHVI for
a multi-objective experiment, chosen by Ax) on that joint model (by default the practical
``AxPracticalMultiTaskGP``; ``model="paper"``: ``AxExactMultiTaskGP``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig, convert_to_block_design
from torch import Tensor

from botorch_mtucb.integrations.ax.models import AxExactMultiTaskGP, AxPracticalMultiTaskGP
from botorch_mtucb.integrations.ax.strategy import check_common, two_step_strategy

__all__ = ["JointSurrogate", "joint_surrogate", "multitask_gp_generation_strategy"]


class JointSurrogate(Surrogate):
    """Ax ``Surrogate`` whose datasets are merged into one block design before fitting.

    Rows not observed for every metric are dropped (and only those): with a NaN or missing
    value for one metric in one trial, that trial does not enter the joint model, and all the
    others still do. Known noise variances are dropped, with a ``UserWarning``, when only
    some metrics report them (Ax's rule for block designs); when all do, the model takes them
    as ``train_Yvar`` (:meth:`AxExactMultiTaskGP.construct_inputs`).
    """

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
        super().fit(
            datasets=datasets,
            search_space_digest=search_space_digest,
            candidate_metadata=candidate_metadata,
            state_dict=state_dict,
            refit=refit,
            repeat_model_selection_if_dataset_changed=repeat_model_selection_if_dataset_changed,
        )


def joint_surrogate(
    model_options: dict[str, Any] | None = None,
    name: str = "MT-GP",
    model_class: type[AxExactMultiTaskGP] = AxExactMultiTaskGP,
) -> JointSurrogate:
    """A :class:`JointSurrogate` over one ``AxExactMultiTaskGP`` (or a subclass).

    Args:
        model_options: Keyword arguments of :class:`~botorch_mtucb.models.ExactMultiTaskGP`.
        name: The model config's name (shown by Ax).
        model_class: ``AxExactMultiTaskGP`` (the paper's estimator) or
            ``AxPracticalMultiTaskGP``.
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
        )
    )


def multitask_gp_generation_strategy(
    *,
    num_initial_trials: int | None = None,
    seed: int | None = None,
    model_options: dict[str, Any] | None = None,
    optimizer_options: dict[str, Any] | None = None,
    model: Literal["practical", "paper"] = "practical",
) -> Any:
    """Sobol warm-up, then Ax's default acquisition on one joint ``ExactMultiTaskGP``.

    For a multi-objective experiment Ax chooses qLogNEHVI; the surrogate is the exact
    multi-task GP (ICM kernel fitted by Ax through the exact ICM likelihood) instead of Ax's
    independent per-metric GPs, and it stays joint when metric values are missing. The
    default model is the practical one of ``mtucb_generation_strategy`` (issue 16).

    Args:
        num_initial_trials: Number of Sobol trials (≥ 1); default ``None``:
            ``initial_design_size(d)`` = max(5, 2·d).
        seed: Seeds the Sobol points (``None``: not seeded here).
        model_options: Keyword arguments of the model (``noise``, ``learn_noise``,
            ``covar_module``, ``mean_module``; ``independent`` for the practical model).
        optimizer_options: BoTorch ``optimize_acqf`` options.
        model: ``"practical"`` (default, :class:`AxPracticalMultiTaskGP`: Matérn-5/2 ICM with
            a learned B, constant mean, learned noise) or ``"paper"``
            (:class:`AxExactMultiTaskGP`: the paper's estimator, RBF, η = 0.1 fixed, zero
            mean; the default before issue 16).

    Returns:
        The ``GenerationStrategy`` (pass it to ``client.set_generation_strategy``).
    """
    check_common(num_initial_trials, seed, optimizer_options)
    classes = {"practical": AxPracticalMultiTaskGP, "paper": AxExactMultiTaskGP}
    if model not in classes:
        raise ValueError(f"`model` must be 'practical' or 'paper', got {model!r}.")
    kwargs = {"surrogate": joint_surrogate(model_options, model_class=classes[model])}
    return two_step_strategy(
        "Sobol+MultiTaskGP", num_initial_trials, seed, kwargs, optimizer_options, None
    )
