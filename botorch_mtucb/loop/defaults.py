"""The practical defaults of :func:`botorch_mtucb.loop.run_bo_loop`.

Called with only ``observe``, ``num_rounds`` and a box (``bounds=`` or a
:class:`~botorch_mtucb.acquisition.optimizers.BoxOptimizer`), the loop is what a careful
BoTorch user writes by hand:

* a scrambled Sobol initial design of :func:`~botorch_mtucb.utils.initial_design_size` (d)
  points (:func:`~botorch_mtucb.utils.sobol_initial_design`);
* the model :func:`~botorch_mtucb.models.practical_multitask_gp` on the box (normalised
  inputs, standardised outcomes, ICM Matérn-5/2 with a learned B, constant mean, learned
  noise), conditioned on each round's points and refitted on the :class:`RefitSchedule`,
  each refit run both from the last fit and from the default start, the higher penalised
  likelihood kept (:func:`practical_model_factory`);
* the scale-free augmented Chebyshev scalarization with a fresh λ_t each round
  (``ScalarizationSampler(n, "chebyshev", ref_point="data", front="predicted")``: reference
  point and ranges from the observed non-dominated points and the model's payoff table;
  n ≥ 2 objectives);
* for n ≤ :data:`HYPERVOLUME_UCB_MAX_OBJECTIVES` objectives
  :class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB` (the hypervolume that the
  per-objective UCBs μ_i + βσ_i would add to the model's front, reference point from the
  round's scalarization; :func:`hypervolume_ucb_factory`), for more
  :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` with the directional bound
  (:func:`scalarized_ucb_factory`), both at their default (practical) width
  (:func:`practical_acquisition_factory`), maximised by
  ``DedupOptimizer(bounds, num_restarts=4, raw_samples=256)``: ``BoxOptimizer``'s multi-start
  L-BFGS-B, except that it returns the best point that has not been evaluated yet (a repeat
  teaches a noise-free model nothing; ``optimizer=BoxOptimizer(bounds, 4, 256)`` allows
  repeats).

Every piece given explicitly replaces its default; a call that gives ``initial_X`` and the
model, acquisition and optimizer runs with exactly those pieces (``update="condition"``, no
refits).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Literal

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.beta import BetaSchedule, check_width
from botorch_mtucb.acquisition.dedup import DedupOptimizer
from botorch_mtucb.acquisition.hypervolume_ei import LogExpectedHypervolumeImprovement
from botorch_mtucb.acquisition.hypervolume_front import HypervolumeFrontAcquisition
from botorch_mtucb.acquisition.hypervolume_ucb import HypervolumeImprovementUCB
from botorch_mtucb.acquisition.multi_task_ucb import ScalarizedMultiTaskUCB
from botorch_mtucb.acquisition.optimizers import BoxOptimizer
from botorch_mtucb.acquisition.pending import PendingInflation, resolve_inflation
from botorch_mtucb.acquisition.scalarization import Scalarization
from botorch_mtucb.acquisition.scalarization.sampling import ScalarizationSampler
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
from botorch_mtucb.utils import training_data
from botorch_mtucb.utils.initial_design import check_bounds, sobol_initial_design
from botorch_mtucb.utils.validation import as_float_vector

__all__ = [
    "DEFAULT_NUM_RESTARTS",
    "DEFAULT_RAW_SAMPLES",
    "HYPERVOLUME_UCB_MAX_OBJECTIVES",
    "RefitRule",
    "RefitSchedule",
    "hypervolume_ucb_factory",
    "log_ehvi_factory",
    "practical_acquisition_factory",
    "practical_model_factory",
    "scalarized_ucb_factory",
]

#: Most objectives for which the loop's default acquisition is the hypervolume UCB
#: (:func:`practical_acquisition_factory`); its box decomposition grows exponentially with n.
HYPERVOLUME_UCB_MAX_OBJECTIVES = 4

#: ``optimize_acqf`` starts and raw samples of the default optimizer.
DEFAULT_NUM_RESTARTS, DEFAULT_RAW_SAMPLES = 4, 256

#: ``refit_every``: an int k (refit after every k-th round) or ``(t, N, N_fit) -> bool``.
RefitRule = int | Callable[[int, int, int], bool]


@dataclass(frozen=True)
class RefitSchedule:
    """When to refit hyperparameters: every round while N ≤ ``every_round_until``, then when
    the data have grown by ``growth`` (relative) since the last fit.

    Round t refits (``model_factory`` on all N observations) if

        N ≤ ``every_round_until``  or  N − N_fit ≥ max(1, ⌈``growth`` · N_fit⌉),

    N_fit the number of observations at the last fit (integer arithmetic: no refit is lost
    to rounding); other rounds condition the model on the new points
    (``condition_on_observations``: same hyperparameters, exact posterior). With the defaults
    and q = 1: every round up to 20 points, then every 3 rounds at N = 25, every 5 at N = 50,
    every 20 at N = 200, so the number of fits grows like log N instead of N. A refit costs a
    marginal-likelihood optimisation (O(N³) per step), a conditioning one rank-q update.

    Attributes:
        every_round_until: Refit at every round while N is at most this.
        growth: Relative growth of N since the last fit that triggers a refit (> 0).

    Example:
        >>> schedule = RefitSchedule()
        >>> [schedule(t=1, N=N, N_fit=N - 1) for N in (10, 20, 21)]
        [True, True, False]
        >>> schedule(t=5, N=22, N_fit=20)   # 2 = ⌈0.1 · 20⌉ new points since the last fit
        True
    """

    every_round_until: int = 20
    growth: float = 0.1

    def __post_init__(self) -> None:
        until, growth = self.every_round_until, self.growth
        try:
            count = None if isinstance(until, bool) else operator.index(until)
        except TypeError:
            count = None
        if count is None or count < 0:
            raise ValueError(
                f"`every_round_until` must be a non-negative integer, got {until!r}."
            )
        if isinstance(growth, bool) or not isinstance(growth, Real) or not (
            0 < growth < math.inf
        ):
            raise ValueError(f"`growth` must be a positive finite number, got {growth!r}.")
        object.__setattr__(self, "every_round_until", int(count))
        object.__setattr__(self, "growth", float(growth))

    def __call__(self, t: int, N: int, N_fit: int) -> bool:
        """Whether round ``t`` refits.

        Args:
            t: Round index, 1-based (unused: the schedule depends on the data size only).
            N: Number of observations after the round.
            N_fit: Number of observations at the last fit.

        Returns:
            ``True`` when the round refits.
        """
        if N <= self.every_round_until:
            return True
        return N - N_fit >= max(1, math.ceil(self.growth * N_fit - 1e-9))


def check_refit_rule(refit_every: object) -> None:
    """Raise a clear error unless ``refit_every`` is an int ≥ 0 or a callable schedule."""
    if callable(refit_every):
        return
    if isinstance(refit_every, bool) or not isinstance(refit_every, int) or refit_every < 0:
        raise ValueError(
            "`refit_every` must be an integer >= 0 or a callable (t, N, N_fit) -> bool such as "
            f"RefitSchedule(), got {refit_every!r}."
        )


def refit_due(refit_every: RefitRule, t: int, N: int, N_fit: int) -> bool:
    """Whether round ``t`` refits under ``refit_every`` (int k: t % k == 0; 0: never)."""
    if callable(refit_every):
        return bool(refit_every(t, N, N_fit))
    return bool(refit_every) and t % refit_every == 0


def scalarized_ucb_factory(
    beta: float | BetaSchedule | None = None,
    bound: Literal["spectral", "directional"] = "directional",
    pending_beta_inflation: PendingInflation = 1.0,
) -> Callable[[Model, Scalarization | None], AcquisitionFunction]:
    """Acquisition factory for :func:`~botorch_mtucb.loop.run_bo_loop`: ``(model, s_λ) ->``
    :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` (paper 000, eq. (2) with
    ``bound="spectral"``, App. B.1 with ``bound="directional"``).

    Args:
        beta: Confidence radius β (a float or a schedule evaluated on the model);
            ``None`` keeps the acquisition's default (practical) width.
        bound: ``"spectral"`` (the paper's rule) or ``"directional"`` (tighter, same
            guarantee).
        pending_beta_inflation: Width inflation of batch points chosen with pending points
            (``q > 1``, GP-BUCB; :mod:`botorch_mtucb.acquisition.pending`).

    Returns:
        ``(model, scalarization) -> ScalarizedMultiTaskUCB``; it raises ``ValueError`` when
        called without a scalarization.

    Example:
        >>> from botorch_mtucb.acquisition import LinearScalarization
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> model = ExactMultiTaskGP(torch.rand(6, 2, dtype=torch.float64),
        ...                          torch.rand(6, 2, dtype=torch.float64))
        >>> factory = scalarized_ucb_factory(beta=2.0, bound="spectral")
        >>> s = LinearScalarization(torch.tensor([0.5, 0.5], dtype=torch.float64))
        >>> acqf = factory(model, s)
        >>> acqf(torch.rand(4, 1, 2, dtype=torch.float64)).shape   # b x q x d -> b
        torch.Size([4])
    """
    resolve_inflation(pending_beta_inflation)
    width = {} if beta is None else {"beta": check_width(beta)}
    if bound not in ("spectral", "directional"):
        raise ValueError(f"`bound` must be 'spectral' or 'directional', got {bound!r}.")

    def factory(model: Model, scalarization: Scalarization | None) -> AcquisitionFunction:
        if scalarization is None:
            raise ValueError("The scalarized UCB needs a `scalarization_sampler`.")
        return ScalarizedMultiTaskUCB(
            model, scalarization, **width, bound=bound,
            pending_beta_inflation=pending_beta_inflation,
        )

    return factory


def hypervolume_ucb_factory(
    beta: float | BetaSchedule | None = None,
    ref_point: Sequence[float] | Tensor | None = None,
) -> Callable[[Model, Scalarization | None], AcquisitionFunction]:
    """Acquisition factory for :func:`~botorch_mtucb.loop.run_bo_loop`: ``(model, s_λ) ->``
    :class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB` (UCB of the hypervolume
    improvement over the model's front).

    The round's scalarization supplies the minimised objectives and, unless ``ref_point`` is
    given, the reference point z; its λ is not used. :func:`~botorch_mtucb.loop.run_bo_loop`
    gives it its default sampler unless another is passed (the factory has
    ``uses_default_sampler = True``): ``ScalarizationSampler(n, "chebyshev", ref_point="data",
    front="predicted")``, whose z sits just below the nadir of the observed and predicted
    fronts, so the rule is scale-free. The front is the non-dominated set of the model's
    posterior means at its training inputs.

    Args:
        beta: Width β ≥ 0 of the per-objective upper bounds μ_i + βσ_i (a number, or a
            schedule evaluated on each model); ``None`` keeps the acquisition's default
            (practical) width.
        ref_point: Optional ``n`` reference point z of the hypervolume that will be reported
            (original units; for a minimised objective, above its range of interest), as
            BoTorch's ``qLogNEHVI`` takes it; ``None``: the round's scale-free z.

    Returns:
        ``(model, scalarization) -> HypervolumeImprovementUCB``; it raises ``ValueError``
        when called without a scalarization, or, without ``ref_point``, with one that has
        no ``ref_point``. Its attribute ``ref_point`` is the given z (float64) or ``None``;
        with a z, the loop's default sampler reads the observed front only
        (``front="observed"``): the predicted front would set only the scalarization's
        reference point and ranges, which the acquisition then does not use.

    Raises:
        ValueError: for a ``ref_point`` that is not a vector of finite numbers.

    Example:
        >>> from botorch_mtucb.acquisition import ChebyshevScalarization
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> model = ExactMultiTaskGP(X, torch.stack([X[:, 0], 1 - X[:, 0] * X[:, 1]], -1))
        >>> s = ChebyshevScalarization([0.5, 0.5], ref_point=[-0.1, -0.1])
        >>> acqf = hypervolume_ucb_factory()(model, s)
        >>> acqf(torch.rand(4, 1, 2, dtype=torch.float64)).shape
        torch.Size([4])
    """
    width = {} if beta is None else {"beta": check_width(beta)}
    z = _check_ref_point(ref_point)

    def factory(model: Model, scalarization: Scalarization | None) -> AcquisitionFunction:
        return _front_acquisition(HypervolumeImprovementUCB, model, scalarization, z, **width)

    factory.uses_default_sampler = True  # run_bo_loop supplies its scale-free sampler
    factory.ref_point = z  # a known z: the default sampler needs no predicted front
    return factory


def log_ehvi_factory(
    ref_point: Sequence[float] | Tensor | None = None,
) -> Callable[[Model, Scalarization | None], AcquisitionFunction]:
    """Acquisition factory for :func:`~botorch_mtucb.loop.run_bo_loop`: ``(model, s_λ) ->``
    :class:`~botorch_mtucb.acquisition.LogExpectedHypervolumeImprovement` (log of the
    expected hypervolume improvement over the model's front).

    The reference point is ``ref_point`` when given, else the round's scalarization's, as
    for :func:`hypervolume_ucb_factory` (the loop's default scale-free sampler, whose z sits
    just below the nadir of the observed and predicted fronts); the scalarization's λ is not
    used. An option for deterministic (noise-free) objectives; the loop's default stays
    :func:`practical_acquisition_factory` (the benchmarks' documentation compares the two
    with and without noise).

    Args:
        ref_point: Optional ``n`` reference point z of the hypervolume that will be reported
            (original units; for a minimised objective, above its range of interest), as
            BoTorch's ``qLogNEHVI`` takes it; ``None``: the round's scale-free z.

    Returns:
        ``(model, scalarization) -> LogExpectedHypervolumeImprovement``; it raises
        ``ValueError`` when called without a scalarization, or, without ``ref_point``, with
        one that has no ``ref_point``. Its attribute ``ref_point`` is the given z or
        ``None``, as for :func:`hypervolume_ucb_factory` (with a z, the loop's default
        sampler reads the observed front only).

    Raises:
        ValueError: for a ``ref_point`` that is not a vector of finite numbers.

    Example:
        >>> from botorch_mtucb.acquisition import ChebyshevScalarization
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> model = ExactMultiTaskGP(X, torch.stack([X[:, 0], 1 - X[:, 0] * X[:, 1]], -1))
        >>> s = ChebyshevScalarization([0.5, 0.5], ref_point=[-0.1, -0.1])
        >>> acqf = log_ehvi_factory()(model, s)
        >>> acqf(torch.rand(4, 1, 2, dtype=torch.float64)).shape
        torch.Size([4])
        >>> log_ehvi_factory(ref_point=[-0.5, 0.0])(model, s).ref_point  # a known z
        tensor([-0.5000, 0.0000], dtype=torch.float64)
    """
    z = _check_ref_point(ref_point)

    def factory(model: Model, scalarization: Scalarization | None) -> AcquisitionFunction:
        return _front_acquisition(LogExpectedHypervolumeImprovement, model, scalarization, z)

    factory.uses_default_sampler = True  # run_bo_loop supplies its scale-free sampler
    factory.ref_point = z  # a known z: the default sampler needs no predicted front
    return factory


def _check_ref_point(ref_point: Sequence[float] | Tensor | None) -> Tensor | None:
    """``ref_point`` as a 1-d float64 tensor (``None`` stays ``None``).

    Raises:
        ValueError: for anything but a non-empty vector of finite numbers.
    """
    if ref_point is None:
        return None
    return as_float_vector(ref_point, "ref_point").to(torch.float64)


def _front_acquisition(
    cls: type[HypervolumeFrontAcquisition],
    model: Model,
    scalarization: Scalarization | None,
    ref_point: Tensor | None = None,
    **options: float,
) -> HypervolumeFrontAcquisition:
    """``cls`` on ``model``'s front, baseline the model's training inputs, minimised
    objectives from the round's scalarization, reference point ``ref_point`` or else the
    scalarization's."""
    if scalarization is None:
        raise ValueError(
            f"{cls.__name__} takes the minimised objectives, and its reference point from the "
            "round's scalarization unless the factory has a `ref_point`: pass a "
            "`scalarization_sampler`."
        )
    if ref_point is None:
        ref_point = getattr(scalarization, "ref_point", None)
    if ref_point is None:
        raise ValueError(
            f"{cls.__name__} takes its reference point from the round's scalarization: pass a "
            "`scalarization_sampler` whose scalarizations have a `ref_point` (e.g. "
            "ScalarizationSampler(n, 'chebyshev', ref_point='data')), or the factory's "
            "`ref_point`."
        )
    X, _ = training_data(model)
    ref_point = torch.as_tensor(ref_point).to(X)
    return cls(
        model, ref_point, X, minimize=scalarization.minimize, scalarization=scalarization,
        **options,
    )


def practical_acquisition_factory(
    beta: float | BetaSchedule | None = None,
) -> Callable[[Model, Scalarization | None], AcquisitionFunction]:
    """The default acquisition factory of :func:`~botorch_mtucb.loop.run_bo_loop`.

    ``(model, s_λ) ->``

    * :class:`~botorch_mtucb.acquisition.HypervolumeImprovementUCB` (reference point from
      s_λ, :func:`hypervolume_ucb_factory`) for n ≤ :data:`HYPERVOLUME_UCB_MAX_OBJECTIVES`
      objectives;
    * :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` (directional bound, s_λ as
      drawn, :func:`scalarized_ucb_factory`) for more objectives, where the box
      decomposition of the front becomes expensive, and whenever s_λ has no reference point
      (e.g. a :class:`~botorch_mtucb.acquisition.LinearScalarization` sampler).

    Args:
        beta: Width β of either acquisition, a number or a schedule evaluated on each model
            (``None``: their practical default, 1.0).

    Returns:
        ``(model, scalarization) -> AcquisitionFunction``; it raises ``ValueError`` when
        called without a scalarization.

    Example:
        >>> from botorch_mtucb.acquisition import ChebyshevScalarization
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> model = ExactMultiTaskGP(X, torch.stack([X[:, 0], 1 - X[:, 0] * X[:, 1]], -1))
        >>> s = ChebyshevScalarization([0.5, 0.5], ref_point=[-0.1, -0.1])
        >>> type(practical_acquisition_factory()(model, s)).__name__
        'HypervolumeImprovementUCB'
    """
    hypervolume = hypervolume_ucb_factory(beta)
    scalarized = scalarized_ucb_factory(beta)

    def factory(model: Model, scalarization: Scalarization | None) -> AcquisitionFunction:
        if scalarization is None:
            raise ValueError("The loop's default acquisition needs a `scalarization_sampler`.")
        n = scalarization.num_objectives
        if n <= HYPERVOLUME_UCB_MAX_OBJECTIVES and hasattr(scalarization, "ref_point"):
            return hypervolume(model, scalarization)
        return scalarized(model, scalarization)

    factory.uses_default_sampler = True
    return factory


def practical_model_factory(
    bounds: Tensor, per_task: bool = False
) -> Callable[[Tensor, Tensor], Model]:
    """The loop's default model factory: ``(X, Y) ->`` the practical model
    (:func:`~botorch_mtucb.models.practical_multitask_gp` on ``bounds``), its first fit cold
    and every later fit run twice, warm-started from the last one and cold, the fit with the
    higher penalised marginal likelihood kept
    (:class:`~botorch_mtucb.multitask.practical.WarmStartPracticalFactory`; one factory per
    run). :func:`~botorch_mtucb.loop.run_bo_loop` refits it on
    :class:`RefitSchedule` () unless told otherwise, whether it is the default or passed as
    ``model_factory``.

    Args:
        bounds: ``2 x d`` box of the domain (lower < upper).
        per_task: Add one scaled Matérn-5/2 kernel per objective to the ICM term
            (``practical_multitask_gp(..., per_task=True)``: Γ = k₀B + diag(s_i k_i)), for
            objectives that may depend on different inputs, and under observation noise,
            where it was the better model over the project's multi-objective suite (the
            benchmarks' documentation has the figures). A round costs a few times the
            ICM's: the sum has no Kronecker structure, so the fit and the posterior solve
            the dense ``Nn x Nn`` system.

    Returns:
        ``(N x d, N x n) -> Model``.

    Example:
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> factory = practical_model_factory(bounds, per_task=True)  # run_bo_loop(model_factory=)
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> model = factory(X, torch.stack([X.sum(-1), (1 - X).prod(-1)], dim=-1))
        >>> len(model.covar_module.kernels)  # the ICM term and the per-task term
        2
    """
    check_bounds(bounds)
    if not isinstance(per_task, bool):
        raise TypeError(f"`per_task` must be a bool, got {type(per_task).__name__}.")
    return WarmStartPracticalFactory(bounds.clone(), per_task=per_task)


def resolve_box(
    bounds: Tensor | None, optimizer: object, initial_X: Tensor | None
) -> Tensor | None:
    """The loop's box: ``bounds``, else a ``BoxOptimizer``'s (or a subclass's, e.g. the
    trust region's); checked against each other."""
    box = optimizer.bounds if isinstance(optimizer, BoxOptimizer) else None  # or a subclass's
    d = None if initial_X is None else initial_X.shape[-1]
    if box is not None and d is not None and box.shape[-1] != d:
        raise ValueError(
            f"`initial_X` has d = {d} columns but the {type(optimizer).__name__}'s box has "
            f"d = {box.shape[-1]} (bounds {tuple(box.shape)})."
        )
    if bounds is None:
        return box
    check_bounds(bounds, d)
    if box is not None and not torch.equal(bounds.to(box), box):
        raise ValueError(
            f"`bounds` {bounds.tolist()} differ from the {type(optimizer).__name__}'s "
            f"{box.tolist()}; give one."
        )
    return bounds


def default_initial_X(box: Tensor | None, seed: int) -> Tensor:
    """The Sobol initial design of the loop (``initial_X=None``), or a clear error."""
    if box is None:
        raise ValueError(
            "`initial_X` is required unless the domain is known: pass `bounds=` (2 x d) or a "
            "BoxOptimizer as `optimizer` for a Sobol initial design."
        )
    return sobol_initial_design(box, seed=seed)


def default_sampler(
    num_objectives: int, predicted_front: bool = True, minimize: Tensor | None = None
) -> Callable[..., Scalarization]:
    """Scale-free augmented Chebyshev (``ref_point="data"``) with the reference point and
    ranges from the observed and, with ``predicted_front`` (the loop knows the box), the
    model-predicted front (``front="predicted"``), the objectives marked in the ``n``
    booleans ``minimize`` minimised; needs n ≥ 2 objectives."""
    if num_objectives < 2:
        raise ValueError(
            "The default acquisition is multi-objective, for n >= 2 objectives; "
            f"`observe` returned n = {num_objectives}. For one objective pass "
            "`acquisition_factory` (e.g. lambda model, s: UpperConfidenceBound(model, beta=1.0)) "
            "and a single-output `model_factory`."
        )
    return ScalarizationSampler(num_objectives, kind="chebyshev", ref_point="data",
                                minimize=minimize,
                                front="predicted" if predicted_front else "observed")


def default_optimizer(box: Tensor | None, seed: int) -> Callable[[AcquisitionFunction], Tensor]:
    """``DedupOptimizer(box, 4, 256, seed)`` (a ``BoxOptimizer`` that never returns an
    evaluated point), or a clear error without a box."""
    if box is None:
        raise ValueError("`optimizer=None` (a BoxOptimizer) needs `bounds=` (2 x d).")
    return DedupOptimizer(
        box, num_restarts=DEFAULT_NUM_RESTARTS, raw_samples=DEFAULT_RAW_SAMPLES, seed=seed
    )


def draw_seed(generator: torch.Generator | None) -> int:
    """One seed for the default design and optimizer, from ``generator`` (else torch's RNG)."""
    return int(torch.randint(2**31 - 1, (1,), generator=generator).item())
