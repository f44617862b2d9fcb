"""Directional vs spectral scalarized UCB on the paper-000 problems (issue 8's table).

Protocol: paper 000's RKHS protocol (B = AᵀA, SE l = 0.2, σ = η = δ = 0.1), the Theorem-2
radius for all four columns, IT = B replaced by diag(B) (``IT-KB-fair``), ``seeds`` trials of
``horizon`` rounds; the cell is the mean ± std over trials of the final time-average
scalarized regret R_C(T)/T. Within a (problem, scalarization, seed) the four runs share the
problem instance, λ sequence and noise stream (common random numbers).
"""

from __future__ import annotations

from pathlib import Path

from mtucb_bench.fileio import write_json, write_text
from mtucb_bench.runner import run_experiment

__all__ = ["TABLE_PROBLEMS", "bound_table", "format_bound_table"]

TABLE_PROBLEMS = ("rkhs-n2", "rkhs-n20", "perturbed-sine", "branin")
COLUMNS = (("MT-KB", "spectral"), ("MT-KB", "directional"),
           ("IT-KB-fair", "spectral"), ("IT-KB-fair", "directional"))


def bound_table(
    problems: tuple[str, ...] = TABLE_PROBLEMS,
    scalarizations: tuple[str, ...] = ("chebyshev", "linear"),
    seeds: int = 5,
    horizon: int = 100,
    seed: int = 0,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> list[dict]:
    """Run the table; returns one row dict per (scalarization, problem).

    Each row: ``{"scalarization", "problem", "<alg> <bound>": (mean, std), ...}``.

    Raises:
        ValueError: If ``out_dir`` exists and is not a folder (before any run).
    """
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ValueError(f"--out {str(out_dir)!r} exists and is not a folder.")
    rows = []
    for scal in scalarizations:
        for prob in problems:
            row: dict = {"scalarization": scal, "problem": prob}
            for bound in ("spectral", "directional"):
                sub = None if out_dir is None else Path(out_dir) / f"{prob}_{scal}_{bound}"
                res = run_experiment(
                    prob, algorithms=["MT-KB", "IT-KB-fair"], trials=seeds, horizon=horizon,
                    seed=seed, out_dir=sub, bound=bound, scalarization=scal, progress=progress,
                    plot=sub is not None,
                )
                for alg, s in res.summary().items():
                    row[f"{alg} {bound}"] = (
                        s["final_time_average_regret_mean"], s["final_time_average_regret_std"]
                    )
            rows.append(row)
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        write_json(Path(out_dir) / "bound_table.json", rows, indent=2)  # atomic writes
        write_text(Path(out_dir) / "bound_table.md", format_bound_table(rows))
    return rows


def format_bound_table(rows: list[dict]) -> str:
    """Markdown table of :func:`bound_table` rows (mean ± std of R_C(T)/T)."""
    head = (
        "| scalarization | problem | MT spectral | MT directional | IT spectral "
        "| IT directional |"
    )
    lines = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        cells = []
        for alg, bound in COLUMNS:
            m, s = r.get(f"{alg} {bound}", (float("nan"), float("nan")))
            cells.append(f"{m:.3g} ± {s:.2g}")
        lines.append(f"| {r['scalarization']} | {r['problem']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
