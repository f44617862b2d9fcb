"""Heavy-tailed single-output models of paper 001: TGP-UCB and ATA-GP-UCB.

* :mod:`~botorch_mtucb.heavy_tailed.truncated` — :class:`~botorch_mtucb.models.TruncatedGP`,
  a GP posterior on rewards truncated at ``b_s = v^{1/(1+α)} s^{1/(2(1+α))}`` (Algorithm 1,
  Theorem 1), with its dense (``truncated_dense``) and finite-arm (``truncated_arms``) paths;
* :mod:`~botorch_mtucb.heavy_tailed.adaptive` —
  :class:`~botorch_mtucb.models.AdaptiveTruncationGP`, feature-space ridge regression with
  per-direction truncation (Algorithm 2, Lemma 1, Theorems 3–4), with its finite-arm path
  (``adaptive_arms``) and schedules (``schedules``);
* :mod:`~botorch_mtucb.heavy_tailed.batch` — :class:`~botorch_mtucb.models.HeavyTailedBatch`,
  what batched data, batched conditioning and fantasies give;
* :mod:`~botorch_mtucb.heavy_tailed.moments` — the data-driven ``(α, v)``
  (:class:`~botorch_mtucb.heavy_tailed.moments.MomentEstimator`) and the fitted default kernel;
* :mod:`~botorch_mtucb.heavy_tailed.robust` — :func:`~botorch_mtucb.models.robust_gp`, the
  robust default (:class:`~botorch_mtucb.models.RobustGP`: leave-one-out screening of
  suspicious readings) and :func:`~botorch_mtucb.models.recommend`;
* :mod:`~botorch_mtucb.heavy_tailed.base` and :mod:`~botorch_mtucb.heavy_tailed.arms` — the
  common base, arm sets and storage.

The public names are exported by :mod:`botorch_mtucb.models`.
"""
