"""Linear-algebra solvers behind the multi-task GPs (paper 000, eq. (1) and its approximations).

* :mod:`~botorch_mtucb.multitask.solvers.base` — the :class:`MultiTaskSolver` interface;
* :mod:`~botorch_mtucb.multitask.solvers.exact` — dense Cholesky and ICM eigen solvers (§3.1,
  §3.3, Appendix A);
* :mod:`~botorch_mtucb.multitask.solvers.nystrom` — the Nyström (MT-BKB) solver for any
  kernel and the shared Nyström base (§3.2, Appendix D);
* :mod:`~botorch_mtucb.multitask.solvers.nystrom_icm` — the Nyström solver for Γ = k·B
  (Appendix A, eqs. (7)–(8)).

The models choose the solver from the kernel's structure (``icm_components()``).
"""
