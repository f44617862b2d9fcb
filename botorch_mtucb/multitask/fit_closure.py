r"""The ICM marginal likelihood on a flat hyperparameter vector, with its gradient in closed form.

For the practical multi-task GP (paper 000, eq. (1): Γ = k·B with a Matérn kernel ``k``, a
learned ``B = F Fᵀ + diag(softplus(v))``, a constant mean ``c`` per task and a homoscedastic
noise η) the negative normalised marginal log likelihood that BoTorch's ``fit_gpytorch_mll``
minimises is

.. math::
    L(θ) = \frac{1}{Nn}\Big(\tfrac12\big(r^\top Σ^{-1} r + \log\det Σ + Nn\log 2π\big)
    − \sum_{\text{priors}} \log p(θ)\Big),\quad Σ = K ⊗ B + ηI,\; r = \mathrm{vec}(Y − 1c^\top).

:class:`ICMFitObjective` evaluates ``L`` and ``∇L`` on the raw parameter vector that
``fit_gpytorch_mll``'s L-BFGS-B sees (same parameters, same order, same bounds) from one
``eigh`` of ``K`` and one of ``B`` (paper 000, §3.3 and Appendix A), with every derivative
written out: with ``K = W diag(a) Wᵀ``, ``B = U diag(ξ) Uᵀ``, ``Λ_pi = a_p ξ_i + η``,
``Z = (WᵀRU)/Λ`` and ``A = W Z Uᵀ`` (= Σ⁻¹r as ``N x n``),

.. math::
    ∂_K = \tfrac{1}{2Nn}\big(W\mathrm{diag}(Λ^{-1}ξ)W^\top − (WZ)\mathrm{diag}(ξ)(WZ)^\top\big),

    ∂_B = \tfrac{1}{2Nn}\,U\big(\mathrm{diag}(a^\top Λ^{-1}) − Z^\top\mathrm{diag}(a)Z\big)U^\top,

``∂_η = (ΣΛ⁻¹ − ‖Z‖²)/(2Nn)``, ``∂_c = −1ᵀA/(Nn)``; the Matérn entries depend on the
lengthscales through ``r² = Σ_k (x_k − x'_k)²/ℓ_k²``, so ``∂_{ℓ_k} = (2/ℓ_k) Σ_{pq} M_pq
(z_pk − z_qk)²`` with ``M = ∂_K ∘ (−∂k/∂r²)`` and ``z = x/ℓ``; priors and the softplus
constraints contribute their closed-form derivatives. No autograd graph, no linear
operators, no module traversal per evaluation.

:func:`fit_icm_lbfgsb` drives scipy's L-BFGS-B with it (BoTorch's method, bounds and
start) and reports whether the fit converged; callers fall back to ``fit_gpytorch_mll``
otherwise (:func:`~botorch_mtucb.multitask.practical_fit.fit_practical_model`). The
``eigh(K)`` of the accepted point is left in the model's
:func:`~botorch_mtucb.linalg.icm_factor_cache`, so the posterior does not factorise ``K``
again.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from botorch.optim.utils import get_parameters_and_bounds
from gpytorch import settings
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import MaternKernel
from gpytorch.likelihoods import MultitaskGaussianLikelihood
from gpytorch.means import ConstantMean, MultitaskMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior
from scipy.linalg import lapack
from scipy.optimize import minimize
from threadpoolctl import ThreadpoolController
from torch import Tensor

from botorch_mtucb.kernels.icm import ICMKernel
from botorch_mtucb.linalg.icm_cholesky import icm_factor_cache, icm_likelihood_method
from botorch_mtucb.multitask.base import MultiTaskGPBase
from botorch_mtucb.multitask.solvers.exact import icm_factor_key

__all__ = [
    "CLOSED_FORM_MAX_POINTS",
    "ClosedFormFitObjective",
    "FlatFitObjective",
    "ICMFitObjective",
    "NUMPY_MAX_POINTS",
    "fit_icm_lbfgsb",
    "icm_fit_objective",
]

#: :func:`icm_fit_objective` covers models with fewer training points than this: its
#: ``t x t`` work is one ``eigh`` of ``K`` or ``n`` Cholesky factors of ``ξ_i K + ηI``
#: (:func:`~botorch_mtucb.linalg.icm_likelihood_method`'s choice) and about ``8 + n`` ``t x t``
#: buffers; larger ``t`` are left to the autograd closure and the likelihood's memory bound.
CLOSED_FORM_MAX_POINTS = 2000

#: :class:`ICMFitObjective` does the ``t x t`` work of an evaluation in NumPy (float64, on the
#: host) instead of torch when the training data live on the CPU and ``t`` is at most this:
#: there an evaluation is a few dozen operations on small matrices, whose cost is mostly the
#: per-operation overhead, smaller in NumPy; above it the ``O(t³)`` linear algebra dominates and
#: torch's is as fast. Data on any other device take the torch route.
NUMPY_MAX_POINTS = 200

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
_SOFTPLUS_THRESHOLD = 20.0
#: L-BFGS-B's messages for stopping at ``maxiter`` or ``maxfun`` (BoTorch's ``STOPPED``).
_STOPPED = re.compile(
    "TOTAL NO. (of|OF) (ITERATIONS REACHED LIMIT|(f AND g|F,G) EVALUATIONS EXCEEDS LIMIT)"
)


_CONTROLLER: list[ThreadpoolController] = []


def _blas_controller() -> ThreadpoolController:
    """One ``ThreadpoolController`` for the process (building one scans the loaded libraries)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def _softplus(x: np.ndarray) -> np.ndarray:
    """``torch.nn.functional.softplus`` (β = 1, threshold 20) on the host."""
    return np.where(x > _SOFTPLUS_THRESHOLD, x, np.log1p(np.exp(np.minimum(x, 50.0))))


