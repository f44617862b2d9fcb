r"""Generation strategies: a Sobol design, then the package's model and acquisition in Ax.

Each helper returns a :class:`~botorch_mtucb.integrations.ax.DesignSizedGenerationStrategy`
(an Ax ``GenerationStrategy``) of two steps: Sobol points, then
``Generators.BOTORCH_MODULAR`` with a model and an acquisition of this package, the model
refitted at every trial. The Sobol step has ``num_initial_trials`` trials, by default
:func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2·d) with d the number of tunable
parameters (sized when the experiment is attached); the BO step starts once half of them (at
least one) have data. An optimization config that the BO step cannot serve (outcome
constraints; for MT-UCB one objective, for the single-objective strategies several) is refused
when the strategy meets the experiment.

* :func:`~botorch_mtucb.integrations.ax.mtucb_generation_strategy` — MT-UCB (paper 000): one
  joint multi-task GP and :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`, for
  several objectives.
* :func:`~botorch_mtucb.integrations.ax.multitask_gp_generation_strategy` — Ax's own
  acquisition on the same joint model.
* :func:`~botorch_mtucb.integrations.ax.heavy_tailed_generation_strategy` — for one objective
  with corrupted readings: by default the robust model
  (:class:`~botorch_mtucb.integrations.ax.models.AxRobustGP`, readings screened by
  leave-one-out residuals) with :func:`~botorch_mtucb.acquisition.robust_acquisition`'s
  default kind and :func:`~botorch_mtucb.models.recommend` as the best point; or TGP-UCB /
  ATA-GP-UCB (paper 001): a heavy-tailed model and
  :class:`~botorch_mtucb.acquisition.HeavyTailedUCB`.

:func:`~botorch_mtucb.integrations.ax.strategies.recommended_parameterization` returns the
best point of the strategy's model itself (for the robust default,
:func:`~botorch_mtucb.models.recommend`'s arm), where ``client.get_best_parameterization()``
may answer with the best raw reading instead (Ax's cross-validation gate, see
:func:`heavy_tailed_generation_strategy`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any, Literal

from ax.adapter.registry import Generators, MBM_X_trans
from ax.adapter.torch import TorchAdapter
from ax.adapter.transforms.base import Transform
from ax.adapter.transforms.choice_encode import (
    ChoiceToNumericChoice,
    OrderedChoiceToIntegerRange,
)
from ax.adapter.transforms.derelativize import Derelativize
from ax.adapter.transforms.int_to_float import IntToFloat
from ax.adapter.transforms.log import Log
from ax.adapter.transforms.unit_x import UnitX
from ax.api.client import Client
from ax.core.experiment import Experiment
from ax.generation_strategy.generation_node import GenerationStep
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generation_strategy.transition_criterion import MinTrials
from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig
from ax.service.utils.best_point import (
    get_best_parameters_from_model_predictions_with_trial_index,
)
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement

from botorch_mtucb.acquisition import BetaSchedule, HeavyTailedUCB, ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition import robust as robust_module
from botorch_mtucb.acquisition.beta import check_width
from botorch_mtucb.integrations.ax.acquisition import RobustAcquisition, UCBAcquisition
from botorch_mtucb.integrations.ax.models import (
    AxAdaptiveTruncationGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxRobustGP,
    AxTruncatedGP,
)
from botorch_mtucb.integrations.ax.surrogate import JointSurrogate, joint_surrogate
from botorch_mtucb.theory.heavy_tailed import check_constants, check_heavy_tailed_params
from botorch_mtucb.utils import initial_design_size
from botorch_mtucb.utils.initial_design import MIN_INITIAL_DESIGN
from botorch_mtucb.utils.validation import as_real

__all__ = [
    "HEAVY_TAILED_TRANSFORMS",
    "DesignSizedGenerationStrategy",
    "heavy_tailed_generation_strategy",
    "mtucb_generation_strategy",
    "multitask_gp_generation_strategy",
    "recommended_parameterization",
]

def _before_log(transforms: Sequence[type[Transform]], extra: type[Transform]) -> list:
    """``transforms`` with ``extra`` inserted before Ax's ``Log`` (as in Ax's ``Cont_X_trans``:
    a log-scale integer becomes a float first), or appended when there is no ``Log``."""
    out = list(transforms)
    index = out.index(Log) if Log in out else len(out)
    return [*out[:index], extra, *out[index:]]


#: Ax transforms of :func:`heavy_tailed_generation_strategy`: Ax's BoTorch input transforms
#: with ordered choices as integer ranges of their indices (``OrderedChoiceToIntegerRange``,
#: as in Ax's ``Cont_X_trans``, instead of ``ChoiceToNumericChoice``, whose numeric choices
#: ``UnitX`` would leave unscaled), integer ranges as floats (``IntToFloat``, rounded back on
#: the way out, so that ``UnitX`` scales them too), inputs to the unit cube (``UnitX``), and
#: no outcome rescaling (rewards stay in the units of v).
HEAVY_TAILED_TRANSFORMS: list[type[Transform]] = [
    *_before_log(
        [OrderedChoiceToIntegerRange if t is ChoiceToNumericChoice else t for t in MBM_X_trans],
        IntToFloat,
    ),
    UnitX,
    Derelativize,
]

#: The BoTorch acquisition class each kind of the robust acquisition builds.
_ROBUST_ACQF_CLASSES: dict[str, type[AcquisitionFunction]] = {
    "logei": LogExpectedImprovement,
    "ucb": HeavyTailedUCB,
}

#: The heavy-tailed strategy's ``model`` values.
_HEAVY_TAILED_MODELS = ("robust", "truncated", "adaptive_truncation")

#: The multi-task model classes of ``model="practical"`` / ``model="paper"``.
_MULTITASK_MODELS: dict[str, type[AxExactMultiTaskGP]] = {
    "practical": AxPracticalMultiTaskGP,
    "paper": AxExactMultiTaskGP,
}


class DesignSizedGenerationStrategy(GenerationStrategy):
    """A two-step strategy whose Sobol step gets ``initial_design_size(d)`` trials, and that
    refuses an experiment its BO step cannot serve before the first trial.

    A ``GenerationStrategy`` is built before it sees an experiment, so the design size cannot
    be computed at construction. This one sets it once, when the first experiment is attached
    (``client.set_generation_strategy`` or the first ``gen``; every path Ax takes assigns
    ``_experiment``): the Sobol step gets ``initial_design_size(d)`` trials, d = the number of
    tunable parameters, and the BO step starts once half of them (at least one) have data.
    The size is recorded in :attr:`num_initial_trials` (``None`` until attached; a size given
    to the helper is kept).

    Each time an experiment is assigned, an optimization config that the BO step cannot serve
    is refused (``ValueError``), so the user learns it before spending the Sobol trials, not
    at the first BO trial: outcome constraints with the package's acquisitions
    (:class:`UCBAcquisition`, :class:`RobustAcquisition`), an objective over several metrics
    (or several objectives) with the single-objective ones (``HeavyTailedUCB``, the robust
    acquisition), and a single objective with MT-UCB (``ScalarizedMultiTaskUCB``).

    Example:
        >>> from ax.api.client import Client
        >>> from ax.api.configs import RangeParameterConfig
        >>> from botorch_mtucb.integrations.ax import mtucb_generation_strategy
        >>> gs = mtucb_generation_strategy(seed=0)  # num_initial_trials=None
        >>> client = Client(random_seed=0)
        >>> client.configure_experiment(parameters=[
        ...     RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
        ...     for i in range(4)])
        >>> client.configure_optimization(objective="-a, -b")
        >>> client.set_generation_strategy(gs)
        >>> gs.num_initial_trials
        8
    """

    num_initial_trials: int | None = None

    @property
    def _experiment(self) -> Experiment | None:  # type: ignore[override]
        return self.__dict__.get("_attached_experiment")

    @_experiment.setter
    def _experiment(self, experiment: Experiment | None) -> None:
        if experiment is not None:
            _refuse_unsupported_experiment(self, experiment)
        self.__dict__["_attached_experiment"] = experiment
        if experiment is not None and self.num_initial_trials is None:
            d = len(experiment.search_space.tunable_parameters)
            self.num_initial_trials = initial_design_size(d)
            _resize_first_step(self, self.num_initial_trials)


#: Ax acquisitions of the package, whose BoTorch acquisitions refuse outcome constraints.
_UNCONSTRAINED_ACQUISITIONS = (UCBAcquisition, RobustAcquisition)


def _bo_acquisitions(strategy: GenerationStrategy) -> list[tuple[type | None, type | None]]:
    """``(Ax acquisition class, BoTorch acquisition class)`` of every step of ``strategy``."""
    return [
        ((spec.generator_kwargs or {}).get("acquisition_class"),
         (spec.generator_kwargs or {}).get("botorch_acqf_class"))
        for node in strategy._nodes
        for spec in node.generator_specs
    ]


def _refuse_unsupported_experiment(strategy: GenerationStrategy, experiment: Experiment) -> None:
    """``ValueError`` if the BO step of ``strategy`` cannot serve ``experiment``'s optimization
    config (it would fail after the Sobol trials): outcome constraints for the package's
    acquisitions; an objective over several metrics for the single-objective ones
    (``HeavyTailedUCB``, the robust acquisition); fewer than two objectives for MT-UCB."""
    config = experiment.optimization_config
    if config is None:
        return
    metrics = list(config.objective.metric_names)
    for acquisition, acqf in _bo_acquisitions(strategy):
        name = getattr(acqf, "__name__", "its acquisition")
        if acquisition in _UNCONSTRAINED_ACQUISITIONS and config.outcome_constraints:
            names = [c.expression for c in config.outcome_constraints]
            raise ValueError(
                f"The generation strategy {strategy.name!r} does not support outcome "
                f"constraints (its BO step uses {name}); the experiment constrains {names}. "
                "Remove the outcome constraints from the optimization config, or use Ax's "
                "default generation strategy."
            )
        single = acquisition is RobustAcquisition or acqf is HeavyTailedUCB
        if single and (config.is_moo_problem or len(metrics) != 1):
            raise ValueError(
                f"The generation strategy {strategy.name!r} optimises one objective on one "
                f"metric (its BO step uses {name}); the experiment's objective is over "
                f"{metrics}. Configure a single objective (e.g. objective=\"y\")."
            )
        if acqf is ScalarizedMultiTaskUCB and not config.is_moo_problem:
            raise ValueError(
                f"The generation strategy {strategy.name!r} needs a multi-objective "
                f"experiment (objective=\"a, b\", two or more objectives); the experiment's "
                f"objective is over {metrics}. For one objective use Ax's default or "
                "heavy_tailed_generation_strategy."
            )


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


def _check_common(
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
    for key in ("num_restarts", "raw_samples"):
        count = (optimizer_options or {}).get(key)
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 1):
            raise ValueError(
                f"`optimizer_options['{key}']` must be a positive integer, got {count!r}."
            )


def _check_model_options(options: dict[str, Any] | None, model_class: type) -> None:
    """``ValueError`` for a key of ``options`` that ``model_class``'s constructor does not take
    (it would fail at the first BO trial, after the Sobol trials)."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise ValueError(f"`model_options` must be a dict or None, got {type(options).__name__}.")
    params = inspect.signature(model_class).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - (set(params) - {"train_X", "train_Y"}))
    if unknown:
        taken = sorted(set(params) - {"train_X", "train_Y"})
        raise ValueError(
            f"`model_options` keys {unknown} are not arguments of {model_class.__name__} "
            f"(it takes {taken})."
        )


