"""Thin Ax-facing subclasses of the package's models (how Ax builds and fits them).

Ax's ``Surrogate`` builds a model as ``cls(**cls.construct_inputs(dataset, **model_options,
**search_space_kwargs), **submodules)`` and then fits it through the ``fit_botorch_model``
dispatcher. The package's models need three adjustments for that, made here without touching
the model files:

* ``construct_inputs`` accepts the model options of ``ModelConfig.model_options`` (BoTorch's
  base ``Model.construct_inputs`` takes none) and refuses search-space features the models
  cannot represent (categorical, fidelity and hierarchical parameters).
* ``train_Yvar``: Ax passes per-observation noise variances (SEM², in Ax's transformed
  outcome units) when the user reports SEMs. The multi-task models take them as known noise
  (``ExactMultiTaskGP(..., train_Yvar=...)``: the noise is then not learned) when *every*
  observation of every metric has a finite variance; variances below GPyTorch's
  ``min_fixed_noise`` (an SEM of 0, "noiseless") are raised to it with a warning, as
  GPyTorch does for BoTorch's own models. Otherwise (some SEMs missing, Ax's NaN, or
  ``noise`` / ``learn_noise=True`` in the model options) they are dropped with a
  ``UserWarning`` and the noise is learned or fixed as without them. The heavy-tailed
  models assume nothing but ``E|y|^{1+α} ≤ v`` (paper 001), so a variance is meaningless to
  them: always dropped with the warning.
* The heavy-tailed models fit whatever they fit at construction (the data-driven mode fits its
  kernel and ``λ`` the BoTorch way on the truncated rewards; the declared mode keeps paper
  001's fixed kernel), so they get a no-op entry in Ax's ``fit_botorch_model`` dispatcher
  instead of Ax's ``NotImplementedError``. ``AxExactMultiTaskGP`` is an exact GPyTorch model
  and is fitted by Ax's default route (``fit_gpytorch_mll`` on the exact marginal likelihood).

``AxExactMultiTaskGP`` keeps the ``BatchedMultiOutputGPyTorchModel`` base of
:class:`~botorch_mtucb.models.ExactMultiTaskGP`, so Ax's ``use_model_list`` keeps all objectives
in this one joint model instead of splitting them into a ``ModelListGP``.
"""

from __future__ import annotations

import warnings
from typing import Any

import gpytorch
import torch
from ax.generators.torch.botorch_modular.utils import fit_botorch_model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.utils.datasets import SupervisedDataset
from gpytorch.means import Mean
from gpytorch.mlls import MarginalLogLikelihood
from torch import Tensor

from botorch_mtucb.heavy_tailed.adaptive import AdaptiveTruncationGP
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.kernels.base import MultiTaskKernel
from botorch_mtucb.multitask.exact import ExactMultiTaskGP
from botorch_mtucb.multitask.practical import (
    PRACTICAL_NOISE_INIT,
    add_practical_noise_prior,
    practical_modules,
)

__all__ = [
    "AxAdaptiveTruncationGP",
    "AxExactMultiTaskGP",
    "AxPracticalMultiTaskGP",
    "AxTruncatedGP",
]

#: Keyword arguments Ax derives from the search space (``_extract_model_kwargs``).
_SEARCH_SPACE_KWARGS = (
    "categorical_features",
    "fidelity_features",
    "task_feature",
    "hierarchical_dependencies",
)


def _ax_model_inputs(
    model_name: str,
    training_data: SupervisedDataset,
    options: dict[str, Any],
    yvar_reason: str | None,
) -> dict[str, Any]:
    """``train_X``, ``train_Y`` and the model options, with Ax's extra inputs handled.

    ``yvar_reason=None``: the model takes known noise, passed as ``train_Yvar`` when every
    variance is finite (else dropped with a warning); a string: always dropped, with it.
    """
    if not isinstance(training_data, SupervisedDataset):
        raise ValueError(
            f"`training_data` must be a SupervisedDataset, got {type(training_data).__name__}."
        )
    unsupported = [k for k in _SEARCH_SPACE_KWARGS if options.get(k)]
    if unsupported:
        raise ValueError(
            f"{model_name} supports continuous (range) parameters only; Ax passed "
            f"{unsupported} for this search space. Remove categorical / fidelity / hierarchical "
            "parameters or use Ax's default generation strategy."
        )
    model_options = {k: v for k, v in options.items() if k not in _SEARCH_SPACE_KWARGS}
    inputs = {"train_X": training_data.X, "train_Y": training_data.Y, **model_options}
    Yvar = training_data.Yvar
    if Yvar is None:
        return inputs
    if yvar_reason is None:
        if model_options.get("learn_noise") is True or "noise" in model_options:
            yvar_reason = (
                "the model options set the noise themselves (`noise` or `learn_noise=True`), "
                "and explicit options win."
            )
        elif not bool(torch.isfinite(Yvar).all()):
            yvar_reason = (
                "not every observation of every metric has one (Ax reports NaN where no SEM was "
                "given); the noise is learned or fixed as without them. Report an SEM for "
                "every metric of every trial to use them."
            )
        else:
            inputs["train_Yvar"] = _floored_yvar(model_name, Yvar)
            return inputs
    warnings.warn(
        f"{model_name} ignores the observation noise variances (SEMs) reported to Ax: "
        f"{yvar_reason}",
        UserWarning,
        stacklevel=3,
    )
    return inputs


