"""Confidence-width (β) schedules for the scalarized UCBs.

A schedule is a callable evaluated on the *current* model: ``beta = schedule(model)``. The
acquisition (:class:`~botorch_mtucb.acquisition.ScalarizedMultiTaskUCB`) calls it when it is
built, so building the acquisition once per round on the updated model gives β_{t−1} at round t
(paper 000, Algorithm 1).

* :class:`ConstantBeta` — a fixed β (the usual practical choice).
* :class:`TheoremTwoBeta` — the radius of paper 000, Theorem 2:

      β_t = b + (σ/√η) √(2 log(1/δ) + Σ_{s≤t} log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s))),

  where the sum is read from the model through Lemma 4:
  Σ_{s≤t} log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)) = log det(I_{nt} + η⁻¹ G_t) = 2 γ_t,
  with γ_t the information gain of the data the model holds.

Other schedules (e.g. Theorem 3 for the Nyström model) subclass :class:`BetaSchedule`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from botorch.models import ModelListGP
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.model import Model
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from gpytorch.models import ExactGP
from torch import Tensor

from botorch_mtucb.protocols import InformationGainModel, RegularisedModel
from botorch_mtucb.theory.multi_task import theorem2_beta

__all__ = [
    "BetaSchedule",
    "ConstantBeta",
    "TheoremTwoBeta",
    "log_det_information",
    "model_noise",
]


class BetaSchedule(ABC):
    """A confidence radius β evaluated on the current model: ``schedule(model) -> Tensor``."""

    @abstractmethod
    def __call__(self, model: Model) -> Tensor:
        """Return β (a nonnegative 0-dim tensor) for the data ``model`` currently holds."""


class ConstantBeta(BetaSchedule):
    """β_t = ``value`` for every round."""

    def __init__(self, value: float) -> None:
        """
        Args:
            value: The constant radius β ≥ 0.
        """
        value = float(value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"`value` (beta) must be a finite number >= 0, got {value!r}.")
        self.value = value

    def __call__(self, model: Model) -> Tensor:
        return torch.tensor(self.value, dtype=torch.float64)

    def __repr__(self) -> str:
        return f"ConstantBeta({self.value})"


class TheoremTwoBeta(BetaSchedule):
    """Theorem-2 radius of MT-KB (paper 000): β = b + (σ/√η)√(2 log(1/δ) + log det(I + G_t/η)).

    The log-determinant is the Lemma-4 sum Σ_s log det(I_n + η⁻¹ Γ_{s−1}(x_s, x_s)) and is read
    from the model by :func:`log_det_information`: ``2 * model.information_gain()`` when the
    model offers it (ExactMultiTaskGP, Nyström model), else computed from the training data
    and kernels of exact GPyTorch models (a ``ModelListGP`` of independent GPs sums over tasks).
    That identity holds only when the model's regulariser is the η used here, so an explicit
    ``eta`` that disagrees with the model's noise is an error.
    """

    def __init__(
        self, b: float, sigma: float, eta: float | None = None, delta: float = 0.1
    ) -> None:
        """
        Args:
            b: Bound on the RKHS norm ‖f‖_Γ (≥ 0).
            sigma: Sub-Gaussian noise parameter σ (≥ 0).
            eta: Regulariser η > 0; ``None`` reads it from the model (its noise variance).
            delta: Confidence level δ ∈ (0, 1].
        """
        for name, val in (("b", b), ("sigma", sigma)):
            if not math.isfinite(float(val)) or float(val) < 0:
                raise ValueError(f"`{name}` must be a finite number >= 0, got {val!r}.")
        if eta is not None and (not math.isfinite(float(eta)) or float(eta) <= 0):
            raise ValueError(f"`eta` must be a finite number > 0 (or None), got {eta!r}.")
        if not 0.0 < float(delta) <= 1.0:
            raise ValueError(f"`delta` must lie in (0, 1], got {delta!r}.")
        self.b = float(b)
        self.sigma = float(sigma)
        self.eta = None if eta is None else float(eta)
        self.delta = float(delta)

    def __call__(self, model: Model) -> Tensor:
        eta = resolve_eta(model, self.eta, "TheoremTwoBeta", "the Lemma-4 log-determinant")
        logdet = log_det_information(model)
        return theorem2_beta(self.b, self.sigma, eta, self.delta, logdet).detach()

    def __repr__(self) -> str:
        return (
            f"TheoremTwoBeta(b={self.b}, sigma={self.sigma}, eta={self.eta}, "
            f"delta={self.delta})"
        )


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
