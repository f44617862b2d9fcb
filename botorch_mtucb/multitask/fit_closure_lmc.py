r"""The marginal likelihood of a sum of separable kernels, with its gradient in closed form.

For a multi-task GP whose kernel is a sum of separable terms (a linear model of
coregionalisation, paper 000, eq. (1) with several terms), Γ = Σ_j s_j k_j B_j, with Matérn
kernels ``k_j`` (optionally scaled by ``s_j``, a ``ScaleKernel``), task matrices ``B_j`` that are
learned (``B = F Fᵀ + diag(v)``, an :class:`~botorch_mtucb.kernels.ICMKernel`), fixed, or a single
task's unit matrix ``e_i e_iᵀ`` (an :class:`~botorch_mtucb.kernels.IndependentTasksKernel`), a
constant mean ``c`` per task and a homoscedastic noise η, the negative normalised marginal log
likelihood that BoTorch's ``fit_gpytorch_mll`` minimises is

.. math::
    L(θ) = \frac{1}{Nn}\Big(\tfrac12\big(r^\top Σ^{-1} r + \log\det Σ + Nn\log 2π\big)
    − \sum_{\text{priors}} \log p(θ)\Big),\quad Σ = \sum_j s_j K_j ⊗ B_j + ηI,\;
    r = \mathrm{vec}(Y − 1c^\top)

(interleaved order, index ``point·n + task``). :class:`LMCFitObjective` evaluates ``L`` and
``∇L`` from one Cholesky factor of the dense ``Nn x Nn`` matrix Σ; when every term sits on one
task's unit matrix (independent tasks) Σ is block-diagonal, and it factorises the ``n``
blocks ``Σ_i = Σ_{j on i} s_j K_j + ηI`` (``N x N``) instead, O(nN³) rather than O((Nn)³).
With ``α = Σ⁻¹r`` and ``W = Σ⁻¹ − ααᵀ`` (``2Nn ∂L/∂Σ``) viewed as ``N x n x N x n``,

.. math::
    2Nn\,∂_{K_j} = s_j \sum_{ik} W_{·i·k} (B_j)_{ik},\qquad
    2Nn\,∂_{B_j} = s_j \sum_{pq} W_{p·q·} (K_j)_{pq},\qquad
    2Nn\,∂_{s_j} = \sum_{pq,ik} W_{piqk} (K_j)_{pq} (B_j)_{ik},

``2Nn ∂_η = tr W`` and ``2Nn ∂_c = −2·1ᵀA`` (``A = α`` as ``N x n``); ``B = FFᵀ + diag(v)``
gives ``∂_F = 2 ∂_B F`` and ``∂_v = diag ∂_B``; the lengthscales enter through the Matérn
``r²`` as in :mod:`~botorch_mtucb.multitask.fit_closure`; priors and the softplus constraints
contribute their closed-form derivatives. No autograd graph and no module traversal per
evaluation.

With ``profile_mean`` the constants are profiled out as for the ICM: ``L`` is quadratic in
``c`` (no prior), so for the other hyperparameters its minimiser is the generalised
least-squares estimate ``c* = (Eᵀ Σ⁻¹ E)⁻¹ Eᵀ Σ⁻¹ vec(Y)`` with ``E = 1 ⊗ I_n`` (``Nn x n``),
and the gradient of the profile is the partial gradient at ``c*``.

:func:`~botorch_mtucb.multitask.fit_closure.fit_icm_lbfgsb` drives scipy's L-BFGS-B with it,
as for the ICM objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gpytorch.kernels import Kernel, MaternKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_mtucb.kernels.icm import ICMKernel
from botorch_mtucb.kernels.independent import IndependentTasksKernel, SumOfSeparableKernel
from botorch_mtucb.multitask.fit_closure import (
    _LOG_2PI,
    FlatFitObjective,
    _cholesky_inverse,
    _constant_mean_ok,
    _matern,
    _np,
    _plain_exact_mll,
    _plain_matern,
    _Positive,
    _positive,
    _Prior,
    _prior,
    _transformed_train_inputs,
)

__all__ = [
    "LMC_CLOSED_FORM_MAX_SIZE",
    "LMC_NUMPY_MAX_SIZE",
    "LMCFitObjective",
    "lmc_fit_objective",
]

#: :func:`lmc_fit_objective` covers models with ``N·n`` at most this (``N`` training points,
#: ``n`` tasks): an evaluation factorises the dense ``Nn x Nn`` covariance and keeps a few
#: matrices of that size, as the autograd closure does; larger models are left to it.
LMC_CLOSED_FORM_MAX_SIZE = 4000

#: :class:`LMCFitObjective` does the ``Nn x Nn`` work in NumPy (float64, on the host) when the
#: training data live on the CPU and ``N·n`` is at most this, where an evaluation's cost is
#: mostly per-operation overhead (smaller in NumPy); above it, and on any other device, in
#: torch.
LMC_NUMPY_MAX_SIZE = 300


@dataclass(frozen=True)
class _Term:
    """One separable term ``s K ⊗ B``: indices of its Matérn and scale (``None``: 1) among the
    objective's distinct modules; ``task`` is ``("learned", j)`` (the ``j``-th learned B),
    ``("fixed", B)`` (a numpy ``n x n`` matrix) or ``("unit", i)`` (``e_i e_iᵀ``)."""

    matern: int
    scale: int | None
    task: tuple[str, Any]


def _scaled_matern(kernel: Kernel, d: int) -> tuple[MaternKernel, ScaleKernel | None] | None:
    """``(Matérn, ScaleKernel or None)`` of a Matérn-3/2/-5/2 kernel (ARD or not, no active
    dims, unbatched), optionally wrapped in one ``ScaleKernel``; ``None`` for any other."""
    scale = None
    if type(kernel) is ScaleKernel:
        scale, kernel = kernel, kernel.base_kernel
        if (
            scale.active_dims is not None
            or scale.batch_shape != torch.Size()
            or scale.raw_outputscale.shape != torch.Size()
        ):
            return None
    return (kernel, scale) if _plain_matern(kernel, d) else None


def _identity(xp: Any, size: int, like: Any) -> Any:
    """The ``size x size`` identity in ``like``'s namespace, dtype and device."""
    if xp is torch:
        return torch.eye(size, dtype=like.dtype, device=like.device)
    return np.eye(size, dtype=like.dtype)


