"""What :func:`botorch_mtucb.loop.run_bo_loop` records: one :class:`RoundRecord` per
evaluation and the run's :class:`LoopHistory`, with the regret summaries of paper 000, §2:
the cumulative scalarized regret R_C(T) = Σ_{t≤T} r_t and its time average R_C(T)/T.

A history round-trips through JSON (:meth:`LoopHistory.to_json_dict` /
:meth:`LoopHistory.from_json_dict`, :meth:`LoopHistory.save` / :meth:`LoopHistory.load`), with
the seeds and the generator state a resumed run needs (``run_bo_loop(..., history=...)``).
"""

from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import torch
from botorch.models.model import Model
from torch import Tensor

from botorch_mtucb.acquisition.recommend import ParetoSetRecommendation, recommend_pareto_set
from botorch_mtucb.heavy_tailed.robust import recommend

__all__ = ["LoopHistory", "RoundRecord"]

_FORMAT = "botorch_mtucb.LoopHistory/1"


def _to_list(tensor: Tensor | None) -> list | None:
    """``tensor.tolist()`` with non-finite entries as ``None`` (strict JSON)."""
    if tensor is None:
        return None
    values = tensor.detach().cpu().tolist()
    return [_finite_or_none(v) for v in values] if tensor.dim() == 1 else [
        [_finite_or_none(v) for v in row] for row in values
    ]


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _from_list(values: list | None, dtype: torch.dtype) -> Tensor | None:
    """Inverse of :func:`_to_list` (``None`` entries become NaN)."""
    if values is None:
        return None
    nan = float("nan")
    if values and isinstance(values[0], list):
        values = [[nan if v is None else v for v in row] for row in values]
    else:
        values = [nan if v is None else v for v in values]
    return torch.tensor(values, dtype=dtype)