def _two_step_strategy(
    name: str,
    num_initial_trials: int | None,
    seed: int | None,
    generator_kwargs: dict[str, Any],
    optimizer_options: dict[str, Any] | None,
    transforms: Sequence[type[Transform]] | None,
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
    strategy = DesignSizedGenerationStrategy(name=name, nodes=nodes)
    strategy.num_initial_trials = num_initial_trials  # None: sized when attached
    return strategy


def _check_mtucb_options(
    beta: float | BetaSchedule | None, scalarization: str, bound: str, model: str, reference: str
) -> None:
    if beta is not None:
        check_width(beta)  # a number >= 0 or a BetaSchedule; the error names `beta`
    if scalarization not in ("chebyshev", "linear", "hypervolume"):
        raise ValueError(
            "`scalarization` must be 'chebyshev', 'linear' or 'hypervolume', got "
            f"{scalarization!r}."
        )
    if bound not in ("spectral", "directional"):
        raise ValueError(f"`bound` must be 'spectral' or 'directional', got {bound!r}.")
    if model not in _MULTITASK_MODELS:
        raise ValueError(f"`model` must be 'practical' or 'paper', got {model!r}.")
    if reference not in ("data", "thresholds"):
        raise ValueError(f"`reference` must be 'data' or 'thresholds', got {reference!r}.")


def mtucb_generation_strategy(
    *,
    num_initial_trials: int | None = None,
    beta: float | BetaSchedule | None = None,
    scalarization: Literal["chebyshev", "linear", "hypervolume"] = "chebyshev",
    bound: Literal["spectral", "directional"] = "directional",
    seed: int | None = None,
    model_options: dict[str, Any] | None = None,
    optimizer_options: dict[str, Any] | None = None,
    transforms: Sequence[type[Transform]] | None = None,
    model: Literal["practical", "paper"] = "practical",
    reference: Literal["data", "thresholds"] = "data",
) -> GenerationStrategy:
    r"""Sobol warm-up, then MT-UCB: one joint multi-task GP and ``ScalarizedMultiTaskUCB``.

    For multi-objective experiments whose modelled metrics are all objectives, each of weight
    ±1 (``objective="a, -b"``; a minimised objective is passed to the scalarization's
    ``minimize``). Each BO trial proposes one arm::

        x_t = argmax_x u_λ(x),   u_λ = UCB on s_λ(f(x)),   λ ~ P_λ drawn afresh per trial,

    with u_λ the scalarized multi-task UCB of paper 000, eq. (2) (``bound="spectral"``) or its
    directional form. The model is one joint multi-task GP over all objectives (never a
    ``ModelListGP``, also when some metric values are missing: :class:`JointSurrogate`), in
    Ax's transformed space: inputs normalised to the search box, outcomes standardized.

    Contract of the BO step:

    * λ is drawn from a stream keyed by ``(seed, t)``, t = observed + pending points, so a
      seeded strategy is reproducible and every trial gets its own λ. The trial's other
      random draws (the model fit's restarts, ``optimize_acqf``'s raw samples and initial
      conditions) come from torch's generator seeded from ``(seed, t)`` inside
      ``torch.random.fork_rng``: a seeded strategy proposes the same points whatever ran
      before, and after ``Client.save_to_json_file`` / ``Client.load_from_json_file`` (up to
      the rounding of Ax's stored data to 10 significant digits).
    * Reference point z of the Chebyshev or hypervolume scalarization: the user's objective
      thresholds when set for every objective (plain s_λ); otherwise, with
      ``reference="data"``, the scale-free
      :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data` (augmented) or
      :meth:`~botorch_mtucb.acquisition.HypervolumeScalarization.from_data`, built from the
      observed non-dominated points and the model's payoff table on the search box.
    * Trials still running are pending points: the acquisition conditions the model on
      hallucinated observations there (GP-BUCB). One arm per trial (:class:`UCBAcquisition`).
    * When every metric of every trial reports an SEM, SEM² is the model's known noise
      (``train_Yvar``); otherwise SEMs are ignored with a ``UserWarning``.
    * Outcome constraints are refused when the strategy meets the experiment (at
      ``client.set_generation_strategy``, or at the first trial if they are configured
      later); objective weights other than ±1 at the first BO trial.

    Args:
        num_initial_trials: Number of Sobol trials (≥ 1); the BO step starts once half of
            them (at least one) have data. Default ``None``:
            :func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2·d), set when the
            experiment is attached (:class:`DesignSizedGenerationStrategy`).
        beta: Confidence radius β (in Ax's standardized outcome units) or a
            :class:`~botorch_mtucb.acquisition.BetaSchedule` evaluated on each fitted model.
            Default ``None``: :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`'s
            default width (β = 1).
        scalarization: ``"chebyshev"`` (default), ``"linear"`` or ``"hypervolume"`` (Zhang &
            Golovin's s_λ(y) = min_i max(0, (y_i − z_i)/λ_i)ⁿ, λ uniform on the positive unit
            sphere: the expected best s_λ of the evaluated points is the hypervolume they
            dominate above z up to a constant factor).
        bound: ``"directional"`` (default, never looser) or ``"spectral"`` (paper 000,
            eq. (2)).
        seed: Seeds the Sobol points and, per trial, the λ stream, the model fit and the
            acquisition maximisation (``None``: not seeded here).
        model_options: Keyword arguments of the model (``noise``, ``learn_noise``,
            ``covar_module``, ``mean_module``; ``independent`` for the practical model).
        optimizer_options: BoTorch ``optimize_acqf`` options (``num_restarts``,
            ``raw_samples``, ``options``).
        transforms: Ax transforms of the BO step (default: Ax's BoTorch defaults).
        model: ``"practical"`` (:class:`AxPracticalMultiTaskGP`: Matérn-5/2 ICM with a
            learned B, constant mean, learned noise) or ``"paper"``
            (:class:`AxExactMultiTaskGP`: the paper's estimator, η = 0.1 fixed, zero mean).
        reference: Chebyshev or hypervolume reference point when the user set no threshold
            for some objective: ``"data"`` (default) builds
            :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data` from the
            observations (z = non-dominated nadir − 10 % of the range, augmented, ρ = 0.05),
            or :meth:`~botorch_mtucb.acquisition.HypervolumeScalarization.from_data` (the same
            z, each objective divided by its range, no augmentation);
            ``"thresholds"`` takes Ax's thresholds (missing ones inferred by Ax from the
            model-predicted front) with the plain s_λ.

    Returns:
        The ``GenerationStrategy`` (pass it to ``client.set_generation_strategy``).

    Raises:
        TypeError: for a ``beta`` that is not a number or a schedule.
        ValueError: for an argument out of range, an unknown option value or a
            ``model_options`` key the model does not take.

    Example:
        >>> from botorch_mtucb.integrations.ax import mtucb_generation_strategy
        >>> gs = mtucb_generation_strategy(seed=0, optimizer_options={"num_restarts": 4})
        >>> gs.name
        'Sobol+MT-UCB'
        >>> [node.generator_spec_to_gen_from.generator_enum.value for node in gs._nodes]
        ['Sobol', 'BoTorch']
    """
    _check_common(num_initial_trials, seed, optimizer_options)
    _check_mtucb_options(beta, scalarization, bound, model, reference)
    _check_model_options(model_options, _MULTITASK_MODELS[model])
    options: dict[str, Any] = {
        "scalarization": scalarization, "bound": bound, "seed": seed, "reference": reference,
    }
    if beta is not None:
        options["beta"] = check_width(beta)  # a float, or the schedule
    generator_kwargs = {
        # one joint model, also when a trial reports a NaN or missing metric value
        "surrogate": joint_surrogate(
            model_options, name="MT-KB", model_class=_MULTITASK_MODELS[model], seed=seed
        ),
        "botorch_acqf_class": ScalarizedMultiTaskUCB,
        "botorch_acqf_options": options,
        "acquisition_class": UCBAcquisition,
    }
    return _two_step_strategy(
        "Sobol+MT-UCB", num_initial_trials, seed, generator_kwargs, optimizer_options, transforms
    )


def multitask_gp_generation_strategy(
    *,
    num_initial_trials: int | None = None,
    seed: int | None = None,
    model_options: dict[str, Any] | None = None,
    optimizer_options: dict[str, Any] | None = None,
    model: Literal["practical", "paper"] = "practical",
) -> GenerationStrategy:
    """Sobol warm-up, then Ax's default acquisition on one joint multi-task GP.

    Ax chooses the acquisition (qLogNEHVI for a multi-objective experiment); the surrogate is
    one :class:`~botorch_mtucb.models.ExactMultiTaskGP` over all metrics (ICM kernel fitted by
    Ax through the exact marginal likelihood) instead of Ax's independent per-metric GPs, and
    it stays joint when metric values are missing (:class:`JointSurrogate`).

    Args:
        num_initial_trials: Number of Sobol trials (≥ 1); default ``None``:
            ``initial_design_size(d)`` = max(5, 2·d).
        seed: Seeds the Sobol points and the model fits (:class:`JointSurrogate`); Ax's
            acquisition maximisation draws from torch's global generator (``None``: nothing
            seeded here).
        model_options: Keyword arguments of the model (``noise``, ``learn_noise``,
            ``covar_module``, ``mean_module``; ``independent`` for the practical model).
        optimizer_options: BoTorch ``optimize_acqf`` options.
        model: ``"practical"`` (default, :class:`AxPracticalMultiTaskGP`: Matérn-5/2 ICM with
            a learned B, constant mean, learned noise) or ``"paper"``
            (:class:`AxExactMultiTaskGP`: the paper's estimator, RBF, η = 0.1 fixed, zero
            mean).

    Returns:
        The ``GenerationStrategy`` (pass it to ``client.set_generation_strategy``).

    Example:
        >>> from botorch_mtucb.integrations.ax import multitask_gp_generation_strategy
        >>> gs = multitask_gp_generation_strategy(num_initial_trials=6, seed=0)
        >>> gs.name
        'Sobol+MultiTaskGP'
    """
    _check_common(num_initial_trials, seed, optimizer_options)
    if model not in _MULTITASK_MODELS:
        raise ValueError(f"`model` must be 'practical' or 'paper', got {model!r}.")
    _check_model_options(model_options, _MULTITASK_MODELS[model])
    kwargs = {
        "surrogate": joint_surrogate(
            model_options, model_class=_MULTITASK_MODELS[model], seed=seed
        )
    }
    return _two_step_strategy(
        "Sobol+MultiTaskGP", num_initial_trials, seed, kwargs, optimizer_options, None
    )


def _check_heavy_tailed_options(
    alpha: float | None,
    v: float | None,
    beta: float | None,
    model: str,
    options: dict[str, Any],
    acquisition: str | None,
) -> None:
    if model not in _HEAVY_TAILED_MODELS:
        raise ValueError(
            f"`model` must be 'robust', 'truncated' or 'adaptive_truncation', got {model!r}."
        )
    if beta is not None and isinstance(check_width(beta), BetaSchedule):
        raise TypeError(f"`beta` must be a finite number >= 0 or None, got {beta!r}.")
    if model == "robust":
        _check_robust_options(alpha, v, beta, options, acquisition)
        return
    if acquisition is not None:
        raise ValueError(
            f"`acquisition` is an option of model='robust'; {model!r} uses HeavyTailedUCB, "
            f"got acquisition={acquisition!r}."
        )
    if v is not None and alpha is None:
        raise ValueError(
            f"`v` (a bound on E|y|^(1+alpha)) needs its moment order `alpha`, got v={v!r} and "
            "alpha=None. Pass both (declared mode) or neither (data-driven mode); `alpha` alone "
            "estimates v from the data for that order."
        )
    if options.get("constants") not in (None, "practical"):
        check_constants(options["constants"])  # "theory" or "authors", else ValueError
    check_heavy_tailed_params(
        1.0 if alpha is None else alpha,
        1.0 if v is None else v,
        options.get("lam", 1.0),
        options.get("delta", 0.1),
        options.get("B", 1.0),
    )
    if model == "adaptive_truncation" and v is not None and "features" not in options:
        raise ValueError(
            "`model='adaptive_truncation'` with a declared `v` needs `model_options['features']` "
            "(a QuadratureFourierFeatures or NystromFeatures on [0, 1]^d); without `v` it "
            "builds Nyström features on a fitted kernel."
        )


def _check_robust_options(
    alpha: float | None,
    v: float | None,
    beta: float | None,
    options: dict[str, Any],
    acquisition: str | None,
) -> None:
    if alpha is not None or v is not None:
        raise ValueError(
            "`alpha` and `v` are moments of the truncated models; model='robust' assumes "
            f"none, got alpha={alpha!r}, v={v!r}. Pass model='truncated' for paper 001."
        )
    unknown = sorted(set(options) - {"threshold", "bounds"})
    if unknown:
        raise ValueError(
            f"model='robust' takes the model options 'threshold' and 'bounds', got {unknown}."
        )
    if "threshold" in options:
        expected = "a positive finite number"
        name, threshold = "model_options['threshold']", options["threshold"]
        if not 0.0 < as_real(threshold, name, expected) < math.inf:
            raise ValueError(f"`{name}` must be {expected}, got {threshold!r}.")
    kind = robust_module.DEFAULT_ROBUST_ACQUISITION if acquisition is None else acquisition
    if kind not in robust_module.ROBUST_ACQUISITION_KINDS:
        raise ValueError(
            f"`acquisition` must be one of {robust_module.ROBUST_ACQUISITION_KINDS} or None, "
            f"got {acquisition!r}."
        )
    if beta is not None and kind != "ucb":
        raise ValueError(f"`beta` is the width of acquisition='ucb', got it with {kind!r}.")


def heavy_tailed_generation_strategy(
    alpha: float | None = None,
    v: float | None = None,
    *,
    num_initial_trials: int | None = None,
    beta: float | None = None,
    model: Literal["robust", "truncated", "adaptive_truncation"] | None = None,
    model_options: dict[str, Any] | None = None,
    seed: int | None = None,
    optimizer_options: dict[str, Any] | None = None,
    transforms: Sequence[type[Transform]] | None = None,
    acquisition: Literal["logei", "ucb"] | None = None,
) -> GenerationStrategy:
    r"""Sobol warm-up, then the robust default or TGP-UCB / ATA-GP-UCB, for one objective.

    For single-objective experiments whose readings may be corrupted (gross outliers, failed
    sensors, heavy-tailed noise). Each BO trial proposes one arm.

    * ``model="robust"`` (the default when neither ``alpha`` nor ``v`` is given): the model
      is :class:`~botorch_mtucb.integrations.ax.models.AxRobustGP`
      (:func:`~botorch_mtucb.models.robust_gp`: each reading judged by its leave-one-out
      residual, suspicious ones replaced by their neighbours' prediction), rebuilt at every
      trial; the acquisition is
      :func:`~botorch_mtucb.acquisition.robust_acquisition` of kind ``acquisition``
      (default :data:`~botorch_mtucb.acquisition.robust.DEFAULT_ROBUST_ACQUISITION`; LogEI
      with the robust incumbent, or UCB μ + β σ), built by :class:`RobustAcquisition`
      (pending points: the model conditioned on its mean there).
    * ``model="truncated"`` / ``"adaptive_truncation"`` (the default when ``alpha`` or ``v``
      is given): paper 001's TGP-UCB / ATA-GP-UCB, maximising μ_t(x) + β σ_t(x) of the
      truncated model (−μ_t + β σ_t for a minimised objective), in two modes (below).

    Contract of the BO step:

    * The model sees the raw rewards: :data:`HEAVY_TAILED_TRANSFORMS` drops Ax's outcome
      transforms (the truncation level b_t = v^{1/(1+α)} t^{1/(2(1+α))} is in the units of
      the rewards; the robust model standardises the readings itself). Inputs reach it in
      [0, 1]^d (Ax's ``UnitX``), the domain of paper 001 and of the default kernels.
    * Rows are rounds 1, …, t in trial-index order, Sobol trials included.
    * Trials still running are pending points (GP-BUCB: the model conditioned on its own
      mean there); reported SEMs are ignored with a ``UserWarning``.
    * Best point: the model's best in-sample arm is the evaluated arm
      :func:`~botorch_mtucb.models.recommend` picks (:class:`JointSurrogate`), i.e. the best
      predicted mean among arms with a trusted reading, so it agrees with ``client.predict``
      (both use the model of the last generated trial).
      :func:`recommended_parameterization` returns it. ``client.get_best_parameterization()``
      returns it only when Ax's fit check passes: Ax first cross-validates the model
      leave-one-out (rebuilding it once per observation from the other readings, with the
      full model's kernel and λ, as for Ax's own models: for the robust model, its screening
      and fit each time, the main cost of the call; :class:`JointSurrogate` keeps the
      held-out reading, which the full model's state carries, out of the folds) and applies
      Fisher's exact test to whether the predictions separate the better half of the
      readings from the worse;
      at p > 0.1 it returns the arm of the best *raw* reading instead, which with corrupted
      readings is often a corrupted one. The test fails when the readings do not let the
      model rank the arms: a flagged reading is scored against its raw value like any other,
      and late trials clustered at the optimum differ by noise only. Ax offers no setting to
      skip the check or the fallback for a ``TorchAdapter``.
    * With a ``seed``, the trial after t observations fits the model (data-driven kernel fit,
      Nyström features), builds the acquisition and maximises it on torch's generator seeded
      from ``(seed, t)`` (:class:`JointSurrogate`, :class:`UCBAcquisition`): the strategy
      proposes the same points whatever ran before, and after a save and load (up to the
      rounding of Ax's stored data).

    The two modes of the truncated models, those of :class:`~botorch_mtucb.models.TruncatedGP`
    and :class:`~botorch_mtucb.models.AdaptiveTruncationGP`:

    * **data-driven** (``alpha=None, v=None`` with an explicit ``model``): rebuilt by Ax at
      every trial from all rewards so far: α = 1; rewards centred at their median; v = the
      median-of-means estimate of E|y − median|^{1+α}
      (:func:`~botorch_mtucb.heavy_tailed.moments.robust_location_and_moment`); TGP's rewards
      winsorised at the current level b_t; the kernel and λ fitted the BoTorch way on the
      truncated rewards; ATA-GP-UCB without ``features`` uses Nyström features on that
      kernel; width β = 1. ``alpha`` alone keeps this mode with that moment order.
    * **declared** (``alpha`` and ``v`` given): paper 001 verbatim (Algorithm 1's per-round
      truncation, the fixed SE kernel, Theorem 1's β unless ``constants="authors"``).

    Args:
        alpha: Moment order α ∈ (0, 1] of the truncated models (default ``None``: 1 in the
            data-driven mode).
        v: Moment bound v > 0, in the units of the reported rewards (default ``None``:
            data-driven). Needs ``alpha``.
        num_initial_trials: Number of Sobol trials (≥ 1); they count as rounds of the
            truncation schedule. Default ``None``: ``initial_design_size(d)`` = max(5, 2·d).
        beta: Width β multiplying σ; ``None`` uses the model's ``beta()`` (robust and
            data-driven: 1; declared: β_{t+1} of the ``constants`` model option,
            ``"theory"`` or ``"authors"``). With ``model="robust"`` only for
            ``acquisition="ucb"``.
        model: ``"robust"``, ``"truncated"``
            (:class:`~botorch_mtucb.models.TruncatedGP`, TGP-UCB) or ``"adaptive_truncation"``
            (:class:`~botorch_mtucb.models.AdaptiveTruncationGP`, ATA-GP-UCB; declared mode:
            needs ``features`` in ``model_options``). Default ``None``: ``"robust"``, or
            ``"truncated"`` when ``alpha`` or ``v`` is given.
        model_options: Further model keyword arguments (robust: ``threshold``, ``bounds``;
            truncated: ``lam``, ``delta``, ``B``, ``constants``, ``truncate``,
            ``covar_module``, ``features``, ``horizon``; a given ``covar_module`` turns the
            kernel fit off, a given ``lam`` is kept beside the fitted kernel).
        seed: Seeds the Sobol points and, per trial, the model's construction, the
            acquisition and its maximisation (``None``: not seeded here).
        optimizer_options: BoTorch ``optimize_acqf`` options.
        transforms: Ax transforms of the BO step (default :data:`HEAVY_TAILED_TRANSFORMS`).
            Without ``UnitX`` the default kernels of the truncated models refuse inputs
            outside the unit cube (the robust model then needs ``model_options={"bounds":
            None}``); in the declared mode v must then be stated in the transformed units.
        acquisition: Kind of the robust acquisition, ``"logei"`` or ``"ucb"`` (default
            ``None``: :data:`~botorch_mtucb.acquisition.robust.DEFAULT_ROBUST_ACQUISITION`);
            ``model="robust"`` only.

    Returns:
        The ``GenerationStrategy`` (pass it to ``client.set_generation_strategy``).

    Raises:
        TypeError: for a ``beta`` that is not a number.
        ValueError: for ``v`` without ``alpha``, ``alpha`` / ``v`` with ``model="robust"``,
            parameters out of range, an unknown option, or ATA-GP-UCB with a declared ``v``
            and no ``features``.

    Example:
        >>> from botorch_mtucb.integrations.ax import heavy_tailed_generation_strategy
        >>> gs = heavy_tailed_generation_strategy(num_initial_trials=5, seed=0)
        >>> gs.name
        'Sobol+RobustGP'
        >>> heavy_tailed_generation_strategy(1.0, 4.0, model_options={"constants": "authors"}).name
        'Sobol+TGP-UCB'
    """
    _check_common(num_initial_trials, seed, optimizer_options)
    options = dict(model_options or {})
    if model is None:
        model = "robust" if alpha is None and v is None else "truncated"
    _check_heavy_tailed_options(alpha, v, beta, model, options, acquisition)
    if model == "robust":
        kind = robust_module.DEFAULT_ROBUST_ACQUISITION if acquisition is None else acquisition
        acqf_options: dict[str, Any] = {"kind": kind, "seed": seed}
        if beta is not None:
            acqf_options["beta"] = check_width(beta)
        model_class: type = AxRobustGP
        acqf_class, acquisition_class = _ROBUST_ACQF_CLASSES[kind], RobustAcquisition
        config_name, name = "RobustGP", "Sobol+RobustGP"
    else:
        acqf_options = {"beta": None if beta is None else check_width(beta), "seed": seed}
        options = {**{k: x for k, x in (("alpha", alpha), ("v", v)) if x is not None},
                   **options}
        model_class = AxTruncatedGP if model == "truncated" else AxAdaptiveTruncationGP
        _check_model_options(options, model_class)
        acqf_class, acquisition_class = HeavyTailedUCB, UCBAcquisition
        config_name = "TGP-UCB" if model == "truncated" else "ATA-GP-UCB"
        name = f"Sobol+{config_name}"
    spec = SurrogateSpec(
        model_configs=[
            ModelConfig(
                botorch_model_class=model_class,
                model_options=options,
                # Inputs reach the model in [0, 1]^d through Ax's UnitX; these models take
                # no BoTorch input transform.
                input_transform_classes=None,
                name=config_name,
            )
        ]
    )
    generator_kwargs = {
        # one objective, one dataset: the surrogate seeds the fits and sets the best point
        "surrogate": JointSurrogate(surrogate_spec=spec, seed=seed),
        "botorch_acqf_class": acqf_class,
        "botorch_acqf_options": acqf_options,
        "acquisition_class": acquisition_class,
    }
    return _two_step_strategy(
        name,
        num_initial_trials,
        seed,
        generator_kwargs,
        optimizer_options,
        HEAVY_TAILED_TRANSFORMS if transforms is None else transforms,
    )


def recommended_parameterization(
    source: Client | GenerationStrategy,
) -> tuple[dict[str, Any], dict[str, tuple[float, float]], int, str]:
    r"""The best point of the strategy's model, without Ax's fallback to the best raw reading.

    ``client.get_best_parameterization()`` first runs a leave-one-out cross-validation of the
    model and Fisher's exact test of its ranking (Ax's ``assess_model_fit``); when the test
    finds no significant agreement (p > 0.1), Ax returns the arm of the best *raw* reading,
    which under corrupted readings is often a corrupted one. This function returns what Ax
    returns when that check passes, without running it:

    * while the strategy holds a fitted BO model (its ``adapter`` is a ``TorchAdapter``),
      ``adapter.model_best_point()``: the model's best in-sample arm (for
      :func:`heavy_tailed_generation_strategy`'s robust default,
      :func:`~botorch_mtucb.models.recommend`'s arm, :class:`JointSurrogate`; for Ax's own
      surrogate, its best predicted in-sample arm) and the model's prediction there, from the
      adapter ``client.predict`` uses, so the two agree;
    * otherwise (e.g. right after ``Client.load_from_json_file``), the best arm recorded with
      the latest generator run (what Ax's best-point utility returns without an adapter),
      computed by the same model when that trial was generated.

    Both answer from the model of the last generated trial (the readings completed since
    enter at the next one), as ``client.get_best_parameterization()`` and ``client.predict``
    do. Nothing is refitted and no cross-validation is run.

    Args:
        source: The ``ax.api.client.Client`` (its generation strategy is read from the
            Client's ``_maybe_generation_strategy`` attribute) or the ``GenerationStrategy``
            passed to ``client.set_generation_strategy``, attached to a single-objective
            experiment.

    Returns:
        ``(parameters, {metric: (mean, variance)}, trial_index, arm_name)``, the layout of
        ``client.get_best_parameterization()``: the arm's parameters, the model's predicted
        mean and variance of each modelled metric there, the first trial that ran the arm and
        its name.

    Raises:
        ValueError: if ``source`` is neither, no experiment is attached, the experiment has no
            single-objective optimization config, or no model has proposed a trial yet (the
            Sobol step: use ``client.get_best_parameterization(use_model_predictions=False)``).

    Example:
        >>> import math
        >>> from ax.api.client import Client
        >>> from ax.api.configs import RangeParameterConfig
        >>> from botorch_mtucb.integrations.ax.strategies import (
        ...     heavy_tailed_generation_strategy, recommended_parameterization)
        >>> client = Client(random_seed=0)
        >>> client.configure_experiment(parameters=[
        ...     RangeParameterConfig(name=n, parameter_type="float", bounds=(0.0, 1.0))
        ...     for n in ("x0", "x1")])
        >>> client.configure_optimization(objective="y")
        >>> client.set_generation_strategy(heavy_tailed_generation_strategy(
        ...     num_initial_trials=6, seed=0,
        ...     optimizer_options={"num_restarts": 2, "raw_samples": 32}))
        >>> for _ in range(8):
        ...     for i, p in client.get_next_trials(max_trials=1).items():
        ...         y = 50.0 if i == 1 else math.sin(3 * p["x0"]) - (p["x1"] - 0.6) ** 2
        ...         _ = client.complete_trial(i, raw_data={"y": y})
        >>> parameters, prediction, trial_index, arm_name = recommended_parameterization(client)
        >>> trial_index != 1  # never the failure reading
        True
    """
    if isinstance(source, Client):
        strategy = getattr(source, "_maybe_generation_strategy", None)
        if not isinstance(strategy, GenerationStrategy):
            raise ValueError(
                "`source` is a Client without a generation strategy: call "
                "client.set_generation_strategy(...) and generate trials first."
            )
    elif isinstance(source, GenerationStrategy):
        strategy = source
    else:
        raise ValueError(
            "`source` must be an ax.api.client.Client or a GenerationStrategy, got "
            f"{type(source).__name__}."
        )
    experiment = strategy.experiment  # ValueError when none is attached
    config = experiment.optimization_config
    if config is None or config.is_moo_problem:
        raise ValueError(
            "`source` needs a single-objective optimization config (for several objectives "
            "use client.get_pareto_frontier())."
        )
    adapter = strategy.adapter
    found: tuple[int, dict[str, Any], Any] | None = None
    if isinstance(adapter, TorchAdapter):
        best = adapter.model_best_point()
        if best is not None:
            arm, prediction = best
            index = next((i for i, t in experiment.trials.items() if arm in t.arms), None)
            if index is not None:
                found = (index, dict(arm.parameters), prediction)
    if found is None:
        found = get_best_parameters_from_model_predictions_with_trial_index(
            experiment=experiment, adapter=None, optimization_config=config
        )
    if found is None or found[2] is None:
        raise ValueError(
            "No model has proposed a trial yet (the strategy is still in its Sobol step), so "
            "there is no model-based best point; use "
            "client.get_best_parameterization(use_model_predictions=False) for the best raw "
            "reading."
        )
    index, parameters, (mean, covariance) = found
    values = {m: (float(mean[m]), float(covariance[m][m])) for m in mean}
    arm_name = next(a.name for a in experiment.trials[index].arms if a.parameters == parameters)
    return dict(parameters), values, int(index), arm_name
