"""integrations: optional bridges to other tools (Ax: ``pip install botorch-mtucb[ax]``).

The Ax names are imported lazily, so ``import botorch_mtucb`` (and this package) works without
Ax installed; use ``from botorch_mtucb.integrations.ax import mtucb_generation_strategy``.
"""

from __future__ import annotations

from typing import Any

__all__: list[str] = [
    "heavy_tailed_generation_strategy",
    "mtucb_generation_strategy",
    "multitask_gp_generation_strategy",
]

_AX_NAMES = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name in _AX_NAMES:
        try:
            from botorch_mtucb.integrations import ax as _ax
        except ImportError as err:
            raise ImportError(
                f"`{name}` needs Ax (ax-platform>=1.3.1): pip install 'botorch-mtucb[ax]'."
            ) from err
        return getattr(_ax, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
