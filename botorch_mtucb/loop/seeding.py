"""A seeded loop's randomness: everything drawn from the loop's own ``torch.Generator``.

:func:`~botorch_mtucb.loop.run_bo_loop` draws λ_t from its ``generator``; the seeded pieces it
builds (Sobol design, ``BoxOptimizer``, payoff tables) take seeds derived from it. What still
draws from torch's global RNG inside a round (``optimize_acqf``'s choice of starting points
among its raw samples, random restarts of ``fit_gpytorch_mll``, an ``observe`` adding noise
with ``torch.randn``) is seeded too: with a generator, the run executes inside
``torch.random.fork_rng`` (the caller's global RNG state is left as it was) and phase t (0: the
initial design and first fit; t ≥ 1: round t) starts with ``torch.manual_seed(round_seed(s, t))``,
s = :func:`peek_seed` (generator) taken when the run starts. Seeding by phase makes round t the
same whether the run went through rounds 1, …, t − 1 or was resumed after them. Without a
generator nothing is forked or seeded: the run draws from the global RNG as any BoTorch code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch

__all__ = ["peek_seed", "round_seed", "seeded_phases"]

_MASK = 2**63 - 1


def peek_seed(generator: torch.Generator) -> int:
    """A seed in [0, 2³¹ − 1) from ``generator``'s next draw, without advancing it.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> peek_seed(g) == peek_seed(g) == int(torch.randint(2**31 - 1, (1,), generator=g))
        True
    """
    copy = torch.Generator(device=generator.device)
    copy.set_state(generator.get_state())
    return int(torch.randint(2**31 - 1, (1,), generator=copy, device=generator.device).item())


def round_seed(base: int, t: int) -> int:
    """The global-RNG seed of phase ``t`` of a run with base seed ``base`` (a fixed odd-
    multiplier mix of the two, so neighbouring runs and rounds get unrelated seeds).

    Example:
        >>> round_seed(5, 1) == round_seed(5, 1) != round_seed(5, 2)
        True
    """
    mixed = int(base) * 0x9E3779B97F4A7C15 + int(t) * 0xBF58476D1CE4E5B9 + 0x94D049BB133111EB
    return mixed & _MASK


@contextlib.contextmanager
def seeded_phases(base: int | None) -> Iterator[Callable[[int], None]]:
    """Fork torch's global RNG (CPU and the initialised accelerators) and yield
    ``seed_phase(t)``, which seeds it with :func:`round_seed` (base, t); with ``base=None``
    nothing is forked and ``seed_phase`` does nothing.

    Example:
        >>> state = torch.get_rng_state()
        >>> with seeded_phases(7) as seed_phase:
        ...     seed_phase(1)
        ...     a = torch.rand(2)
        >>> with seeded_phases(7) as seed_phase:
        ...     seed_phase(1)
        ...     b = torch.rand(2)
        >>> torch.equal(a, b), torch.equal(torch.get_rng_state(), state)
        (True, True)
    """
    if base is None:
        yield _no_seed
        return
    with torch.random.fork_rng():

        def seed_phase(t: int) -> None:
            torch.manual_seed(round_seed(base, t))

        yield seed_phase


def _no_seed(t: int) -> None:
    """``seed_phase`` of an unseeded run: the global RNG is left alone."""
