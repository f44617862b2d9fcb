"""Nyström multi-task GP with a variance-sampled dictionary: the MT-BKB model.

Paper 000, §3.2 (Algorithm 2), Theorem 3, Appendix A eqs. (7)–(8) and Appendix D.
:class:`NystromMultiTaskGP` draws the dictionary and replays Algorithm 2's rounds; the
posterior of a given dictionary is a Nyström solver's
(:mod:`botorch_mtucb.multitask.solvers.nystrom` for any kernel,
:mod:`botorch_mtucb.multitask.solvers.nystrom_icm` for Γ = k·B).
:func:`~botorch_mtucb.theory.theorem3_q` is the oversampling parameter that makes the
dictionary ε-accurate.
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import torch
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from gpytorch.means import Mean
from torch import Tensor

from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.linalg.precision import working_dtype
from botorch_mtucb.multitask.base import MultiTaskGPBase
from botorch_mtucb.multitask.nystrom_batch import NystromMultiTaskBatch
from botorch_mtucb.multitask.solvers.nystrom import NystromSolver
from botorch_mtucb.multitask.solvers.nystrom_icm import ICMNystromSolver
from botorch_mtucb.theory.multi_task import check_epsilon_delta, theorem3_q
from botorch_mtucb.utils.batched_data import ConstructorSignature, has_batched_training_data

__all__ = ["NystromMultiTaskGP", "capped_oversampling"]


#: Buffers holding the dictionary state: D_t, its probabilities, the variances it was drawn
#: from and the Theorem-3 log-det sum (their sizes change from round to round).
_STATE_BUFFERS = ("_dict_indices", "_dict_probs", "_previous_variances", "_log_det_sum")


class NystromMultiTaskGP(MultiTaskGPBase):
    r"""MT-BKB: multi-task GP with a Nyström embedding on a variance-sampled dictionary.

    At round ``t`` each training point ``x_i`` joins the dictionary ``D_t`` independently with
    probability ``p_{t,i} = min{q ‖Γ̃_{t−1}(x_i, x_i)‖, 1}`` (the previous round's approximate
    variances; the dictionary is redrawn from scratch every round). With the embeddings
    reweighted by ``1/√p`` (paper 000, §3.2):

    .. math::
        \tilde μ_t(x) = \tilde Φ_t(x)^T (\tilde V_t + ηI)^{-1} Σ_s \tilde Φ_t(x_s) y_s, \quad
        \tilde Γ_t(x, x') = Γ(x, x') − \tilde Φ_t(x)^T \tilde Φ_t(x')
            + η \tilde Φ_t(x)^T (\tilde V_t + ηI)^{-1} \tilde Φ_t(x').

    The second line is the deterministic-training-conditional form: far from the data the
    variance returns to the prior. ICM kernels (Γ = k·B) use the scalar embedding and ``n``
    problems of size ``m_t`` (eqs. (7)–(8), :class:`ICMNystromSolver`); other multi-task
    kernels the ``n m_t``-dimensional embedding (:class:`NystromSolver`). An empty
    dictionary gives the prior posterior.

    **Accuracy.** ``q = 6ρ log(4T/δ)/ε²`` with ρ = (1+ε)/(1−ε) (Theorem 3), unless ``q`` is
    given. ``T`` is ``horizon``; without one (or once ``t`` exceeds it) the doubling trick of
    Remark 4 is used: ``T`` = the smallest power of two ≥ ``t``.

    **Units of the probabilities.** ``p`` uses the variance in the kernel's units, as paper
    000 states it (§3.2, Algorithm 2). The ε-accuracy that Theorem 3's proof needs (its
    eq. (22), with ±εηI terms) is that of ridge-leverage-score sampling, whose scores are
    ‖Γ̃(x_i, x_i)‖/η (Calandriello et al. 2019). The two coincide for η = 1, and wherever
    ``q‖Γ̃‖ ≥ 1`` (the point is kept for sure). With η < 1 and ``q‖Γ̃‖ < 1`` the dictionary is
    smaller than the leverage-score one by up to the factor η, and the Nyström variances can
    leave the factor ρ of the exact ones: the formula is not invariant to rescaling (Γ, η)
    to (cΓ, cη), which leaves the exact posterior mean unchanged. Pass a larger ``q`` (e.g.
    the default divided by η) for the leverage-score dictionary.

    **Rounds.** :meth:`condition_on_observations` is one round of Algorithm 2: the variances
    ‖Γ̃_{t−1}(x_i, x_i)‖ of the current model at its training points and at the new points are
    carried to the new model, which draws its dictionary from them. It also accumulates the
    Theorem-3 sum Σ_s log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)) (:attr:`log_det_variance_sum`,
    used by :class:`~botorch_mtucb.acquisition.TheoremThreeBeta`).

    **Cold start.** A model built directly from ``t`` points has no previous round. It replays
    Algorithm 2 in doubling stages: stage ``k`` draws a dictionary for the first ``2^k``
    points from the variances of stage ``k−1`` (stage 0 is the prior), and the model's own
    dictionary is drawn from the variances of the last stage (at least ``t/2`` points). A
    stage's variances are those of a model with fewer points, so at least as large as the
    sequential ones up to the factor ρ: the inclusion probabilities are conservative (the
    dictionary is as accurate, possibly slightly larger) and so is the log-det sum. The whole
    cold start costs about twice one round.

    **Information gain.** :meth:`information_gain` is the Nyström estimate
    ½ log det(I + η⁻¹ Ṽ_t) = ½ log det(I_{nt} + η⁻¹ Ĝ_t), where Ĝ_t = Φ̃_XΦ̃_Xᵀ ⪯ G_t is the
    Nyström approximation of the training Gram: a lower bound on the exact
    ½ log det(I_{nt} + η⁻¹ G_t), equal to it when every point is in the dictionary. (Lemma 4
    does not hold for Γ̃, so this is *not* the Theorem-3 sum.)

    **Capped dictionary.** With ``max_dictionary_size = m`` the dictionary keeps at most ``m``
    points: the oversampling parameter becomes ``q' = min(q, q_m)``, ``q_m`` the value with
    expected size ``Σ_i min{q_m v_i, 1} = m`` (:func:`capped_oversampling`), so the
    probabilities stay proportional to the variances (ridge leverage scores) below
    saturation; the draw is then truncated to the ``m`` smallest keys ``u_i/p_i`` (sequential
    Poisson sampling: ``u_i < p_i`` is the Bernoulli draw above, so an uncapped draw of at most
    ``m`` points is unchanged). Theorem 3's ε-accuracy needs ``q``: a cap that binds keeps it
    only for the ε' with ``6ρ(ε') log(4T/δ)/ε'² ≤ q'`` when such an ε' < 1 exists, and gives
    no accuracy guarantee otherwise. The posterior is still the Nyström (DTC) posterior of
    the dictionary drawn; it depends on the dictionary only through the span of its
    embeddings (Lemma 8), so the truncation does not bias it through the weights ``1/√p``.
    ``None`` (default): no cap, the draws of Algorithm 2.

    **Dictionary and hyperparameters.** The dictionary is drawn when the model is built or
    conditioned, then kept: changing hyperparameters (e.g. fitting) rebuilds the solver on the
    same dictionary; call :meth:`resample_dictionary` to redraw it.

    **Batched training data** (``train_X`` ``batch x N x d``, ``train_Y`` ``batch x N x n``):
    the constructor returns a
    :class:`~botorch_mtucb.multitask.nystrom_batch.NystromMultiTaskBatch` of ``batch``
    members, member ``i`` the model of ``(train_X[i], train_Y[i])`` with its own dictionary,
    drawn from one shared generator in row-major member order (batch shape ``batch``, but
    ``isinstance(model, NystromMultiTaskGP)`` is ``False``).

    Example:
        >>> model = NystromMultiTaskGP(train_X, train_Y, epsilon=0.5, horizon=1000,
        ...                            generator=torch.Generator().manual_seed(0))
        >>> model.dictionary_size, model.dictionary_indices[:5]
        >>> mean, blocks = model.task_posterior(torch.rand(5, d, dtype=torch.float64))
        >>> model = model.condition_on_observations(x_new, y_new)  # next round
    """

    __signature__ = ConstructorSignature()  # the __init__ arguments, not __new__'s

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """Batched ``train_X`` / ``train_Y`` (either with more than 2 dimensions): a
        :class:`NystromMultiTaskBatch` of per-slice members
        (:meth:`NystromMultiTaskBatch.from_batched_data`); otherwise a plain instance."""
        if has_batched_training_data(args, kwargs):
            return NystromMultiTaskBatch.from_batched_data(cls, args, kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        covar_module: MultiTaskKernel | None = None,
        noise: float | Tensor = 0.1,
        q: float | None = None,
        epsilon: float = 0.5,
        delta: float = 0.1,
        horizon: int | None = None,
        generator: torch.Generator | int | None = None,
        learn_noise: bool = False,
        input_transform: InputTransform | None = None,
        outcome_transform: OutcomeTransform | None = None,
        mean_module: Mean | None = None,
        pinv_rtol: float | None = None,
        pinv_method: str = "auto",
        max_dictionary_size: int | None = None,
    ) -> None:
        """
        Args:
            train_X: ``t x d`` training inputs (``batch x t x d``: a batch of models, see
                the class docstring).
            train_Y: ``t x n`` training observations (``batch x t x n``).
            covar_module: Multi-task kernel (default: ICM over an RBF kernel, as
                :class:`ExactMultiTaskGP`).
            noise: Regulariser / Gaussian noise variance η > 0.
            q: Oversampling parameter ``q > 0`` of ``p = min{q‖Γ̃‖, 1}``; ``None`` uses
                Theorem 3's ``6ρ log(4T/δ)/ε²``.
            epsilon: Accuracy ε ∈ (0, 1) (enters q and ρ).
            delta: Confidence δ ∈ (0, 1].
            horizon: Time horizon ``T`` for ``q`` (``None``: doubling trick).
            generator: ``torch.Generator`` (or an integer seed) for the Bernoulli draws; it is
                shared by the models returned by :meth:`condition_on_observations`, so a run is
                reproducible. ``None`` uses torch's global RNG.
            learn_noise: Make η learnable.
            input_transform: BoTorch input transform.
            outcome_transform: BoTorch outcome transform.
            mean_module: Prior mean (zero by default).
            pinv_rtol: Relative cutoff of the dictionary Gram's pseudo-inverse square root
                (default ``1000·eps`` of the dtype).
            pinv_method: ``"auto"``, ``"eigh"`` or ``"pivoted_cholesky"`` (see
                :class:`~botorch_mtucb.multitask.solvers.nystrom.NystromSolver`).
            max_dictionary_size: Cap ``m ≥ 1`` on the dictionary size (see "Capped
                dictionary" in the class docstring); ``None`` for Algorithm 2's draws.
        """
        check_epsilon_delta(epsilon, delta)
        if q is not None and (
            isinstance(q, bool) or not isinstance(q, int | float) or not math.isfinite(q) or q <= 0
        ):
            raise ValueError(f"`q` must be a finite number > 0 (or None), got {q!r}.")
        if horizon is not None and (
            isinstance(horizon, bool) or not isinstance(horizon, Integral) or horizon < 1
        ):
            raise ValueError(f"`horizon` must be a positive integer (or None), got {horizon!r}.")
        if isinstance(generator, Integral) and not isinstance(generator, bool):
            generator = torch.Generator(device=train_X.device).manual_seed(int(generator))
        elif generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError(
                "`generator` must be a torch.Generator, an integer seed or None, got "
                f"{type(generator).__name__}."
            )
        if pinv_rtol is not None and not (
            isinstance(pinv_rtol, int | float) and 0.0 <= pinv_rtol < 1.0
        ):
            raise ValueError(f"`pinv_rtol` must lie in [0, 1), got {pinv_rtol!r}.")
        if max_dictionary_size is not None and (
            isinstance(max_dictionary_size, bool)
            or not isinstance(max_dictionary_size, Integral)
            or max_dictionary_size < 1
        ):
            raise ValueError(
                "`max_dictionary_size` must be a positive integer (or None), got "
                f"{max_dictionary_size!r}."
            )
        if pinv_method not in ("auto", "eigh", "pivoted_cholesky"):
            raise ValueError(
                "`pinv_method` must be 'auto', 'eigh' or 'pivoted_cholesky', got "
                f"{pinv_method!r}."
            )
        super().__init__(
            train_X,
            train_Y,
            covar_module=covar_module,
            noise=noise,
            learn_noise=learn_noise,
            input_transform=input_transform,
            outcome_transform=outcome_transform,
            mean_module=mean_module,
        )
        self._q = None if q is None else float(q)
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.horizon = horizon
        self._generator = generator
        self.pinv_rtol = pinv_rtol
        self.pinv_method = pinv_method
        self.max_dictionary_size = None if max_dictionary_size is None else int(max_dictionary_size)
        with torch.no_grad():
            X = self._transformed_train_X()
            variances, log_dets = self._cold_start(X)
        # the dictionary state is part of the model's state (state_dict, .to, deepcopy)
        for name in _STATE_BUFFERS:
            self.register_buffer(name, None)
        self._previous_variances = variances
        self._log_det_sum = log_dets.sum()
        self._draw_dictionary()

    # ------------------------------------------------------------------ parameters
    @property
    def rho(self) -> float:
        """ρ = (1+ε)/(1−ε) (Theorem 3)."""
        return (1.0 + self.epsilon) / (1.0 - self.epsilon)

    @property
    def q(self) -> float:
        """The oversampling parameter used for the current round's dictionary."""
        if self._q is not None:
            return self._q
        t = self.train_targets.shape[-2]
        if self.horizon is not None and t <= self.horizon:
            T = self.horizon
        else:
            T = 1 << max(t - 1, 0).bit_length()  # smallest power of two >= t
        return theorem3_q(self.epsilon, self.delta, T)

    @property
    def effective_q(self) -> float:
        """The oversampling parameter the current dictionary was drawn with: :attr:`q`, or
        ``min(q, q_m)`` under ``max_dictionary_size`` (:func:`capped_oversampling`)."""
        return float(self._oversampling(self._previous_variances))

    @property
    def generator(self) -> torch.Generator | None:
        """The random generator of the dictionary draws (shared across rounds)."""
        return self._generator

    def random_generators(self) -> list[torch.Generator]:
        """The generator the dictionary is resampled from on conditioning (``RandomStateModel``)."""
        return [] if self._generator is None else [self._generator]

    # ------------------------------------------------------------------ dictionary
    @property
    def dictionary_indices(self) -> Tensor:
        """``m_t`` LongTensor: rows of ``train_X`` in the dictionary D_t (increasing)."""
        return self._dict_indices

    @property
    def dictionary_probabilities(self) -> Tensor:
        """``m_t`` inclusion probabilities ``p_{t,i}`` of the dictionary points."""
        return self._dict_probs

    @property
    def dictionary_size(self) -> int:
        """m_t = |D_t|."""
        return int(self._dict_indices.numel())

    @property
    def previous_variances(self) -> Tensor:
        """``t`` variances ‖Γ̃_{t−1}(x_i, x_i)‖ the dictionary was drawn from (kernel scale)."""
        return self._previous_variances

    @property
    def log_det_variance_sum(self) -> Tensor:
        """Σ_{s≤t} log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)): the sum in Theorem 3's β̃_t.

        Accumulated by :meth:`condition_on_observations` with each round's own model; for a
        model built cold, from the doubling stages (see the class docstring). Kernel scale
        (where η lives).
        """
        return self._log_det_sum

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """Resize the dictionary buffers to the stored ones before loading (sizes vary)."""
        for name in _STATE_BUFFERS:
            stored = state_dict.get(prefix + name)
            if stored is not None:
                setattr(self, name, torch.empty_like(stored, device=self._log_det_sum.device))
        self._solver_cache = None
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def set_train_data(
        self, inputs: Tensor | None = None, targets: Tensor | None = None, strict: bool = True
    ) -> None:
        """GPyTorch's ``set_train_data``; inputs with another number of rows restart the
        dictionary state as a model built on them does (the cold start's variances and log-det
        sum, then a fresh dictionary), so that every row can enter it. The same number of rows
        (BoTorch's ``eval()`` stores the transformed inputs this way) or new targets alone keep
        the dictionary, which holds row indices."""
        rows = self._previous_variances.shape[-1]
        super().set_train_data(inputs, targets, strict)
        self._solver_cache = None
        if inputs is not None and inputs.shape[-2] != rows:
            with torch.no_grad():
                variances, log_dets = self._cold_start(self._transformed_train_X())
            self._previous_variances = variances
            self._log_det_sum = log_dets.sum()
            self._draw_dictionary()

    def resample_dictionary(self) -> None:
        """Redraw D_t from the stored previous variances (e.g. after fitting hyperparameters)."""
        self._draw_dictionary()

    def _draw_dictionary(self) -> None:
        probs = self._inclusion_probabilities(self._previous_variances)
        idx = self._bernoulli(probs)
        self._dict_indices = idx
        self._dict_probs = probs[idx]
        self._solver_cache = None

    def _oversampling(self, variances: Tensor) -> Tensor | float:
        """``q``, or ``min(q, q_m)`` with a dictionary cap (0-dim tensor, no host sync)."""
        if self.max_dictionary_size is None:
            return self.q
        return capped_oversampling(variances, self.q, self.max_dictionary_size)

    def _inclusion_probabilities(self, variances: Tensor) -> Tensor:
        """``p_i = min{q' v_i, 1}`` with ``q'`` = :meth:`_oversampling`."""
        return (self._oversampling(variances) * variances).clamp(max=1.0)

    def _bernoulli(self, probs: Tensor) -> Tensor:
        """Indices ``i`` drawn independently with probability ``probs[i]`` (no loop), at most
        ``max_dictionary_size`` of them: those with the smallest keys ``u_i / p_i``."""
        gen = self._generator
        if gen is None:
            u = torch.rand(probs.shape, dtype=probs.dtype, device=probs.device)
        else:
            u = torch.rand(probs.shape, generator=gen, dtype=probs.dtype, device=gen.device)
            u = u.to(probs.device)
        cap = self.max_dictionary_size
        if cap is None or cap >= probs.numel():
            return (u < probs).nonzero().reshape(-1)
        inf = torch.tensor(math.inf, dtype=probs.dtype, device=probs.device)
        keys = torch.where(probs > 0, u / probs, inf)  # u_i < p_i  <=>  key_i < 1
        smallest, idx = torch.topk(keys, cap, largest=False)
        return idx[smallest < 1].sort().values

    def _transformed_train_X(self) -> Tensor:
        X = self.train_inputs[0]
        return self.transform_inputs(X) if self.training else X

    def _validate_batch(self, train_X: Tensor) -> None:
        if train_X.dim() > 2:  # only reachable by calling __init__ on an existing instance
            raise ValueError(
                "NystromMultiTaskGP.__init__ needs `train_X: N x d` (one dictionary); build "
                f"batched data {tuple(train_X.shape)} with NystromMultiTaskGP(train_X, "
                "train_Y, ...), which returns a NystromMultiTaskBatch."
            )

    def _working_dtype(self, X: Tensor) -> torch.dtype:
        """float64 whatever the data's dtype: the dictionary Gram's pseudo-inverse square root
        is rank-revealing, and float32 would drop informative directions (lower-precision data
        get a ``NumericalWarning`` and results in their dtype)."""
        return working_dtype(X.dtype, math.inf, "MT-BKB's Nyström posterior")

    def _make_solver(
        self, X: Tensor, resid: Tensor, idx: Tensor, probs: Tensor
    ) -> ICMNystromSolver | NystromSolver:
        kw = {"rtol": self.pinv_rtol, "method": self.pinv_method}
        kernel, X, resid, noise = self._solver_inputs(X, resid)
        probs = probs.to(X.dtype)
        icm = kernel.icm_components()
        if icm is not None:
            k, B = icm
            return ICMNystromSolver(k, B, X, resid, noise, idx, probs, **kw)
        return NystromSolver(kernel, X, resid, noise, idx, probs, **kw)

    def _cold_start(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Replay Algorithm 2 in doubling stages (class docstring).

        Returns:
            ``(variances, log_dets)``, each ``t``: ‖Γ̃(x_i, x_i)‖ under the last stage's model,
            and log det(I_n + η⁻¹ Γ̃(x_i, x_i)) under the stage model before ``x_i`` arrived.
        """
        t, n = X.shape[-2], self.num_tasks
        empty = torch.zeros(0, dtype=torch.long, device=X.device)
        zeros = X.new_zeros(t, n)
        prior = self._make_solver(X[:0], zeros[:0], empty, X.new_zeros(0))
        variances, log_dets = (v.clone() for v in prior.variance_summary(X))
        end = 1
        while end < t:
            probs = self._inclusion_probabilities(variances[:end])
            idx = self._bernoulli(probs)
            stage = self._make_solver(X[:end], zeros[:end], idx, probs[idx])
            nxt = min(2 * end, t)
            norms, lds = stage.variance_summary(X[:nxt])
            variances[:nxt] = norms
            log_dets[end:nxt] = lds[end:nxt]
            end = nxt
        return variances, log_dets

    # ------------------------------------------------------------------ solver
    def _build_solver(self) -> ICMNystromSolver | NystromSolver:
        X, resid = self._base_train_data()
        return self._make_solver(X, resid, self._dict_indices, self._dict_probs)

    # ------------------------------------------------------------------ conditioning
    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> NystromMultiTaskGP:
        """One round of MT-BKB: a new model with ``(X, Y)`` appended and a fresh dictionary.

        The current model's variances ‖Γ̃_t(x, x)‖ at its training points and at ``X`` give the
        new model's inclusion probabilities; log det(I_n + η⁻¹ Γ̃_t(x, x)) at ``X`` is added to
        :attr:`log_det_variance_sum`. Hyperparameters, transforms and the generator are
        shared; nothing is rebuilt from scratch except the new round's embedding.

        Args:
            X: ``m x d`` new inputs (``m = 1`` per round in Algorithm 2).
            Y: ``m x n`` new observations (original outcome scale).
            noise: Not supported; must be ``None``.
        """
        return super().condition_on_observations(X, Y, noise=noise, **kwargs)

    def _deepcopy_memo(self) -> dict:
        """The base's shared tensors, and the generator: conditioned copies draw from the same
        stream, so a seeded run stays reproducible."""
        memo = super()._deepcopy_memo()
        if self._generator is not None:
            memo[id(self._generator)] = self._generator
        return memo

    def _after_conditioning(
        self, new: MultiTaskGPBase, old_solver: ICMNystromSolver | NystromSolver, Xt: Tensor
    ) -> None:
        """Carry the variances forward and draw the new round's dictionary."""
        with torch.no_grad():
            v_old, _ = old_solver.train_variance_summary()
            v_new, ld_new = old_solver.variance_summary(Xt)
        new._previous_variances = torch.cat([v_old, v_new])
        new._log_det_sum = self._log_det_sum + ld_new.sum()
        new._draw_dictionary()


def capped_oversampling(variances: Tensor, q: float, max_size: int) -> Tensor:
    r"""``min(q, q_m)``: the largest oversampling parameter whose dictionary has expected size
    at most ``max_size``.

    ``q_m`` solves ``Σ_i min{q_m v_i, 1} = m`` (``m`` = ``max_size``; ``+∞`` when at most
    ``m`` variances are positive). The left side is continuous, piecewise linear and
    non-decreasing in ``q_m``: with the variances sorted decreasingly and the ``k`` largest
    saturated (``q_m v_(k) ≥ 1 ≥ q_m v_(k+1)``), ``q_m = (m − k) / Σ_{i>k} v_(i)``. Every
    ``k < m`` is tried at once (vectorised, no host sync).

    Args:
        variances: ``t`` non-negative variances ``v_i`` (``‖Γ̃(x_i, x_i)‖``).
        q: The uncapped oversampling parameter (> 0).
        max_size: The cap ``m ≥ 1`` on the expected dictionary size.

    Returns:
        A 0-dim tensor (``variances``' dtype and device).

    Example:
        >>> v = torch.tensor([1.0, 0.5, 0.25, 0.25], dtype=torch.float64)
        >>> capped_oversampling(v, q=10.0, max_size=2)  # 1 + q (0.5 + 0.25 + 0.25) = 2
        tensor(1., dtype=torch.float64)
    """
    v = variances.reshape(-1)
    q_t = torch.as_tensor(q, dtype=v.dtype, device=v.device)
    if max_size >= v.numel():
        return q_t
    vs = v.sort(descending=True).values
    k = torch.arange(max_size, dtype=v.dtype, device=v.device)
    tail = vs.flip(0).cumsum(0).flip(0)[:max_size]  # Σ_{i>k} v_(i), summed from the smallest
    cand = (max_size - k) / tail  # +inf where the tail is empty of mass
    above = torch.cat([vs.new_full((1,), math.inf), vs[: max_size - 1]])  # v_(k), k ≥ 1
    tol = 1e-9  # the breakpoints q v_(k) = 1 belong to both neighbouring pieces
    valid = (cand * vs[:max_size] <= 1.0 + tol) & (cand * above >= 1.0 - tol)
    q_m = torch.where(valid, cand, torch.full_like(cand, math.inf)).min()
    return torch.minimum(q_t, q_m)