def _floored_yvar(model_name: str, Yvar: Tensor) -> Tensor:
    """``Yvar`` raised to GPyTorch's ``min_fixed_noise`` (a new tensor; warns when it acts)."""
    floor = gpytorch.settings.min_fixed_noise.value(Yvar.dtype)
    if bool((Yvar < floor).any()):
        warnings.warn(
            f"{model_name}: noise variances reported to Ax below {floor:g} (e.g. an SEM of 0) "
            f"are raised to {floor:g}, as GPyTorch does for fixed noise.",
            UserWarning,
            stacklevel=4,
        )
    return Yvar.clamp_min(floor)


class AxExactMultiTaskGP(ExactMultiTaskGP):
    """:class:`ExactMultiTaskGP` as Ax builds it (``ModelConfig.botorch_model_class``).

    Same model; :meth:`construct_inputs` handles Ax's inputs (model options, reported noise
    variances as ``train_Yvar``, clear errors for unsupported parameter types), and
    :meth:`condition_on_observations` of a known-noise model defaults the new rows' noise to
    each task's average training variance (what the model's batched conditioning uses), so
    Ax's pending points (GP-BUCB hallucination) work with reported SEMs.
    """

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> ExactMultiTaskGP:
        """:meth:`ExactMultiTaskGP.condition_on_observations`; with known noise and
        ``noise=None`` the new ``m x n`` rows get each task's average training variance."""
        if noise is None and self.known_noise:
            noise = self._observation_noise(Y, True)
        return super().condition_on_observations(X, Y, noise=noise, **kwargs)

    @classmethod
    def construct_inputs(
        cls, training_data: SupervisedDataset, **kwargs: Any
    ) -> dict[str, Any]:
        """Model inputs from an Ax/BoTorch dataset.

        Args:
            training_data: ``SupervisedDataset`` with ``X: N x d``, ``Y: N x n`` (Ax's
                block design: all ``n`` objectives observed at every row) and optionally
                ``Yvar: N x n`` (reported SEM², passed as ``train_Yvar`` when all finite).
            **kwargs: Options of :class:`ExactMultiTaskGP` (``noise``, ``learn_noise``,
                ``covar_module``, ``mean_module``) plus the search-space keywords Ax adds.
                ``noise`` or ``learn_noise=True`` drops reported variances (with a warning).

        Returns:
            Keyword arguments for the constructor.
        """
        return _ax_model_inputs(cls.__name__, training_data, kwargs, None)


