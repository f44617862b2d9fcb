"""Figures in the style of the papers: mean ± std of a regret curve vs round, one line each."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from mtucb_bench.fileio import atomic_open

__all__ = ["plot_time_average_regret"]


def plot_time_average_regret(
    curves: dict[str, Tensor],
    path: str | Path,
    title: str = "",
    ylabel: str = "time-average regret $R_C(t)/t$",
    log_x: bool | None = None,
) -> Path:
    """Write a PNG of mean ± std (over trials) of each ``trials x T`` curve.

    Args:
        curves: ``algorithm -> trials x T`` tensors.
        path: Output file (``.png``; the format follows the suffix), written atomically.
        title: Figure title.
        ylabel: Y-axis label.
        log_x: Logarithmic round axis (default: when T > 1000).

    Returns:
        The path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not curves:
        raise ValueError("`curves` is empty: nothing to plot.")
    fig, ax = plt.subplots(figsize=(5.0, 3.4), dpi=100)
    T = max(c.shape[-1] for c in curves.values())
    for name, c in curves.items():
        c = c.to(torch.float64)
        t = torch.arange(1, c.shape[-1] + 1)
        mean = c.mean(dim=0)
        std = c.std(dim=0) if c.shape[0] > 1 else torch.zeros_like(mean)
        (line,) = ax.plot(t.numpy(), mean.numpy(), label=name, lw=1.4)
        ax.fill_between(
            t.numpy(), (mean - std).numpy(), (mean + std).numpy(), color=line.get_color(),
            alpha=0.18, lw=0,
        )
    if log_x if log_x is not None else T > 1000:
        ax.set_xscale("log")
    ax.set_xlabel("round $t$")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    path = Path(path)
    try:  # written to a temporary file and renamed: never a truncated figure
        with atomic_open(path, "wb") as fh:
            fig.savefig(fh, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    return path
