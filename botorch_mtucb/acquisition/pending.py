r"""Pending points by hallucination (GP-BUCB, Desautels, Krause & Burdick, JMLR 2014).

Both UCBs of the package choose one point at a time. A batch of ``k`` points is built greedily:
point ``j`` is chosen with the ``j − 1`` earlier ones *pending* (``X_pending``), and the model
is conditioned on them with its own posterior mean as the hallucinated observation,

    y_p = μ_t(x_p)  ⇒  μ_{t,p}(x) = μ_t(x) + Γ_t(x, X_p)(Γ_t(X_p, X_p) + ηI)⁻¹(y_p − μ_t(X_p))
                                   = μ_t(x),

so the mean is unchanged and the width Γ_{t,p}(x, x) ⪯ Γ_t(x, x) shrinks where evaluations are
already under way; the next UCB maximiser moves elsewhere. (For MT-BKB the conditioned model
resamples its dictionary, so its mean is unchanged only up to the Nyström approximation.)
The posterior covariance of a GP does not depend on the observed values, so this is exactly
the width the model will have once the pending results arrive. This is what ``set_X_pending`` of
:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` and
:class:`~botorch_mtucb.acquisition.HeavyTailedUCB` does, so BoTorch's own
``optimize_acqf(q=k, sequential=True)`` and ``optimize_acqf_discrete(q=k)`` return batches.

**Regret of batches (GP-BUCB, Desautels et al. 2014, Theorem 1 / Lemma 3).** The confidence
width of a batch point is computed from hallucinated data, which is narrower than the width
the real data so far justifies. GP-BUCB restores the guarantee by inflating the radius: if
the information the pending points add is bounded, I(f; y_{X_p} | data) ≤ C, then for every x

    σ_t(x) / σ_{t,p}(x) ≤ exp(C)        (the pending observations shrink σ by at most e^C),

so μ_t ± exp(C) β_t σ_{t,p} contains f with the same probability as μ_t ± β_t σ_t, and the
batch algorithm keeps the sequential regret bound up to the factor exp(C) on β (GP-BUCB's
β_t = exp(2C) α_t in their √β convention; the package's β multiplies σ directly, hence
exp(C)). ``pending_beta_inflation`` selects it: ``1.0`` (the default; the common practice,
no inflation), a number ≥ 1 (e.g. exp(C) from a bound C ≥ γ_{k−1} of the batch size), or
``"gp-bucb"``: exp(C_p) with C_p = ½ log det(I + η⁻¹ Γ_t(X_p, X_p)) the information gain of
the actual pending points (the realised value of the conditional mutual information GP-BUCB
bounds by C; needs a model with ``information_gain()``, read on the model and on the
conditioned one).
Multi-task models observe all ``n`` tasks at each pending point, so C_p is joint over tasks.

β itself is evaluated on the real data's model, not the hallucinated one: it measures the
information of real data only. Hallucination leaves every random state as it was (Nyström
models resample their dictionary when conditioned), so a seeded batch run draws the same
dictionaries as if the pending points had not been hallucinated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from numbers import Real
from typing import Literal

import torch
from botorch.models import ModelListGP
from botorch.models.model import Model, ModelList
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.gaussian_likelihood import _GaussianLikelihoodBase
from gpytorch.likelihoods.noise_models import FixedGaussianNoise
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.protocols import (
    InformationGainModel,
    MarginalMomentsModel,
    RandomStateModel,
    TaskPosteriorModel,
)
from botorch_mtucb.utils.validation import check_finite

__all__ = [
    "PendingInflation",
    "check_pending",
    "condition_model",
    "gp_bucb_inflation",
    "hallucinate_mean",
    "has_known_noise",
    "known_noise_of_new_rows",
    "resolve_inflation",
]

#: ``pending_beta_inflation``: a number ≥ 1, or ``"gp-bucb"`` for exp(C_p).
PendingInflation = float | Literal["gp-bucb"]


def check_pending(X_pending: Tensor | None, d: int | None) -> Tensor | None:
    """Validate ``X_pending`` (``m x d``); return ``None`` when there are no pending points.

    Args:
        X_pending: ``m x d`` pending points, or ``None``.
        d: Input dimension they must have (``None``: not checked).

    Returns:
        ``X_pending`` detached, or ``None`` for ``None`` and for ``0 x d``.

    Example:
        >>> check_pending(torch.zeros(0, 2), d=2) is None
        True
        >>> check_pending(torch.rand(3, 2), d=2).shape
        torch.Size([3, 2])
    """
    if X_pending is None:
        return None
    if not torch.is_tensor(X_pending) or not X_pending.is_floating_point():
        raise ValueError(f"`X_pending` must be a floating m x d tensor, got {type(X_pending)}.")
    check_finite(X_pending, "X_pending")
    if X_pending.dim() != 2 or (d is not None and X_pending.shape[-1] != d):
        want = "m x d" if d is None else f"m x {d}"
        raise ValueError(
            f"`X_pending` must have shape {want} (one row per pending point), got "
            f"{tuple(X_pending.shape)}."
        )
    return X_pending.detach() if X_pending.shape[0] > 0 else None


def condition_model(model: Model, X: Tensor, Y: Tensor) -> Model:
    """``model.condition_on_observations(X, Y)`` (``m x d``, ``m x n``), without new batch dims.

    A ``ModelListGP`` is conditioned sub-model by sub-model and rebuilt: BoTorch's own
    ``ModelListGP.condition_on_observations`` adds a fantasy batch dimension.

    Args:
        model: A model with ``condition_on_observations`` (a ``ModelListGP``: its sub-models).
        X: ``m x d`` new inputs.
        Y: ``m x n`` new observations (original outcome scale).

    Returns:
        The conditioned model (``model`` itself is left unchanged).

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(5, 1, dtype=torch.float64)
        >>> model = ModelListGP(SingleTaskGP(X, X.sin()), SingleTaskGP(X, X.cos()))
        >>> _ = model.posterior(X)  # the caches conditioning needs
        >>> x_new = torch.tensor([[0.5]], dtype=torch.float64)
        >>> conditioned = condition_model(model, x_new, torch.tensor([[0.4, 0.9]]).to(X))
        >>> conditioned.models[0].train_inputs[0].shape  # no fantasy batch dimension
        torch.Size([6, 1])
    """
    if isinstance(model, ModelListGP):
        subs, i = [], 0
        for sub in model.models:
            j = i + sub.num_outputs
            subs.append(condition_model(sub, X, Y[..., i:j]))
            i = j
        return ModelListGP(*subs)
    noise = known_noise_of_new_rows(model, Y)
    if noise is None:
        return model.condition_on_observations(X, Y)
    return model.condition_on_observations(X, Y, noise=noise)


def has_known_noise(model: Model) -> bool:
    """Whether ``model`` (or a sub-model of a ``ModelListGP``) was built with known noise
    variances (``train_Yvar``), so that new rows need variances of their own.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(5, 1, dtype=torch.float64)
        >>> has_known_noise(SingleTaskGP(X, X.sin(), train_Yvar=torch.full_like(X, 0.01)))
        True
    """
    if isinstance(model, ModelListGP):
        return any(has_known_noise(sub) for sub in model.models)
    lik = model.likelihood if isinstance(model, ExactGP) else None
    if not isinstance(lik, _GaussianLikelihoodBase):
        return False
    # BoTorch's FixedNoiseGaussianLikelihood and the multi-task models' known-noise likelihood
    return isinstance(lik._modules.get("noise_covar"), FixedGaussianNoise)


def known_noise_of_new_rows(model: Model, Y: Tensor) -> Tensor | None:
    """Noise variances of new rows ``Y`` of a model with known noise (``train_Yvar``):
    each output's average training variance, as BoTorch's ``fantasize`` gives fantasies.

    In the model's outcome-transformed units (BoTorch's convention for ``noise`` in
    ``condition_on_observations``); ``None`` for a model whose noise is learned or shared.

    Args:
        model: A GP (a multi-task GP of this package or a BoTorch ``SingleTaskGP``).
        Y: ``[batch_shape x] m x n`` new observations.

    Returns:
        ``Y``-shaped variances, or ``None``.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(5, 1, dtype=torch.float64)
        >>> model = SingleTaskGP(X, X.sin(), train_Yvar=torch.full_like(X, 0.01))
        >>> known_noise_of_new_rows(model, torch.zeros(2, 1, dtype=torch.float64)).shape
        torch.Size([2, 1])
    """
    if isinstance(model, ModelListGP) or not has_known_noise(model):
        return None
    noise = model.likelihood.noise
    if isinstance(model.likelihood, FixedNoiseGaussianLikelihood):  # [batch x] [n x] N
        mean = noise.mean(-1, keepdim=True)  # [batch x] [n x] 1
        mean = mean.transpose(-1, -2) if model.num_outputs > 1 else mean.unsqueeze(-1)
    else:  # a multi-task likelihood: [batch x] N x n
        mean = noise.mean(-2, keepdim=True)
    return mean.expand(Y.shape).to(Y)


def posterior_mean(model: Model, X: Tensor) -> Tensor:
    """Posterior mean ``m x n`` at ``m x d`` points, in the original outcome scale
    (``batch_shape x m x n`` for a model with a batch shape), without gradients."""
    with torch.no_grad():
        if isinstance(model, TaskPosteriorModel):  # the mean at a point ignores its q-batch
            return model.task_posterior(X)[0].detach()
        if isinstance(model, MarginalMomentsModel):
            return model.mean_and_variance(X.unsqueeze(-2))[0].detach()
        return model.posterior(X).mean.detach()


def hallucinate_mean(model: Model, X_pending: Tensor) -> Model:
    """``model`` conditioned on ``(X_pending, μ(X_pending))``: same mean, smaller variance.

    μ_{t,p}(x) = μ_t(x) and Γ_{t,p}(x, x) ⪯ Γ_t(x, x) (module docstring). Random states that
    conditioning draws from (a resampled Nyström dictionary,
    :class:`~botorch_mtucb.protocols.RandomStateModel`) are restored afterwards.

    Args:
        model: A model with ``condition_on_observations`` (exact GP posterior).
        X_pending: ``m x d`` pending points.

    Returns:
        The conditioned model (``model`` itself is left unchanged).

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> train_X = torch.rand(6, 1, dtype=torch.float64)
        >>> model = SingleTaskGP(train_X, train_X.sin())
        >>> x = torch.tensor([[0.5]], dtype=torch.float64)
        >>> hallucinated = hallucinate_mean(model, x)
        >>> post, post_p = model.posterior(x), hallucinated.posterior(x)
        >>> torch.allclose(post_p.mean, post.mean), bool(post_p.variance < post.variance)
        (True, True)
    """
    Y = posterior_mean(model, X_pending)  # m x n, original scale
    try:
        with _rng_untouched(model, X_pending.device):
            return condition_model(model, X_pending, Y)
    except NotImplementedError as err:
        raise ValueError(
            f"{type(model).__name__} cannot be conditioned on pending points "
            "(`condition_on_observations` is not implemented), so `X_pending` is unsupported; "
            "choose one point at a time."
        ) from err


def _model_generators(model: Model) -> list[torch.Generator]:
    """The generators a model's conditioning draws from (``RandomStateModel``), each once."""
    if isinstance(model, ModelList):
        gens = [g for sub in model.models for g in _model_generators(sub)]
    elif isinstance(model, RandomStateModel):
        gens = model.random_generators()
    else:
        return []
    return list({id(g): g for g in gens}.values())


