"""Results of a benchmark run: one :class:`TrialResult` per (trial, algorithm), pooled in an
:class:`ExperimentResult` (summary statistics and curves over trials)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from botorch_mtucb.loop import LoopHistory

__all__ = ["ExperimentResult", "TrialResult"]


@dataclass
class TrialResult:
    """Metrics of one (algorithm, trial) run; all arrays have one entry per round."""

    algorithm: str
    trial: int
    seed: int
    regret: Tensor
    time_average: Tensor
    wall_time: Tensor
    bayes: Tensor | None = None
    hypervolume: Tensor | None = None
    dictionary_size: Tensor | None = None
    history: LoopHistory | None = None

    def to_json_dict(self) -> dict[str, Any]:
        h = self.history
        out: dict[str, Any] = {
            "algorithm": self.algorithm,
            "trial": self.trial,
            "seed": self.seed,
            "regret": self.regret.tolist(),
            "cumulative_regret": self.regret.cumsum(0).tolist(),
            "time_average_regret": self.time_average.tolist(),
            "wall_time": self.wall_time.tolist(),
            "bayes_regret": None if self.bayes is None else self.bayes.tolist(),
            "hypervolume": None if self.hypervolume is None else self.hypervolume.tolist(),
            "dictionary_size": (
                None if self.dictionary_size is None else self.dictionary_size.tolist()
            ),
        }
        if h is not None:
            out["initial_X"] = h.initial_X.tolist()
            out["x"] = h.X.tolist()
            out["y"] = h.Y.tolist()
            out["weights"] = [None if r.weights is None else r.weights.tolist() for r in h.rounds]
            out["beta"] = [r.beta for r in h.rounds]
        return out

    @classmethod
    def from_json_dict(cls, blob: dict[str, Any]) -> TrialResult:
        """Inverse of :meth:`to_json_dict` for the metrics (the history is not rebuilt).

        Raises:
            ValueError: If ``blob`` has no ``regret`` array.
        """

        def vec(key: str) -> Tensor | None:
            v = blob.get(key)
            if v is None or any(x is None for x in v):  # absent, or not recorded every round
                return None
            return torch.tensor(v, dtype=torch.float64)

        regret = vec("regret")
        if regret is None:
            raise ValueError(f"Trial JSON of {blob.get('algorithm')!r} has no 'regret' array.")
        return cls(
            algorithm=blob["algorithm"], trial=int(blob["trial"]), seed=int(blob["seed"]),
            regret=regret, time_average=vec("time_average_regret"), wall_time=vec("wall_time"),
            bayes=vec("bayes_regret"), hypervolume=vec("hypervolume"),
            dictionary_size=vec("dictionary_size"),
        )


@dataclass
class ExperimentResult:
    """All trials of a run, the settings, and where the files went.

    ``missing`` lists the (trial, algorithm) pairs of the configuration that have no trial
    file (an interrupted run, reloaded by :func:`~.summarize.load_run`); skipped algorithms
    are not missing.
    """

    experiment: str
    settings: dict[str, Any]
    trials: list[TrialResult] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    out_dir: Path | None = None
    missing: list[tuple[int, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every (trial, algorithm) pair of the configuration is there."""
        return not self.missing

    def algorithms(self) -> list[str]:
        seen: list[str] = []
        for tr in self.trials:
            if tr.algorithm not in seen:
                seen.append(tr.algorithm)
        return seen

    def curves(self, metric: str = "time_average") -> dict[str, Tensor]:
        """``algorithm -> trials x T`` stacked metric curves."""
        out = {}
        for alg in self.algorithms():
            rows = [getattr(tr, metric) for tr in self.trials if tr.algorithm == alg]
            if all(r is not None for r in rows):
                out[alg] = torch.stack(rows)
        return out

    def summary(self) -> dict[str, dict[str, float]]:
        """Per algorithm: final time-average regret mean / std, trials, wall time per round,
        final Bayes regret and hypervolume (multi-task), final Nyström dictionary size m_T."""
        out = {}
        for alg, curve in self.curves().items():
            final = curve[:, -1] if curve.shape[-1] else curve.new_zeros(curve.shape[0])
            walls = torch.cat([tr.wall_time for tr in self.trials if tr.algorithm == alg])
            entry = {
                "final_time_average_regret_mean": float(final.mean()),
                "final_time_average_regret_std": float(final.std()) if len(final) > 1 else 0.0,
                "trials": int(curve.shape[0]),
                "horizon": int(curve.shape[-1]),
                "wall_time_per_round_s": float(walls.mean()) if walls.numel() else 0.0,
            }
            bayes = self.curves("bayes").get(alg)
            if bayes is not None and bayes.shape[-1]:
                entry["final_bayes_regret_mean"] = float(bayes[:, -1].mean())
            hv = self.curves("hypervolume").get(alg)
            if hv is not None and hv.shape[-1]:
                entry["final_hypervolume_mean"] = float(hv[:, -1].mean())
            sizes = self.curves("dictionary_size").get(alg)
            if sizes is not None and sizes.shape[-1]:
                entry["final_dictionary_size_mean"] = float(sizes[:, -1].mean())
            out[alg] = entry
        return out
