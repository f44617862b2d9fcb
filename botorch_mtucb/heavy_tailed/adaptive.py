"""ATA-GP-UCB's model: feature-space ridge regression with per-direction truncation (paper 001).

Paper 001, §5.1, Algorithm 2. With a feature map ``φ_t: X → R^{m_t}`` (quadrature Fourier
features, or a Nyström embedding resampled every round), ``Φ_t = [φ_t(x_1), …, φ_t(x_t)]ᵀ``:

    V_t = Φ_tᵀΦ_t + λI,   rows u_iᵀ of V_t^{-1/2} Φ_tᵀ   (u_{i,τ} = [V_t^{-1/2} φ_t(x_τ)]_i),
    r̂_i = Σ_τ u_{i,τ} y_τ 1{|u_{i,τ} y_τ| ≤ b_t}    (the whole history, re-truncated at b_t),
    θ_t = V_t^{-1/2} r̂,   μ_t(x) = φ_t(x)ᵀθ_t,
    σ²_t(x) = λ φ_t(x)ᵀV_t⁻¹φ_t(x)                     (QFF),
    σ²_t(x) = k(x, x) − φ_t(x)ᵀφ_t(x) + λ φ_t(x)ᵀV_t⁻¹φ_t(x)   (Nyström, DTC).

``V^{-1/2}`` is the symmetric square root (the truncation is not rotation invariant). The
posterior covariance between two points uses the same bilinear forms.

Two computational paths give the same numbers:

* dense: ``Φ_t`` is ``t x m``; ``O(m² t)`` per (re)fit.
* finite arms (``arms=`` or a Nyström :class:`~botorch_mtucb.kernels.PrecomputedKernel`):
  ``V = Fᵀ diag(n) F + λI`` (``F`` the ``A x m`` arm features, ``n`` the pull counts),
  ``u_{i,τ} = [F V^{-1/2}]_{a(τ),i}`` and per-arm sorted rewards
  (:mod:`botorch_mtucb.linalg.truncated_sums`): ``O(A m² + m³ + A m log t)`` per round.

Precision: ``V`` is factored with every eigenvalue at least ``λ``, then inverted or square
rooted (:mod:`botorch_mtucb.linalg.ridge`); where float32 would still be inaccurate (QFF:
``1e-3 · eps · (1 + t Σ_j ν_j/λ) > 1e-3``; Nyström: always, as MT-BKB's pseudo-inverse;
:func:`~botorch_mtucb.linalg.working_dtype`) features and fit are computed in float64 and
results returned in float32, with a ``NumericalWarning``.
"""

from __future__ import annotations

import math
from numbers import Integral

import torch
from torch import Tensor

from botorch_mtucb.features.nystrom import NystromFeatures
from botorch_mtucb.features.quadrature_fourier import QuadratureFourierFeatures
from botorch_mtucb.heavy_tailed.adaptive_arms import _AdaptiveArmPath
from botorch_mtucb.heavy_tailed.arms import ArmSet, check_training_data
from botorch_mtucb.heavy_tailed.base import HeavyTailedModel
from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch
from botorch_mtucb.heavy_tailed.moments import (
    MomentEstimator,
    data_driven_moments,
    default_kernel,
    projection_levels,
)
from botorch_mtucb.heavy_tailed.schedules import _AdaptiveTruncationSchedules
from botorch_mtucb.linalg.precision import regularised_condition, working_dtype
from botorch_mtucb.linalg.ridge import RIDGE_ERROR_FACTOR, spectral_ridge, truncated_ridge
from botorch_mtucb.linalg.truncated_sums import ArmRewardHistory
from botorch_mtucb.theory.heavy_tailed import (
    Constants,
    check_constants,
    check_heavy_tailed_params,
    check_horizon,
    tgp_truncation_level,
)
from botorch_mtucb.utils.validation import check_finite

__all__ = ["AdaptiveTruncationGP"]