@contextmanager
def _rng_untouched(model: Model, device: torch.device) -> Iterator[None]:
    """Restore every random state that conditioning may draw from.

    Hallucinating pending points must not change the run: Nyström models resample their
    dictionary when conditioned, from a generator they share with the caller's model (or from
    torch's global generator), so their states are put back afterwards.
    """
    gens = _model_generators(model)
    states = [g.get_state() for g in gens]
    devices = [device] if device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        for g, state in zip(gens, states, strict=True):
            g.set_state(state)


def gp_bucb_inflation(model: Model, hallucinated: Model) -> Tensor:
    """exp(C_p), C_p = ½ log det(I + η⁻¹ Γ_t(X_p, X_p)): GP-BUCB's factor on β (0-dim).

    C_p is the information gain of the pending points, the difference of the models'
    ``information_gain()`` (clamped at 0; see the module docstring).

    Args:
        model: The model of the real data (an
            :class:`~botorch_mtucb.protocols.InformationGainModel`).
        hallucinated: ``model`` conditioned on the pending points (:func:`hallucinate_mean`).

    Returns:
        exp(C_p) ≥ 1, a 0-dim tensor.

    Example:
        >>> from botorch_mtucb.models import ExactMultiTaskGP
        >>> train_X = torch.rand(6, 1, dtype=torch.float64)
        >>> model = ExactMultiTaskGP(train_X, torch.cat([train_X.sin(), train_X.cos()], -1))
        >>> hallucinated = hallucinate_mean(model, torch.tensor([[0.5]], dtype=torch.float64))
        >>> bool(gp_bucb_inflation(model, hallucinated) > 1.0)
        True
    """
    if not (isinstance(model, InformationGainModel)
            and isinstance(hallucinated, InformationGainModel)):
        raise ValueError(
            "`pending_beta_inflation='gp-bucb'` needs a model with `information_gain()` "
            f"(ExactMultiTaskGP, NystromMultiTaskGP); {type(model).__name__} has none. Pass a "
            "number (e.g. exp(C) for a bound C on the batch's information gain)."
        )
    gain = hallucinated.information_gain() - model.information_gain()
    return gain.detach().clamp_min(0.0).exp()


