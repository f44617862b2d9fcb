"""TGP-UCB's model: a GP posterior on rewards truncated at their round's level (paper 001).

Paper 001, §3, Algorithm 1. With observations ``y_1, …, y_t`` in round order,

    ŷ_s = y_s · 1{|y_s| ≤ b_s},       b_s = v^{1/(1+α)} s^{1/(2(1+α))},
    μ̂_t(x) = k_t(x)ᵀ (K_t + λI)⁻¹ Ŷ_t,   σ²_t(x) = k(x, x) − k_t(x)ᵀ (K_t + λI)⁻¹ k_t(x),

and TGP-UCB evaluates ``argmax_x μ̂_t(x) + β_{t+1} σ_t(x)`` next (Theorem 1's ``β_{t+1}``,
:func:`~botorch_mtucb.theory.heavy_tailed.tgp_beta`, through
:class:`~botorch_mtucb.acquisition.HeavyTailedUCB`).

Each reward keeps the level of its own round, so ``ŷ_s`` never changes once observed
(``level="per-round"``, the default with a declared ``v``). The data-driven mode truncates
every reward at the current round's level ``b_t`` instead (``level="current"``): its ``v̂`` is
an estimate, and the small early levels ``b_1, b_2, …`` would zero more rewards than the
moment bound intends.

Two computational paths give the same numbers:

* dense (continuous domains): Cholesky of ``K_t + λI``; ``condition_on_observations``
  extends the factor by a block (``O(t²)`` per new point instead of ``O(t³)``;
  :mod:`~botorch_mtucb.heavy_tailed.truncated_dense`).
* finite arms (a :class:`~botorch_mtucb.kernels.PrecomputedKernel`, or ``arms=``): only counts
  and sums of truncated rewards per arm matter (:mod:`botorch_mtucb.linalg.arm_space`); a new
  observation is one rank-one (Kalman) update of the mean and covariance together in
  ``O(A²)``, independent of ``t`` (:mod:`~botorch_mtucb.heavy_tailed.truncated_arms`; with
  ``level="current"`` the per-arm sums follow the growing level incrementally).

Precision: Cholesky factors use GPyTorch's ``psd_safe_cholesky`` (jitter and a
``NumericalWarning`` where a factorisation fails). A float32 model whose ``K_t + λI`` is too
badly conditioned for float32 (``c · eps · (1 + tr K_t/λ) > 1e-3`` with the error constant
``c = TGP_ERROR_FACTOR`` of the TGP mean; :func:`~botorch_mtucb.linalg.working_dtype`) factors
and predicts in float64 and returns float32 results, with a ``NumericalWarning`` — also when a
``condition_on_observations`` crosses the threshold (then the factor is rebuilt once in
float64). Test inputs are cast to the working dtype.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from botorch_mtucb.heavy_tailed.arms import ArmSet, _needs_grad, check_training_data
from botorch_mtucb.heavy_tailed.base import HeavyTailedModel
from botorch_mtucb.heavy_tailed.moments import (
    PRACTICAL_WIDTH,
    MomentEstimator,
    data_driven_moments,
    default_kernel,
)
from botorch_mtucb.heavy_tailed.truncated_arms import _TruncatedArmPath
from botorch_mtucb.heavy_tailed.truncated_dense import _TruncatedDensePath
from botorch_mtucb.linalg.arm_space import arm_space_factor
from botorch_mtucb.linalg.precision import PRECISION_BUDGET, regularised_condition, working_dtype
from botorch_mtucb.theory.heavy_tailed import (
    Constants,
    check_constants,
    check_heavy_tailed_params,
    tgp_beta,
    tgp_truncation_level,
    tgp_truncation_levels,
)

__all__ = ["TruncatedGP"]

#: Error constant ``c`` of the TGP posterior mean: relative error ≈ ``c · eps · κ̂`` with
#: ``κ̂ = 1 + tr(K_t)/λ`` (decides the working dtype).
TGP_ERROR_FACTOR = 0.2


class TruncatedGP(_TruncatedArmPath, _TruncatedDensePath, HeavyTailedModel):
    """Single-output BoTorch model of TGP-UCB (paper 001, Algorithm 1).

    Posterior ``N(μ̂_t(x), σ²_t(x))`` of a GP with kernel ``k`` and noise variance ``λ`` on the
    truncated rewards ``ŷ_s = y_s 1{|y_s| ≤ b_s}``, ``b_s = v^{1/(1+α)} s^{1/(2(1+α))}``
    (module docstring); ``beta()`` gives the width ``β_{t+1}`` of Theorem 1 that
    :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` multiplies ``σ_t`` by. Batched training
    data (``batch x t x d``, ``batch x t x 1``) gives a
    :class:`~botorch_mtucb.models.HeavyTailedBatch` of ``batch`` models instead.

    Two modes:

    * **declared** (``v`` given; paper 001 verbatim): rewards used as they are, the default
      kernel SE with lengthscale 0.2, ``λ = 1``, ``beta()`` of Theorem 1 or the authors.
    * **data-driven** (``v=None``): ``α = 1`` unless given; rewards centred at a location
      ``loc`` (the median by default; truncation zeroes large rewards, so uncentred rewards
      would be pulled to 0 of the raw scale); ``v`` = an estimate of ``E|y − loc|^{1+α}``
      (``moment_estimator``, default :class:`~botorch_mtucb.heavy_tailed.moments.MedianOfMeans`,
      whose assumptions are documented there); every reward truncated at the current level
      ``b_t`` (``level="current"``; ``level="per-round"`` gives Algorithm 1's levels) and
      winsorised (``clip=True``); without ``covar_module``, the kernel and ``λ`` are fitted the
      BoTorch way on the truncated centred rewards
      (:func:`~botorch_mtucb.heavy_tailed.moments.fit_kernel_on_targets`; ``t ≥ 2``);
      ``beta()`` is the constant practical width ``PRACTICAL_WIDTH = 1`` (``constants=
      "practical"``). ``loc`` and ``v`` are fixed at construction: rebuild the model to
      update them (``condition_on_observations`` keeps them). Predictions are in the
      rewards' units (``loc`` added back).

    With the default kernel the inputs must lie in the unit cube (its lengthscale 0.2 would
    otherwise give a zero mean almost everywhere): normalise them or pass ``covar_module``.

    Example:
        >>> import torch
        >>> from botorch_mtucb.acquisition import HeavyTailedUCB
        >>> from botorch_mtucb.models import TruncatedGP
        >>> X = torch.rand(20, 2, dtype=torch.float64)
        >>> Y = torch.sin(6 * X[:, :1]) + torch.distributions.StudentT(2.0).sample((20, 1))
        >>> model = TruncatedGP(X, Y, alpha=0.5, v=4.0, B=1.0)  # declared (α, v)
        >>> acqf = HeavyTailedUCB(model)  # β = model.beta(), Theorem 1
        >>> acqf(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        torch.Size([5])
        >>> model = model.condition_on_observations(X[:1], Y[:1])
        >>> model.num_observations
        21
        >>> practical = TruncatedGP(X, Y)  # data-driven α, v, kernel and width
        >>> practical.beta()
        1.0
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        alpha: float | None = None,
        v: float | None = None,
        covar_module: Kernel | None = None,
        lam: float | None = None,
        delta: float = 0.1,
        B: float = 1.0,
        *,
        constants: Constants | str | None = None,
        truncate: bool = True,
        arms: Tensor | None = None,
        centre: bool | None = None,
        level: str | None = None,
        clip: bool | None = None,
        moment_estimator: MomentEstimator | None = None,
    ) -> None:
        """
        Args:
            train_X: ``t x d`` inputs in round order (float arm indices ``t x 1`` with a
                :class:`~botorch_mtucb.kernels.PrecomputedKernel`).
            train_Y: ``t x 1`` raw (untruncated) rewards, row ``s`` observed in round ``s+1``.
            alpha: Moment order ``α ∈ (0, 1]`` with ``E|y|^{1+α} ≤ v`` (default 1).
            v: Moment bound ``v > 0``; ``None``: data-driven mode (class docstring).
            covar_module: Kernel ``k`` with ``k(x, x) ≤ 1``; default ``RBFKernel`` with
                lengthscale 0.2 (the paper's synthetic setting; fitted in the data-driven
                mode). Hyperparameters are fixed.
            lam: Regulariser ``λ > 0`` (GP noise variance); default 1 (in the data-driven
                mode: fitted with the kernel; a given ``λ`` is kept, the kernel still fitted).
            delta: Confidence ``δ ∈ (0, 1)`` (theory ``β``; ``δ = 1`` would make
                ``ln(1/δ) = 0``).
            B: Bound on ``‖f‖_H``.
            constants: ``"theory"`` (default with a declared ``v``: Theorem 1's ``β``, which
                carries the high-probability guarantee), ``"authors"`` (public-code ``β``, much
                smaller; what the paper's figures used) or ``"practical"`` (default of the
                data-driven mode: ``β = PRACTICAL_WIDTH``). ``b_t`` is the same for all.
            truncate: ``False`` sets ``b_t = ∞`` (plain GP-UCB posterior).
            arms: Optional ``A x d`` finite candidate set; all training inputs and all
                posterior inputs must then be rows of it (fast arm-space path).
            centre: Subtract the estimator's location (the median reward) first (default:
                only in the data-driven mode).
            level: ``"per-round"`` (Algorithm 1: ``ŷ_s`` at its own round's ``b_s``; default
                with a declared ``v``) or ``"current"`` (every reward at the latest ``b_t``,
                re-truncated on conditioning; default of the data-driven mode).
            clip: Winsorise instead of zeroing: ``ŷ_s = max(−b, min(y_s, b))`` (default: only
                in the data-driven mode; Algorithm 1 zeroes, ``clip=False``). Both keep
                ``|ŷ_s| ≤ b`` and the bias bound ``|E[y − ŷ]| ≤ E|y| 1{|y| > b} ≤ v / b^α``
                that Theorem 1 uses (the clipping error ``(|y| − b)_+`` is at most
                ``|y| 1{|y| > b}``); clipping is monotone, so the largest rewards stay the
                largest targets instead of becoming typical ones (zeroing maps every peak
                reward beyond ``b`` to the centre when the bulk of f is flat).
            moment_estimator: The :class:`~botorch_mtucb.heavy_tailed.moments.MomentEstimator`
                of ``loc`` and ``v`` in the data-driven mode (default
                :class:`~botorch_mtucb.heavy_tailed.moments.MedianOfMeans`); called once, on
                ``train_Y``.
        """
        super().__init__()
        X, y = check_training_data(train_X, train_Y)
        driven = v is None
        if constants is None:
            constants = "practical" if driven else "theory"
        alpha, v, self._loc = data_driven_moments(y, alpha, v, centre, moment_estimator)
        y = y - self._loc  # a new tensor: the caller's is untouched
        self.alpha, self.v, self.lam, self.delta, self.B = check_heavy_tailed_params(
            alpha, v, 1.0 if lam is None else lam, delta, B
        )
        self.constants = constants if constants == "practical" else check_constants(constants)
        self.truncate = bool(truncate)
        level = ("current" if driven else "per-round") if level is None else level
        if level not in ("per-round", "current"):
            raise ValueError(f"`level` must be 'per-round' or 'current', got {level!r}.")
        self.level = level
        self.clip = driven if clip is None else bool(clip)
        if covar_module is None:  # data-driven: the kernel fitted (a given λ is kept)
            covar_module, fitted = default_kernel(X, self._targets(y) if driven else None)
            if fitted is not None and lam is None:
                self.lam = check_heavy_tailed_params(1.0, 1.0, fitted, 0.1, 0.0)[2]
        if not isinstance(covar_module, Kernel):
            raise ValueError(
                f"`covar_module` must be a gpytorch Kernel, got {type(covar_module).__name__}."
            )
        self.covar_module = covar_module
        arms = ArmSet.resolve(arms, covar_module, X)
        self._init_data(X, y, arms, covar_module)
        with torch.no_grad():
            self._build()

    _STATE = (*HeavyTailedModel._STATE, "_loc", "level", "clip")
    #: ``t`` noise variances of the observations, ``None`` when every one is ``λ``.
    _obs_noise: Tensor | None = None

    def _extra_primary(self) -> dict:
        noise = self._obs_noise
        return {} if noise is None else {"obs_noise": noise.detach().clone()}

    def _import_extra(self, state: dict) -> None:
        self._obs_noise = state.get("obs_noise")

    def _noise_representable(self) -> bool:
        return self._arms is None  # dense: any diagonal noise; arms: counts and sums only

    @property
    def train_noise(self) -> Tensor:
        """``t`` noise variances of the observations: ``λ`` each, except those conditioned on
        with another ``noise`` (e.g. ``0`` for the noiseless optimum of
        ``qJointEntropySearch``). The posterior is that of a GP with noise ``diag(train_noise)``."""
        if self._obs_noise is not None:
            return self._obs_noise
        return self._lam_t.expand(self._t)

    def _arm_kernel(self) -> Kernel:
        return self.covar_module

    def _differentiable_conditioning(self) -> bool:
        return self._arms is None  # dense: the block Cholesky extension is differentiable

    def _build(self) -> None:
        """Working dtype, factors and caches from the primary state (the data)."""
        X, t, arms = self.train_X, self._t, self._arms
        if arms is not None:
            K = arms.kernel_matrix(self.covar_module).to(self._dtype)
            n = torch.bincount(self._idx_buf.view(t), minlength=K.shape[0]).to(K)
            trace = float((n * K.diagonal()).sum())
        else:
            trace = float(self.covar_module(X, X, diag=True).detach().sum()) if t else 0.0
        cdt = self._cdtype = working_dtype(
            self._dtype, regularised_condition(trace, self.lam), "TruncatedGP's posterior",
            TGP_ERROR_FACTOR,
        )
        self.__dict__.pop("_kern64", None)
        dev = X.device
        self._lam_c = torch.tensor(self.lam, dtype=cdt, device=dev)
        self._log_det = None
        # Largest tr(K_t) for which the data's dtype stays accurate (a float compare per round).
        eps = torch.finfo(cdt).eps
        self._max_trace = (
            math.inf if cdt == torch.float64
            else (PRECISION_BUDGET / (TGP_ERROR_FACTOR * eps) - 1.0) * self.lam
        )
        if arms is not None:
            if cdt != K.dtype:
                P = arms.points.to(cdt)
                K = (self.covar_module.matrix.to(cdt) if arms.by_index else self._kernel(P, P))
            self._K_A = K
            self._kdiag = K.diagonal().tolist()
            self._arm_posterior_from_stats()
        else:
            K = self._kernel(X, X) if t else X.new_zeros(0, 0, dtype=cdt)
            self._trace = trace
            if self._obs_noise is None:
                noise = self.lam * torch.eye(K.shape[-1], dtype=cdt, device=dev)
            else:
                noise = torch.diag_embed(self._obs_noise.to(cdt))
            self._L = psd_safe_cholesky(K + noise)
            self._finish_dense()

    # ------------------------------------------------------------------ schedules
    @property
    def train_targets(self) -> Tensor:
        """``t`` truncated (centred) rewards ``ŷ_s = z_s 1{|z_s| ≤ b_s}``, ``z = y − loc``
        (``b_t`` for every reward with ``level="current"``)."""
        return self._targets(self._y_buf.view(self._t))

    def truncation_level(self, t: int | None = None) -> float:
        """Truncation level ``b_t`` of round ``t`` (default: the latest round ``t``)."""
        t = self.num_observations if t is None else int(t)
        if t < 0:
            raise ValueError(f"`t` must be a non-negative round index, got {t}.")
        return tgp_truncation_level(t, self.alpha, self.v) if self.truncate else math.inf

    def log_det(self) -> float:
        """Information term ``ln det(I_t + λ⁻¹ K_t)`` (= 2 × information gain; ``λ`` for every
        observation, whatever ``noise`` a conditioning gave)."""
        if self._log_det is None:  # arm path with the authors' constants, or other noise
            with torch.no_grad():
                if self._arms is None:
                    self._log_det = self._dense_log_det()
                else:
                    stats = self._arm_stats()[0]
                    self._log_det = arm_space_factor(self._K_A, stats, self.lam)[2]
        return float(self._log_det)

    def beta(self) -> float:
        """Width ``β_{t+1}`` for choosing the next point (Theorem 1, authors or practical)."""
        if self.constants == "practical":
            return PRACTICAL_WIDTH
        log_det = self.log_det() if self.constants == "theory" else 0.0  # authors: unused
        return tgp_beta(
            self.num_observations,
            self.alpha,
            self.v,
            self.lam,
            self.delta,
            self.B,
            log_det,
            self.constants,
        )

    def _targets(self, y: Tensor) -> Tensor:
        """``ŷ_s = y_s 1{|y_s| ≤ b_s}`` (per-round) or ``y_s 1{|y_s| ≤ b_t}`` (current) for
        the ``t`` rewards of rounds ``1, …, t``; ``clip``: ``max(−b, min(y_s, b))``."""
        t = y.shape[-1]  # y: t, or ... x t (rows of fantasy rewards, the same rounds)
        if not self.truncate or t == 0:
            return y.clone()
        if self.level == "current" or t == 1:
            b = tgp_truncation_level(t, self.alpha, self.v)
        else:
            s = torch.arange(1, t + 1, dtype=y.dtype, device=y.device)
            b = tgp_truncation_levels(s, self.alpha, self.v)
        b = torch.as_tensor(b, dtype=y.dtype, device=y.device)
        if self.clip:
            return torch.maximum(torch.minimum(y, b), -b)
        return torch.where(y.abs() <= b, y, torch.zeros_like(y))

    # ------------------------------------------------------------------ BoTorch API
    def _centred_moments(
        self, X: Tensor, full: bool, alphas: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """``μ̂_t`` and the covariance (``full``) or variance of ``σ_t`` at ``... x q x d``.

        ``alphas`` (dense path, ``m x t``): the weights ``(K_t + λI)⁻¹ Ŷ`` of ``m`` models that
        share this one's inputs and factor (fantasy siblings); ``X`` is then ``... x m x q x
        d`` and row ``i`` of its batch gets the mean of ``alphas[i]``."""
        if self._arms is not None:
            return self._arm_moments(X, full)
        return self._dense_moments(X, full, alphas)

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs
    ) -> TruncatedGP:
        """A new model with ``(X, Y)`` appended as rounds ``t+1, …, t+n``.

        New rewards are truncated at their own rounds' levels (``level="current"``: all
        rewards at the new ``b_{t+n}``). ``self`` is left unchanged. With ``noise``, the new
        observations have those noise variances instead of ``λ``: the posterior is the GP's
        with noise ``diag(λ, …, λ, noise)`` (``noise = 0``: noiseless observations, the
        posterior variance there is 0, as ``qJointEntropySearch`` conditions on ``f*``).

        Args:
            X: ``n x d`` new inputs (cast to the model's dtype).
            Y: ``n x 1`` new raw rewards (centred with the model's ``loc``).
            noise: Optional ``n x 1`` non-negative noise variances (default ``λ``). Batched
                ``X`` / ``Y``: broadcastable to ``Y``.

        Raises:
            UnsupportedError: if ``noise`` differs from ``λ`` on a finite arm set.
        """
        if self._arms is not None and noise is None and not kwargs:  # the O(A²) fast path
            new = self._condition_one_arm(X, Y)
            if new is not None:
                return new
        batched = self._condition_batched(X, Y, {**kwargs, "noise": noise})
        if batched is not None:
            return batched
        obs_noise = self._observation_noise(noise, Y)  # None: λ for every new observation
        if self._loc != 0.0:
            Y = Y - self._loc
        grad = _needs_grad(X, Y)
        new, X, _, _, host = self._appended_copy(X, Y, self.covar_module)
        if obs_noise is not None or self._obs_noise is not None:
            new._obs_noise = torch.cat([self.train_noise, new._lam_t.expand(X.shape[0])
                                        if obs_noise is None else obs_noise])
        with torch.set_grad_enabled(grad):
            if self._arms is None:
                new._extend_cholesky(self, X)
            elif host is not None and len(host[0]) == 1:
                new._rank_one_update(self, host[0][0], host[1][0])
            else:  # a batch: rebuild from the statistics, O(A³)
                new._arm_posterior_from_stats()
        return new
