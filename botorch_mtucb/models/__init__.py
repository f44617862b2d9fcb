"""BoTorch models: exact and Nyström multi-task GPs, heavy-tailed single-output models.

* Paper 000 (:mod:`botorch_mtucb.multitask`): :class:`ExactMultiTaskGP` (MT-KB),
  :class:`NystromMultiTaskGP` (MT-BKB), :class:`NystromMultiTaskBatch` (batched training
  data), :func:`practical_multitask_gp` (MT-KB with fitted hyperparameters) and
  :func:`practical_sparse_multitask_gp` (MT-BKB with hyperparameters fitted on a subset and a
  capped dictionary, for many observations).
* Paper 001 (:mod:`botorch_mtucb.heavy_tailed`): :class:`TruncatedGP` (TGP-UCB),
  :class:`AdaptiveTruncationGP` (ATA-GP-UCB), :class:`HeavyTailedBatch` (batched training
  data), and the moment-estimator seam :class:`MomentEstimator` / :class:`MedianOfMeans`.
* Robust default (:mod:`botorch_mtucb.heavy_tailed.robust`): :func:`robust_gp` (a
  :class:`RobustGP`: readings screened by leave-one-out residuals, suspicious ones replaced,
  no knowledge of the noise kind needed) and :func:`recommend` (the best posterior mean among
  evaluated points with a trusted reading).
"""

from botorch_mtucb.heavy_tailed.adaptive import AdaptiveTruncationGP
from botorch_mtucb.heavy_tailed.batch import HeavyTailedBatch
from botorch_mtucb.heavy_tailed.moments import MedianOfMeans, MomentEstimator
from botorch_mtucb.heavy_tailed.robust import RobustGP, recommend, robust_gp
from botorch_mtucb.heavy_tailed.truncated import TruncatedGP
from botorch_mtucb.multitask.exact import ExactMultiTaskGP
from botorch_mtucb.multitask.nystrom import NystromMultiTaskGP
from botorch_mtucb.multitask.nystrom_batch import NystromMultiTaskBatch
from botorch_mtucb.multitask.practical import practical_multitask_gp
from botorch_mtucb.multitask.practical_sparse import practical_sparse_multitask_gp

__all__: list[str] = [
    "AdaptiveTruncationGP",
    "ExactMultiTaskGP",
    "HeavyTailedBatch",
    "MedianOfMeans",
    "MomentEstimator",
    "NystromMultiTaskBatch",
    "NystromMultiTaskGP",
    "RobustGP",
    "TruncatedGP",
    "practical_multitask_gp",
    "practical_sparse_multitask_gp",
    "recommend",
    "robust_gp",
]

# Registers the models with BoTorch's pathwise sampling (``draw_matheron_paths``), so
# ``get_optimal_samples``, qJES / qPES and pathwise Thompson sampling run on them.
import botorch_mtucb.sampling  # noqa: E402, F401
