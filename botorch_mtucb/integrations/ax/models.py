r"""The package's models as Ax builds and fits them (``ModelConfig.botorch_model_class``).

Ax's ``Surrogate`` builds a model as ``cls(**cls.construct_inputs(dataset, **model_options,
**search_space_kwargs), **submodules)`` and fits it through the ``fit_botorch_model``
dispatcher; it passes a submodule such as ``input_transform`` only when ``__init__`` names it.
The subclasses here adapt the models to that, the models themselves unchanged:

* ``construct_inputs`` takes the model options and refuses search-space features the models
  cannot represent (categorical, fidelity, task and hierarchical parameters).
* Reported noise variances (``Yvar``, SEM² in Ax's transformed outcome units): the multi-task
  models take them as known noise (``train_Yvar``) when every one is finite and no ``noise``
  / ``learn_noise=True`` option is given, raised to GPyTorch's ``min_fixed_noise`` with a
  warning; otherwise they are dropped with a ``UserWarning``. The heavy-tailed models assume
  only E|y|^{1+α} ≤ v (paper 001), and the robust model fits its own noise level to judge
  readings by; both always drop them, with the warning.
* The heavy-tailed models and the robust default fit what they fit when built, so their
  ``fit_botorch_model`` entry is a no-op (registered when this module is imported). The
  multi-task models are exact GPyTorch models, fitted by Ax's default ``fit_gpytorch_mll`` route.

:class:`~botorch_mtucb.integrations.ax.AxExactMultiTaskGP` keeps the
``BatchedMultiOutputGPyTorchModel`` base of :class:`~botorch_mtucb.models.ExactMultiTaskGP`, so
Ax keeps all objectives in one joint model instead of a ``ModelListGP``.
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

from botorch_mtucb.kernels import MultiTaskKernel
from botorch_mtucb.models import AdaptiveTruncationGP, ExactMultiTaskGP, RobustGP, TruncatedGP
from botorch_mtucb.multitask.practical import (
    PRACTICAL_NOISE_INIT,
    add_practical_noise_prior,
    practical_modules,
)

__all__ = [
    "AxAdaptiveTruncationGP",
    "AxExactMultiTaskGP",
    "AxPracticalMultiTaskGP",
    "AxRobustGP",
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
    r""":class:`~botorch_mtucb.models.ExactMultiTaskGP` as Ax builds it.

    The same model (paper 000's estimator: ICM kernel, η = the ``noise`` option, fixed unless
    ``learn_noise=True``, zero mean) on Ax's block design ``X: N x d``, ``Y: N x n``, all n
    objectives observed at every row. :meth:`construct_inputs` maps Ax's dataset and model
    options to the constructor (reported SEM² as ``train_Yvar`` when all finite);
    :meth:`condition_on_observations` of a known-noise model gives new rows each task's
    average training variance, so Ax's pending points (GP-BUCB) work with reported SEMs. Ax
    passes its ``Normalize`` input transform and ``Standardize`` outcome transform.

    Example:
        >>> import torch
        >>> from botorch.utils.datasets import SupervisedDataset
        >>> from botorch_mtucb.integrations.ax import AxExactMultiTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> Y = torch.stack([X.sum(-1), X.prod(-1)], dim=-1)
        >>> data = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["a", "b"])
        >>> model = AxExactMultiTaskGP(**AxExactMultiTaskGP.construct_inputs(data, noise=0.05))
        >>> model.posterior(torch.rand(3, 2, dtype=torch.float64)).mean.shape
        torch.Size([3, 2])
    """

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> ExactMultiTaskGP:
        """``ExactMultiTaskGP.condition_on_observations`` with a default for known noise.

        Args:
            X: ``m x d`` new inputs.
            Y: ``m x n`` new observations.
            noise: ``m x n`` noise variances of the new rows; ``None`` with known noise
                (``train_Yvar``): each task's average training variance.
            **kwargs: Passed on.

        Returns:
            The conditioned model.
        """
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
    r""":func:`~botorch_mtucb.models.practical_multitask_gp`'s model as Ax builds and fits it.

    Unless given in the model options: ICM over Matérn-5/2 with BoTorch's dimension-scaled
    lengthscale prior and a learned full-rank B (``independent=True``: B = I), a constant mean
    per task, η learned from e^{−5} with BoTorch's LogNormal(−4, 1) prior and the floor
    :data:`~botorch_mtucb.multitask.practical.PRACTICAL_NOISE_FLOOR` (known noise instead
    when every metric reports SEMs). Ax supplies the rest: inputs normalised to the search
    box (``input_transform``, named in ``__init__`` so that Ax passes it), outcomes
    standardized, hyperparameters fitted by ``fit_gpytorch_mll`` at every trial. The paper's
    estimator is :class:`~botorch_mtucb.integrations.ax.AxExactMultiTaskGP`.

    Example:
        >>> import torch
        >>> from botorch.models.transforms import Normalize, Standardize
        >>> from botorch.utils.datasets import SupervisedDataset
        >>> from botorch_mtucb.integrations.ax import AxPracticalMultiTaskGP
        >>> X = 10 * torch.rand(8, 2, dtype=torch.float64)
        >>> Y = torch.stack([X.sum(-1), X.prod(-1)], dim=-1)
        >>> data = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["a", "b"])
        >>> model = AxPracticalMultiTaskGP(
        ...     **AxPracticalMultiTaskGP.construct_inputs(data),
        ...     input_transform=Normalize(2, bounds=torch.tensor([[0.0, 0.0], [10.0, 10.0]])),
        ...     outcome_transform=Standardize(m=2))
        >>> model.learn_noise
        True
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
            train_Y: ``N x n`` training observations (all n outputs at every row).
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
    r""":class:`~botorch_mtucb.models.TruncatedGP` (TGP-UCB) as Ax builds it.

    The rows of ``X: t x d`` (in [0, 1]^d: Ax's ``UnitX``) and ``Y: t x 1`` (raw rewards)
    are rounds 1, …, t in the order Ax lists the observations (trial-index order, whatever
    the order of completion), which sets each reward's truncation level b_s. The model fits
    what it fits when built, so Ax's fit step is a no-op.

    Example:
        >>> import torch
        >>> from botorch.utils.datasets import SupervisedDataset
        >>> from botorch_mtucb.integrations.ax import AxTruncatedGP
        >>> X = torch.rand(6, 1, dtype=torch.float64)
        >>> data = SupervisedDataset(X, torch.sin(6 * X), feature_names=["x"], outcome_names=["y"])
        >>> model = AxTruncatedGP(**AxTruncatedGP.construct_inputs(data, alpha=1.0, v=2.0))
        >>> model.posterior(torch.rand(3, 1, dtype=torch.float64)).mean.shape
        torch.Size([3, 1])
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
    r""":class:`~botorch_mtucb.models.AdaptiveTruncationGP` (ATA-GP-UCB) as Ax builds it.

    Rows and inputs as for :class:`~botorch_mtucb.integrations.ax.AxTruncatedGP`. With a
    declared ``v``, ``features`` (a :class:`~botorch_mtucb.features.QuadratureFourierFeatures`
    or :class:`~botorch_mtucb.features.NystromFeatures` on [0, 1]^d) must be given in the
    model options; the data-driven mode (no ``v``) builds Nyström features on a fitted
    kernel.

    Example:
        >>> import torch
        >>> from botorch.utils.datasets import SupervisedDataset
        >>> from botorch_mtucb.integrations.ax import AxAdaptiveTruncationGP
        >>> X = torch.rand(8, 1, dtype=torch.float64)
        >>> data = SupervisedDataset(X, torch.sin(6 * X), feature_names=["x"], outcome_names=["y"])
        >>> model = AxAdaptiveTruncationGP(**AxAdaptiveTruncationGP.construct_inputs(data))
        >>> model.posterior(torch.rand(3, 1, dtype=torch.float64)).mean.shape
        torch.Size([3, 1])
    """

    @classmethod
    def construct_inputs(
        cls, training_data: SupervisedDataset, **kwargs: Any
    ) -> dict[str, Any]:
        """Model inputs from an Ax/BoTorch dataset.

        Args:
            training_data: ``SupervisedDataset`` with ``X: t x d`` and ``Y: t x 1``.
            **kwargs: Options of :class:`~botorch_mtucb.models.AdaptiveTruncationGP`
                (``alpha``, ``v``, ``features``, ``lam``, ``delta``, ``B``, ``horizon``, ...).

        Returns:
            Keyword arguments for the constructor.
        """
        return _ax_model_inputs(cls.__name__, training_data, kwargs, _HEAVY_TAILED_YVAR)


_ROBUST_YVAR = (
    "the robust model judges each reading by its leave-one-out residual under a noise level it "
    "fits itself; reported variances would not be checked against the readings."
)


class AxRobustGP(RobustGP):
    r""":class:`~botorch_mtucb.models.RobustGP` (the robust default) as Ax builds it.

    The rows of ``X: t x d`` and ``Y: t x 1`` (raw rewards, no outcome transform) are Ax's
    observations; readings are screened by their leave-one-out residuals when the model is
    built (:func:`~botorch_mtucb.models.robust_gp`), so Ax's fit step is a no-op. The kernel
    fit maps ``bounds`` to the unit cube; :meth:`construct_inputs` sets it to the unit cube
    [0, 1]^d, where Ax's ``UnitX`` (part of
    :data:`~botorch_mtucb.integrations.ax.HEAVY_TAILED_TRANSFORMS`) puts the inputs. Ax passes
    no ``input_transform`` (``__init__`` names none).

    Example:
        >>> import torch
        >>> from botorch.utils.datasets import SupervisedDataset
        >>> from botorch_mtucb.integrations.ax.models import AxRobustGP
        >>> X = torch.rand(12, 1, dtype=torch.float64)
        >>> Y = torch.sin(6 * X)
        >>> Y[4] = 30.0  # a sensor failure
        >>> data = SupervisedDataset(X, Y, feature_names=["x"], outcome_names=["y"])
        >>> model = AxRobustGP(**AxRobustGP.construct_inputs(data))
        >>> bool(model.suspicious[4]), model.posterior(X[:3]).mean.shape
        (True, torch.Size([3, 1]))
    """

    @classmethod
    def construct_inputs(
        cls, training_data: SupervisedDataset, **kwargs: Any
    ) -> dict[str, Any]:
        """Model inputs from an Ax/BoTorch dataset.

        Args:
            training_data: ``SupervisedDataset`` with ``X: t x d`` (``t ≥ 1``) and ``Y: t x 1``.
            **kwargs: Options of :class:`~botorch_mtucb.models.RobustGP`: ``threshold`` (``c``
                of the flag rule) and ``bounds`` (``2 x d`` box mapped to the unit cube for
                the kernel fit; default the unit cube, Ax's ``UnitX`` space; ``None``: the
                data's own min/max box, for transforms without ``UnitX``).

        Returns:
            Keyword arguments for the constructor.

        Raises:
            ValueError: for inputs outside the unit cube without a ``bounds`` option, or the
                search-space features of :func:`_ax_model_inputs`.
        """
        inputs = _ax_model_inputs(cls.__name__, training_data, kwargs, _ROBUST_YVAR)
        if "bounds" not in inputs:
            X = inputs["train_X"]
            if bool(((X < 0) | (X > 1)).any()):
                raise ValueError(
                    f"{cls.__name__} expects inputs in the unit cube [0, 1]^d (Ax's UnitX "
                    "transform); got inputs outside it. Keep UnitX in the transforms, or pass "
                    "model_options={'bounds': None} (the data's own box) or the search box."
                )
            d = X.shape[-1]
            inputs["bounds"] = torch.stack(
                [torch.zeros(d, dtype=X.dtype, device=X.device),
                 torch.ones(d, dtype=X.dtype, device=X.device)]
            )
        elif inputs["bounds"] is not None and not torch.is_tensor(inputs["bounds"]):
            inputs["bounds"] = torch.as_tensor(inputs["bounds"]).to(inputs["train_X"])
        return inputs


@fit_botorch_model.register((AxTruncatedGP, AxAdaptiveTruncationGP, AxRobustGP))
def _fit_fixed_hyperparameters(
    model: AxTruncatedGP | AxAdaptiveTruncationGP | AxRobustGP,
    mll_class: type[MarginalLogLikelihood],
    mll_options: dict[str, Any] | None = None,
) -> None:
    """Nothing to fit here: the models fitted (data-driven) or fixed (paper 001) it when built."""
    return None