def _softplus_slope(x: np.ndarray) -> np.ndarray:
    """Its derivative: the logistic function, 1 above the threshold."""
    return np.where(x > _SOFTPLUS_THRESHOLD, 1.0, 1.0 / (1.0 + np.exp(-np.maximum(x, -50.0))))


@dataclass(frozen=True)
class _Positive:
    """A positive hyperparameter ``value = lower + softplus(raw)`` (``softplus``) or
    ``value = raw`` (not enforced; L-BFGS-B's bounds keep it feasible)."""

    lower: float
    softplus: bool

    def value(self, raw: np.ndarray) -> np.ndarray:
        return _softplus(raw) + self.lower if self.softplus else raw

    def chain(self, grad: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """The gradient with respect to ``raw`` from the one with respect to the value."""
        return grad * _softplus_slope(raw) if self.softplus else grad


@dataclass(frozen=True)
class _Prior:
    """``−log p`` of a LogNormal(μ, σ) or Gamma(α, β) prior and its derivative, on the host.

    The constants are computed once in the prior's own dtype, as ``torch.distributions``
    computes them (``2σ²`` and ``log σ``; ``α log β`` and ``lgamma(α)``), and summed in
    float64 in its order.
    """

    lognormal: bool
    p1: np.ndarray  # μ or α
    p2: np.ndarray  # 2σ² or β
    p3: np.ndarray  # log σ or lgamma(α)
    p4: np.ndarray  # log √(2π) or −α log β

    def neg_log_prob(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        logx = np.log(x)
        if self.lognormal:
            dev = logx - self.p1
            val = dev**2 / self.p2 + self.p3 + self.p4 + logx
            return float(val.sum()), (1.0 + 2.0 * dev / self.p2) / x
        val = self.p3 + self.p4 - (self.p1 - 1.0) * logx + self.p2 * x
        return float(val.sum()), self.p2 - (self.p1 - 1.0) / x


def _np(x: Tensor) -> np.ndarray:
    return x.detach().cpu().double().numpy()


def _positive(constraint: Any) -> _Positive | None:
    """The map of a ``GreaterThan`` constraint (softplus or not enforced), else ``None``."""
    if not isinstance(constraint, GreaterThan) or bool(torch.isfinite(constraint.upper_bound)):
        return None
    transform = constraint._transform
    if transform is None:
        return _Positive(float(constraint.lower_bound), False)
    if (
        isinstance(transform, torch.nn.Softplus)
        and transform.beta == 1.0
        and transform.threshold == _SOFTPLUS_THRESHOLD
    ):
        return _Positive(float(constraint.lower_bound), True)
    return None


def _prior(prior: Any, value: Tensor) -> _Prior | None:
    """The closed form of a LogNormal or Gamma prior on ``value`` (same shape), else ``None``."""
    if getattr(prior, "_transform", None) is not None:
        return None
    if type(prior) is LogNormalPrior:
        loc, scale = prior.loc.detach(), prior.scale.detach()
        consts = (loc, 2 * scale**2, scale.log(), torch.tensor(_LOG_SQRT_2PI, dtype=torch.float64))
    elif type(prior) is GammaPrior:
        a, b = prior.concentration.detach(), prior.rate.detach()
        consts = (a, b, torch.lgamma(a), -(a * torch.log(b)))
    else:
        return None
    try:
        if torch.broadcast_shapes(*(c.shape for c in consts), value.shape) != value.shape:
            return None
    except RuntimeError:
        return None
    return _Prior(type(prior) is LogNormalPrior, *(_np(c) for c in consts))


def _plain_exact_mll(mll: Any) -> bool:
    """Whether ``mll`` is the ``ExactMarginalLogLikelihood`` of an unbatched multi-task GP with
    a homoscedastic learned noise (``MultitaskGaussianLikelihood``, global noise only), one
    training input, no trainable input transform and no added loss terms (and NaN outcomes
    ignored): the models whose likelihood the lean objectives write out."""
    model = getattr(mll, "model", None)
    if type(mll) is not ExactMarginalLogLikelihood or not isinstance(model, MultiTaskGPBase):
        return False
    lik = model.likelihood
    if (
        type(lik) is not MultitaskGaussianLikelihood
        or lik.has_task_noise
        or not lik.has_global_noise
        or mll.likelihood is not lik
        or len(model.train_inputs) != 1
        or model.train_inputs[0].dim() != 2
        or model.train_targets.dim() != 2
        or any(True for _ in model.added_loss_terms())
        or settings.observation_nan_policy.value() != "ignore"
    ):
        return False
    transform = getattr(model, "input_transform", None)
    return transform is None or not any(p.requires_grad for p in transform.parameters())


def _structure_ok(mll: Any) -> bool:
    """Whether ``mll`` is the exact likelihood of an unbatched ICM model with a Matérn-3/2 or
    -5/2 kernel, a learned ``B``, a constant or zero mean and a homoscedastic learned noise."""
    if not _plain_exact_mll(mll):
        return False
    model = mll.model
    kern = model.covar_module
    if (
        type(kern) is not ICMKernel
        or kern.fixed_task_covar is not None
        or kern.batch_shape != torch.Size()
        or kern.covar_factor.dim() != 2
    ):
        return False
    if not _plain_matern(kern.data_covar_module, model.train_inputs[0].shape[-1]):
        return False
    return _constant_mean_ok(model)


def _plain_matern(k: Any, d: int) -> bool:
    """Whether ``k`` is an unbatched Matérn-3/2 or -5/2 kernel on all ``d`` inputs, ARD or
    not (the scalar kernels whose lengthscale derivatives the lean objectives write out)."""
    return (
        type(k) is MaternKernel
        and k.nu in (1.5, 2.5)
        and k.active_dims is None
        and k.batch_shape == torch.Size()
        and k.lengthscale.shape in ((1, d), (1, 1))
    )


def _constant_mean_ok(model: Any) -> bool:
    """Whether ``model``'s mean is zero or one unconstrained ``ConstantMean`` per task (the
    means whose constants the lean objectives treat, or profile out)."""
    if model._zero_mean:
        return True
    means = getattr(model.mean_module, "base_means", None)
    return (
        type(model.mean_module) is MultitaskMean
        and means is not None
        and len(means) == model.train_targets.shape[-1]
        and all(
            type(m) is ConstantMean
            and m.raw_constant.shape == torch.Size()
            and not hasattr(m, "raw_constant_constraint")
            for m in means
        )
    )


def _transformed_train_inputs(model: MultiTaskGPBase) -> Tensor:
    """The model's input-transformed training inputs (as in train mode), detached; the
    model's mode is left as it was."""
    was_training = model.training
    if not was_training:
        model.train()
    with torch.no_grad():
        x = model.transform_inputs(model.train_inputs[0]).detach()
    if not was_training:
        model.eval()
    return x


class FlatFitObjective:
    """The flat raw-parameter vector a closed-form fit objective works on (shared layout).

    Every raw parameter the objective reads sits in one canonical vector (``_full0``, with
    ``_shapes`` and ``_slices`` per key); the optimised ones, those of the marginal likelihood
    that require a gradient in the order of ``botorch.optim.utils.get_parameters_and_bounds``
    (``fit_gpytorch_mll``'s L-BFGS-B vector), are ``names`` / ``_params`` at the positions
    ``_pos``, with their start ``x0`` and L-BFGS-B ``bounds``. With a profiled mean the
    per-task constants are left out of that vector (``_mean_params`` keeps them, for
    :meth:`write`). Subclasses call :meth:`_layout` from their ``__init__`` and set ``_maps``
    (key -> :class:`_Positive` map of a constrained parameter, ``None`` where it has no closed
    form) and ``_priors`` (key -> closed-form prior, ``None`` if a prior has none).

    Attributes:
        names: Names of the optimised parameters.
        profiled: Whether the constant mean is profiled out.
        x0: Their current values, flattened (float64 numpy array).
        bounds: ``len(x0) x 2`` L-BFGS-B bounds (float64 numpy, ±inf where unbounded).
        num_evaluations: Number of evaluations so far.

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> objective = icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> isinstance(objective, FlatFitObjective), len(objective.x0) == len(objective.bounds)
        (True, True)
    """

    names: list[str]
    profiled: bool
    x0: np.ndarray
    bounds: np.ndarray
    num_evaluations: int

    @property
    def supported(self) -> bool:
        """Whether every optimised parameter, constraint and prior has a closed form here."""
        return (
            self._complete
            and all(m is not None for m in self._maps.values())
            and self._priors is not None
        )

    def _layout(
        self, mll: Any, raw: dict[str, Tensor], constants: set[str], profile_mean: bool
    ) -> None:
        """Lay out ``raw`` (key -> raw parameter, in the canonical order) and the optimised
        parameters; ``constants``: the keys of the per-task constants, profiled out when
        ``profile_mean`` and every one of them is optimised."""
        self._shapes = {key: tuple(p.shape) for key, p in raw.items()}
        self._slices, start = {}, 0
        for key, p in raw.items():
            self._slices[key] = slice(start, start + p.numel())
            start += p.numel()
        self._full0 = np.concatenate([_np(p).reshape(-1) for p in raw.values()])
        params, bounds = get_parameters_and_bounds(mll)
        self.names = [name for name, p in params.items() if p.requires_grad]
        self._params = [params[name] for name in self.names]
        ids = {id(p): key for key, p in raw.items()}
        keys = [ids.get(id(p)) for p in self._params]
        self._complete = all(key is not None for key in keys) and len(set(keys)) == len(keys)
        self.profiled = bool(profile_mean) and bool(constants) and constants <= set(keys)
        if self.profiled:  # θ without the constants: c = c*(θ) in every evaluation
            self._mean_params = [p for p, key in zip(self._params, keys, strict=True)
                                 if key in constants]
            kept = [i for i, key in enumerate(keys) if key not in constants]
            self.names = [self.names[i] for i in kept]
            self._params = [self._params[i] for i in kept]
            keys = [keys[i] for i in kept]
        self._pos = np.concatenate(
            [np.arange(self._slices[key].start, self._slices[key].stop) for key in keys
             if key is not None] or [np.zeros(0, dtype=np.int64)]
        )
        self.x0 = np.concatenate([_np(p).reshape(-1) for p in self._params])
        self.bounds = np.full((len(self.x0), 2), (-np.inf, np.inf))
        start = 0
        for name, p in zip(self.names, self._params, strict=True):
            lo, hi = bounds.get(name, (None, None))
            self.bounds[start : start + p.numel(), 0] = -np.inf if lo is None else float(lo)
            self.bounds[start : start + p.numel(), 1] = np.inf if hi is None else float(hi)
            start += p.numel()
        self.num_evaluations = 0

    def _raw(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """All raw parameters (canonical layout) with the optimised ones taken from ``x``."""
        full = self._full0.copy()
        full[self._pos] = x
        return {key: full[sl].reshape(self._shapes[key]) for key, sl in self._slices.items()}

    def _write_params(self, x: np.ndarray) -> None:
        """Copy the flat vector ``x`` into the optimised parameters (in place, no gradient)."""
        start = 0
        with torch.no_grad():
            for p in self._params:
                chunk = torch.as_tensor(x[start : start + p.numel()]).to(p)
                p.copy_(chunk.view(p.shape))
                start += p.numel()


class ICMFitObjective(FlatFitObjective):
    r"""``θ ↦ (L(θ), ∇L(θ))`` of the practical ICM model, on the raw parameter vector.

    ``L`` is the negative normalised marginal log likelihood with priors (module docstring),
    equal to ``−ExactMarginalLogLikelihood(model(X), y)`` of the model in train mode; ``θ``
    holds the parameters of ``mll`` that require a gradient, flattened in the order of
    ``botorch.optim.utils.get_parameters_and_bounds`` (the vector ``fit_gpytorch_mll``'s
    L-BFGS-B optimises). Build it with :func:`icm_fit_objective`, which checks the model.

    **Profiled mean** (``profile_mean=True``). ``L`` is quadratic in the constants ``c`` (which
    carry no prior), so for fixed other hyperparameters ``θ'`` its minimiser is the
    generalised least-squares estimate, per direction ``u_i`` of ``B``'s eigenbasis
    (Σ is block diagonal there, blocks ``M_i⁻¹ = ξ_i K + ηI``):

        c̃*_i = 1ᵀM_i y_i / 1ᵀM_i 1,   y_i = Y u_i,   c* = U c̃*.

    The objective then is the profile ``L(θ', c*(θ'))`` on ``θ'`` alone; its gradient is the
    partial gradient at ``c*`` (``∂L/∂c = 0`` there), and ``min_θ' L(θ', c*(θ')) =
    min_θ L(θ)``: the same maximum-likelihood estimate, on a smaller vector whose L-BFGS-B
    path is shorter (the constants no longer zig-zag with the noise and ``B``).

    One evaluation does the ``N``-sized work (kernel matrix, ``eigh``, the products of the
    gradient) in float64 on the data's device and the hyperparameter-sized work (constraints,
    priors, chain rule) on the host, where ``θ`` lives: one transfer each way. For data on
    the CPU with at most :data:`NUMPY_MAX_POINTS` points the ``N``-sized work runs in NumPy
    (the same code, generic over the array namespace): no transfer and a smaller cost per
    operation. The factors handed to the posterior (:meth:`write`) are torch tensors on the
    data's device either way.

    Its attributes (``names``, without the constants when :attr:`profiled`; ``profiled``,
    ``x0``, ``bounds``, ``num_evaluations``) are those of :class:`FlatFitObjective`.

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> objective = icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> value, grad = objective(objective.x0)  # float, numpy array of len(x0)
    """

    def __init__(
        self,
        mll: ExactMarginalLogLikelihood,
        method: str | None = None,
        profile_mean: bool = False,
    ) -> None:
        """
        Args:
            mll: The exact marginal likelihood of the model (checked by
                :func:`icm_fit_objective`; use that function).
            method: ``"eigh"`` or ``"cholesky"`` for the ``t x t`` work; ``None``:
                :func:`~botorch_mtucb.linalg.icm_likelihood_method` of ``(n, t)``.
            profile_mean: Profile the per-task constants out (class docstring): ``θ``
                then excludes them and :meth:`write` sets them to ``c*(θ)``. Applies when
                the model has a constant mean whose every constant is optimised; ignored
                otherwise (:attr:`profiled` tells).
        """
        if method not in (None, "eigh", "cholesky"):
            raise ValueError(f"`method` must be None, 'eigh' or 'cholesky', got {method!r}.")
        model = mll.model
        kern = model.covar_module
        k = kern.data_covar_module
        x = _transformed_train_inputs(model)
        wd = torch.float64
        self._model, self._x = model, x
        N, n = model.train_targets.shape
        # the array namespace of the t x t work: NumPy for small data on the CPU, else torch
        self._xp: Any = np if x.device.type == "cpu" and N <= NUMPY_MAX_POINTS else torch
        xc = (x - x.mean(-2, keepdim=True)).to(wd)
        Y = model.train_targets.detach().to(wd)
        self._xc, self._Y = (xc.numpy(), Y.numpy()) if self._xp is np else (xc, Y)
        self._last: tuple[np.ndarray, tuple[Any, ...], np.ndarray] | None = None
        self._nu = float(k.nu)
        self._zero_mean = bool(model._zero_mean)
        self._n = n
        self._Nn = N * n
        self._method = icm_likelihood_method(n, N) if method is None else method
        raw = {"noise": mll.likelihood.raw_noise}
        if not self._zero_mean:
            means = model.mean_module.base_means
            raw.update({f"c{i}": m.raw_constant for i, m in enumerate(means)})
        raw.update({"F": kern.covar_factor, "v": kern.raw_var, "ell": k.raw_lengthscale})
        # canonical layout of all raw parameters: noise, constants, F, v, ell
        constants = {f"c{i}" for i in range(n)} if not self._zero_mean else set()
        self._layout(mll, raw, constants, profile_mean)
        self._maps = {
            "noise": _positive(mll.likelihood.raw_noise_constraint),
            "v": _positive(kern.raw_var_constraint),
            "ell": _positive(k.raw_lengthscale_constraint),
        }
        self._priors = self._read_priors(model)
        r = self._shapes["F"][-1]
        sizes = {
            "head": 2, "eta": 1, "c": n, "F": n * r, "v": n, "ell": x.shape[-1], "cstar": n,
        }
        self._out_slices, start = {}, 0
        for key, size in sizes.items():
            self._out_slices[key] = slice(start, start + size)
            start += size

    def _read_priors(self, model: MultiTaskGPBase) -> dict[str, _Prior] | None:
        """The lengthscale and noise priors in closed form; ``None`` if any prior has none."""
        k = model.covar_module.data_covar_module
        out: dict[str, _Prior] = {}
        for _, module, prior, closure, _ in model.named_priors():
            if module is k and torch.equal(closure(module), k.lengthscale):
                key = "ell"
            elif module is model.likelihood and torch.equal(closure(module), module.noise):
                key = "noise"
            else:
                return None
            spec = _prior(prior, closure(module).detach())
            if spec is None or key in out:
                return None
            out[key] = spec
        return out

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(L, ∇L)`` at the float64 numpy vector ``x`` (scipy's ``jac=True`` convention)."""
        self.num_evaluations += 1
        n, Nn, half = self._n, self._Nn, 0.5 / self._Nn
        raw = self._raw(np.asarray(x, dtype=np.float64))
        maps = self._maps
        eta = maps["noise"].value(raw["noise"])
        ell = maps["ell"].value(raw["ell"])
        var = maps["v"].value(raw["v"])
        c = np.zeros(n) if self._zero_mean else np.array([raw[f"c{i}"] for i in range(n)])
        host = np.concatenate([ell.reshape(-1), eta.reshape(-1), c, var, raw["F"].reshape(-1)])
        if self._xp is np:  # non-finite trial points give non-finite values, as in torch
            with np.errstate(all="ignore"):
                out, factors = self._device(host)
        else:
            packed, factors = self._device(torch.from_numpy(host).to(self._xc))
            out = packed.cpu().numpy()
        sl = self._out_slices
        self._last = (np.array(x, dtype=np.float64), factors, out[sl["cstar"]].copy())
        g_eta = half * out[sl["eta"]]
        g_ell = (4.0 * half / ell.reshape(-1)) * out[sl["ell"]]
        g_ell = (g_ell.sum(keepdims=True) if ell.size == 1 else g_ell).reshape(ell.shape)
        value = half * (out[0] + out[1] + Nn * _LOG_2PI)
        for key, target, g in (("ell", ell, g_ell), ("noise", eta, g_eta)):
            prior = self._priors.get(key)
            if prior is not None:
                nlp, dnlp = prior.neg_log_prob(target)
                value += nlp / Nn
                g += dnlp.reshape(g.shape) / Nn
        grad = np.empty_like(self._full0)
        sl_in = self._slices
        grad[sl_in["noise"]] = maps["noise"].chain(g_eta, raw["noise"].reshape(-1))
        grad[sl_in["ell"]] = maps["ell"].chain(g_ell, raw["ell"]).reshape(-1)
        grad[sl_in["v"]] = maps["v"].chain(half * out[sl["v"]], raw["v"])
        grad[sl_in["F"]] = half * out[sl["F"]]
        if not self._zero_mean:
            grad[sl_in["c0"].start : sl_in["c0"].start + n] = half * out[sl["c"]]
        return float(value), grad[self._pos]

    def _device(self, h: Any) -> tuple[Any, tuple[Any, ...]]:
        """The ``N``- and ``B``-sized part of one evaluation, packed (× 2Nn): ``rᵀΣ⁻¹r``,
        ``log det Σ``, ``∂/∂η``, ``∂/∂c`` (n), ``∂/∂F`` (n·r), ``∂/∂diag(B)`` (n) and the
        lengthscale term ``Σ_p z_p² m_p − Σ_p z_p (Mz)_p`` (d), then ``c*`` (n), from
        ``h = [ℓ, η, c, v, F]`` (constrained values); and the factors of ``K`` for the
        posterior: ``eigh(K)`` (eigenvalues clamped at 0, eigenvectors) or ``(ξ, U, L)`` with
        the ``n`` Cholesky factors ``L_i`` of ``ξ_i K + ηI`` (:attr:`_method`). ``h``, the
        results and the factors are arrays of the namespace :attr:`_xp` (NumPy or torch)."""
        xp, n, d1, r = self._xp, self._n, self._shapes["ell"][-1], self._shapes["F"][-1]
        ell, eta = h[:d1], h[d1]
        c, var = h[d1 + 1 : d1 + 1 + n], h[d1 + 1 + n : d1 + 1 + 2 * n]
        F = h[d1 + 1 + 2 * n :].reshape(n, r)
        xi, U = xp.linalg.eigh(xp.diag(var) + F @ F.T)
        xi = xp.clip(xi, 0.0, None)
        z = self._xc / ell
        zz = z * z
        K, S = _matern(xp, z, zz, self._nu)
        Yt, ct = self._Y @ U, None if self.profiled else c @ U
        terms = _cholesky_terms if self._method == "cholesky" else _eigh_terms
        head, gK, gB, alpha, ct, factors = terms(xp, K, xi, U, eta, Yt, ct)
        gK *= S  # M = ∂_K ∘ (−∂k/∂r²)
        term = zz.T @ gK.sum(-1) - (z * (gK @ z)).sum(0)
        packed = xp.concatenate([
            head, -2.0 * (U @ alpha.sum(0)), (2.0 * gB @ F).reshape(-1), xp.diag(gB), term,
            U @ ct,
        ])
        return packed, factors

    def write(self, x: np.ndarray) -> None:
        """Write the flat vector ``x`` into the model's parameters (in place, no gradient).

        When the last evaluation was at ``x``, its factors of ``K`` are handed to the model's
        :func:`~botorch_mtucb.linalg.icm_factor_cache` under the key of the written
        hyperparameters, so that the posterior does not factorise ``K`` again.
        """
        self._write_params(x)
        last = self._last
        if self.profiled and (last is None or not np.array_equal(last[0], x)):
            self(x)  # c*(θ) of this θ (and its factors)
            last = self._last
        self._last = None
        if self.profiled:
            with torch.no_grad():
                for p, value in zip(self._mean_params, last[2], strict=True):
                    p.fill_(float(value))
        if last is not None and np.array_equal(last[0], x):
            model = self._model
            with torch.no_grad():
                noise = model.likelihood.noise.detach().reshape(())
            factors = last[1]
            if self._xp is np:  # the posterior takes torch tensors on the data's device
                factors = tuple(torch.from_numpy(np.ascontiguousarray(f)).to(self._x.device)
                                for f in factors)
            cache = icm_factor_cache(model)
            cache.begin(icm_factor_key(model.covar_module, self._x, noise))
            cache.store(self._method, factors)


def _eye(xp: Any, K: Any) -> Any:
    """The identity of ``K``'s size, namespace, dtype and device."""
    if xp is torch:
        return torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    return np.eye(K.shape[-1], dtype=K.dtype)


def _cholesky_inverse(xp: Any, L: Any) -> Any:
    """``(L Lᵀ)⁻¹`` of a stack of lower Cholesky factors (``... x t x t``), in ``L``'s namespace:
    ``torch.cholesky_inverse``, or LAPACK's ``potri`` per factor (it fills the lower triangle)
    for NumPy."""
    if xp is torch:
        return torch.cholesky_inverse(L)
    out = np.empty_like(L)
    for i, Li in enumerate(L):
        out[i], info = lapack.dpotri(Li, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"potri failed with info={info}.")
    return out + np.tril(out, -1).swapaxes(-1, -2)


def _matern(xp: Any, z: Any, zz: Any, nu: float) -> tuple[Any, Any]:
    """The Matérn-``nu`` (3/2 or 5/2) matrix ``K`` of the scaled inputs ``z`` (``t x d``, with
    ``zz = z ∘ z``) and ``S = −∂k/∂r²``, both ``t x t``, in ``z``'s namespace ``xp``."""
    sq = zz.sum(-1)
    r2 = z @ z.T
    r2 *= -2.0
    r2 += sq[:, None]
    r2 += sq
    r2 = xp.clip(r2, 1e-30, None, out=r2)
    if nu == 2.5:
        sr = xp.sqrt(r2)
        sr *= math.sqrt(5.0)
        ex = xp.exp(-sr)
        sr += 1.0
        K = r2 * (5.0 / 3.0)
        K += sr
        K *= ex
        sr *= ex
        sr *= 5.0 / 6.0
        return K, sr
    sr = xp.sqrt(r2, out=r2)
    sr *= math.sqrt(3.0)
    ex = xp.exp(-sr)
    sr += 1.0
    sr *= ex
    ex *= 1.5
    return sr, ex


def _eigh_terms(
    xp: Any, K: Any, xi: Any, U: Any, eta: Any, Yt: Any, ct: Any | None
) -> tuple[Any, Any, Any, Any, Any, tuple[Any, Any]]:
    """The ICM terms from ``K = W diag(a) Wᵀ`` (module docstring), with ``Yt = YU`` the
    targets and ``ct = Uᵀc`` the constants in B's eigenbasis (``None``: profiled, ``c̃*``):
    ``[rᵀΣ⁻¹r, log det Σ, tr Σ⁻¹ − ‖Σ⁻¹r‖²]``, ``2Nn ∂L/∂K``, ``2Nn ∂L/∂B``, ``α = Σ⁻¹r`` in
    B's eigenbasis (``t x n``), ``ct`` and the factors ``(a, W)``; arrays of the namespace
    ``xp`` (NumPy or torch)."""
    a, W = xp.linalg.eigh(K)
    a = xp.clip(a, 0.0, None)
    lam = a[:, None] * xi + eta
    inv = 1.0 / lam
    Yw, w1 = W.T @ Yt, W.sum(0)  # Wᵀ(YU), Wᵀ1
    if ct is None:  # c̃*_i = 1ᵀM_i y_i / 1ᵀM_i 1 with M_i = W diag(inv_i) Wᵀ
        iw = inv * w1[:, None]
        ct = (iw * Yw).sum(0) / (iw * w1[:, None]).sum(0)
    Rt = Yw - w1[:, None] * ct
    Z = Rt * inv
    WZ = W @ Z
    gK = (W * (inv @ xi)) @ W.T - (WZ * xi) @ WZ.T
    gB = U @ (xp.diag(a @ inv) - Z.T @ (a[:, None] * Z)) @ U.T
    head = xp.stack([(Rt * Z).sum(), xp.log(lam).sum(), inv.sum() - (Z * Z).sum()])
    return head, gK, gB, WZ, ct, (a, W)


def _cholesky_terms(
    xp: Any, K: Any, xi: Any, U: Any, eta: Any, Yt: Any, ct: Any | None
) -> tuple[Any, Any, Any, Any, Any, tuple[Any, Any, Any]]:
    """The terms of :func:`_eigh_terms` from the ``n`` blocks ``ξ_i K + ηI = L_i L_iᵀ`` of
    Σ in B's eigenbasis (``M_i`` their inverses, ``α_i = M_i (RU)_i``):
    ``rᵀΣ⁻¹r = Σ_i (RU)_iᵀα_i``, ``log det Σ = Σ_i log det L_i²``, ``2Nn ∂L/∂K = Σ_i ξ_i M_i −
    α diag(ξ) αᵀ``, ``2Nn ∂L/∂B = U (diag(tr(K M_i)) − αᵀKα) Uᵀ``, ``tr Σ⁻¹ = Σ_i tr M_i``;
    the factors are ``(ξ, U, L)``."""
    L = xp.linalg.cholesky(xi[:, None, None] * K + eta * _eye(xp, K))  # n x t x t
    Minv = _cholesky_inverse(xp, L)  # n x t x t
    if ct is None:  # c̃*_i = 1ᵀM_i y_i / 1ᵀM_i 1
        m1 = Minv.sum(-1)  # n x t: M_i 1 (M_i symmetric)
        ct = (m1 * Yt.T).sum(-1) / m1.sum(-1)
    Rt = Yt - ct  # t x n: (Y − 1cᵀ)U
    alpha = (Minv @ Rt.T[:, :, None])[:, :, 0].T  # t x n
    gK = xp.einsum("i,ipq->pq", xi, Minv) - (alpha * xi) @ alpha.T
    tr_KM = (Minv * K).sum((-2, -1))
    gB = U @ (xp.diag(tr_KM) - alpha.T @ K @ alpha) @ U.T
    logdet = 2.0 * xp.log(xp.einsum("ipp->ip", L)).sum()
    tr_M = xp.einsum("ipp->", Minv)
    head = xp.stack([(Rt * alpha).sum(), logdet, tr_M - (alpha * alpha).sum()])
    return head, gK, gB, alpha, ct, (xi, U, L)


def icm_fit_objective(
    mll: ExactMarginalLogLikelihood, profile_mean: bool = False
) -> ICMFitObjective | None:
    """:class:`ICMFitObjective` of ``mll``, or ``None`` when it does not cover the model.

    Covered: ``ExactMarginalLogLikelihood`` of an unbatched multi-task GP with fewer than
    :data:`CLOSED_FORM_MAX_POINTS` training points, an
    :class:`~botorch_mtucb.kernels.ICMKernel` over a Matérn-3/2 or -5/2 (ARD or not, no
    active dims) with a learned ``B``, a zero or per-task constant mean, a homoscedastic
    learned noise (``MultitaskGaussianLikelihood``, global noise), softplus or unenforced
    ``GreaterThan`` constraints, LogNormal or Gamma priors on the lengthscale and the noise
    only, no trainable input transform, no added loss terms.

    Args:
        mll: The marginal likelihood to be fitted.
        profile_mean: Profile the constant mean out (:class:`ICMFitObjective`).

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> objective = icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
    """
    if not _structure_ok(mll) or mll.model.train_inputs[0].shape[-2] >= CLOSED_FORM_MAX_POINTS:
        return None
    objective = ICMFitObjective(mll, profile_mean=profile_mean)
    return objective if objective.supported else None


class ClosedFormFitObjective(Protocol):
    """What :func:`fit_icm_lbfgsb` drives: a closed-form fit objective on a flat raw
    hyperparameter vector (:class:`ICMFitObjective`, or
    :class:`~botorch_mtucb.multitask.fit_closure_lmc.LMCFitObjective`)."""

    x0: np.ndarray
    bounds: np.ndarray

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(L, ∇L)`` at ``x``."""

    def write(self, x: np.ndarray) -> None:
        """Write ``x`` into the model's parameters."""


def fit_icm_lbfgsb(
    objective: ClosedFormFitObjective, options: dict[str, Any] | None = None
) -> bool:
    """Minimise ``objective`` with scipy's L-BFGS-B from its ``x0`` within its ``bounds``.

    The driver (scipy's ``minimize`` with one BLAS thread, as BoTorch's
    ``minimize_with_timeout``), method, start, bounds and ``options`` are those of BoTorch's
    ``fit_gpytorch_mll_scipy``; the optimum is
    written into the model when L-BFGS-B converges or stops at ``maxiter``/``maxfun`` with
    a finite value (the cases ``fit_gpytorch_mll`` accepts without retrying).

    Args:
        objective: From :func:`icm_fit_objective` (or
            :func:`~botorch_mtucb.multitask.fit_closure_lmc.lmc_fit_objective`).
        options: scipy L-BFGS-B options (e.g. ``{"maxcor": 28}``).

    Returns:
        Whether the result was accepted and written; ``False`` leaves the model's
        parameters untouched (the caller falls back to ``fit_gpytorch_mll``).

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, bounds, fit=False)
        >>> objective = icm_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> accepted = fit_icm_lbfgsb(objective)
    """
    bounds = None if np.isinf(objective.bounds).all() else objective.bounds
    try:
        with _blas_controller().limit(limits=1, user_api="blas"):
            res = minimize(
                objective, objective.x0, jac=True, bounds=bounds, method="L-BFGS-B",
                options=options,
            )
    except (RuntimeError, ValueError, torch.linalg.LinAlgError):
        return False
    message = res.message if isinstance(res.message, str) else res.message.decode("ascii")
    stopped = _STOPPED.search(message) is not None
    if not (res.success or stopped) or not np.isfinite(res.fun) or not np.isfinite(res.x).all():
        return False
    objective.write(res.x)
    return True
