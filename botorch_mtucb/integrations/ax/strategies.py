r"""Run MT-UCB (MT-KB) and TGP-UCB / ATA-GP-UCB inside Ax (``ax-platform`` 1.3.1).

Two one-call helpers return an Ax ``GenerationStrategy``: a Sobol warm-up (by default
:func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2·d) trials, the size the
package's ``run_bo_loop`` uses), then ``Generators.BOTORCH_MODULAR`` with this package's
model and acquisition::

    from ax.api.client import Client
    from botorch_mtucb.integrations.ax import mtucb_generation_strategy

    client = Client(random_seed=0)
    client.configure_experiment(parameters=[...])
    client.configure_optimization(objective="-branin, -currin")
    client.set_generation_strategy(mtucb_generation_strategy(seed=0))
    for _ in range(20):
        for index, params in client.get_next_trials(max_trials=1).items():
            client.complete_trial(index, raw_data=evaluate(params))
    front = client.get_pareto_frontier()

Importing this module registers the BoTorch input constructors of
:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` and
:class:`~botorch_mtucb.acquisition.HeavyTailedUCB` and Ax's fitting routine for the
heavy-tailed models. What each piece does and why:

**Model (not split into a ModelListGP).** ``mtucb_generation_strategy`` uses
:class:`AxPracticalMultiTaskGP` (default, ``model="practical"``: the model of
:func:`~botorch_mtucb.models.practical_multitask_gp`: Matérn-5/2 ICM with BoTorch's prior and
a learned B, a constant mean per task, η learned with a LogNormal(−4, 1) prior) or
:class:`AxExactMultiTaskGP` (``model="paper"``: the paper's estimator, η = the ``noise`` model
option, 0.1 by default, fixed unless ``learn_noise=True``; zero mean). Both are
:class:`~botorch_mtucb.models.ExactMultiTaskGP` s (a ``BatchedMultiOutputGPyTorchModel``):
Ax's ``use_model_list`` then merges the objectives into one block-design dataset and builds
one joint model whose task covariance Γ couples them. Ax adds its default ``Normalize`` input
transform and standardizes the outcomes; the hyperparameters are fitted by Ax's
``fit_gpytorch_mll`` at every trial.

**Directions.** Ax encodes a minimised objective as weight −1. The input constructor passes
these directions to the scalarization's ``minimize`` (it negates those outputs and the
reference point before scalarizing), so the acquisition maximises
s_λ(±f(x)) with the right sign and nothing is negated twice. MT-UCB draws its own weights λ,
so Ax weights other than ±1 (scalarized sub-objectives) are refused.

**Reference point of the Chebyshev scalarization.** s_λ(y) = min_i λ_i (y_i − z_i) needs z
below every interesting outcome. Thresholds the user set for every objective
(``client.configure_optimization(..., outcome_constraints=["a >= 0.3", ...])`` on the
objective metrics; :class:`UCBAcquisition` records them before Ax infers missing ones) are z,
with the plain s_λ. Otherwise (``reference="data"``, the default) each trial uses the
scale-free augmented :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data`
of the observations: z at the observed non-dominated nadir minus 10 % of each objective's range, λ
acting on range-normalised objectives, ρ = 0.05 (issue 16: the augmented scalarization at the
non-dominated nadir raised BraninCurrin's hypervolume from 80 % to 87–90 % in ``run_bo_loop``), with
the nadir and the ranges taken from the observed non-dominated points together with the model's
payoff table on the search box (Ax's search-space digest, in the model's input space; its
per-objective optima; the loop's default ``front="predicted"``,
``bench/mtucb_bench/studies/mo_zdt2_diagnosis.py``: it ends the re-proposal stall once one observation dominates
the rest; the acquisition option ``front="observed"`` keeps the observed points only).
``reference="thresholds"`` keeps the earlier rule: Ax's thresholds, the missing ones inferred by Ax
as the model-predicted Pareto front's nadir pushed back by 10 % of its range (or, with a plain Ax
``Acquisition``, which does not say which output a threshold belongs to, the same heuristic on the
*observed* front). All of it lives in Ax's transformed (standardized) outcome space, the space of
the model.

**A fresh λ per trial, seedable.** Each acquisition Ax builds (one per trial) draws
λ ~ P_λ (paper 000, §5) from a stream keyed by ``(seed, t)``, t = observed + pending points.
``seed=None`` uses torch's global generator mixed with t (``ax.Client(random_seed=...)``
reseeds the global generator at every ``get_next_trials``; without the mixing every trial
would get the same λ).

**Pending points (``X_pending``).** Both UCBs are q = 1. When trials are still running
(``get_next_trials(max_trials=k)`` with k > 1, or trials not yet completed), the acquisition is
built with them as ``X_pending`` and conditions the model on hallucinated observations there
(GP-BUCB, :mod:`botorch_mtucb.acquisition.pending`): same mean, shrunk variance there, β from
the real data only. Arms per trial must be 1 (the
``Client`` default); :class:`UCBAcquisition` refuses more.

**Noise variances reported to Ax (``train_Yvar``).** When every metric of every trial in the
model's data has an SEM (``raw_data={"a": (mean, sem), ...}``), both multi-task models take
SEM² (in Ax's standardized units) as known noise (``ExactMultiTaskGP(train_Yvar=...)``; the
noise is then not learned, and the ICM fast path holds only while the variances are equal).
With SEMs for some metrics or trials only, or ``noise`` / ``learn_noise=True`` in
``model_options``, they are ignored with a
``UserWarning``. Heavy-tailed BO assumes only E|y|^{1+α} ≤ v: SEMs are always ignored there.

**Saving and loading.** Importing this module registers the package's classes with Ax's
storage (:func:`register_ax_storage`), so ``client.save_to_json_file()`` /
``Client.load_from_json_file()`` and the SQL store round-trip experiments run with these
strategies, and a loaded client continues the loop (import this module before loading).
Modules in ``model_options`` (a ``covar_module`` instance) and ``NystromFeatures`` are
refused with a ``JSONEncodeError`` naming the workaround.

**Heavy-tailed defaults and scale.** ``heavy_tailed_generation_strategy()`` (no α, no v)
uses the models' data-driven mode, rebuilt at every trial: rewards centred at their median,
v estimated by median-of-means, TGP's rewards winsorised at the current level, the kernel
fitted the BoTorch way on the truncated rewards, width β = 1 (ATA-GP-UCB: Nyström features
on that kernel, no ``features`` needed). With α and v given it is paper 001 verbatim, as
before. TGP-UCB truncates at b_t = v^{1/(1+α)} t^{1/(2(1+α))}, a level in the *units of the
rewards* (those of the declared v, or of the estimate). Ax's default outcome transforms
(``Winsorize``, ``BilogY``, ``StandardizeY``) would change those units with the data (and
winsorizing is itself a truncation at another level), so the helper drops them: the model
sees the raw rewards (``Derelativize`` is kept, which is the identity without relative
constraints). Inputs are mapped to [0, 1]^d by Ax's ``UnitX`` (log-scale parameters after
Ax's ``Log``): the domain of paper 001 and of the default kernels, which refuse inputs
outside the unit cube. Rows are rounds in trial-index order (Ax's order, whatever the order
of completion; Sobol trials included). A minimised objective is handled by flipping the sign
of the estimate (truncation acts on |y − loc| with loc = 0 or the median, so this equals
negating the rewards). Pass ``transforms=`` to change this; then a declared v must be stated
in the transformed units.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

try:
    import ax  # noqa: F401  (the optional dependency; a clear message if it is missing)
except ImportError as err:  # pragma: no cover - exercised only without Ax
    raise ImportError(
        "botorch_mtucb.integrations.ax needs Ax (ax-platform>=1.3.1): "
        "pip install 'botorch-mtucb[ax]'."
    ) from err

from ax.adapter.transforms.base import Transform  # noqa: E402
from ax.generation_strategy.generation_strategy import GenerationStrategy

from botorch_mtucb.acquisition.beta import BetaSchedule
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.integrations.ax.acquisition import UCBAcquisition
from botorch_mtucb.integrations.ax.heavy_tailed import (
    HEAVY_TAILED_TRANSFORMS,
    heavy_tailed_generation_strategy,
)
from botorch_mtucb.integrations.ax.input_constructors import (
    construct_inputs_heavy_tailed_ucb,
    construct_inputs_scalarized_mtucb,
)
from botorch_mtucb.integrations.ax.models import (
    AxAdaptiveTruncationGP,
    AxExactMultiTaskGP,
    AxPracticalMultiTaskGP,
    AxTruncatedGP,
)
from botorch_mtucb.integrations.ax.storage import register_ax_storage
from botorch_mtucb.integrations.ax.strategy import (
    DesignSizedGenerationStrategy,
    check_common,
    two_step_strategy,
)
from botorch_mtucb.integrations.ax.surrogate import (
    JointSurrogate,
    joint_surrogate,
    multitask_gp_generation_strategy,
)

__all__ = [
    "HEAVY_TAILED_TRANSFORMS",
    "AxAdaptiveTruncationGP",
    "AxExactMultiTaskGP",
    "AxPracticalMultiTaskGP",
    "AxTruncatedGP",
    "DesignSizedGenerationStrategy",
    "JointSurrogate",
    "UCBAcquisition",
    "construct_inputs_heavy_tailed_ucb",
    "construct_inputs_scalarized_mtucb",
    "heavy_tailed_generation_strategy",
    "mtucb_generation_strategy",
    "multitask_gp_generation_strategy",
    "register_ax_storage",
]

register_ax_storage((UCBAcquisition,))


def mtucb_generation_strategy(
    *,
    num_initial_trials: int | None = None,
    beta: float | BetaSchedule | None = None,
    scalarization: Literal["chebyshev", "linear"] = "chebyshev",
    bound: Literal["spectral", "directional"] = "directional",
    seed: int | None = None,
    model_options: dict[str, Any] | None = None,
    optimizer_options: dict[str, Any] | None = None,
    transforms: Sequence[type[Transform]] | None = None,
    model: Literal["practical", "paper"] = "practical",
    reference: Literal["data", "thresholds"] = "data",
) -> GenerationStrategy:
    """Sobol warm-up, then MT-UCB: one joint multi-task GP + ``ScalarizedMultiTaskUCB``.

    For multi-objective experiments (``objective="a, -b"``; every model output must be an
    objective). Each BO trial maximises the scalarized multi-task UCB (paper 000, eq. (2))
    for a fresh λ ~ P_λ. The defaults are the practical ones of issue 16 (the package's
    ``run_bo_loop`` defaults): a Sobol design of ``initial_design_size(d)`` trials, the
    practical model (:class:`AxPracticalMultiTaskGP`), the scale-free augmented Chebyshev
    scalarization and the acquisition's default width. Measured on BraninCurrin (both
    minimised, 30 trials, 3 seeds, hypervolume of the observed points): 89.0 % of the
    maximum (86.3, 91.5, 89.3) against 58.3 % (73.4, 16.7, 84.9) with the settings before
    issue 16 (``num_initial_trials=5, model="paper", reference="thresholds", beta=1``), at
    0.61 s instead of 0.37 s per trial (the model is refitted at every trial).

    Args:
        num_initial_trials: Number of Sobol trials (≥ 1); the BO step starts once half of
            them (at least one) have data. Default ``None``:
            :func:`~botorch_mtucb.utils.initial_design_size` (d) = max(5, 2·d), d = the
            number of tunable parameters, set when the experiment is attached
            (:class:`DesignSizedGenerationStrategy`).
        beta: Confidence radius β (in Ax's standardized outcome units) or a
            :class:`~botorch_mtucb.acquisition.BetaSchedule` evaluated on each fitted model.
            Default ``None``: :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`'s
            practical width (β = 1; issue 16: β = 2 was worse than 1 on 3 of 4 paper
            problems and on BraninCurrin).
        scalarization: ``"chebyshev"`` or ``"linear"``.
        bound: ``"directional"`` (default, tighter) or ``"spectral"`` (paper 000, eq. (2)).
        seed: Seeds the Sobol points and the λ stream (``None``: not seeded here).
        model_options: Keyword arguments of the model (``noise``, ``learn_noise``,
            ``covar_module``, ``mean_module``; ``independent`` for the practical model).
        optimizer_options: BoTorch ``optimize_acqf`` options (``num_restarts``,
            ``raw_samples``, ``options``).
        transforms: Ax transforms of the BO step (default: Ax's BoTorch defaults).
        model: ``"practical"`` (:class:`AxPracticalMultiTaskGP`: Matérn-5/2 ICM with a
            learned B, constant mean, learned noise) or ``"paper"``
            (:class:`AxExactMultiTaskGP`: the paper's estimator, η = 0.1 fixed, zero mean).
        reference: Chebyshev reference point when the user set no objective threshold for
            some objective: ``"data"`` (default) builds
            :meth:`~botorch_mtucb.acquisition.ChebyshevScalarization.from_data` from the
            observations (scale-free, non-dominated nadir − 10 % of the range, augmented ρ = 0.05;
            the front observed and model-predicted); ``"thresholds"`` uses Ax's inferred thresholds
            (model-predicted nadir) with the plain s_λ (the behaviour before issue 16). Thresholds
            the user set for every objective are always the reference point (plain s_λ, Ax's units).

    Returns:
        The ``GenerationStrategy`` (pass it to ``client.set_generation_strategy``).
    """
    check_common(num_initial_trials, seed, optimizer_options)
    if beta is not None and not isinstance(beta, BetaSchedule):
        b = float(beta)
        if not math.isfinite(b) or b < 0:
            raise ValueError(
                f"`beta` must be a finite number >= 0, a BetaSchedule or None, got {beta!r}."
            )
    if scalarization not in ("chebyshev", "linear"):
        raise ValueError(f"`scalarization` must be 'chebyshev' or 'linear', got {scalarization!r}.")
    if bound not in ("spectral", "directional"):
        raise ValueError(f"`bound` must be 'spectral' or 'directional', got {bound!r}.")
    classes = {"practical": AxPracticalMultiTaskGP, "paper": AxExactMultiTaskGP}
    if model not in classes:
        raise ValueError(f"`model` must be 'practical' or 'paper', got {model!r}.")
    if reference not in ("data", "thresholds"):
        raise ValueError(f"`reference` must be 'data' or 'thresholds', got {reference!r}.")
    options: dict[str, Any] = {
        "scalarization": scalarization, "bound": bound, "seed": seed, "reference": reference,
    }
    if beta is not None:
        options["beta"] = beta
    generator_kwargs = {
        # one joint model, also when a trial reports a NaN or missing metric value
        "surrogate": joint_surrogate(model_options, name="MT-KB", model_class=classes[model]),
        "botorch_acqf_class": ScalarizedMultiTaskUCB,
        "botorch_acqf_options": options,
        "acquisition_class": UCBAcquisition,
    }
    return two_step_strategy(
        "Sobol+MT-UCB", num_initial_trials, seed, generator_kwargs, optimizer_options, transforms
    )