def _parts(kernel: Kernel) -> list[Kernel]:
    """The members of a (nested) :class:`SumOfSeparableKernel`, or the kernel itself."""
    if type(kernel) is SumOfSeparableKernel:
        return [p for k in kernel.kernels for p in _parts(k)]
    return [kernel]


class _Modules:
    """Distinct Matérn, scale and learned-B modules of a kernel, with its terms."""

    def __init__(self) -> None:
        self.materns: list[MaternKernel] = []
        self.scales: list[ScaleKernel] = []
        self.learned: list[ICMKernel] = []
        self.terms: list[_Term] = []

    @staticmethod
    def _index(items: list, module: Any) -> int:
        for i, m in enumerate(items):
            if m is module:
                return i
        items.append(module)
        return len(items) - 1

    @property
    def block_diagonal(self) -> bool:
        """Whether every term sits on one task's unit matrix (independent tasks): Σ is then
        block-diagonal, ``n`` blocks of ``N x N``."""
        return all(t.task[0] == "unit" for t in self.terms)

    def add(self, kernel: Kernel, d: int, task: tuple[str, Any]) -> bool:
        found = _scaled_matern(kernel, d)
        if found is None:
            return False
        matern, scale = found
        if task[0] == "learned":
            task = ("learned", self._index(self.learned, task[1]))
        self.terms.append(_Term(
            self._index(self.materns, matern),
            None if scale is None else self._index(self.scales, scale),
            task,
        ))
        return True


def _collect(kernel: Kernel, d: int) -> _Modules | None:
    """The terms of a sum of ICM (learned or fixed B, unbatched) and independent-tasks
    kernels over (scaled) Matérn kernels; ``None`` for any other kernel."""
    found = _Modules()
    for part in _parts(kernel):
        if type(part) is ICMKernel and part.batch_shape == torch.Size():
            if part.fixed_task_covar is not None:
                task: tuple[str, Any] = ("fixed", _np(part.fixed_task_covar))
            elif part.covar_factor.dim() == 2:
                task = ("learned", part)
            else:
                return None
            if not found.add(part.data_covar_module, d, task):
                return None
        elif type(part) is IndependentTasksKernel and part.batch_shape == torch.Size():
            for i, k in enumerate(part.data_covar_modules):
                if not found.add(k, d, ("unit", i)):
                    return None
        else:
            return None
    return found if found.terms else None


