r"""The practical model for large data: a Nyström multi-task GP with fitted hyperparameters.

:func:`practical_sparse_multitask_gp` is the sparse counterpart of
:func:`~botorch_mtucb.multitask.practical.practical_multitask_gp`: the same model structure
(inputs normalised on ``bounds``, outcomes standardised, ICM Matérn-5/2 with a learned task
matrix B, constant mean, learned noise η with its prior), with the posterior of
:class:`~botorch_mtucb.multitask.nystrom.NystromMultiTaskGP` (paper 000, §3.2: the DTC
posterior of a variance-sampled dictionary ``D``, capped at ``max_dictionary_size`` points)
instead of the exact one. It is the sparse mode of
:class:`~botorch_mtucb.multitask.practical.WarmStartPracticalFactory` (which switches to it
above ``sparse_above`` points); the factory's class docstring gives the method.

**Hyperparameters: subset of data.** They maximise the exact marginal likelihood of a
uniform random subset ``S`` of ``min(N, fit_subset_size)`` points,
``log N(vec Y_S; μ, K_SS ⊗ B + ηI)`` plus the practical priors. That is the likelihood of the
same GP restricted to ``S``: a maximum-likelihood estimate from ``|S|`` points, with no
approximation inside the objective, whose cost per evaluation does not depend on ``N``.
A likelihood of the Nyström model itself (DTC, FITC, VFE) would change the objective, and its
dictionary is itself drawn from the hyperparameters' posterior variances.

**Costs** (``N`` points, ``n`` tasks, dictionary ``m ≤ max_dictionary_size``, subset ``s``):
fit O(s³) per likelihood evaluation; build O(N m² + m³) (about twice that for the cold
start's doubling stages); the posterior at ``q`` points O(q m n) for the mean and the
``n x n`` blocks.

**Accuracy.** With the dictionary cap binding, Theorem 3's ε-accuracy of the Nyström
posterior is lost (it needs the paper's oversampling ``q``); see the "Capped dictionary"
paragraph of :class:`~botorch_mtucb.multitask.nystrom.NystromMultiTaskGP`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_mtucb.multitask.nystrom import NystromMultiTaskGP
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory

__all__ = ["practical_sparse_multitask_gp"]


def practical_sparse_multitask_gp(
    train_X: Tensor,
    train_Y: Tensor,
    bounds: Tensor | None = None,
    independent: bool = False,
    fit_subset_size: int = WarmStartPracticalFactory.FIT_SUBSET_SIZE,
    max_dictionary_size: int = WarmStartPracticalFactory.MAX_DICTIONARY_SIZE,
    generator: torch.Generator | None = None,
) -> NystromMultiTaskGP:
    r"""A :class:`NystromMultiTaskGP` with the practical model's structure, fitted on a subset.

    The hyperparameters of Γ = k·B, the constant mean and η are those of
    ``practical_multitask_gp(train_X[S], train_Y[S], bounds, independent)`` on a uniform
    random subset ``S`` of ``min(N, fit_subset_size)`` rows (module docstring); the posterior
    is the Nyström posterior of paper 000, §3.2 on all ``N`` points, its dictionary drawn
    with Theorem 3's oversampling capped at ``max_dictionary_size`` points.

    Args:
        train_X: ``N x d`` training inputs (``N ≥ 1``).
        train_Y: ``N x n`` training observations, all ``n`` tasks at each input.
        bounds: ``2 x d`` box of the domain (``Normalize``); ``None`` for no input transform.
        independent: One Matérn-5/2 per task and B = I (the IT-UCB baseline).
        fit_subset_size: Size ``≥ 2`` of the fitting subset.
        max_dictionary_size: Cap ``≥ 1`` on the dictionary size.
        generator: ``torch.Generator`` of the subset and the dictionary draws (``None``:
            torch's global RNG).

    Returns:
        The :class:`NystromMultiTaskGP` in eval mode, with the dtype and device of
        ``train_X``; its posterior is in the original outcome scale (``batch_shape x q x n``
        mean).

    Raises:
        ValueError: If the data, ``bounds``, ``fit_subset_size`` or ``max_dictionary_size``
            are malformed.

    Example:
        >>> model = practical_sparse_multitask_gp(train_X, train_Y, bounds)  # N x d, N x n
        >>> model.dictionary_size <= 1000
        True
        >>> mean, blocks = model.task_posterior(torch.rand(5, d, dtype=torch.float64))
    """
    if not isinstance(train_X, Tensor) or train_X.dim() != 2 or len(train_X) < 1:
        raise ValueError(
            "`train_X` must be an N x d tensor with N >= 1 rows, got "
            f"{tuple(train_X.shape) if isinstance(train_X, Tensor) else type(train_X).__name__}."
        )
    factory = WarmStartPracticalFactory(
        bounds,
        independent,
        warm=False,
        sparse_above=0,
        fit_subset_size=fit_subset_size,
        max_dictionary_size=max_dictionary_size,
        generator=generator,
    )
    return factory(train_X, train_Y)