def resolve_inflation(value: PendingInflation) -> PendingInflation:
    """Validate ``pending_beta_inflation``: a finite number ≥ 1 or ``"gp-bucb"``.

    Returns:
        ``"gp-bucb"``, or the number as a float.

    Example:
        >>> resolve_inflation(2), resolve_inflation("gp-bucb")
        (2.0, 'gp-bucb')
    """
    if value == "gp-bucb":
        return value
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(
            f"`pending_beta_inflation` must be a number >= 1 or 'gp-bucb', got {value!r}."
        )
    if not (1.0 <= float(value) < float("inf")):
        raise ValueError(f"`pending_beta_inflation` must be a finite number >= 1, got {value!r}.")
    return float(value)


class PendingState:
    """The hallucinated model of an acquisition and the pending points it holds.

    Conditioning is incremental: when the new ``X_pending`` extends the one held (what
    BoTorch's sequential optimisation does), only the new rows are hallucinated.

    Attributes:
        base: The model of the real data.
        X: The ``m x d`` pending points held, or ``None``.
        model: ``base`` conditioned on ``X`` (``base`` itself when nothing is pending).
    """

    def __init__(self, base: Model) -> None:
        """
        Args:
            base: The model of the real data.
        """
        self.base = base
        self.X: Tensor | None = None
        self.model = base

    def apply(self, fn: Callable[[Tensor], Tensor]) -> None:
        """Apply a module conversion (``nn.Module._apply``'s ``fn``, e.g. of ``.to(float32)``)
        to the held models, in place, and to the pending points, so that an acquisition
        moved with ``.to`` hallucinates and un-hallucinates on the moved model."""
        for model in (self.base, self.model) if self.model is not self.base else (self.base,):
            model._apply(fn)
            for module in model.modules():  # GPyTorch's test-time caches are not moved
                if isinstance(module, ExactGP):
                    module._clear_cache()
        if self.X is not None:
            self.X = fn(self.X)

    def update(self, X_pending: Tensor | None) -> Model:
        """Condition ``base`` on ``X_pending`` (``m x d`` or ``None``); return the model."""
        if X_pending is None:
            self.X, self.model = None, self.base
            return self.model
        old = self.X
        m0 = 0 if old is None else old.shape[0]
        if old is not None and m0 <= X_pending.shape[0] and torch.equal(
            X_pending[:m0], old.to(X_pending)
        ):
            new_rows = X_pending[m0:]
            start = self.model
        else:
            new_rows, start = X_pending, self.base
        if new_rows.shape[0] > 0:
            self.model = hallucinate_mean(start, new_rows)
        self.X = X_pending.clone()
        return self.model