class AdaptiveTruncationGP(_AdaptiveTruncationSchedules, _AdaptiveArmPath, HeavyTailedModel):
    """Single-output BoTorch model of ATA-GP-UCB (paper 001, Algorithm 2).

    Posterior mean ``μ_t(x) = φ_t(x)ᵀθ_t`` and variance ``σ²_t(x)`` of the truncated
    feature-space ridge regression in the module docstring: every projection term
    ``u_{i,τ} y_τ`` is kept iff ``|u_{i,τ} y_τ| ≤ b_t``,
    ``b_t = (v/L)^{1/(1+α)} t^{(1−α)/(2(1+α))}`` (Lemma 1 for QFF, Theorem 4 for Nyström);
    ``beta()`` gives the width ``β_{t+1}`` of the same results that
    :class:`~botorch_mtucb.acquisition.HeavyTailedUCB` multiplies ``σ_t`` by. Batched training
    data (``batch x t x d``, ``batch x t x 1``) gives a
    :class:`~botorch_mtucb.models.HeavyTailedBatch` of ``batch`` models instead.

    Two modes, as :class:`~botorch_mtucb.models.TruncatedGP`:

    * **declared** (``v`` and ``features`` given; paper 001 verbatim): rewards as they are,
      ``λ = 1``, ``beta()`` of Lemma 1 / Theorem 4 or the authors.
    * **data-driven** (``v=None``), as TruncatedGP's: ``α = 1`` unless given; rewards
      centred at a location ``loc`` (the median by default; truncation pulls large
      projections to 0); ``v`` = an estimate of ``E|y − loc|^{1+α}`` (``moment_estimator``,
      default :class:`~botorch_mtucb.heavy_tailed.moments.MedianOfMeans`: it assumes
      exchangeable rewards and outliers in fewer than half of its groups); without
      ``features``, Nyström features on a kernel fitted the BoTorch way (``SingleTaskGP`` on
      the centred rewards truncated at TGP's ``b_t``; ``t ≥ 2``, inputs in the unit cube) and
      ``λ`` its noise; ``beta()`` the practical width 1 (``q``: theory constants); per-direction
      truncation levels ``b_{t,i} = v^{1/(1+α)} t^{(1−α)/(2(1+α))} √t max_τ |u_{i,τ}|``
      (``level="projection"``: the paper's level in the units of the terms ``u_{i,τ} y_τ``,
      :func:`~botorch_mtucb.heavy_tailed.moments.projection_levels`). ``loc`` and ``v`` are
      fixed at construction; predictions are in the rewards' units.

    Example:
        >>> import torch
        >>> from botorch_mtucb.acquisition import HeavyTailedUCB
        >>> from botorch_mtucb.features import QuadratureFourierFeatures
        >>> from botorch_mtucb.models import AdaptiveTruncationGP
        >>> X = torch.rand(20, 1, dtype=torch.float64)
        >>> Y = torch.sin(6 * X) + torch.distributions.StudentT(2.0).sample((20, 1))
        >>> qff = QuadratureFourierFeatures(lengthscale=0.2, num_nodes=16, dim=1)
        >>> model = AdaptiveTruncationGP(X, Y, alpha=0.5, v=4.0, features=qff, horizon=100)
        >>> model.num_features
        32
        >>> acqf = HeavyTailedUCB(model)  # β = model.beta(), Lemma 1
        >>> acqf(torch.rand(5, 1, 1, dtype=torch.float64)).shape
        torch.Size([5])
        >>> practical = AdaptiveTruncationGP(X, Y)  # data-driven: Nyström on a fitted kernel
        >>> practical.beta()
        1.0
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        alpha: float | None = None,
        v: float | None = None,
        features: QuadratureFourierFeatures | NystromFeatures | None = None,
        lam: float | None = None,
        delta: float = 0.1,
        B: float = 1.0,
        *,
        horizon: int | None = None,
        constants: Constants | str | None = None,
        truncate: bool = True,
        arms: Tensor | None = None,
        sample_dictionary: bool = True,
        dictionary_variances: Tensor | None = None,
        centre: bool | None = None,
        generator: torch.Generator | int | None = None,
        level: str | None = None,
        moment_estimator: MomentEstimator | None = None,
    ) -> None:
        """
        Args:
            train_X: ``t x d`` inputs in round order (float arm indices ``t x 1`` with a
                Nyström :class:`~botorch_mtucb.kernels.PrecomputedKernel`).
            train_Y: ``t x 1`` raw rewards.
            alpha: Moment order ``α ∈ (0, 1]`` with ``E|y|^{1+α} ≤ v`` (default 1).
            v: Moment bound ``v > 0``; ``None``: data-driven mode (class docstring).
            features: :class:`QuadratureFourierFeatures` (fixed map, QFF variance) or
                :class:`NystromFeatures` (dictionary resampled from the training points at
                construction and on every ``condition_on_observations``; DTC variance).
                Required with a declared ``v`` (data-driven default: class docstring).
            lam: Regulariser ``λ > 0`` (default 1; data-driven without features: fitted).
            delta: Confidence ``δ ∈ (0, 1)``.
            B: Bound on ``‖f‖_H``.
            horizon: Horizon ``T`` in ``b_t``, ``β_t`` and Nyström ``q`` (a positive Python or
                NumPy integer); ``None`` uses ``max(t, 1)``.
            constants: ``"theory"`` (declared default; Lemma 1 / Theorem 4), ``"authors"`` or
                ``"practical"`` (data-driven default; ``β = 1``, ``b_t``, ``q`` as theory).
            truncate: ``False`` sets ``b_t = ∞`` (plain feature-space ridge regression).
            arms: Optional ``A x d`` finite candidate set (fast arm-space path).
            sample_dictionary: Nyström only. ``False`` keeps the dictionary already in
                ``features`` (e.g. from :meth:`NystromFeatures.with_dictionary`).
            dictionary_variances: Nyström only: ``t`` variances ``σ²_{t−1}(x_i)`` for the
                initial draw; default the prior variance ``k(x_i, x_i)``. Like every draw of
                the dictionary they are divided by ``NystromFeatures.kernel_scale`` first.
            centre: Subtract the median reward first (default: only in the data-driven mode).
            generator: ``torch.Generator`` (or an integer seed, Python or NumPy) of the
                default Nyström features' draws (data-driven mode).
            level: ``"paper"`` (declared default: one level ``b_t`` of Lemma 1 / Theorem 4) or
                ``"projection"`` (data-driven default: per-direction levels,
                :func:`~botorch_mtucb.heavy_tailed.moments.projection_levels`).
            moment_estimator: The :class:`~botorch_mtucb.heavy_tailed.moments.MomentEstimator`
                of ``loc`` and ``v`` in the data-driven mode (default
                :class:`~botorch_mtucb.heavy_tailed.moments.MedianOfMeans`); called once, on
                ``train_Y``.
        """
        super().__init__()
        X, y = check_training_data(train_X, train_Y)
        driven = v is None
        if features is None and not driven:
            raise ValueError("`features` is required with a declared `v` (paper 001 mode).")
        alpha, v, self._loc = data_driven_moments(y, alpha, v, centre, moment_estimator)
        y = y - self._loc  # a new tensor: the caller's is untouched
        self.alpha, self.v, self.lam, self.delta, self.B = check_heavy_tailed_params(
            alpha, v, 1.0 if lam is None else lam, delta, B
        )
        constants = ("practical" if driven else "theory") if constants is None else constants
        self.constants = constants if constants == "practical" else check_constants(constants)
        self.truncate = bool(truncate)
        level = ("projection" if driven else "paper") if level is None else level
        if level not in ("paper", "projection"):
            raise ValueError(f"`level` must be 'paper' or 'projection', got {level!r}.")
        self.level = level
        if isinstance(generator, Integral) and not isinstance(generator, bool):
            generator = torch.Generator(device=X.device).manual_seed(int(generator))
        elif generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError("`generator` must be a torch.Generator, an integer seed or None, "
                             f"got {type(generator).__name__}.")
        if features is None:
            b = tgp_truncation_level(y.shape[0], self.alpha, self.v) if truncate else math.inf
            kernel, fitted = default_kernel(X, torch.where(y.abs() <= b, y, 0.0))
            features = NystromFeatures(kernel, generator=generator)
            self.lam = self.lam if fitted is None or lam is not None else max(fitted, 1e-12)
        self.horizon = None if horizon is None else check_horizon(horizon)
        if not isinstance(features, (QuadratureFourierFeatures, NystromFeatures)):
            raise ValueError("`features` must be QuadratureFourierFeatures or NystromFeatures, "
                             f"got {type(features).__name__}.")
        self.kind = "qff" if isinstance(features, QuadratureFourierFeatures) else "nystrom"
        if self.kind == "qff" and X.shape[-1] != features.dim:
            raise ValueError(f"`features` has dim={features.dim} but `train_X` has "
                             f"d={X.shape[-1]}.")
        kernel = features.base_kernel if self.kind == "nystrom" else None
        if kernel is not None:
            self.nystrom_kernel = kernel  # a sub-module: in state_dict, moved by .to()
        self._init_data(X, y, ArmSet.resolve(arms, kernel, X), kernel)
        if self.kind == "nystrom":
            if sample_dictionary:
                if dictionary_variances is None:
                    dictionary_variances = features.prior_variance(X)
                check_finite(dictionary_variances, "dictionary_variances")
                q = self.nystrom_q(features)
                var = dictionary_variances.to(X) / features.kernel_scale(X)
                features = features.resample(X, var, q)
            elif features.dictionary is None:
                raise ValueError(
                    "`sample_dictionary=False` needs `features` with a dictionary "
                    "(NystromFeatures.with_dictionary)."
                )
        self.features = features
        with torch.no_grad():
            self._build()

    _STATE = (*HeavyTailedModel._STATE, "horizon", "kind", "_loc", "level")

    def random_generators(self) -> list[torch.Generator]:
        """The Nyström features' generator, redrawn on conditioning (``RandomStateModel``)."""
        gen = getattr(self.features, "generator", None)
        return [] if gen is None else [gen]

    def _arm_kernel(self):
        return self.features.base_kernel if self.kind == "nystrom" else None

    def _check_state(self, state: dict) -> None:
        if state["scalars"]["kind"] == "nystrom" and not isinstance(self.features, NystromFeatures):
            raise ValueError("A Nyström AdaptiveTruncationGP state needs a model built with "
                             "NystromFeatures (its base kernel's parameters are loaded).")

    def _extra_primary(self) -> dict:
        f = self.features
        if self.kind == "qff":
            return {"qff": (f.lengthscale.tolist(), f.num_nodes, f.dim)}
        return {"dictionary": None if f.dictionary is None else f.dictionary.clone()}

    def _import_extra(self, state: dict) -> None:
        if self.kind == "qff":
            ls, nodes, dim = state["qff"]
            self.features = QuadratureFourierFeatures(ls, nodes, dim, max_features=2 * nodes**dim)
        elif state["dictionary"] is not None:
            self.features = self.features.with_dictionary(state["dictionary"])
        for key in ("_basis_cache", "_dict_mask", "_K_A", "_cfeat"):
            self.__dict__.pop(key, None)

    def _build(self) -> None:
        """Counts and reward history (arm path), then the fit, from the primary state."""
        if self._arms is not None:
            arm_idx = self._idx_buf.view(self._t)
            A = self._arms.num_arms
            self._counts = torch.bincount(arm_idx, minlength=A).to(self._dtype)
            self._history = ArmRewardHistory(arm_idx, self._y_buf.view(self._t), A)
        self._fit()

    # ------------------------------------------------------------------ fitting
    @torch.no_grad()
    def _fit(self) -> None:
        """Working dtype (QFF: ``κ̂ = 1 + t Σ_j ν_j/λ ≥ cond(V_t)``, ``‖φ(x)‖² = Σ_j ν_j``;
        Nyström: float64 always, as MT-BKB's: the pseudo-inverse square root of ``K_D`` is
        rank-revealing and a float32 one drops directions), then the fit."""
        f, arms = self.features, self._arms
        qff = self.kind == "qff"
        kappa = regularised_condition(self._t * float(f.weights.sum()), self.lam) if qff \
            else math.inf
        cdt = self._cdtype = working_dtype(
            self._dtype, kappa, f"AdaptiveTruncationGP ({self.kind})", RIDGE_ERROR_FACTOR
        )
        cached = self.__dict__.get("_cfeat")
        if cached is None or cached[0] is not f or cached[1] != cdt:
            cf = f
            if self.kind == "nystrom" and f.dictionary is not None and f.dictionary.dtype != cdt:
                cf = f.with_dictionary(f.dictionary.to(cdt))
            self.__dict__["_cfeat"] = cached = (f, cdt, cf)
        if arms is not None:
            K_A = self.__dict__.get("_K_A")
            if self.kind == "nystrom" and (K_A is None or K_A.dtype != cdt):
                P = arms.points.to(cdt)
                kern = f.base_kernel
                self._K_A = (kern.matrix.to(cdt) if arms.by_index
                             else kern(P, P).to_dense().to(cdt))
            self._fit_arms(cached[2])
        else:
            self._fit_dense(cached[2])

    def _fit_dense(self, cfeat) -> None:
        cdt = self._cdtype
        Phi = cfeat(self.train_X.to(cdt))  # t x m
        y = self._y_buf.view(self._t).to(cdt)
        b = self.truncation_level() if self._t else float("inf")
        if self.level == "projection" and self._t and math.isfinite(b):
            W, e, U = spectral_ridge(Phi, self.lam)  # U = V^{-1/2}Φᵀ, m x t (truncated_ridge's)
            b = projection_levels(U.abs().amax(-1), self._t, self.alpha, self.v)
            Z = U * y.to(U)  # u_{i,τ} y_τ
            r_hat = (Z * (Z.abs() <= b.unsqueeze(-1))).sum(-1)
            self._theta = W @ (e.rsqrt() * (W.transpose(-1, -2) @ r_hat))
            self._B = W * e.rsqrt()
        else:
            self._theta, self._B = truncated_ridge(Phi, y, self.lam, b)  # B Bᵀ = V⁻¹

    # ------------------------------------------------------------------ BoTorch API
    def _centred_moments(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        """``μ_t`` and the covariance (``full``) or variance of ``σ_t`` at ``... x q x d``."""
        if self._arms is not None:
            idx, whole = self._arm_index(X)
            if not full:
                if whole:
                    shape = X.shape[:-1]
                    return self._mean_A.reshape(shape), self._var_A.reshape(shape)
                return self._mean_A[idx], self._var_A[idx]
            P = self._P_A[idx]
            cov = self.lam * P @ P.transpose(-1, -2)
            if self.kind == "nystrom":
                F = self._Fp_A[idx]
                K = self._K_A[idx.unsqueeze(-1), idx.unsqueeze(-2)]
                cov = cov + K - F @ F.transpose(-1, -2)
            return self._mean_A[idx], cov
        phi = self.__dict__["_cfeat"][2](X)  # ... x q x m (X in the working dtype)
        mean = phi @ self._theta
        phiB = phi @ self._B  # λ ‖φᵀB‖² = λ φᵀV⁻¹φ
        if full:
            cov = self.lam * phiB @ phiB.transpose(-1, -2)
        else:
            cov = self.lam * phiB.square().sum(-1)
        if self.kind == "nystrom":
            K = self.features.base_kernel(X, X, diag=not full).to_dense().to(self._cdtype)
            cov = cov + K - (phi @ phi.transpose(-1, -2) if full else phi.square().sum(-1))
        return mean, cov

    def arm_variances(self) -> Tensor:
        """``A`` approximate posterior variances ``σ²_t`` of all arms (arm path only)."""
        if self._arms is None:
            raise ValueError("`arm_variances` needs a finite arm set (`arms=` or Precomputed).")
        return self._var_A.to(self._dtype)

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, resample_dictionary: bool | None = None, **kwargs
    ) -> AdaptiveTruncationGP | HeavyTailedBatch:
        """A new model with ``(X, Y)`` appended as rounds ``t+1, …, t+n``.

        All rewards are re-truncated at the new ``b_{t+n}``; a Nyström dictionary is redrawn
        from all training points with the variances ``σ²_t`` of ``self`` (Algorithm 2).
        ``self`` is left unchanged. Batched (``X`` ``batch x n x d``, ``Y`` ``num_fantasies x
        batch x n x 1``): a :class:`~botorch_mtucb.models.HeavyTailedBatch` whose members keep
        the dictionary (a random redraw per member would make look-ahead acquisitions random
        in ``X``).

        Args:
            X: ``n x d`` new inputs.
            Y: ``n x 1`` new raw rewards.
            resample_dictionary: Nyström: redraw the dictionary (default: not when batched).
            kwargs: ``noise`` (``None`` or ``λ``, shaped as ``Y``); another noise variance
                raises ``UnsupportedError``.
        """
        batched = self._condition_batched(
            X, Y, {**kwargs, "resample_dictionary": bool(resample_dictionary)}
        )
        if batched is not None:
            return batched
        self._observation_noise(kwargs.get("noise"), Y)  # only noise=None or λ: no fantasy noise
        resample_dictionary = resample_dictionary is None or resample_dictionary
        if self._loc != 0.0:
            Y = Y - self._loc
        t = self.num_observations
        kernel = self.features.base_kernel if self.kind == "nystrom" else None
        new, X, y, idx, host = self._appended_copy(X, Y, kernel)
        if self._arms is not None:
            if idx is None:
                idx = torch.tensor(host[0], dtype=torch.long, device=y.device)
            new.__dict__["_counts"] = self._counts.index_add(0, idx, torch.ones_like(y))
            if X.shape[0] == 1 and self._history.length == t:
                self._history.append(idx[0], y[0])  # we hold the tip: extend in place
                new.__dict__["_history"] = self._history
            else:
                new._history = ArmRewardHistory(
                    new._idx_buf.view(new._t), new._y_buf.view(new._t), self._arms.num_arms
                )
            if self.kind == "nystrom" and resample_dictionary:
                new.features, mask = self._resample_arms(new)
                new._dict_mask = (new.features, mask)
        elif self.kind == "nystrom" and resample_dictionary:
            with torch.no_grad():
                var = self.mean_and_variance(new.train_X)[1]
                var = var / self.features.kernel_scale(new.train_X)
            new.features = self.features.resample(new.train_X, var, new.nystrom_q())
        new._fit()
        return new
