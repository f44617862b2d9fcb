"""Declared interfaces of acquisition functions, read by the loop instead of attribute probing.

=============================  ==========================================  ====================
protocol                       what it gives                               implemented by
=============================  ==========================================  ====================
ConfidenceWidthAcquisition     the confidence width β it uses (``beta``)   ScalarizedMultiTaskUCB,
                                                                           HeavyTailedUCB, the
                                                                           benchmark MOBO UCB
=============================  ==========================================  ====================
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from torch import Tensor

__all__ = ["ConfidenceWidthAcquisition"]


@runtime_checkable
class ConfidenceWidthAcquisition(Protocol):
    """An optimistic acquisition with one confidence width β (recorded per round by the loop)."""

    beta: Tensor | float
