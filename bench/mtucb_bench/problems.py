"""Benchmark problem containers: what a run needs to know about the environment.

Two kinds, matching the two papers:

* :class:`MultiTaskProblem` (paper 000): a vector objective ``f: X → Rⁿ`` with Gaussian
  noise, an ICM kernel Γ = k·B "as the paper used it" (scalar kernel ``k`` with fixed
  hyperparameters and task matrix ``B``), the RKHS-norm bound ``b`` that enters the radii,
  and the reference point used both as the Chebyshev ``z`` and as the hypervolume reference.
* :class:`HeavyTailedProblem` (paper 001): a finite arm set with mean rewards ``f`` and a
  heavy-tailed reward sampler, a scalar kernel over the arms, the moment parameters
  ``(α, v)`` and the norm bound ``B``.

Every problem is an immutable *instance* (one drawn function): the runner draws one per trial
from a seed and gives the same instance, the same initial design, the same λ sequence and the
same noise stream to every algorithm of that trial (common random numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.utils import initial_design_size, sobol_initial_design

__all__ = [
    "ArmLookup",
    "HeavyTailedProblem",
    "InitialDesign",
    "MultiTaskProblem",
    "QFFSpec",
]


class ArmLookup:
    """Maps query points to the index of the arm they equal (rows of an ``A x d`` set)."""

    def __init__(self, arms: Tensor, tol: float = 1e-8) -> None:
        """
        Args:
            arms: ``A x d`` distinct arm coordinates.
            tol: Largest accepted sup-norm distance between a query and its arm.
        """
        if arms.dim() != 2 or arms.shape[0] == 0:
            raise ValueError(f"`arms` must be a non-empty A x d tensor, got {tuple(arms.shape)}.")
        self.arms = arms
        self.tol = tol * (1.0 + float(arms.abs().max()))

    def __call__(self, X: Tensor) -> Tensor:
        """``N x d`` points → ``N`` long arm indices; raises if a point is not an arm."""
        if X.dim() != 2 or X.shape[-1] != self.arms.shape[-1]:
            raise ValueError(
                f"`X` must be N x {self.arms.shape[-1]} (arm coordinates), got {tuple(X.shape)}."
            )
        if X.shape[0] == 0:
            return torch.zeros(0, dtype=torch.long, device=X.device)
        dist = torch.cdist(X.to(self.arms), self.arms, p=float("inf"))
        best, idx = dist.min(dim=-1)
        if (best > self.tol).any():
            raise ValueError("`X` holds points that are not arms of this problem.")
        return idx


@dataclass(frozen=True)
class MultiTaskProblem:
    """One instance of a multi-objective problem of paper 000 (§5, Appendix E).

    Attributes:
        name: Short identifier.
        f: Noise-free objective ``N x d -> N x n`` (all objectives maximised).
        noise_std: σ of the i.i.d. Gaussian noise N(0, σ² I_n) (times ``noise_scale``).
        scalar_kernel: Factory of a fresh scalar kernel ``k`` (fixed hyperparameters,
            k(x, x) = 1) — a factory so that models never share a mutable module.
        task_covar: ``n x n`` task matrix ``B`` of the ICM kernel Γ = k·B.
        b: RKHS-norm bound used in the confidence radii.
        ref_point: ``n`` Chebyshev reference point z, also the hypervolume reference.
        regret_X: ``M x d`` reference set for max_x s_λ(f(x)) (the arms on a finite domain).
        arms: ``A x d`` finite domain, or ``None`` for a continuous box.
        bounds: ``2 x d`` box of a continuous domain (``None`` on finite domains).
        eta: Regulariser η (Gaussian-noise variance of the models; paper: 0.1).
        delta: Confidence δ of the radii (paper: 0.1).
        notes: Free-text provenance (what was chosen where the paper is silent).
        initial_design: Spec of the initial design the runner starts every algorithm of a
            trial from (:class:`InitialDesign`; the experiment stamps it): ``"paper"`` (one
            random point) unless the experiment says otherwise.
        noise_scale: ``n`` per-objective multipliers of ``noise_std`` (objective i's noise
            is N(0, (σ s_i)²)); ``None``: the same σ for every objective.
    """

    name: str
    f: Callable[[Tensor], Tensor]
    noise_std: float
    scalar_kernel: Callable[[], Kernel]
    task_covar: Tensor
    b: float
    ref_point: Tensor
    regret_X: Tensor
    arms: Tensor | None = None
    bounds: Tensor | None = None
    eta: float = 0.1
    delta: float = 0.1
    notes: str = ""
    initial_design: str = "paper"
    noise_scale: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        n = self.task_covar.shape[-1]
        if self.task_covar.shape != (n, n):
            raise ValueError(f"`task_covar` must be n x n, got {tuple(self.task_covar.shape)}.")
        if self.ref_point.shape != (n,):
            raise ValueError(f"`ref_point` must have n = {n} entries.")
        if (self.arms is None) == (self.bounds is None):
            raise ValueError("Exactly one of `arms` (finite domain) and `bounds` must be given.")
        if self.noise_std < 0 or self.b < 0:
            raise ValueError("`noise_std` and `b` must be >= 0.")
        scale = self.noise_scale
        if scale is not None and (
            len(scale) != n or not all(math.isfinite(v) and v >= 0 for v in scale)
        ):
            raise ValueError(f"`noise_scale` must hold n = {n} finite numbers >= 0, got {scale}.")

    @property
    def noise_sd(self) -> Tensor:
        """``n`` per-objective noise standard deviations σ · s_i."""
        n = self.task_covar.shape[-1]
        scale = torch.ones(n, dtype=torch.float64) if self.noise_scale is None else (
            torch.tensor(self.noise_scale, dtype=torch.float64))
        return self.noise_std * scale

    @property
    def num_objectives(self) -> int:
        """Number of objectives / tasks ``n``."""
        return self.task_covar.shape[-1]

    @property
    def dim(self) -> int:
        """Input dimension ``d``."""
        return self.regret_X.shape[-1]

    @property
    def is_finite(self) -> bool:
        """Whether the domain is a finite arm set."""
        return self.arms is not None

    def observer(self, generator: torch.Generator | None) -> Callable[[Tensor], Tensor]:
        """``observe(X) = f(X) + σ ε`` (σ per objective: :attr:`noise_sd`), ε ~ N(0, I), drawn
        from ``generator`` in call order."""
        sd = self.noise_sd

        def observe(X: Tensor) -> Tensor:
            F = self.f(X)
            eps = torch.randn(F.shape, generator=generator, dtype=torch.float64).to(F)
            return F + sd.to(F) * eps

        return observe


@dataclass(frozen=True)
class QFFSpec:
    """Quadrature-Fourier-feature variant of a heavy-tailed problem (SE kernel only).

    Attributes:
        arms: ``A x d'`` arm coordinates in [0, 1]^{d'} on which the SE kernel is defined
            (the light-sensor locations; the grid itself for the synthetic problems).
        lengthscale: SE lengthscale l.
        num_nodes: Gauss–Hermite nodes per dimension (paper: 32 in 1-d, 16 per dim in 2-d).
    """

    arms: Tensor
    lengthscale: float
    num_nodes: int


@dataclass(frozen=True)
class HeavyTailedProblem:
    """One instance of a heavy-tailed single-objective problem of paper 001 (§6).

    Attributes:
        name: Short identifier.
        arms: ``A x d`` arm representation the ``kernel`` takes (grid coordinates, or float
            arm indices ``A x 1`` with a :class:`~botorch_mtucb.kernels.PrecomputedKernel`).
        mean_rewards: ``A`` expected rewards E[y | arm] (raw units, what the models learn).
        regret_f: ``A`` values the regret is measured in (``mean_rewards`` or a normalised
            copy; only a positive rescaling of it, so the best arm is the same).
        kernel: Factory of a fresh scalar kernel over ``arms`` (fixed hyperparameters).
        sample_rewards: ``(arm_indices, generator) -> rewards`` (``N`` long → ``N`` float64).
        alpha: Moment order α ∈ (0, 1] with E|y|^{1+α} ≤ v.
        v: Moment bound v.
        B: Bound on ‖f‖ (paper: max |f|).
        qff: The QFF variant, or ``None`` when the kernel has no analytic SE form.
        notes: Free-text provenance.
    """

    name: str
    arms: Tensor
    mean_rewards: Tensor
    regret_f: Tensor
    kernel: Callable[[], Kernel]
    sample_rewards: Callable[[Tensor, torch.Generator | None], Tensor]
    alpha: float
    v: float
    B: float
    qff: QFFSpec | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        A = self.arms.shape[0]
        if self.mean_rewards.shape != (A,) or self.regret_f.shape != (A,):
            raise ValueError("`mean_rewards` and `regret_f` must hold one value per arm.")
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"`alpha` must lie in (0, 1], got {self.alpha}.")
        if self.v <= 0 or self.B < 0:
            raise ValueError("`v` must be > 0 and `B` >= 0.")

    @property
    def num_arms(self) -> int:
        return self.arms.shape[0]

    def arm_points(self, representation: str = "kernel") -> Tensor:
        """``A x d`` arm coordinates: ``"kernel"`` (``arms``) or ``"qff"`` (``qff.arms``)."""
        if representation == "kernel":
            return self.arms
        if representation == "qff":
            if self.qff is None:
                raise ValueError(f"Problem {self.name!r} has no QFF variant.")
            return self.qff.arms
        raise ValueError(f"`representation` must be 'kernel' or 'qff', got {representation!r}.")

    def true_f(self, representation: str = "kernel") -> Callable[[Tensor], Tensor]:
        """Noise-free regret values ``N x d -> N x 1`` on the given arm representation."""
        lookup = ArmLookup(self.arm_points(representation))

        def f(X: Tensor) -> Tensor:
            return self.regret_f[lookup(X)].unsqueeze(-1).to(X)

        return f

    def observer(
        self, generator: torch.Generator | None, representation: str = "kernel"
    ) -> Callable[[Tensor], Tensor]:
        """``observe(X)``: one heavy-tailed reward per row, ``N x 1``."""
        lookup = ArmLookup(self.arm_points(representation))

        def observe(X: Tensor) -> Tensor:
            idx = lookup(X)
            return self.sample_rewards(idx, generator).to(X).unsqueeze(-1)

        return observe


@dataclass(frozen=True)
class InitialDesign:
    """The initial design the runner starts every algorithm of a trial from.

    Specs (see :mod:`~mtucb_bench.experiments` for which experiment uses which):
    ``"paper"`` (one random point on a multi-task problem, none on a heavy-tailed one),
    ``"sobol"`` / ``"sobol:N"`` (scrambled Sobol; by default N =
    :func:`~botorch_mtucb.utils.initial_design.initial_design_size` (d); continuous domains),
    ``"random:N"`` (uniform points, or N distinct arms).

    Attributes:
        kind: ``"paper"``, ``"sobol"`` or ``"random"``.
        size: Number of points (``None``: one for ``"paper"``,
            :func:`~botorch_mtucb.utils.initial_design.initial_design_size` for ``"sobol"``;
            required for ``"random"``).
    """

    kind: str = "paper"
    size: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("paper", "sobol", "random"):
            raise ValueError(
                f"`initial_design` must be 'paper', 'sobol', 'sobol:N' or 'random:N', got "
                f"kind {self.kind!r}."
            )
        if self.size is not None and (
            isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1
        ):
            raise ValueError(f"The initial design size must be an integer >= 1, got {self.size!r}.")
        if self.kind == "paper" and self.size is not None:
            raise ValueError("The 'paper' initial design has no size (one point, or none).")
        if self.kind == "random" and self.size is None:
            raise ValueError("The 'random' initial design needs a size: 'random:N'.")

    @classmethod
    def parse(cls, spec: str | InitialDesign) -> InitialDesign:
        """From ``"paper"``, ``"sobol"``, ``"sobol:N"`` or ``"random:N"``."""
        if isinstance(spec, InitialDesign):
            return spec
        if not isinstance(spec, str):
            raise ValueError(f"`initial_design` must be a string, got {type(spec).__name__}.")
        kind, _, size = spec.strip().lower().partition(":")
        if size and not size.isdigit():
            raise ValueError(
                f"Malformed initial design {spec!r}: expected 'paper', 'sobol', 'sobol:N' or "
                f"'random:N' with N a positive integer."
            )
        return cls(kind, int(size) if size else None)

    @property
    def spec(self) -> str:
        """The spec string (``"paper"``, ``"sobol"``, ``"sobol:8"``, ``"random:5"``)."""
        return self.kind if self.size is None else f"{self.kind}:{self.size}"

    def resolve(self, problem: object) -> InitialDesign:
        """The design with its size fixed for ``problem`` (what the manifest records).

        Raises:
            ValueError: For a Sobol design on a finite domain, or a design other than
                ``"paper"`` on a heavy-tailed problem (those start with no data).
        """
        if not isinstance(problem, MultiTaskProblem):
            if self.kind != "paper":
                raise ValueError(
                    f"Heavy-tailed experiments start with no data (paper 001): initial design "
                    f"{self.spec!r} is not supported, use 'paper'."
                )
            return self
        if self.kind == "sobol":
            if problem.is_finite:
                raise ValueError(
                    f"A Sobol initial design needs a continuous domain; {problem.name!r} has "
                    f"{problem.arms.shape[0]} arms: use 'random:N' (N distinct arms)."
                )
            return InitialDesign("sobol", self.size or initial_design_size(problem.dim))
        if self.kind == "random" and problem.is_finite and self.size > problem.arms.shape[0]:
            raise ValueError(
                f"Initial design {self.spec!r} asks for more points than the "
                f"{problem.arms.shape[0]} arms of {problem.name!r}."
            )
        return self

    def draw(self, problem: MultiTaskProblem, seed: int) -> Tensor:
        """``N0 x d`` initial points of trial seed ``seed`` (float64 like the problem).

        ``"paper"``: exactly the papers' protocol of this runner (one point from
        ``torch.Generator().manual_seed(seed + 1)``); ``"sobol"``:
        ``sobol_initial_design(bounds, N, seed + 1)``; ``"random"``: uniform points from the
        same generator, or distinct arms (``randperm``).
        """
        design = self.resolve(problem)
        g = torch.Generator().manual_seed(seed + 1)
        if problem.is_finite:
            if design.kind == "paper":
                idx = torch.randint(0, problem.arms.shape[0], (1,), generator=g)
            else:
                idx = torch.randperm(problem.arms.shape[0], generator=g)[: design.size]
            return problem.arms[idx].clone()
        if design.kind == "sobol":
            return sobol_initial_design(problem.bounds, design.size, seed + 1)
        lo, hi = problem.bounds
        n = 1 if design.kind == "paper" else design.size
        return lo + (hi - lo) * torch.rand(n, problem.dim, generator=g, dtype=lo.dtype)