@dataclass
class RoundRecord:
    """What happened in one evaluation (one point of a round).

    Attributes:
        t: Evaluation index, 1-based (the round index when ``q = 1``).
        x: ``d`` query point x_t.
        y: ``n`` noisy observation y_t.
        weights: ``n`` scalarization weights λ_t (``None`` for single-objective runs).
        regret: Instantaneous scalarized regret r_t (``None`` when f is unknown).
        beta: β used by the acquisition, when it exposes one.
        wall_time: Seconds spent on the round's algorithm steps (not the regret metric).
        dictionary_size: Size m_t of a Nyström dictionary after the update, when the model
            exposes one (``dictionary_size``: MT-BKB; ``None`` otherwise).
        batch: Round (batch) index, 1-based; equal to ``t`` when ``q = 1``.
        failed: The evaluation failed (``observe`` raised or returned a non-finite value);
            the point was not given to the model.
        error: Why it failed (``None`` when it did not).

    Example:
        >>> r = RoundRecord(t=1, x=torch.tensor([0.5]), y=torch.tensor([1.0, 2.0]),
        ...                 weights=torch.tensor([0.3, 0.7]), regret=0.1, beta=1.0,
        ...                 wall_time=0.02, batch=1)
        >>> r.to_dict()["y"]
        [1.0, 2.0]
    """

    t: int
    x: Tensor
    y: Tensor
    weights: Tensor | None
    regret: float | None
    beta: float | None
    wall_time: float
    dictionary_size: int | None = None
    batch: int | None = None
    failed: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (tensors become lists, non-finite entries ``None``), keys in field
        order."""
        out = dict(self.__dict__)
        for key in ("x", "y", "weights"):
            out[key] = _to_list(out[key])
        for key in ("regret", "beta", "wall_time"):
            if out[key] is not None:
                out[key] = _finite_or_none(float(out[key]))
        return out

    @classmethod
    def from_dict(cls, blob: dict[str, Any], dtype: torch.dtype = torch.float64) -> RoundRecord:
        """Inverse of :meth:`to_dict` (tensors of ``dtype``, on the CPU).

        Args:
            blob: A dict of :meth:`to_dict`.
            dtype: Floating dtype of ``x``, ``y`` and ``weights``.

        Returns:
            The record.
        """
        out = dict(blob)
        for key in ("x", "y", "weights"):
            out[key] = _from_list(out.get(key), dtype)
        return cls(**out)


@dataclass
class LoopHistory:
    """Initial data and the per-round records of one run, and what resuming it needs.

    ``X``, ``Y`` hold every evaluation in order, failed ones included (``failed`` marks them;
    their ``y`` is what ``observe`` returned, NaN where it raised); ``observed_X`` /
    ``observed_Y`` hold the data the model was given (initial design and rounds, failed
    evaluations left out).

    Attributes:
        initial_X: ``N0 x d`` initial inputs.
        initial_Y: ``N0 x n`` their observations.
        rounds: One :class:`RoundRecord` per evaluation.
        model: The final model (not exported).
        seed: Base seed of the run's seeded pieces (default design and optimizer, payoff
            tables), ``None`` when unknown.
        rng_seed: Base of the per-round seeds of torch's global RNG (forked), ``None`` for a
            run without ``generator``.
        generator_state: State of the run's ``generator`` after the last recorded round
            (``torch.Generator.get_state()``), ``None`` without one.
        minimize: Indices of the minimised objectives (``run_bo_loop``'s ``minimize``),
            ``None`` when every objective is maximised; the default of
            :meth:`recommended_pareto_set`.

    The run's answer: :meth:`recommended_point` (one objective) or
    :meth:`recommended_pareto_set` (several), from the model's posterior means at the
    evaluated points, not from the raw observations.

    Example:
        >>> h = LoopHistory(initial_X=torch.zeros(2, 1), initial_Y=torch.zeros(2, 2))
        >>> for t, regret in enumerate([0.4, 0.2], start=1):
        ...     h.rounds.append(RoundRecord(t=t, x=torch.full((1,), t / 4), y=torch.ones(2),
        ...                                 weights=None, regret=regret, beta=None,
        ...                                 wall_time=0.0, batch=t))
        >>> h.X.shape, h.Y.shape   # T x d, T x n
        (torch.Size([2, 1]), torch.Size([2, 2]))
        >>> h.time_average_regret()   # R_C(t) / t
        tensor([0.4000, 0.3000], dtype=torch.float64)
        >>> back = LoopHistory.from_json_dict(h.to_json_dict())
        >>> torch.equal(back.X, h.X.double()), back.num_rounds
        (True, 2)
    """

    initial_X: Tensor
    initial_Y: Tensor
    rounds: list[RoundRecord] = field(default_factory=list)
    model: Model | None = None
    seed: int | None = None
    rng_seed: int | None = None
    generator_state: Tensor | None = None
    minimize: tuple[int, ...] | None = None

    @property
    def X(self) -> Tensor:
        """``T x d`` query points x_1, …, x_T (``0 x d`` until the first round)."""
        return torch.stack([r.x for r in self.rounds]) if self.rounds else self.initial_X[:0]

    @property
    def Y(self) -> Tensor:
        """``T x n`` observations y_1, …, y_T (``0 x n`` until the first round; NaN where an
        evaluation raised)."""
        return torch.stack([r.y for r in self.rounds]) if self.rounds else self.initial_Y[:0]

    @property
    def failed(self) -> Tensor:
        """``T`` booleans: evaluation t failed (not given to the model)."""
        return torch.tensor([r.failed for r in self.rounds], dtype=torch.bool)

    @property
    def failed_X(self) -> Tensor:
        """``F x d`` inputs whose evaluation failed: the initial design's with a non-finite
        observation, then the rounds' failed points (``0 x d`` when none failed)."""
        drop = ~torch.isfinite(self.initial_Y).all(dim=-1)
        X = [self.initial_X[drop]] + [r.x.unsqueeze(0) for r in self.rounds if r.failed]
        return torch.cat([x.to(self.initial_X) for x in X])

    @property
    def observed_X(self) -> Tensor:
        """``N x d`` inputs the model was given: the initial design's with a finite
        observation, then the rounds' that did not fail."""
        keep = torch.isfinite(self.initial_Y).all(dim=-1)
        X = [self.initial_X[keep]] + [r.x.unsqueeze(0) for r in self.rounds if not r.failed]
        return torch.cat([x.to(self.initial_X) for x in X])

    @property
    def observed_Y(self) -> Tensor:
        """``N x n`` their observations (aligned with :attr:`observed_X`)."""
        keep = torch.isfinite(self.initial_Y).all(dim=-1)
        Y = [self.initial_Y[keep]] + [r.y.unsqueeze(0) for r in self.rounds if not r.failed]
        return torch.cat([y.to(self.initial_Y) for y in Y])

    @property
    def num_rounds(self) -> int:
        """Number of rounds (batches) recorded."""
        if not self.rounds:
            return 0
        last = self.rounds[-1]
        return last.t if last.batch is None else last.batch

    @property
    def regrets(self) -> Tensor:
        """``T`` instantaneous regrets (float64); raises if f was not known."""
        missing = [r.t for r in self.rounds if r.regret is None]
        if missing:
            raise ValueError(
                f"Regret was not recorded for evaluations t = {missing[:10]}"
                f"{' …' if len(missing) > 10 else ''} (pass `true_f` to run_bo_loop; a saved "
                "regret that was not finite is loaded as None)."
            )
        return torch.tensor([r.regret for r in self.rounds], dtype=torch.float64)

    def cumulative_regret(self) -> Tensor:
        """``T`` cumulative scalarized regret R_C(t) = Σ_{s≤t} r_s."""
        return self.regrets.cumsum(0)

    def time_average_regret(self) -> Tensor:
        """``T`` time-average regret R_C(t)/t (what paper 000 Fig. 1 plots)."""
        r = self.cumulative_regret()
        return r / torch.arange(1, r.numel() + 1, dtype=r.dtype)

    def recommended_pareto_set(
        self,
        model: Model | None = None,
        minimize: tuple[int, ...] | list[int] | None = None,
        ref_point: Tensor | None = None,
        return_details: bool = False,
    ) -> Tensor | ParetoSetRecommendation:
        """The evaluated points whose posterior means are non-dominated: the run's answer.

        :func:`~botorch_mtucb.acquisition.recommend.recommend_pareto_set` on
        :attr:`observed_X` (initial design and rounds, failed evaluations left out) with the
        run's final model; under noise it drops the points that are on the observations'
        front only through their noise.

        Args:
            model: The model whose means decide (default: :attr:`model`, the run's final
                model; a loaded history has none, pass one fitted on :attr:`observed_X`,
                :attr:`observed_Y`).
            minimize: Indices of the objectives to minimise, as ``run_bo_loop``'s
                (default: :attr:`minimize`).
            ref_point: Optional ``n`` reference point (original units); points whose mean
                does not weakly dominate it are not recommended.
            return_details: Return the points, their means and their row indices in
                :attr:`observed_X` (a ``ParetoSetRecommendation``).

        Returns:
            ``K x d`` recommended points, or a ``ParetoSetRecommendation``.

        Example:
            >>> from botorch.models import SingleTaskGP
            >>> X = torch.linspace(0, 1, 5, dtype=torch.float64).unsqueeze(-1)
            >>> Y = torch.cat([X, 1 - X], dim=-1)
            >>> h = LoopHistory(initial_X=X, initial_Y=Y, model=SingleTaskGP(X, Y))
            >>> h.recommended_pareto_set().shape   # K x d
            torch.Size([5, 1])
            >>> h.recommended_pareto_set(minimize=[1], return_details=True).indices
            tensor([4])
        """
        model = self.model if model is None else model
        if model is None:
            raise ValueError(
                "`model` is needed: this history holds no model (e.g. one read back by "
                "LoopHistory.load); pass a model fitted on its observed_X, observed_Y."
            )
        minimize = self.minimize if minimize is None else minimize
        X = self.observed_X
        n = self.initial_Y.shape[-1]
        mask = None
        if minimize is not None:
            indices = list(minimize)
            if any(isinstance(i, bool) or not isinstance(i, Integral) or not 0 <= i < n
                   for i in indices):
                raise ValueError(
                    f"`minimize` must hold objective indices in [0, {n}), got {minimize!r}."
                )
            mask = torch.zeros(n, dtype=torch.bool)
            mask[[int(i) for i in indices]] = True
        return recommend_pareto_set(model, X, minimize=mask, ref_point=ref_point,
                                    return_details=return_details)

    def recommended_point(self, model: Model | None = None) -> Tensor:
        """The evaluated point with the best posterior mean among trusted readings: the answer
        of a single-objective run.

        :func:`~botorch_mtucb.models.recommend` on :attr:`observed_X` (initial design and
        rounds, failed evaluations left out) with the run's final model: the row with the
        largest posterior mean μ(x) among the points that have a reading the model does not
        flag (``suspicious`` of :func:`~botorch_mtucb.models.robust_gp`, the clipped readings
        of a truncating :class:`~botorch_mtucb.models.TruncatedGP`; any other model trusts
        every reading). Under noise or corrupted readings this is not the point of the best
        observation.

        Args:
            model: The model whose means decide (default: :attr:`model`, the run's final
                model; a loaded history has none, pass one fitted on :attr:`observed_X`,
                :attr:`observed_Y`). Single output, maximised.

        Returns:
            ``1 x d``: a row of :attr:`observed_X`.

        Raises:
            ValueError: for a run with several objectives (use
                :meth:`recommended_pareto_set`), a minimised objective, no model, or no
                evaluated point with a trusted reading.

        Example:
            >>> from botorch_mtucb.models import robust_gp
            >>> X = torch.linspace(0, 1, 12, dtype=torch.float64).unsqueeze(-1)
            >>> Y = torch.sin(3 * X)
            >>> Y[2] = 40.0   # a sensor failure: the best observation, never the answer
            >>> h = LoopHistory(initial_X=X, initial_Y=Y, model=robust_gp(X, Y))
            >>> x = h.recommended_point()
            >>> x.shape, bool((x == X[2]).all())
            (torch.Size([1, 1]), False)
        """
        model = self.model if model is None else model
        n = self.initial_Y.shape[-1]
        if n != 1:
            raise ValueError(
                f"recommended_point is for single-objective runs, this one has {n} objectives; "
                "use recommended_pareto_set."
            )
        if self.minimize:
            raise ValueError(
                "recommended_point maximises the model's mean; this history minimises its "
                f"objective (minimize={self.minimize!r}): negate the observations instead."
            )
        if model is None:
            raise ValueError(
                "`model` is needed: this history holds no model (e.g. one read back by "
                "LoopHistory.load); pass a model fitted on its observed_X, observed_Y."
            )
        return recommend(model, self.observed_X)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The rounds as JSON-able dicts."""
        return [r.to_dict() for r in self.rounds]

    def to_json_dict(self) -> dict[str, Any]:
        """Everything but the model (initial data, rounds, seeds, generator state) as one
        strict-JSON dict (non-finite values as ``None``); :meth:`from_json_dict` inverts it."""
        state = self.generator_state
        return {
            "format": _FORMAT,
            "dtype": str(self.initial_X.dtype).removeprefix("torch."),
            "d": self.initial_X.shape[-1],
            "n": self.initial_Y.shape[-1],
            "initial_X": _to_list(self.initial_X),
            "initial_Y": _to_list(self.initial_Y),
            "rounds": self.to_dicts(),
            "seed": self.seed,
            "rng_seed": self.rng_seed,
            "generator_state": None if state is None else base64.b64encode(
                state.cpu().numpy().tobytes()
            ).decode("ascii"),
            "minimize": None if self.minimize is None else list(self.minimize),
        }

    @classmethod
    def from_json_dict(cls, blob: dict[str, Any]) -> LoopHistory:
        """Inverse of :meth:`to_json_dict` (tensors on the CPU, no model).

        Args:
            blob: A dict of :meth:`to_json_dict` (e.g. read back with ``json.load``).

        Returns:
            The history.
        """
        if not isinstance(blob, dict) or "initial_X" not in blob or "rounds" not in blob:
            raise ValueError(
                "`blob` must be a dict of LoopHistory.to_json_dict() (with 'initial_X' and "
                "'rounds')."
            )
        dtype = getattr(torch, blob.get("dtype", "float64"))
        X = _from_list(blob["initial_X"], dtype)
        Y = _from_list(blob["initial_Y"], dtype)
        if "d" in blob:
            X, Y = X.reshape(-1, blob["d"]), Y.reshape(-1, blob["n"])
        state = blob.get("generator_state")
        if state is not None:
            state = torch.frombuffer(bytearray(base64.b64decode(state)), dtype=torch.uint8)
        return cls(
            initial_X=X,
            initial_Y=Y,
            rounds=[RoundRecord.from_dict(r, dtype) for r in blob["rounds"]],
            seed=blob.get("seed"),
            rng_seed=blob.get("rng_seed"),
            generator_state=state,
            minimize=None if blob.get("minimize") is None else tuple(blob["minimize"]),
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_json_dict` to ``path`` as JSON."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json_dict(), f, allow_nan=False)

    @classmethod
    def load(cls, path: str | os.PathLike) -> LoopHistory:
        """Read a history written by :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json_dict(json.load(f))
