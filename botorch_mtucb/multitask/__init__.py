"""Multi-task GPs of paper 000: the exact MT-KB estimator and the Nyström MT-BKB estimator.

For vector observations ``y_s ∈ R^n`` and a matrix-valued kernel Γ both estimate the
posterior ``μ_t(x) = G_t(x)ᵀ (G_t + ηI)⁻¹ Y_t``, ``Γ_t(x, x')`` of paper 000, eq. (1):

* :mod:`~botorch_mtucb.multitask.exact` — :class:`ExactMultiTaskGP` (MT-KB, §3.1, §3.3);
* :mod:`~botorch_mtucb.multitask.nystrom` — :class:`NystromMultiTaskGP` (MT-BKB, §3.2), and
  :mod:`~botorch_mtucb.multitask.nystrom_batch` its batch over batched training data;
* :mod:`~botorch_mtucb.multitask.practical` — :func:`practical_multitask_gp`, the fitted
  practical model, with its fitting in :mod:`~botorch_mtucb.multitask.practical_fit`;
* :mod:`~botorch_mtucb.multitask.solvers` — the linear algebra behind the posteriors.

The public names are exported by :mod:`botorch_mtucb.models`.
"""
