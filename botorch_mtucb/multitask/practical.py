"""The careful BoTorch user's multi-task GP: the practical default model of MT-UCB.

:class:`~botorch_mtucb.models.ExactMultiTaskGP`'s own keyword defaults are the paper's
estimator (paper 000, eq. (1): a fixed regulariser η = 0.1, zero prior mean, fixed
hyperparameters unless fitted), so that ``ExactMultiTaskGP(X, Y)`` is the named *paper
setting*. :func:`practical_multitask_gp` builds and fits the model a BoTorch user would build
for real data instead (normalised inputs, standardised outcomes, Matérn-5/2 ICM kernel with a
learned task matrix, constant mean, learned noise), and :class:`WarmStartPracticalFactory`
refits it round after round from the previous round's hyperparameters. The fitting itself
is :func:`~botorch_mtucb.multitask.practical_fit.fit_practical_model`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from numbers import Integral
from typing import Any, Literal

import torch
from botorch.models.transforms import Normalize, Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import Kernel, MaternKernel, ScaleKernel
from gpytorch.means import ConstantMean, MultitaskMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior
from torch import Tensor
from torch.nn import Module

from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.kernels.icm import ICMKernel
from botorch_mtucb.kernels.independent import IndependentTasksKernel, SumOfSeparableKernel
from botorch_mtucb.multitask.base import MultiTaskGPBase
from botorch_mtucb.multitask.exact import ExactMultiTaskGP
from botorch_mtucb.multitask.fit_closure import _plain_exact_mll
from botorch_mtucb.multitask.nystrom import NystromMultiTaskGP
from botorch_mtucb.multitask.practical_fit import (
    check_fit_kwargs,
    copy_hyperparameters,
    fit_practical_model,
    practical_mll,
)
from botorch_mtucb.utils.initial_design import check_bounds, warn_outside_bounds

__all__ = [
    "LENGTHSCALE_PRIORS",
    "PER_TASK_SCALE_INIT",
    "PRACTICAL_NOISE_FLOOR",
    "PRACTICAL_NOISE_INIT",
    "WarmStartPracticalFactory",
    "add_practical_noise_prior",
    "fit_objective_value",
    "practical_modules",
    "practical_multitask_gp",
]

#: Initial output scale s_i of the per-task terms (``per_task=True``; standardised units).
PER_TASK_SCALE_INIT = 0.1
#: Lower bound of the learned noise variance (standardised units).
PRACTICAL_NOISE_FLOOR = 1e-4
#: Initial noise variance η of the fit (e^{−5}, standardised units).
PRACTICAL_NOISE_INIT = math.exp(-5.0)
#: Lengthscale priors of the practical Matérn-5/2 (``lengthscale_prior``; unit-cube inputs):
#: ``"dim-scaled"`` (default) BoTorch's LogNormal(√2 + ½ log d, √3) (median e^{√2 + ½ log d},
#: ≈ 10 at d = 6) and ``"gamma"`` Gamma(3, 6) (mode 1/3, mean 1/2).
LENGTHSCALE_PRIORS = ("dim-scaled", "gamma")

#: When :class:`WarmStartPracticalFactory` also fits a warm-started call cold:
#: ``(t, N, N_cold) -> bool`` (calls so far, rows now, rows at the last cold fit).
RestartRule = Callable[[int, int, int], bool]

LengthscalePrior = Literal["dim-scaled", "gamma"]


def practical_multitask_gp(
    train_X: Tensor,
    train_Y: Tensor,
    bounds: Tensor | None = None,
    independent: bool = False,
    fit: bool = True,
    train_Yvar: Tensor | None = None,
    fit_kwargs: dict[str, Any] | None = None,
    lengthscale_prior: LengthscalePrior = "dim-scaled",
    log_space_priors: bool = False,
    per_task: bool = False,
) -> ExactMultiTaskGP:
    r"""An :class:`ExactMultiTaskGP` with a careful BoTorch user's defaults, fitted.

    The model (paper 000, eq. (1), with the hyperparameters of Γ = k·B and η fitted by
    maximising the marginal likelihood log N(vec Y; μ, K ⊗ B + ηI) plus BoTorch's priors):

    - inputs normalised to the unit cube (``Normalize`` on ``bounds``); with ``bounds=None``
      no input transform (the inputs must already lie in a unit-scaled box);
    - outcomes standardised per task (``Standardize(m=n)``);
    - ICM kernel Γ(x, x') = k(x, x') B, k a Matérn-5/2 with BoTorch's dimension-scaled
      lengthscale prior (``get_covar_module_with_dim_scaled_prior``, ARD; or Gamma(3, 6),
      ``lengthscale_prior="gamma"``) and a learned full-rank B = F Fᵀ + diag(v)
      (``independent=True``: one Matérn-5/2 per task, B = I, the IT-UCB baseline;
      ``per_task=True``: the ICM term plus one scaled Matérn-5/2 per task, below);
    - a constant prior mean per task (``MultitaskMean(ConstantMean(), n)``);
    - the noise variance η learned with BoTorch's LogNormal(−4, 1) prior, started at
      e^{−5} and floored at :data:`PRACTICAL_NOISE_FLOOR` (or known noise ``train_Yvar``).

    **Lengthscale prior.** The dimension-scaled LogNormal (BoTorch's) has a median near 10 on
    the unit cube at d = 6: with few points it leaves weakly identified inputs nearly linear,
    which sends the UCB argmax to the faces of the box. Gamma(3, 6) (mean 0.5) keeps the
    model local; it suits problems believed to have interior optima in most inputs, the
    default suits optima on the faces. Neither is better in general.

    **Log-space priors** (``log_space_priors=True``). GPyTorch adds ``log p(θ)``, the prior's
    density in θ itself, to the likelihood, so the fit is the posterior mode of θ. For a
    positive scale θ (η, a lengthscale) it is the density of log θ times the Jacobian 1/θ,
    which rewards a smaller η and shorter lengthscales by ``log(θ₁/θ₂)`` nats
    whatever the number of points, which is the direction of the degenerate fit that
    interpolates the noise (lengthscales at their lower bound, η at its prior's mode). With
    ``log_space_priors`` the fit is the posterior mode of log θ instead (the same priors, as
    densities of log θ): each prior p(θ) becomes p(θ)·θ, i.e. LogNormal(μ, σ) becomes
    LogNormal(μ + σ², σ), whose mode is the original median (noise: LogNormal(−3, 1),
    mode e^{−4}; dimension-scaled lengthscales: LogNormal(√2 + ½ log d + 3, √3)), and
    Gamma(a, b) becomes Gamma(a + 1, b). The starting values stay those of the default
    priors. The objective remains ``ExactMarginalLogLikelihood``'s value (with these priors).
    The default (``False``) keeps BoTorch's priors as they are.

    **Per-task terms** (``per_task=True``). The ICM gives every task the same lengthscales,
    which costs where the objectives depend on different inputs. With ``per_task`` the kernel
    is a linear model of coregionalisation with a shared and an own part,

    .. math::
        Γ(x, x') = k_0(x, x')\,B + \mathrm{diag}\big(s_1 k_1(x, x'), …, s_n k_n(x, x')\big),

    each k_j an ARD Matérn-5/2 with the ``lengthscale_prior``, s_i ≥ 0 learned (started at
    0.1): the fit decides per task how much of it is shared (through B) and how much is its
    own. Γ is a sum of separable kernels (paper 000, §2; Theorem 2 holds for any multi-task
    kernel, and Appendix C.4 instantiates its information gain for such sums); it is no longer
    separable, so the model takes its dense path, slower than the ICM's Kronecker one.

    **Cost.** The ICM fit works in B's eigenbasis: n problems of size N, and so does the
    ``independent`` fit (n blocks of N x N). The ``per_task`` fit factorises the dense
    ``Nn x Nn`` covariance at every likelihood evaluation, O((Nn)³), so from a few hundred
    rows times tasks it costs many times the ICM's fit and BoTorch's batched
    ``SingleTaskGP``; :class:`WarmStartPracticalFactory`'s sparse mode fits it on its subset
    of ``fit_subset_size`` rows, still densely.

    Args:
        train_X: ``N x d`` training inputs (not modified).
        train_Y: ``N x n`` training observations, all ``n`` tasks at each input (not modified).
        bounds: ``2 x d`` box of the domain (lower row, upper row, lower < upper), for
            ``Normalize``; ``None`` for no input transform.
        independent: One Matérn-5/2 per task and B = I instead of the learned ICM B.
        fit: Fit the hyperparameters by maximum marginal likelihood (skipped when N < 2,
            where the marginal likelihood cannot identify them), through
            :func:`~botorch_mtucb.multitask.practical_fit.fit_practical_model`: the objective
            of ``ExactMarginalLogLikelihood``, in closed form with scipy's L-BFGS-B below
            :data:`~botorch_mtucb.multitask.fit_closure.CLOSED_FORM_MAX_POINTS` points and by
            ``fit_gpytorch_mll`` with the lean ICM closure above (or when the closed form
            does not converge), with an L-BFGS-B memory equal to the number of
            hyperparameters (the same optimum in fewer evaluations). ``False`` returns the
            model at its initial hyperparameters (e.g. to load a ``state_dict``).
        train_Yvar: Known ``N x n`` noise variances (then η is not learned).
        fit_kwargs: Extra keyword arguments for ``fit_gpytorch_mll``, keys in
            :data:`~botorch_mtucb.multitask.practical_fit.FIT_KWARGS` (``optimizer_kwargs``
            replaces the L-BFGS-B memory, ``closure`` the lean closure).
        lengthscale_prior: Prior of the Matérn-5/2 lengthscales (unit cube), one of
            :data:`LENGTHSCALE_PRIORS`: ``"dim-scaled"`` (default, BoTorch's) or ``"gamma"``
            (Gamma(3, 6)); see "Lengthscale prior" above.
        log_space_priors: Fit the posterior mode of the log-hyperparameters (the lengthscale
            and noise priors times θ); see "Log-space priors" above.
        per_task: Add one scaled Matérn-5/2 per task to the ICM term (above); not with
            ``independent``.

    Returns:
        The :class:`ExactMultiTaskGP` in eval mode, with the dtype and device of ``train_X``;
        its posterior is in the original outcome scale (``batch_shape x q x n`` mean).

    Raises:
        ValueError: If the data, ``bounds``, ``fit_kwargs`` or ``lengthscale_prior`` are
            malformed.
        InputDataError: If ``train_X`` and ``train_Y`` differ in dtype.

    Warns:
        InputDataWarning: If rows of ``train_X`` lie outside ``bounds`` (``Normalize`` then
            maps them outside the unit cube the priors are scaled for).

    Example:
        >>> model = practical_multitask_gp(train_X, train_Y, bounds)  # N x d, N x n, 2 x d
        >>> mean, blocks = model.task_posterior(torch.rand(5, d, dtype=torch.float64))
    """
    if not isinstance(train_X, Tensor) or train_X.dim() != 2 or not train_X.is_floating_point():
        raise ValueError(
            f"`train_X` must be a floating N x d tensor, got {_describe(train_X)}."
        )
    if not isinstance(train_Y, Tensor) or train_Y.dim() != 2 or train_Y.shape[0] != len(train_X):
        raise ValueError(
            f"`train_Y` must be an N x n tensor with N = {len(train_X)} rows (one per row of "
            f"`train_X`), got {_describe(train_Y)}."
        )
    d, n = train_X.shape[-1], train_Y.shape[-1]
    check_fit_kwargs(fit_kwargs)
    if bounds is not None:
        bounds = check_bounds(bounds, d).to(train_X).clone()
        warn_outside_bounds(train_X, bounds)
    kernel, mean = practical_modules(
        d, n, independent, lengthscale_prior, log_space_priors, per_task=per_task
    )
    known = train_Yvar is not None
    model = ExactMultiTaskGP(
        train_X,
        train_Y,
        covar_module=kernel,
        noise=PRACTICAL_NOISE_INIT,
        learn_noise=not known,
        input_transform=None if bounds is None else Normalize(d, bounds=bounds),
        outcome_transform=Standardize(m=n),
        mean_module=mean,
        train_Yvar=train_Yvar,
    )
    if not known:
        add_practical_noise_prior(model, log_space_priors)
    model = model.to(train_X)
    if fit:
        fit_practical_model(model, fit_kwargs=fit_kwargs)
    model.eval()
    return model


def practical_modules(
    d: int,
    n: int,
    independent: bool = False,
    lengthscale_prior: LengthscalePrior = "dim-scaled",
    log_space_priors: bool = False,
    per_task: bool = False,
) -> tuple[MultiTaskKernel, MultitaskMean]:
    """The practical model's kernel and mean: ICM over an ARD Matérn-5/2 with the
    ``lengthscale_prior`` and a learned full-rank B (``independent``: one Matérn-5/2 per
    task, B = I; ``per_task``: the ICM plus one scaled Matérn-5/2 per task, a
    :class:`~botorch_mtucb.kernels.independent.SumOfSeparableKernel`), and a constant mean
    per task.

    Args:
        d: Input dimension.
        n: Number of tasks (outputs).
        independent: Independent tasks instead of the learned ICM B.
        lengthscale_prior: One of :data:`LENGTHSCALE_PRIORS` (see
            :func:`practical_multitask_gp`).
        log_space_priors: The lengthscale prior as a density of log ℓ (p(ℓ)·ℓ; see
            :func:`practical_multitask_gp`).
        per_task: Add one scaled Matérn-5/2 per task to the ICM term (see
            :func:`practical_multitask_gp`).

    Returns:
        ``(covar_module, mean_module)`` for :class:`ExactMultiTaskGP` (default dtype).

    Raises:
        ValueError: If ``lengthscale_prior`` is not one of :data:`LENGTHSCALE_PRIORS`, or
            both ``independent`` and ``per_task`` are set.

    Example:
        >>> kernel, mean = practical_modules(d, n)
        >>> model = ExactMultiTaskGP(train_X, train_Y, covar_module=kernel, mean_module=mean)
    """
    if lengthscale_prior not in LENGTHSCALE_PRIORS:
        raise ValueError(
            f"`lengthscale_prior` must be one of {LENGTHSCALE_PRIORS}, got {lengthscale_prior!r}."
        )
    if independent and per_task:
        raise ValueError("`independent` and `per_task` exclude each other; set one of them.")
    if independent:
        kernel: MultiTaskKernel = IndependentTasksKernel(
            [_matern(d, lengthscale_prior, log_space_priors) for _ in range(n)]
        )
    else:
        kernel = ICMKernel(_matern(d, lengthscale_prior, log_space_priors), num_tasks=n, rank=n)
    if per_task:
        own = [ScaleKernel(_matern(d, lengthscale_prior, log_space_priors)) for _ in range(n)]
        for k in own:
            k.outputscale = PER_TASK_SCALE_INIT
        kernel = SumOfSeparableKernel([kernel, IndependentTasksKernel(own)])
    return kernel, MultitaskMean(ConstantMean(), n)


def add_practical_noise_prior(
    model: ExactMultiTaskGP, log_space_priors: bool = False
) -> ExactMultiTaskGP:
    """Give a learned-noise model BoTorch's LogNormal(−4, 1) noise prior and the floor
    :data:`PRACTICAL_NOISE_FLOOR` (in place; returns ``model``).

    Args:
        model: A multi-task GP that learns its noise.
        log_space_priors: The prior as a density of log η instead (p(η)·η = LogNormal(−3, 1)
            up to a constant; see :func:`practical_multitask_gp`).

    Raises:
        ValueError: If the model's noise is known (``train_Yvar``) or not learned.

    Example:
        >>> model = add_practical_noise_prior(ExactMultiTaskGP(train_X, train_Y, learn_noise=True))
    """
    if model.known_noise or not model.learn_noise:
        raise ValueError(
            "`model` must learn its noise (learn_noise=True, no train_Yvar) to take a noise prior."
        )
    lik = model.likelihood
    prior = LogNormalPrior(-4.0, 1.0)
    if log_space_priors:
        prior = _log_space_prior(prior)
    lik.register_prior("noise_prior", prior, _likelihood_noise, _set_noise)
    lik.raw_noise_constraint.lower_bound.fill_(PRACTICAL_NOISE_FLOOR)
    return model


class WarmStartPracticalFactory:
    r"""``(X, Y) ->`` the practical model on ``X`` (``N x d``), ``Y`` (``N x n``), each fit
    warm-started; above ``sparse_above`` points its sparse (Nyström) version.

    **Exact mode** (``N ≤ sparse_above``): ``practical_multitask_gp(X, Y, bounds,
    independent)``. The first call fits from the model's initial hyperparameters (a cold fit,
    exactly ``practical_multitask_gp``); every later call starts L-BFGS-B from the
    hyperparameters of the previous call's fit. Warm starts optimise the same objective, so
    every fit is a local optimum of the marginal likelihood of paper 000, eq. (1)'s model; it
    may differ from the cold fit's where the likelihood has several.

    **Restart** (``restart=True``, default): every warm-started fit is repeated from the
    model's initial hyperparameters, and the fit with the higher penalised marginal
    likelihood (:func:`fit_objective_value`; the warm one on a tie) is returned and starts the
    next call. A warm start alone keeps the basin of the first fits: with few noisy points the
    likelihood often has an optimum that interpolates the noise (lengthscales at their lower
    bound, η near its start), and warm starts stay in it after more data have made the smooth
    optimum with a larger η far better. With the restart every fit is at least as good as
    the cold fit (and as the warm one), at the cost of a second fit per call.

    **Restart schedule** (``restart`` a callable ``(t, N, N_cold) -> bool``, e.g. the loop's
    ``RefitSchedule(every_round_until=0, growth=0.25)``): the cold repeat runs only on the
    calls where ``restart(t, N, N_cold)`` is true, ``t`` the number of calls so far, ``N``
    the data's rows now and ``N_cold`` the data's rows at the last cold fit (the first
    call's, or the last restart's); the other calls are warm fits only. In sparse mode these
    are the rows of all the data, not of the subset the hyperparameters are fitted on. A
    geometric schedule keeps a cold fit each time the data have grown by a fixed fraction, so
    the restarts grow like ``log N`` instead of ``N``, and a warm fit never keeps a basin for
    more than that growth.

    **Sparse mode** (``N > sparse_above``): a :class:`NystromMultiTaskGP` (paper 000, §3.2)
    with the practical model's structure (``Normalize`` on ``bounds``, ``Standardize``, ICM
    Matérn-5/2 with a learned B, constant mean, learned noise with its prior) and
    hyperparameters fitted on a subset of the data (subset of data, SoD):

    1. ``S`` = :meth:`fit_subset`: ``min(N, fit_subset_size)`` rows drawn uniformly without
       replacement;
    2. the exact practical model on ``(X_S, Y_S)`` fitted (warm-started as above): each
       likelihood evaluation is that of ``|S|`` points, independent of ``N``;
    3. the Nyström model on all ``N`` points with those modules (kernel, mean, η) and a
       dictionary capped at ``max_dictionary_size`` (the model's "Capped dictionary").

    Why a subset: the marginal likelihood of ``(X_S, Y_S)`` is the exact likelihood of the
    same GP restricted to ``S``, so its maximiser is a maximum-likelihood estimate of the same
    hyperparameters from ``|S|`` points (its variance grows as ``|S|`` shrinks, but no
    approximation error enters the objective). A Nyström likelihood on all points instead
    changes the objective: DTC's is not a bound on the exact one, FITC's tends to
    under-estimate η, VFE's (a lower bound, DTC's minus tr(K − Q)/2η) to over-estimate it,
    and each depends on a dictionary that the hyperparameters themselves select. A uniform
    subset keeps the design's density, including the close pairs that identify η and short
    lengthscales; a space-filling (farthest-point) subset removes them and would bias both
    upwards. The posterior then costs O(N m² + m³) to build and O(n m) per query point
    (``m`` = dictionary size) instead of O(N³) and O(n N).

    **Threshold.** ``sparse_above`` defaults to :attr:`SPARSE_ABOVE` = :attr:`FIT_SUBSET_SIZE`.
    The sparse fit *is* the exact fit of ``min(N, fit_subset_size)`` points, so up to
    ``fit_subset_size`` both modes fit the same data at the same cost and the exact model,
    being exact, is kept; above it the exact fit costs O(N³) per likelihood evaluation while
    the sparse one stays at O(s³) (``s`` = ``fit_subset_size``), and the Nyström build and
    queries grow linearly in N. The crossover of the round's cost therefore sits at
    ``fit_subset_size`` whatever makes the exact likelihood cheaper (it speeds both modes
    alike). ``None`` never switches.

    Use one factory per BO run (it holds the previous fit, the exact model of the last
    call's fitting data).

    Attributes:
        bounds: ``2 x d`` box (``Normalize``), or ``None``.
        independent: IT-UCB's independent tasks instead of the learned ICM B.
        lean: Fit through :func:`~botorch_mtucb.multitask.practical_fit.practical_mll_closure`.
        warm: Warm-start from the previous fit (``False``: every call is a cold fit).
        restart: Also fit each warm-started call cold and keep the better fit (``True``),
            never (``False``), or on the calls a schedule ``(t, N, N_cold) -> bool`` picks.
        sparse_above: Number of points above which the sparse model is returned (``None``:
            never).
        fit_subset_size: Size of the subset the sparse mode fits on.
        max_dictionary_size: Cap on the sparse model's dictionary.
        generator: Random generator of the subset and the dictionary draws (``None``:
            torch's global RNG).
        log_space_priors: Fit the posterior mode of the log-hyperparameters
            (:func:`practical_multitask_gp`).
        num_fits: Number of calls so far.
        num_restarts_kept: Number of calls whose cold restart beat the warm-started fit.

    Example:
        >>> factory = WarmStartPracticalFactory(bounds)  # one per BO run
        >>> model = factory(train_X[:8], train_Y[:8])  # cold fit
        >>> model = factory(train_X, train_Y)  # starts from the first fit
        >>> sparse = WarmStartPracticalFactory(bounds, sparse_above=100)(X_large, Y_large)
    """

    #: Default of ``fit_subset_size``: the largest data the sparse mode fits exactly.
    FIT_SUBSET_SIZE: int = 500
    #: Default of ``sparse_above`` ("Threshold" in the class docstring).
    SPARSE_ABOVE: int | None = FIT_SUBSET_SIZE
    #: Default of ``max_dictionary_size``: the build's O(N m²) stays linear in N, and the
    #: dictionary Gram's ``eigh`` O(m³) stays below the subset fit's cost per evaluation
    #: times its number of evaluations.
    MAX_DICTIONARY_SIZE: int = 1000

    def __init__(
        self,
        bounds: Tensor | None = None,
        independent: bool = False,
        lean: bool = True,
        warm: bool = True,
        sparse_above: int | None = SPARSE_ABOVE,
        fit_subset_size: int = FIT_SUBSET_SIZE,
        max_dictionary_size: int = MAX_DICTIONARY_SIZE,
        generator: torch.Generator | None = None,
        restart: bool | RestartRule = True,
        log_space_priors: bool = False,
        per_task: bool = False,
    ) -> None:
        """
        Args:
            bounds: ``2 x d`` box of the domain (lower < upper), or ``None``.
            independent: One Matérn-5/2 per task and B = I.
            lean: Use the lean likelihood closure.
            warm: Start each fit after the first from the previous fit.
            sparse_above: Return the sparse model when ``N > sparse_above`` (an integer
                ≥ 0), never when ``None``.
            fit_subset_size: Size (≥ 2) of the sparse mode's fitting subset.
            max_dictionary_size: Cap (≥ 1) on the sparse model's dictionary.
            generator: ``torch.Generator`` of the subsets and dictionaries (``None``: torch's
                global RNG).
            restart: Repeat each warm-started fit from the initial hyperparameters and keep
                the fit with the higher penalised marginal likelihood: ``True`` (every
                call), ``False`` (never), or a callable ``(t, N, N_cold) -> bool`` that
                picks the calls ("Restart schedule" above).
            log_space_priors: Priors as densities of the log-hyperparameters (see
                :func:`practical_multitask_gp`).
            per_task: The ICM plus one scaled Matérn-5/2 per task (see
                :func:`practical_multitask_gp`).

        Raises:
            ValueError: If ``sparse_above``, ``fit_subset_size``, ``max_dictionary_size`` or
                ``generator`` is malformed, or both ``independent`` and ``per_task`` are set.
        """
        if independent and per_task:
            raise ValueError("`independent` and `per_task` exclude each other; set one of them.")
        self.bounds = None if bounds is None else check_bounds(bounds).clone()
        self.independent = bool(independent)
        self.lean = bool(lean)
        self.warm = bool(warm)
        if not (isinstance(restart, bool) or callable(restart)):
            raise ValueError(
                "`restart` must be a bool or a callable (t, N, N_cold) -> bool, got "
                f"{type(restart).__name__}."
            )
        self.restart = restart
        self.log_space_priors = bool(log_space_priors)
        self.per_task = bool(per_task)
        if sparse_above is not None:
            self._check_count(sparse_above, "sparse_above", 0)
        self._check_count(fit_subset_size, "fit_subset_size", 2)
        self._check_count(max_dictionary_size, "max_dictionary_size", 1)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError(
                f"`generator` must be a torch.Generator or None, got {type(generator).__name__}."
            )
        self.sparse_above = None if sparse_above is None else int(sparse_above)
        self.fit_subset_size = int(fit_subset_size)
        self.max_dictionary_size = int(max_dictionary_size)
        self.generator = generator
        self.num_fits = 0
        self.num_restarts_kept = 0
        self._previous: MultiTaskGPBase | None = None
        self._cold_rows = 0  # rows of the last cold fit

    def __call__(self, X: Tensor, Y: Tensor) -> MultiTaskGPBase:
        """The practical model on ``X`` (``N x d``) and ``Y`` (``N x n``), fitted, eval mode:
        an :class:`ExactMultiTaskGP`, or a :class:`NystromMultiTaskGP` when
        ``N > sparse_above``."""
        start = self._previous if self.warm else None
        rows = X.shape[-2]  # the data's rows: what a restart schedule measures growth in
        if self.sparse_above is not None and rows > self.sparse_above:
            idx = self.fit_subset(rows).to(X.device)
            fitted = self._fit(X[idx], Y[idx], start, rows)
            model = self._sparse_model(X, Y, fitted)
        else:
            model = fitted = self._fit(X, Y, start, rows)
        self._previous = fitted
        self.num_fits += 1
        return model

    def _fit(
        self, X: Tensor, Y: Tensor, start: MultiTaskGPBase | None, rows: int
    ) -> ExactMultiTaskGP:
        """The exact practical model on ``(X, Y)`` fitted from ``start`` (cold when ``None``);
        with :attr:`restart` and a warm start, also fitted cold, the better of the two kept.
        ``rows``: the data's rows (more than ``X``'s in sparse mode, which fits a subset)."""
        model = self._unfitted(X, Y)
        fit_practical_model(model, warm_start=start, lean=self.lean)
        if start is None:
            self._cold_rows = rows
            return model
        if not self._restart_due(rows):
            return model
        self._cold_rows = rows
        cold = self._unfitted(X, Y)
        fit_practical_model(cold, lean=self.lean)
        if fit_objective_value(cold) > fit_objective_value(model):
            self.num_restarts_kept += 1
            return cold
        return model

    def _restart_due(self, rows: int) -> bool:
        """Whether a warm-started fit of ``rows`` rows is also fitted cold."""
        if isinstance(self.restart, bool):
            return self.restart
        return bool(self.restart(self.num_fits, rows, self._cold_rows))

    def _unfitted(self, X: Tensor, Y: Tensor) -> ExactMultiTaskGP:
        """The practical model on ``(X, Y)`` with this factory's options, not fitted."""
        return practical_multitask_gp(
            X, Y, self.bounds, self.independent, fit=False,
            log_space_priors=self.log_space_priors, per_task=self.per_task,
        )

    def fit_subset(self, N: int) -> Tensor:
        """Rows the sparse mode fits on: ``min(N, fit_subset_size)`` of ``range(N)``, uniform
        without replacement (all rows when ``N ≤ fit_subset_size``), increasing; a CPU
        LongTensor drawn from :attr:`generator`."""
        if N <= self.fit_subset_size:
            return torch.arange(N)
        perm = torch.randperm(N, generator=self.generator, device="cpu")
        return perm[: self.fit_subset_size].sort().values

    def _sparse_model(self, X: Tensor, Y: Tensor, fitted: ExactMultiTaskGP) -> NystromMultiTaskGP:
        """The Nyström model on all of ``(X, Y)`` with ``fitted``'s kernel, mean and η (copies),
        its own ``Normalize`` / ``Standardize`` and the noise prior, in eval mode."""
        d, n = X.shape[-1], Y.shape[-1]
        model = NystromMultiTaskGP(
            X,
            Y,
            covar_module=copy.deepcopy(fitted.covar_module),
            noise=fitted.likelihood.noise.detach().reshape(()).clone(),
            learn_noise=True,
            input_transform=None if self.bounds is None else Normalize(d, bounds=self.bounds),
            outcome_transform=Standardize(m=n),
            mean_module=copy.deepcopy(fitted.mean_module),
            generator=self.generator,
            max_dictionary_size=self.max_dictionary_size,
            pinv_method="eigh",  # one O(m³) factorisation of a capped dictionary's Gram
        )
        add_practical_noise_prior(model, self.log_space_priors)
        copy_hyperparameters(fitted, model)  # η's raw value under the floor of the prior
        return model.to(X).eval()

    @staticmethod
    def _check_count(value: object, name: str, minimum: int) -> None:
        """Raise ``ValueError`` unless ``value`` is an integer ≥ ``minimum``."""
        if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
            raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")


def fit_objective_value(model: MultiTaskGPBase) -> float:
    r"""The objective the practical fit maximises, at ``model``'s hyperparameters: the
    penalised, normalised marginal log likelihood of paper 000, eq. (1)'s model,

    .. math::
        \frac{1}{Nn}\Big(\log \mathcal N(\mathrm{vec}\,Y;\ μ,\ K ⊗ B + ηI)
        + \sum \log p(θ)\Big)

    (``ExactMarginalLogLikelihood``'s value, through
    :func:`~botorch_mtucb.multitask.practical_fit.practical_mll` where it covers the model).
    Two fits of the same data compare by it.

    Args:
        model: A multi-task GP (e.g. from ``practical_multitask_gp``); its train/eval mode
            is left as it was.

    Returns:
        The objective as a float (higher is better).

    Example:
        >>> model = practical_multitask_gp(train_X, train_Y, bounds)
        >>> value = fit_objective_value(model)  # the fitted optimum's value
    """
    was_training = model.training
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    try:
        with torch.no_grad():
            if _plain_exact_mll(mll):
                value = practical_mll(mll)
            else:
                value = mll(model(*model.train_inputs), model.train_targets).sum()
    finally:
        mll.train(was_training)
    return float(value)


def _likelihood_noise(likelihood: Module) -> Tensor:
    """The noise variance η of a likelihood (the noise prior's closure; module level so that
    the model pickles)."""
    return likelihood.noise


def _set_noise(likelihood: Module, value: Tensor) -> None:
    """Set a likelihood's noise variance η (the noise prior's setting closure)."""
    likelihood._set_noise(value)


def _matern(d: int, prior: LengthscalePrior = "dim-scaled", log_space: bool = False) -> Kernel:
    """ARD Matérn-5/2 over ``d`` inputs with the lengthscale ``prior``: Gamma(3, 6) started at
    GPyTorch's softplus(0) = 0.69 (``"gamma"``), or BoTorch's dimension-scaled LogNormal
    started at its mode (``"dim-scaled"``); with ``log_space`` the prior times ℓ
    (:func:`_log_space_prior`), same start."""
    if prior == "dim-scaled":
        kernel = get_covar_module_with_dim_scaled_prior(ard_num_dims=d, use_rbf_kernel=False)
    else:
        kernel = MaternKernel(nu=2.5, ard_num_dims=d, lengthscale_prior=GammaPrior(3.0, 6.0))
    if log_space:
        kernel.register_prior(
            "lengthscale_prior", _log_space_prior(kernel.lengthscale_prior),
            kernel._lengthscale_param, kernel._lengthscale_closure,
        )
    return kernel


def _log_space_prior(prior: LogNormalPrior | GammaPrior) -> LogNormalPrior | GammaPrior:
    """The prior whose density in θ is ``prior``'s density of log θ, p(θ)·θ, up to a constant:
    LogNormal(μ, σ) → LogNormal(μ + σ², σ), Gamma(a, b) → Gamma(a + 1, b)."""
    if isinstance(prior, LogNormalPrior):
        return LogNormalPrior(prior.loc + prior.scale**2, prior.scale)
    if isinstance(prior, GammaPrior):
        return GammaPrior(prior.concentration + 1.0, prior.rate)
    raise ValueError(f"`prior` must be a LogNormalPrior or GammaPrior, got {type(prior).__name__}.")


def _describe(x: object) -> str:
    """Shape (and dtype) of a tensor, or the type of anything else, for error messages."""
    if isinstance(x, Tensor):
        return f"shape {tuple(x.shape)}, dtype {x.dtype}"
    return type(x).__name__