class AxPracticalMultiTaskGP(AxExactMultiTaskGP):
    """:func:`~botorch_mtucb.models.practical_multitask_gp`'s model as Ax builds and fits it.

    Unless given in the model options: ICM over Matérn-5/2 with BoTorch's dimension-scaled
    lengthscale prior and a learned full-rank B (``independent=True``: B = I), a constant mean
    per task, η learned from e^{−5} with BoTorch's LogNormal(−4, 1) prior and the floor
    :data:`~botorch_mtucb.multitask.practical.PRACTICAL_NOISE_FLOOR` (known noise instead when
    every metric reports SEMs, see :meth:`AxExactMultiTaskGP.construct_inputs`). Ax supplies
    the rest of
    the careful user's setup: inputs normalised to the search space (Ax's ``Normalize``
    input transform), outcomes standardised (Ax's ``StandardizeY``), hyperparameters fitted
    by ``fit_gpytorch_mll`` at every trial. The paper's estimator (η = 0.1 fixed, zero mean)
    is :class:`AxExactMultiTaskGP` (``mtucb_generation_strategy(model="paper")``).
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        covar_module: MultiTaskKernel | None = None,
        noise: float | Tensor = PRACTICAL_NOISE_INIT,
        learn_noise: bool | None = None,
        input_transform: InputTransform | None = None,
        outcome_transform: OutcomeTransform | None = None,
        mean_module: Mean | None = None,
        train_Yvar: Tensor | None = None,
        independent: bool = False,
    ) -> None:
        """
        Args:
            train_X: ``N x d`` training inputs.
            train_Y: ``N x n`` training observations.
            covar_module: Multi-task kernel (default: the practical ICM / independent one).
            noise: Initial (or fixed, with ``learn_noise=False``) η.
            learn_noise: Learn η with the LogNormal(−4, 1) prior. Default ``None``: learned
                unless the noise is known (``train_Yvar``).
            input_transform: BoTorch input transform (Ax passes ``Normalize``).
            outcome_transform: BoTorch outcome transform.
            mean_module: Prior mean (default: a constant per task).
            train_Yvar: Known ``N x n`` noise variances (Ax's reported SEM², see
                :meth:`construct_inputs`); then η is not learned.
            independent: Independent tasks (B = I) for the default kernel.
        """
        kernel, mean = practical_modules(train_X.shape[-1], train_Y.shape[-1], independent)
        if learn_noise is None:
            learn_noise = train_Yvar is None
        super().__init__(
            train_X,
            train_Y,
            covar_module=kernel if covar_module is None else covar_module,
            noise=noise,
            learn_noise=learn_noise,
            input_transform=input_transform,
            outcome_transform=outcome_transform,
            mean_module=mean if mean_module is None else mean_module,
            train_Yvar=train_Yvar,
        )
        if learn_noise and train_Yvar is None:
            add_practical_noise_prior(self)
        self.to(train_X)


_HEAVY_TAILED_YVAR = (
    "heavy-tailed BO assumes only a bound v on E|y|^{1+α} (paper 001); the noise variance "
    "need not exist."
)


class AxTruncatedGP(TruncatedGP):
    """:class:`TruncatedGP` (TGP-UCB) as Ax builds it: model options, no separate fit step.

    The rows of ``train_X``/``train_Y`` are read as rounds ``1, …, t`` in the order Ax lists
    the observations (trial-index order, whatever the order of completion), which sets each
    reward's own truncation level ``b_s``.
    """

    @classmethod
    def construct_inputs(
        cls, training_data: SupervisedDataset, **kwargs: Any
    ) -> dict[str, Any]:
        """Model inputs from an Ax/BoTorch dataset.

        Args:
            training_data: ``SupervisedDataset`` with ``X: t x d`` and ``Y: t x 1``.
            **kwargs: Options of :class:`TruncatedGP` (``alpha`` and ``v`` for the declared
                mode, neither (or ``alpha`` alone) for the data-driven mode; ``lam``,
                ``delta``, ``B``, ``covar_module``, ``constants``, ``truncate``).

        Returns:
            Keyword arguments for the constructor.
        """
        return _ax_model_inputs(cls.__name__, training_data, kwargs, _HEAVY_TAILED_YVAR)


class AxAdaptiveTruncationGP(AdaptiveTruncationGP):
    """:class:`AdaptiveTruncationGP` (ATA-GP-UCB) as Ax builds it.

    With a declared ``v``, ``features`` (a
    :class:`~botorch_mtucb.features.QuadratureFourierFeatures` or
    :class:`~botorch_mtucb.features.NystromFeatures`) must be given in the model options; the
    data-driven mode (no ``v``) builds Nyström features on a fitted kernel.
    """

    @classmethod
    def construct_inputs(
        cls, training_data: SupervisedDataset, **kwargs: Any
    ) -> dict[str, Any]:
        """Model inputs from an Ax/BoTorch dataset (see :class:`AdaptiveTruncationGP`)."""
        return _ax_model_inputs(cls.__name__, training_data, kwargs, _HEAVY_TAILED_YVAR)


@fit_botorch_model.register((AxTruncatedGP, AxAdaptiveTruncationGP))
def _fit_fixed_hyperparameters(
    model: AxTruncatedGP | AxAdaptiveTruncationGP,
    mll_class: type[MarginalLogLikelihood],
    mll_options: dict[str, Any] | None = None,
) -> None:
    """Nothing to fit here: the models fitted (data-driven) or fixed (paper 001) it when built."""
    return None