class LMCFitObjective(FlatFitObjective):
    r"""``θ ↦ (L(θ), ∇L(θ))`` of a multi-task GP with a sum of separable kernels, on the raw
    parameter vector.

    ``L`` is the negative normalised marginal log likelihood with priors (module docstring),
    equal to ``−ExactMarginalLogLikelihood(model(X), y)`` of the model in train mode; ``θ``
    holds the parameters of ``mll`` that require a gradient, flattened in the order of
    ``botorch.optim.utils.get_parameters_and_bounds`` (the vector ``fit_gpytorch_mll``'s
    L-BFGS-B optimises), without the constants when they are profiled. Build it with
    :func:`lmc_fit_objective`, which checks the model.

    The ``Nn``-sized work runs in NumPy (float64, on the host) for data on the CPU with
    ``N·n`` at most :data:`LMC_NUMPY_MAX_SIZE`, in torch on the data's device otherwise.

    Its attributes (``names``, ``profiled``, ``x0``, ``bounds``, ``num_evaluations``) are those
    of :class:`~botorch_mtucb.multitask.fit_closure.FlatFitObjective`.

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, per_task=True, fit=False)
        >>> objective = lmc_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> value, grad = objective(objective.x0)  # float, numpy array of len(x0)
    """

    def __init__(
        self, mll: ExactMarginalLogLikelihood, modules: _Modules, profile_mean: bool = False
    ) -> None:
        """
        Args:
            mll: The exact marginal likelihood of the model (checked by
                :func:`lmc_fit_objective`; use that function).
            modules: The kernel's terms and distinct modules.
            profile_mean: Profile the per-task constants out (module docstring). Applies when
                the model has a constant mean whose every constant is optimised.
        """
        model = mll.model
        x = _transformed_train_inputs(model)
        N, n = model.train_targets.shape
        self._model, self._N, self._n, self._Nn = model, N, n, N * n
        self._xp: Any = np if x.device.type == "cpu" and N * n <= LMC_NUMPY_MAX_SIZE else torch
        xc = (x - x.mean(-2, keepdim=True)).to(torch.float64)
        Y = model.train_targets.detach().to(torch.float64)
        self._xc, self._Y = (xc.numpy(), Y.numpy()) if self._xp is np else (xc, Y)
        self._zero_mean = bool(model._zero_mean)
        self._terms = modules.terms
        self._block_diagonal = modules.block_diagonal  # n blocks of N x N
        self._nus = [float(k.nu) for k in modules.materns]
        raw: dict[str, Tensor] = {"noise": mll.likelihood.raw_noise}
        maps: dict[str, _Positive | None] = {
            "noise": _positive(mll.likelihood.raw_noise_constraint)
        }
        if not self._zero_mean:
            means = model.mean_module.base_means
            raw.update({f"c{i}": m.raw_constant for i, m in enumerate(means)})
        for j, icm in enumerate(modules.learned):
            raw[f"F{j}"], raw[f"v{j}"] = icm.covar_factor, icm.raw_var
            maps[f"v{j}"] = _positive(icm.raw_var_constraint)
        for m, k in enumerate(modules.materns):
            raw[f"ell{m}"] = k.raw_lengthscale
            maps[f"ell{m}"] = _positive(k.raw_lengthscale_constraint)
        for m, s in enumerate(modules.scales):
            raw[f"s{m}"] = s.raw_outputscale
            maps[f"s{m}"] = _positive(s.raw_outputscale_constraint)
        self._maps = maps
        self._num_learned, self._num_scales = len(modules.learned), len(modules.scales)
        constants = {f"c{i}" for i in range(n)} if not self._zero_mean else set()
        self._layout(mll, raw, constants, profile_mean)
        self._priors = self._read_priors(model, modules)
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    def _read_priors(self, model: Any, modules: _Modules) -> dict[str, _Prior] | None:
        """The lengthscale, outputscale and noise priors in closed form; ``None`` if any prior
        has none or sits on another parameter."""
        owners: list[tuple[Any, str, str]] = [(model.likelihood, "noise", "noise")]
        owners += [(k, "lengthscale", f"ell{m}") for m, k in enumerate(modules.materns)]
        owners += [(s, "outputscale", f"s{m}") for m, s in enumerate(modules.scales)]
        out: dict[str, _Prior] = {}
        for _, module, prior, closure, _ in model.named_priors():
            value = closure(module)
            key = next(
                (key for owner, attr, key in owners
                 if module is owner and torch.equal(value, getattr(owner, attr))),
                None,
            )
            spec = None if key is None else _prior(prior, value.detach())
            if spec is None or key in out:
                return None
            out[key] = spec
        return out

    def _values(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The constrained values of every raw parameter (host arrays)."""
        return {
            key: (self._maps[key].value(r) if self._maps.get(key) is not None else r)
            for key, r in raw.items()
        }

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(L, ∇L)`` at the float64 numpy vector ``x`` (scipy's ``jac=True`` convention)."""
        self.num_evaluations += 1
        half, Nn = 0.5 / self._Nn, self._Nn
        raw = self._raw(np.asarray(x, dtype=np.float64))
        vals = self._values(raw)
        if self._xp is np:
            with np.errstate(all="ignore"):
                head, grads, cstar = self._evaluate(vals)
        else:
            dev = {k: torch.from_numpy(np.ascontiguousarray(v)).to(self._xc)
                   for k, v in vals.items()}
            head, grads, cstar = self._evaluate(dev)
            head = head.cpu().numpy()
            grads = {k: g.cpu().numpy() for k, g in grads.items()}
            cstar = cstar.cpu().numpy()
        self._last = (np.array(x, dtype=np.float64), cstar)
        value = half * (head[0] + head[1] + Nn * _LOG_2PI)
        grads = {k: half * np.asarray(g).reshape(self._shapes[k]) for k, g in grads.items()}
        for key, prior in self._priors.items():
            nlp, dnlp = prior.neg_log_prob(vals[key])
            value += nlp / Nn
            grads[key] = grads[key] + dnlp.reshape(grads[key].shape) / Nn
        grad = np.zeros_like(self._full0)
        for key, g in grads.items():
            m = self._maps.get(key)
            grad[self._slices[key]] = (m.chain(g, raw[key]) if m is not None else g).reshape(-1)
        return float(value), grad[self._pos]

    def _materns(self, xp: Any, v: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
        """Each Matérn's ``(K, S = −∂k/∂r², z)`` at the training inputs."""
        mats = []
        for m, nu in enumerate(self._nus):
            z = self._xc / v[f"ell{m}"]
            K, S = _matern(xp, z, z * z, nu)
            mats.append((K, S, z))
        return mats

    def _covariance(self, xp: Any, v: dict[str, Any]) -> tuple[Any, list[tuple[Any, Any, Any]]]:
        """Σ (``Nn x Nn``, interleaved) and each Matérn's ``(K, S = −∂k/∂r², z)``."""
        N, n = self._N, self._n
        mats = self._materns(xp, v)
        Sig = xp.reshape(v["noise"], ()) * _identity(xp, N * n, self._xc)
        Sig4 = Sig.reshape(N, n, N, n)
        for t in self._terms:
            K = mats[t.matern][0]
            if t.scale is not None:
                K = v[f"s{t.scale}"] * K
            kind, which = t.task
            if kind == "unit":
                Sig4[:, which, :, which] += K
            else:
                Sig4 += K[:, None, :, None] * self._task_matrix(xp, v, kind, which)[None, :, None]
        return Sig, mats

    def _task_matrix(self, xp: Any, v: dict[str, Any], kind: str, which: Any) -> Any:
        if kind == "learned":
            F = v[f"F{which}"]
            return F @ F.T + xp.diag(v[f"v{which}"])
        return which if xp is np else torch.as_tensor(which).to(self._xc)

    def _evaluate(self, v: dict[str, Any]) -> tuple[Any, dict[str, Any], Any]:
        """``[rᵀΣ⁻¹r, log det Σ]``, the gradients (× 2Nn) with respect to the constrained
        values, and the profiled constants (or the model's), in the namespace :attr:`_xp`."""
        xp = self._xp
        if self._block_diagonal:
            head, c, alpha_sums, trace_W, (W4, Wb), mats = self._solve_blocks(xp, v)
        else:
            head, c, alpha_sums, trace_W, (W4, Wb), mats = self._solve_dense(xp, v)
        grads: dict[str, Any] = {"noise": xp.reshape(trace_W, (1,))}
        if not self._zero_mean and not self.profiled:
            g_c = -2.0 * alpha_sums
            grads.update({f"c{i}": g_c[i] for i in range(self._n)})
        self._kernel_grads(xp, v, mats, W4, Wb, grads)
        return head, grads, c

    def _mean_constants(self, xp: Any, v: dict[str, Any], A: Any, b: Any) -> Any:
        """The constants: zero, profiled (``A c = b``; ``A`` a matrix, or a vector for a
        diagonal system) or the model's."""
        if self._zero_mean:
            return self._Y[0] * 0.0
        if self.profiled:
            return xp.linalg.solve(A, b) if A.ndim == 2 else b / A
        return xp.stack([xp.reshape(v[f"c{i}"], ()) for i in range(self._n)])

    def _solve_dense(self, xp: Any, v: dict[str, Any]) -> tuple[Any, ...]:
        """Head, constants, ``1ᵀA`` per task, ``tr W`` and ``W`` (``N x n x N x n``) from one
        Cholesky factor of the dense Σ."""
        N, n = self._N, self._n
        Sig, mats = self._covariance(xp, v)
        L = xp.linalg.cholesky(Sig)
        Sinv = _cholesky_inverse(xp, L[None])[0]
        Y = self._Y
        A = b = None
        if self.profiled and not self._zero_mean:
            A = Sinv.reshape(N, n, N, n).sum(2).sum(0)
            b = (Sinv @ Y.reshape(-1)).reshape(N, n).sum(0)
        c = self._mean_constants(xp, v, A, b)
        r = (Y - c).reshape(-1)
        alpha = Sinv @ r
        head = xp.stack([r @ alpha, 2.0 * xp.log(xp.diagonal(L)).sum()])
        W = Sinv - alpha[:, None] * alpha[None, :]
        return head, c, alpha.reshape(N, n).sum(0), xp.trace(W), (W.reshape(N, n, N, n), None), mats

    def _solve_blocks(self, xp: Any, v: dict[str, Any]) -> tuple[Any, ...]:
        """As :meth:`_solve_dense` for a block-diagonal Σ (independent tasks: every term on one
        task's unit matrix), from ``n`` Choleskys of ``N x N`` blocks; ``W`` as ``n`` blocks."""
        N, n = self._N, self._n
        mats = self._materns(xp, v)
        eye = xp.reshape(v["noise"], ()) * _identity(xp, N, self._xc)
        Sig = xp.stack([eye for _ in range(n)])
        for t in self._terms:
            K = mats[t.matern][0]
            Sig[t.task[1]] += K if t.scale is None else v[f"s{t.scale}"] * K
        L = xp.linalg.cholesky(Sig)
        Sinv = _cholesky_inverse(xp, L)
        Yb = self._Y.T
        A = b = None
        if self.profiled and not self._zero_mean:
            A, b = Sinv.sum((-2, -1)), (Sinv @ Yb[..., None]).sum((-2, -1))
        c = self._mean_constants(xp, v, A, b)
        R = Yb - c[:, None]
        alpha = (Sinv @ R[..., None])[..., 0]
        logdet = 2.0 * xp.log(xp.einsum("...ii->...i", L)).sum()
        head = xp.stack([(R * alpha).sum(), logdet])
        W = Sinv - alpha[:, :, None] * alpha[:, None, :]
        return head, c, alpha.sum(-1), xp.einsum("...ii->...", W).sum(), (None, W), mats

    def _kernel_grads(
        self, xp: Any, v: dict[str, Any], mats: list, W4: Any, Wb: Any, grads: dict[str, Any]
    ) -> None:
        """Add the gradients of the task matrices, scales and lengthscales to ``grads``
        (``W`` as ``N x n x N x n``, or as ``n`` diagonal blocks ``Wb``)."""
        gK = [xp.zeros_like(K) for K, _, _ in mats]
        g_B = [0.0] * self._num_learned
        g_s = [0.0] * self._num_scales
        for t in self._terms:
            K = mats[t.matern][0]
            kind, which = t.task
            if kind == "unit":
                G = Wb[which] if Wb is not None else W4[:, which, :, which]
            else:
                B = self._task_matrix(xp, v, kind, which)
                G = xp.einsum("piqk,ik->pq", W4, B)
            s = 1.0
            if t.scale is not None:
                s = v[f"s{t.scale}"]
                g_s[t.scale] = g_s[t.scale] + (G * K).sum()
            gK[t.matern] = gK[t.matern] + s * G
            if kind == "learned":
                g_B[which] = g_B[which] + s * xp.einsum("piqk,pq->ik", W4, K)
        for j in range(self._num_learned):
            grads[f"F{j}"] = 2.0 * g_B[j] @ v[f"F{j}"]
            grads[f"v{j}"] = xp.diagonal(g_B[j])
        for m in range(self._num_scales):
            grads[f"s{m}"] = g_s[m]
        for m, (_, S, z) in enumerate(mats):
            M = gK[m] * S
            term = (z * z).T @ M.sum(-1) - (z * (M @ z)).sum(0)
            g = (4.0 / v[f"ell{m}"].reshape(-1)) * term
            grads[f"ell{m}"] = g.sum() if v[f"ell{m}"].shape[-1] == 1 else g

    def write(self, x: np.ndarray) -> None:
        """Write the flat vector ``x`` into the model's parameters (in place, no gradient);
        with :attr:`profiled`, the constants are set to ``c*`` at ``x``."""
        self._write_params(x)
        if self.profiled:
            if self._last is None or not np.array_equal(self._last[0], x):
                self(x)
            with torch.no_grad():
                for p, value in zip(self._mean_params, self._last[1], strict=True):
                    p.fill_(float(value))
        self._last = None


def lmc_fit_objective(
    mll: ExactMarginalLogLikelihood, profile_mean: bool = False
) -> LMCFitObjective | None:
    """:class:`LMCFitObjective` of ``mll``, or ``None`` when it does not cover the model.

    Covered: ``ExactMarginalLogLikelihood`` of an unbatched multi-task GP with ``N·n`` (``N``
    for independent tasks, whose Σ is block-diagonal) at most
    :data:`LMC_CLOSED_FORM_MAX_SIZE` and a kernel that is an
    :class:`~botorch_mtucb.kernels.ICMKernel` (learned or fixed B), an
    :class:`~botorch_mtucb.kernels.IndependentTasksKernel` or a
    :class:`~botorch_mtucb.kernels.SumOfSeparableKernel` of these, each over a Matérn-3/2 or
    -5/2 (ARD or not, no active dims), optionally in a ``ScaleKernel``; a zero or per-task
    constant mean, a homoscedastic learned noise (``MultitaskGaussianLikelihood``, global noise),
    softplus or unenforced ``GreaterThan`` constraints, LogNormal or Gamma priors on the
    lengthscales, output scales and the noise only, no trainable input transform, no added loss
    terms. The practical model with ``per_task=True`` or ``independent=True``
    (:func:`~botorch_mtucb.multitask.practical.practical_multitask_gp`) is covered.

    Args:
        mll: The marginal likelihood to be fitted.
        profile_mean: Profile the constant mean out (module docstring).

    Example:
        >>> from botorch_mtucb.multitask.practical import practical_multitask_gp
        >>> model = practical_multitask_gp(train_X, train_Y, per_task=True, fit=False)
        >>> objective = lmc_fit_objective(ExactMarginalLogLikelihood(model.likelihood, model))
    """
    if not _plain_exact_mll(mll):
        return None
    model = mll.model
    N, n = model.train_targets.shape
    d = model.train_inputs[0].shape[-1]
    if not _constant_mean_ok(model):
        return None
    modules = _collect(model.covar_module, d)
    if modules is None:
        return None
    if (N if modules.block_diagonal else N * n) > LMC_CLOSED_FORM_MAX_SIZE:
        return None
    objective = LMCFitObjective(mll, modules, profile_mean=profile_mean)
    return objective if objective.supported else None
