r"""Confidence-radius (β) schedules of the scalarized UCBs.

A schedule is a callable evaluated on the *current* model, ``beta = schedule(model)``, returning
a nonnegative 0-dim tensor. :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` calls it
once when it is built, so building the acquisition once per round on the updated model gives
β_{t−1} at round t (paper 000, Algorithm 1).

* :class:`ConstantBeta` — a fixed β.
* :class:`TheoremTwoBeta` — MT-KB's radius (paper 000, Theorem 2):

      β_t = b + (σ/√η) √(2 log(1/δ) + log det(I_{nt} + η⁻¹ G_t)),

  where by Lemma 4 log det(I_{nt} + η⁻¹ G_t) = Σ_{s≤t} log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)),
  twice the information gain of the data the model holds (:func:`log_det_information`).
* :class:`TheoremThreeBeta` — MT-BKB's radius (paper 000, Theorem 3 and App. D.1):

      β̃_t = b (1 + 1/√(1−ε)) + (σ/√η) √(2 log(2/δ) + ρ S̃_t),   ρ = (1+ε)/(1−ε),
      S̃_t = Σ_{s≤t} log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)).

  S̃_t sums the *approximate* variances of each past round's own Nyström model, for which
  Lemma 4's telescoping identity does not hold: it cannot be recomputed from the final model
  and is accumulated by the model round by round
  (:class:`~botorch_mtucb.protocols.NystromRadiusModel`).

Both theory radii read η from the model (its noise variance, the regulariser of its GP view).
An explicit ``eta`` that disagrees with the model's noise is an error: the log-determinants
are those of the theorems only at the model's own η. The formulas themselves are
:func:`~botorch_mtucb.theory.multi_task.theorem2_beta` and
:func:`~botorch_mtucb.theory.multi_task.theorem3_beta`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from numbers import Real

import torch
from botorch.models import ModelListGP
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.model import Model
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.protocols import InformationGainModel, NystromRadiusModel, RegularisedModel
from botorch_mtucb.theory.multi_task import check_delta, theorem2_beta, theorem3_beta

__all__ = [
    "BetaSchedule",
    "ConstantBeta",
    "TheoremThreeBeta",
    "TheoremTwoBeta",
    "as_beta_tensor",
    "check_width",
    "log_det_information",
    "model_noise",
]


def _real(value: object, name: str, role: str = "") -> float:
    """``value`` as a float: a real number (Python, NumPy or a one-element tensor), not a
    string or ``bool``; ``TypeError`` naming ``name`` (and its ``role``) otherwise."""
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    if torch.is_tensor(value) and value.numel() == 1 and value.dtype != torch.bool:
        return float(value)
    raise TypeError(
        f"`{name}`{role} must be a real number, got {type(value).__name__} {value!r}."
    )


def as_beta_tensor(beta: object, name: str = "beta") -> Tensor:
    """A radius given as a number or a tensor, as a detached float64 tensor (a copy).

    Args:
        beta: A real number (Python or NumPy) or a real tensor / array of radii ``β ≥ 0``.
        name: Argument name used in the error messages.

    Returns:
        ``beta`` as a float64 tensor of its own shape.

    Raises:
        TypeError: if ``beta`` is a string, a ``bool`` or anything else that is not a real
            number or tensor.
        ValueError: if an entry is negative, NaN or infinite.

    Example:
        >>> as_beta_tensor(2)
        tensor(2., dtype=torch.float64)
        >>> as_beta_tensor("2")
        Traceback (most recent call last):
        ...
        TypeError: `beta` must be a real number or a real tensor, got str '2'.
    """
    kind = type(beta).__name__
    message = f"`{name}` must be a real number or a real tensor, got {kind} {beta!r}."
    if isinstance(beta, str | bytes | bool) or beta is None:
        raise TypeError(message)
    try:
        kind_t = beta if torch.is_tensor(beta) else torch.as_tensor(beta)
        if kind_t.dtype == torch.bool or kind_t.is_complex():
            raise TypeError(message)
        # numbers and arrays straight to float64 (no float32 round trip)
        beta_t = torch.as_tensor(beta, dtype=torch.float64).detach().clone()
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(message) from err
    if not torch.isfinite(beta_t).all() or (beta_t < 0).any():
        raise ValueError(f"`{name}` must be non-negative and finite, got {beta!r}.")
    return beta_t


def check_width(beta: object, name: str = "beta") -> float | BetaSchedule:
    """A single confidence width: a :class:`BetaSchedule` as it is, else one real number
    ``≥ 0`` (Python, NumPy or a one-element tensor) as a float.

    What an acquisition or factory checks when it is built, so that a bad width fails there
    and not at the first call inside a loop.

    Args:
        beta: The width.
        name: Argument name used in the error messages.

    Returns:
        ``beta`` (a schedule) or ``float(beta)``.

    Raises:
        TypeError: if ``beta`` is not a real number, tensor or :class:`BetaSchedule`.
        ValueError: if it is negative, not finite, or holds more than one number.

    Example:
        >>> check_width(2), check_width(torch.tensor([0.5]))
        (2.0, 0.5)
    """
    if isinstance(beta, BetaSchedule):
        return beta
    beta_t = as_beta_tensor(beta, name)
    if beta_t.numel() != 1:
        raise ValueError(f"`{name}` must be a single finite number >= 0, got {beta!r}.")
    return float(beta_t)


class BetaSchedule(ABC):
    """A confidence radius β evaluated on the current model: ``schedule(model) -> Tensor``.

    The contract: ``schedule(model)`` returns β_t ≥ 0 as a 0-dim tensor for the data ``model``
    holds, without changing the model. A subclass implements :meth:`__call__`.

    Example:
        >>> class Sqrt(BetaSchedule):
        ...     def __call__(self, model):
        ...         return torch.tensor(float(model.train_inputs[0].shape[-2]) ** 0.5)
        >>> from botorch.models import SingleTaskGP
        >>> model = SingleTaskGP(torch.rand(4, 1, dtype=torch.float64),
        ...                      torch.rand(4, 1, dtype=torch.float64))
        >>> Sqrt()(model)
        tensor(2.)
    """

    @abstractmethod
    def __call__(self, model: Model) -> Tensor:
        """Return β for the data ``model`` currently holds.

        Args:
            model: The current (unbatched) model.

        Returns:
            β_t ≥ 0, a 0-dim tensor.
        """


class ConstantBeta(BetaSchedule):
    """β_t = ``value`` for every round, whatever the model.

    Example:
        >>> ConstantBeta(2.0)(None)
        tensor(2., dtype=torch.float64)
    """

    def __init__(self, value: float) -> None:
        """
        Args:
            value: The constant radius β ≥ 0.
        """
        value = _real(value, "value", " (beta)")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"`value` (beta) must be a finite number >= 0, got {value!r}.")
        self.value = value

    def __call__(self, model: Model) -> Tensor:
        """β = ``value`` as a float64 0-dim tensor (``model`` is not read)."""
        return torch.tensor(self.value, dtype=torch.float64)

    def __repr__(self) -> str:
        return f"ConstantBeta({self.value})"


class TheoremTwoBeta(BetaSchedule):
    """MT-KB's radius (paper 000, Theorem 2): β_t = b + (σ/√η) √(2 log(1/δ) + log det(I + G_t/η)).

    With this β, the UCBs of :class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB` hold
    for all x and t with probability ≥ 1 − δ when ‖f‖_Γ ≤ b and the noise is σ-sub-Gaussian,
    and MT-KB's regret bound follows. The log-determinant is the Lemma-4 sum
    Σ_s log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)), read from the model by
    :func:`log_det_information`: ``2 * model.information_gain()`` when the model offers it,
    else computed from the training data and kernels of exact GPyTorch models (a
    ``ModelListGP`` of independent GPs sums over tasks). That identity holds only when the
    model's regulariser is the η used here, so an explicit ``eta`` that disagrees with the
    model's noise is an error.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> train_X = torch.rand(10, 2, dtype=torch.float64)
        >>> model = SingleTaskGP(train_X, train_X.sum(-1, keepdim=True))
        >>> beta = TheoremTwoBeta(b=1.0, sigma=0.1)(model)  # η: the likelihood's noise
        >>> beta.shape, bool(beta > 1.0)
        (torch.Size([]), True)
    """

    def __init__(
        self, b: float, sigma: float, eta: float | None = None, delta: float = 0.1
    ) -> None:
        """
        Args:
            b: Bound on the RKHS norm ‖f‖_Γ (≥ 0).
            sigma: Sub-Gaussian noise parameter σ (≥ 0).
            eta: Regulariser η > 0; ``None`` reads it from the model (its noise variance).
            delta: Confidence level δ ∈ (0, 1).

        Raises:
            TypeError: if an argument is not a real number.
            ValueError: if an argument is out of its range.
        """
        self.b, self.sigma = _check_b_sigma(b, sigma)
        self.eta = _check_eta(eta)
        self.delta = check_delta(_real(delta, "delta"))

    def __call__(self, model: Model) -> Tensor:
        """β_t for the data ``model`` holds (a 0-dim tensor, detached)."""
        eta = resolve_eta(model, self.eta, "TheoremTwoBeta", "the Lemma-4 log-determinant")
        logdet = log_det_information(model)
        return theorem2_beta(self.b, self.sigma, eta, self.delta, logdet).detach()

    def __repr__(self) -> str:
        return (
            f"TheoremTwoBeta(b={self.b}, sigma={self.sigma}, eta={self.eta}, "
            f"delta={self.delta})"
        )


class TheoremThreeBeta(BetaSchedule):
    """MT-BKB's radius (paper 000, Theorem 3): β̃_t = b(1 + 1/√(1−ε)) + (σ/√η)√(2 log(2/δ) + ρ S̃_t).

    ρ = (1+ε)/(1−ε) and S̃_t = Σ_{s≤t} log det(I_n + η⁻¹ Γ̃_{s−1}(x_s, x_s)) (module
    docstring). S̃_t is read from ``model.log_det_variance_sum`` of a
    :class:`~botorch_mtucb.protocols.NystromRadiusModel` (the Nyström model). Any other model
    (e.g. an exact multi-task GP) has Γ̃ = Γ, and the sum is the exact Lemma-4 value
    ``log det(I + G_t/η)`` from :func:`log_det_information`.

    ε and δ default to a Nyström model's own (``model.epsilon``, ``model.delta``), so that the
    dictionary's accuracy and the radius agree; Theorem 3 uses one δ for both (each gets δ/2).

    Example:
        >>> from botorch_mtucb.models import NystromMultiTaskGP
        >>> train_X = torch.rand(20, 1, dtype=torch.float64)
        >>> train_Y = torch.cat([train_X.sin(), train_X.cos()], dim=-1)
        >>> model = NystromMultiTaskGP(train_X, train_Y, epsilon=0.5, delta=0.1, generator=0)
        >>> beta = TheoremThreeBeta(b=1.0, sigma=0.1)(model)  # ε, δ, η from the model
        >>> beta.shape, bool(beta > 1.0 + 2.0**0.5)
        (torch.Size([]), True)
    """

    def __init__(
        self,
        b: float,
        sigma: float,
        epsilon: float | None = None,
        delta: float | None = None,
        eta: float | None = None,
    ) -> None:
        """
        Args:
            b: Bound on the RKHS norm ‖f‖_Γ (≥ 0).
            sigma: Sub-Gaussian noise parameter σ (≥ 0).
            epsilon: Nyström accuracy ε ∈ (0, 1); ``None`` reads ``model.epsilon``.
            delta: Confidence δ ∈ (0, 1); ``None`` reads ``model.delta``.
            eta: Regulariser η > 0; ``None`` reads the model's noise. An explicit value that
                disagrees with the model's noise is an error.

        Raises:
            TypeError: if an argument is not a real number (or ``None`` where allowed).
            ValueError: if an argument is out of its range.
        """
        self.b, self.sigma = _check_b_sigma(b, sigma)
        if epsilon is not None and not 0.0 < _real(epsilon, "epsilon") < 1.0:
            raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon!r}.")
        self.epsilon = None if epsilon is None else float(epsilon)
        self.delta = None if delta is None else check_delta(_real(delta, "delta"))
        self.eta = _check_eta(eta)

    def __call__(self, model: Model) -> Tensor:
        """β̃_t for the data ``model`` holds (a float64 0-dim tensor)."""
        nystrom = isinstance(model, NystromRadiusModel)
        eps, delta = self.epsilon, self.delta
        for name, value in (("epsilon", eps), ("delta", delta)):
            if value is None and not nystrom:
                raise ValueError(
                    f"`{name}` could not be read from a {type(model).__name__} (not a Nyström "
                    "model with `epsilon`, `delta`); pass it to TheoremThreeBeta explicitly."
                )
        if nystrom:
            eps = float(model.epsilon) if eps is None else eps
            delta = float(model.delta) if delta is None else delta
        eta = resolve_eta(model, self.eta, "TheoremThreeBeta", "the log-det sum")
        if nystrom:
            log_det_sum = torch.as_tensor(model.log_det_variance_sum)
        else:
            log_det_sum = log_det_information(model)
        log_det_sum = log_det_sum.detach().to(torch.float64)
        return theorem3_beta(self.b, self.sigma, eta, delta, eps, log_det_sum)

    def __repr__(self) -> str:
        return (
            f"TheoremThreeBeta(b={self.b}, sigma={self.sigma}, epsilon={self.epsilon}, "
            f"delta={self.delta}, eta={self.eta})"
        )


def _check_b_sigma(b: object, sigma: object) -> tuple[float, float]:
    """``b`` and ``σ`` of a theory radius as floats (finite, ≥ 0)."""
    values = []
    for name, val in (("b", b), ("sigma", sigma)):
        value = _real(val, name)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"`{name}` must be a finite number >= 0, got {val!r}.")
        values.append(value)
    return values[0], values[1]


def _check_eta(eta: object) -> float | None:
    """An explicit regulariser ``η`` (finite, > 0) as a float, or ``None``."""
    if eta is None:
        return None
    value = _real(eta, "eta")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"`eta` must be a finite number > 0 (or None), got {eta!r}.")
    return value


def resolve_eta(model: Model, eta: float | None, owner: str, what: str) -> Tensor:
    """The regulariser η of a radius: the model's noise, or ``eta`` checked against it.

    Args:
        model: The model the radius is evaluated on.
        eta: The user's η, or ``None`` to read it from the model.
        owner: Name of the β schedule (for the error messages).
        what: The quantity that must be taken at the model's own η (for the messages).

    Returns:
        η as a float64 scalar tensor.
    """
    noise = model_noise(model)
    if eta is None:
        if noise is None:
            raise ValueError(
                "`eta` could not be read from the model (its noise is not a single scalar); "
                f"pass `eta` to {owner} explicitly."
            )
        return noise.to(torch.float64)
    value = torch.tensor(eta, dtype=torch.float64)
    if noise is not None and not torch.isclose(
        noise.to(torch.float64), value, rtol=1e-6, atol=0.0
    ):
        raise ValueError(
            f"`eta`={eta} differs from the model's noise {float(noise):.6g}; {what} must be "
            "taken at the model's own regulariser."
        )
    return value


def model_noise(model: Model) -> Tensor | None:
    """The model's regulariser η as a 0-dim tensor, or ``None`` when it is not one scalar.

    Reads ``model.noise`` of a :class:`~botorch_mtucb.protocols.RegularisedModel` (the
    package's models), else the homoskedastic Gaussian likelihood noise of a GPyTorch model; a
    ``ModelListGP`` qualifies when all its sub-models share one noise value.

    Args:
        model: A BoTorch model.

    Returns:
        η (0-dim, detached), or ``None``.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> model = SingleTaskGP(torch.rand(5, 1, dtype=torch.float64),
        ...                      torch.rand(5, 1, dtype=torch.float64))
        >>> model.likelihood.noise = 0.1
        >>> model_noise(model)
        tensor(0.1000, dtype=torch.float64)
    """
    if isinstance(model, RegularisedModel) and not isinstance(model, ModelListGP):
        noise = torch.as_tensor(model.noise)
        return noise.detach().reshape(()) if noise.numel() == 1 else None
    if isinstance(model, ModelListGP):
        noises = [model_noise(m) for m in model.models]
        if any(v is None for v in noises):
            return None
        first = noises[0]
        if all(torch.isclose(v, first, rtol=1e-6, atol=0.0) for v in noises):
            return first
        return None
    lik = model.likelihood if isinstance(model, GPyTorchModel | ExactGP) else None
    if isinstance(lik, GaussianLikelihood) and not isinstance(lik, FixedNoiseGaussianLikelihood):
        noise = lik.noise.detach()
        return noise.reshape(()) if noise.numel() == 1 else None
    return None


def log_det_information(model: Model) -> Tensor:
    """log det(I_{nt} + η⁻¹ G_t) = Σ_s log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)) (paper 000, Lemma 4).

    Equal to twice the information gain of the data held by ``model``.

    * :class:`~botorch_mtucb.protocols.InformationGainModel` models
      (``information_gain()`` = ½ log det(I + G_t/η)): ``2 * information_gain()``.
    * ``ModelListGP``: the sum over its sub-models (independent tasks: G_t is block diagonal).
    * Single-output exact GPyTorch models (e.g. ``SingleTaskGP``):
      log det(I_t + N^{-1/2} K_t N^{-1/2}) with K_t the prior kernel matrix on the (transformed)
      training inputs and N the likelihood noise (η I for a homoskedastic likelihood).

    Args:
        model: A fitted model (unbatched).

    Returns:
        0-dim tensor.

    Example:
        >>> from botorch.models import SingleTaskGP
        >>> model = SingleTaskGP(torch.rand(6, 2, dtype=torch.float64),
        ...                      torch.rand(6, 1, dtype=torch.float64))
        >>> bool(log_det_information(model) > 0)
        True
    """
    if isinstance(model, InformationGainModel):
        val = 2.0 * torch.as_tensor(model.information_gain())
    elif isinstance(model, ModelListGP):
        val = sum(log_det_information(m) for m in model.models)
    elif isinstance(model, ExactGP) and _single_output(model):
        val = _exact_gp_log_det(model)
    else:
        raise ValueError(
            f"Cannot compute log det(I + G_t/η) for a {type(model).__name__}: it needs a "
            "model with `information_gain()`, a ModelListGP, or a single-output exact GP."
        )
    if val.dim() != 0:
        raise ValueError(
            "Batched models are not supported by the beta schedules (the information gain "
            f"has shape {tuple(val.shape)})."
        )
    return val


def _single_output(model: ExactGP) -> bool:
    """Whether an exact GPyTorch model has one output (a plain GPyTorch ExactGP has)."""
    return model.num_outputs == 1 if isinstance(model, Model) else True


def _exact_gp_log_det(model: ExactGP) -> Tensor:
    """log det(I + N^{-1/2} K N^{-1/2}) for a single-output exact GPyTorch model."""
    (train_X,) = model.train_inputs
    with torch.no_grad():
        K = model.covar_module(train_X).to_dense()
        t = K.shape[-1]
        lik = model.likelihood
        if isinstance(lik, FixedNoiseGaussianLikelihood):
            noise = lik.noise.expand(*K.shape[:-1])
        elif isinstance(lik, GaussianLikelihood):
            noise = lik.noise.expand(*K.shape[:-1])
        else:
            raise ValueError(
                f"Cannot read the observation noise of a {type(lik).__name__} likelihood."
            )
        s = noise.rsqrt()
        A = s[..., :, None] * K * s[..., None, :] + torch.eye(t, dtype=K.dtype, device=K.device)
        return torch.linalg.cholesky(A).diagonal(dim1=-2, dim2=-1).log().sum(-1) * 2.0
