r"""``heavy_tailed_generation_strategy``: Sobol, then TGP-UCB / ATA-GP-UCB in Ax.

Re-exported by :mod:`botorch_mtucb.integrations.ax` (its module docstring explains the units,
the transforms and the row order). Two modes, those of the models:

* **data-driven** (``alpha=None, v=None``, the default; issue 16): the model's data-driven mode
  (:class:`~botorch_mtucb.models.TruncatedGP` / :class:`~botorch_mtucb.models.AdaptiveTruncationGP`
  built without ``v``), rebuilt by Ax at every trial from all the rewards so far.
* **declared** (``alpha`` and ``v`` given; paper 001 verbatim, the behaviour before issue 16).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from ax.adapter.registry import MBM_X_trans
from ax.adapter.transforms.base import Transform
from ax.adapter.transforms.derelativize import Derelativize
from ax.adapter.transforms.unit_x import UnitX
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
from ax.generators.torch.botorch_modular.utils import ModelConfig

from botorch_mtucb.acquisition.heavy_tailed import HeavyTailedUCB
from botorch_mtucb.integrations.ax.acquisition import UCBAcquisition
from botorch_mtucb.integrations.ax.models import AxAdaptiveTruncationGP, AxTruncatedGP
from botorch_mtucb.integrations.ax.strategy import check_common, two_step_strategy
from botorch_mtucb.theory.heavy_tailed import check_heavy_tailed_params

__all__ = ["HEAVY_TAILED_TRANSFORMS", "heavy_tailed_generation_strategy"]

#: Ax transforms of ``heavy_tailed_generation_strategy``: Ax's BoTorch input transforms, inputs
#: to the unit cube, and no outcome rescaling (rewards stay in the units of v).
HEAVY_TAILED_TRANSFORMS: list[type[Transform]] = [*MBM_X_trans, UnitX, Derelativize]


def heavy_tailed_generation_strategy(
    alpha: float | None = None,
    v: float | None = None,
    *,
    num_initial_trials: int | None = None,
    beta: float | None = None,
    model: Literal["truncated", "adaptive_truncation"] = "truncated",
    model_options: dict[str, Any] | None = None,
    seed: int | None = None,
    optimizer_options: dict[str, Any] | None = None,
    transforms: Sequence[type[Transform]] | None = None,
) -> GenerationStrategy:
    r"""Sobol warm-up, then TGP-UCB (or ATA-GP-UCB): heavy-tailed model + ``HeavyTailedUCB``.

    For single-objective experiments whose rewards satisfy only ``E|y|^{1+α} ≤ v``
    (paper 001). The rewards reach the model in their raw units and the inputs in
    ``[0, 1]^d`` (Ax's ``UnitX``; see the module docstring of
    :mod:`botorch_mtucb.integrations.ax`).

    **Data-driven default** (``alpha=None, v=None``): at every trial Ax builds the model's
    data-driven mode from all the rewards so far: ``α = 1``; rewards centred at their median;
    ``v`` = the median-of-means estimate of ``E|y − median|^{1+α}``
    (:func:`~botorch_mtucb.heavy_tailed.moments.robust_location_and_moment`: it
    assumes exchangeable rewards and outliers in fewer than half of its groups); every reward
    winsorised (TGP) at the current level
    ``b_t = v^{1/(1+α)} t^{1/(2(1+α))}`` (paper 001, Algorithm 1's schedule; t = all observed
    rounds, Sobol trials included); the kernel and ``λ`` fitted the BoTorch way on the
    truncated centred rewards (``SingleTaskGP``, Standardize, ``fit_gpytorch_mll``; from
    t ≥ 2, the SE kernel with lengthscale 0.2 before); ATA-GP-UCB without ``features`` uses
    Nyström features on that kernel; the width is the practical ``β = 1`` (UCB ``μ + σ``,
    ``constants="practical"``). Nothing is to be stated in the units of the rewards.
    ``alpha`` alone keeps this mode with that moment order (``v`` estimated for it). ``v``
    alone is refused: a moment bound means nothing without its order.

    **Declared** (``alpha`` and ``v`` given, positionally or by name): paper 001 verbatim
    (Algorithm 1's per-round zeroing, the fixed SE kernel, Theorem 1's β unless
    ``constants="authors"``), exactly as before the data-driven default.

    Args:
        alpha: Moment order ``α ∈ (0, 1]`` (default ``None``: 1 in the data-driven mode).
        v: Moment bound ``v > 0``, in the units of the reported rewards (default ``None``:
            data-driven). Needs ``alpha``.
        num_initial_trials: Number of Sobol trials (≥ 1); they count as rounds of the
            truncation schedule. Default ``None``: ``initial_design_size(d)`` = max(5, 2·d).
        beta: Width β multiplying σ; ``None`` uses the model's ``beta()`` (data-driven: 1;
            declared: β_{t+1} of the ``constants`` model option, ``"theory"`` or
            ``"authors"``).
        model: ``"truncated"`` (:class:`~botorch_mtucb.models.TruncatedGP`, TGP-UCB) or
            ``"adaptive_truncation"`` (:class:`~botorch_mtucb.models.AdaptiveTruncationGP`,
            ATA-GP-UCB; declared mode: needs ``features`` in ``model_options``).
        model_options: Further model keyword arguments (``lam``, ``delta``, ``B``,
            ``constants``, ``truncate``, ``covar_module``, ``features``, ``horizon``; a
            given ``lam`` or ``covar_module`` turns the kernel fit off).
        seed: Seeds the Sobol points.
        optimizer_options: BoTorch ``optimize_acqf`` options.
        transforms: Ax transforms of the BO step (default :data:`HEAVY_TAILED_TRANSFORMS`).
            Without ``UnitX`` the default kernel refuses inputs outside the unit cube; in
            the declared mode v must then be stated in the transformed units.

    Returns:
        The ``GenerationStrategy``.

    Raises:
        ValueError: for ``v`` without ``alpha``, parameters out of range, or ATA-GP-UCB
            with a declared ``v`` and no ``features``.
    """
    check_common(num_initial_trials, seed, optimizer_options)
    options = dict(model_options or {})
    if v is not None and alpha is None:
        raise ValueError(
            f"`v` (a bound on E|y|^(1+alpha)) needs its moment order `alpha`, got v={v!r} and "
            "alpha=None. Pass both (declared mode) or neither (data-driven mode); `alpha` alone "
            "estimates v from the data for that order."
        )
    driven = v is None
    check_heavy_tailed_params(
        1.0 if alpha is None else alpha,
        1.0 if driven else v,
        options.get("lam", 1.0),
        options.get("delta", 0.1),
        options.get("B", 1.0),
    )
    if beta is not None and (not math.isfinite(float(beta)) or float(beta) < 0):
        raise ValueError(f"`beta` must be a finite number >= 0 or None, got {beta!r}.")
    classes = {"truncated": AxTruncatedGP, "adaptive_truncation": AxAdaptiveTruncationGP}
    if model not in classes:
        raise ValueError(f"`model` must be 'truncated' or 'adaptive_truncation', got {model!r}.")
    if model == "adaptive_truncation" and not driven and "features" not in options:
        raise ValueError(
            "`model='adaptive_truncation'` with a declared `v` needs `model_options['features']` "
            "(a QuadratureFourierFeatures or NystromFeatures on [0, 1]^d); without `v` it "
            "builds Nyström features on a fitted kernel."
        )
    moments = {k: x for k, x in (("alpha", alpha), ("v", v)) if x is not None}
    generator_kwargs = {
        "surrogate_spec": SurrogateSpec(
            model_configs=[
                ModelConfig(
                    botorch_model_class=classes[model],
                    model_options={**moments, **options},
                    # Inputs reach the model in [0, 1]^d through Ax's UnitX; the heavy-tailed
                    # models take no BoTorch input transform.
                    input_transform_classes=None,
                    name="TGP-UCB" if model == "truncated" else "ATA-GP-UCB",
                )
            ]
        ),
        "botorch_acqf_class": HeavyTailedUCB,
        "botorch_acqf_options": {"beta": beta},
        "acquisition_class": UCBAcquisition,
    }
    name = "Sobol+TGP-UCB" if model == "truncated" else "Sobol+ATA-GP-UCB"
    return two_step_strategy(
        name,
        num_initial_trials,
        seed,
        generator_kwargs,
        optimizer_options,
        HEAVY_TAILED_TRANSFORMS if transforms is None else transforms,
    )
