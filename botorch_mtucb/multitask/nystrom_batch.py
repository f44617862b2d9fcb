"""A batch of MT-BKB models: what ``NystromMultiTaskGP`` returns for batched training data.

Each batch member draws its own Algorithm-2 dictionary (paper 000, §3.2) from its own slice of
the data, so dictionaries differ in size from member to member and cannot share one batched
embedding: :class:`NystromMultiTaskBatch` holds ``b`` unbatched :class:`NystromMultiTaskGP`
members and stacks their posteriors (a Python loop over the batch members, never over
observations). The transforms of batched data are fitted the BoTorch way before the members
are built (:func:`~botorch_mtucb.multitask.batch_members.batched_members`).
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import BotorchTensorDimensionError
from botorch.models.model import FantasizeMixin, Model
from botorch.models.utils.assorted import fantasize as fantasize_flag
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.settings import propagate_grads
from gpytorch.distributions import MultitaskMultivariateNormal, MultivariateNormal
from torch import Tensor

from botorch_mtucb.multitask.batch_members import batched_members
from botorch_mtucb.utils.validation import check_test_tensor

__all__ = ["NystromMultiTaskBatch"]


#: Per-member attributes without a batched form: absent (``AttributeError``), with a pointer.
_PER_MEMBER = {
    **{name: f"`{name}` differs in size from member to member: read `members[i].{name}`."
       for name in ("dictionary_indices", "dictionary_probabilities", "previous_variances")},
    "likelihood": "A NystromMultiTaskBatch has no joint likelihood: fit each member, "
                  "fit_gpytorch_mll(ExactMarginalLogLikelihood(m.likelihood, m)) for m in "
                  "`members`.",
}


class NystromMultiTaskBatch(Model, FantasizeMixin):
    """A batch of MT-BKB models, one per slice of batched training data.

    ``NystromMultiTaskGP(train_X, train_Y, ...)`` with ``train_X`` ``batch x N x d`` and
    ``train_Y`` ``batch x N x n`` returns this (:meth:`from_batched_data`): batch shape
    ``batch``, as BoTorch's batched models, but *not* an instance of ``NystromMultiTaskGP``
    (``isinstance`` is ``False``; the members are: ``members[i]``, row-major over ``batch``).
    Member ``i`` is exactly the model ``NystromMultiTaskGP(train_X[i], train_Y[i], ...)``:

    * **Dictionaries and reproducibility.** The members are built one after the other in
      row-major order of ``batch``, all drawing from *one* generator (``generator``, or the one
      an integer seed makes; ``None``: torch's global RNG). So the batch is reproducible and
      equals ``g = torch.Generator().manual_seed(s)`` followed by
      ``[NystromMultiTaskGP(train_X[i], train_Y[i], ..., generator=g) for i in row-major
      order]``; rounds of :meth:`condition_on_observations` draw in the same member order.
    * **Hyperparameters.** ``covar_module`` and ``mean_module`` are copied into every member
      (independent hyperparameters, like the batched kernels of BoTorch's batched models; a
      kernel with a batch shape is refused). Fit the members one by one (there is no joint
      likelihood): ``fit_gpytorch_mll(ExactMarginalLogLikelihood(m.likelihood, m))`` for
      ``m`` in ``members``.
    * **Transforms** are fitted on the batched data as BoTorch does, then sliced: a
      ``Standardize(m=n, batch_shape=batch)`` becomes each member's ``Standardize(m=n)`` (the
      same statistics); ``Normalize(d, batch_shape=batch)`` each member's ``Normalize(d)`` on
      its slice; an unbatched learned ``Normalize(d)`` learns *one* set of bounds from all
      members (BoTorch's semantics), which the members keep fixed.

    What the batch offers (``batch_shape = fantasy dims x batch``):

    * ``posterior(X)`` at ``batch' x batch_shape x q x d`` (``X`` broadcast against the batch
      shape, ``q x d`` too): a ``GPyTorchPosterior`` with a ``MultitaskMultivariateNormal``
      (mean ``batch' x batch_shape x q x n``), ``observation_noise`` bool (each member's own
      η) or a ``... x q x n`` tensor, ``output_indices``, ``posterior_transform``;
    * the task-posterior protocols of :mod:`botorch_mtucb.protocols` with batch-shaped
      results: ``task_posterior``, ``projected_task_posterior`` (``batch' x batch_shape x
      ...``), ``information_gain()``, ``noise``, ``log_det_variance_sum`` and
      ``dictionary_size`` (each a ``batch_shape`` tensor: not the 0-dim / ``int`` of an
      unbatched model, so the theory's β schedules (``TheoremTwoBeta``, ``TheoremThreeBeta``)
      refuse a batch; give ``ScalarizedMultiTaskUCB`` a number as β).
      ``dictionary_indices`` / ``dictionary_probabilities`` are ragged and ``likelihood``
      joint: read them from ``members[i]`` (the batch raises ``AttributeError``);
    * ``condition_on_observations`` (batched, see there) and ``fantasize`` (fantasy batch
      shape ``num_fantasies x batch``), ``resample_dictionary()``, ``state_dict`` /
      ``load_state_dict`` (each member's dictionary indices and probabilities included),
      ``.to``, ``deepcopy`` and pickling; ``subset_output`` is refused (coupled tasks), as for
      a single model.

    Example:
        >>> from botorch_mtucb.models import NystromMultiTaskGP
        >>> Xb, Yb = train_X.expand(2, -1, -1), train_Y.expand(2, -1, -1)  # 2 x N x d, 2 x N x n
        >>> batch = NystromMultiTaskGP(Xb, Yb, generator=0)  # a NystromMultiTaskBatch
        >>> mean, blocks = batch.task_posterior(torch.rand(2, 5, d, dtype=torch.float64))
        >>> mean.shape, batch.members[1].dictionary_size  # 2 x 5 x n
    """

    def __init__(self, members: list[Model], batch: torch.Size) -> None:
        """
        Args:
            members: ``prod(batch)`` unbatched-data models in row-major order of ``batch``,
                all of the same batch shape (their fantasy dimensions, ``()`` at first).
            batch: The batch shape of the training data (the member layout).
        """
        super().__init__()
        batch = torch.Size(batch)
        if len(members) != batch.numel() or not members:
            raise ValueError(f"{len(members)} members for batch shape {tuple(batch)}.")
        shapes = {tuple(m.batch_shape) for m in members}
        if len(shapes) != 1:
            raise ValueError(f"The members have different batch shapes {sorted(shapes)}.")
        self.members = torch.nn.ModuleList(members)
        self._batch = batch

    @classmethod
    def from_batched_data(cls, model_cls: type, args: tuple, kwargs: dict) -> NystromMultiTaskBatch:
        """The batch of ``model_cls(train_X[i], train_Y[i], ...)`` over the data's batch.

        Args:
            model_cls: The model class (``NystromMultiTaskGP``).
            args: Its positional arguments (``train_X`` ``batch x N x d`` and ``train_Y``
                ``batch x N x n`` first, or as keywords).
            kwargs: Its keyword arguments.

        Raises:
            ValueError: if ``train_X`` and ``train_Y`` are not tensors of the same non-empty
                batch shape, a kernel or transform does not fit that batch, or the generator
                is not a ``torch.Generator``, an integer or ``None``.
            NotImplementedError: for a stateful transform other than ``Normalize`` /
                ``InputStandardize`` / ``Standardize`` (see the class docstring).
        """
        members, batch = batched_members(model_cls, args, kwargs)
        return cls(members, batch)

    # ------------------------------------------------------------------ shapes
    @property
    def num_outputs(self) -> int:
        return self.members[0].num_outputs

    @property
    def num_tasks(self) -> int:
        return self.members[0].num_outputs

    @property
    def batch_shape(self) -> torch.Size:
        """``fantasy dims x batch``: the members' batch shape, then the data's batch."""
        return self.members[0].batch_shape + self._batch

    def _split(self, T: Tensor, name: str) -> tuple[torch.Size, list[Tensor]]:
        """``T`` (``... x batch x r x c``, ``batch`` broadcastable) cut into member slices.

        Returns:
            The leading shape in front of ``batch`` and the members' ``... x r x c`` slices.
        """
        if T.dim() < 2:
            raise BotorchTensorDimensionError(
                f"`{name}` must be batch' x batch_shape x r x c, got shape {tuple(T.shape)}.")
        b = self._batch
        lead = T.shape[:-2]
        if len(lead) < len(b):
            T = T.reshape(*(1,) * (len(b) - len(lead)), *T.shape)
            lead = T.shape[:-2]
        outer, inner = lead[: len(lead) - len(b)], lead[len(lead) - len(b):]
        if any(i not in (1, j) for i, j in zip(inner, b, strict=True)):
            raise ValueError(
                f"`{name}` of shape {tuple(T.shape)} does not broadcast with the batch "
                f"{tuple(b)} of the model's batch shape {tuple(self.batch_shape)} (expected "
                f"batch' x {' x '.join(map(str, self.batch_shape))} x {T.shape[-2]} x "
                f"{T.shape[-1]})."
            )
        T = T.expand(*outer, *b, *T.shape[-2:]).reshape(*outer, b.numel(), *T.shape[-2:])
        return outer, list(T.unbind(len(outer)))

    def _stack(self, parts: list[Tensor], core: int) -> Tensor:
        """Stack member results (``... x core dims``) into ``... x batch x core dims``."""
        at = parts[0].dim() - core
        out = torch.stack(parts, dim=at)
        return out.reshape(*out.shape[:at], *self._batch, *out.shape[at + 1:])

    def _member_shaped(self, values: list[Tensor]) -> Tensor:
        """Per-member scalars (or member-batch tensors) as one ``batch_shape`` tensor."""
        mb = self.members[0].batch_shape
        return self._stack([torch.as_tensor(v).expand(mb) for v in values], 0)

    # ------------------------------------------------------------------ posterior
    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior of every member at its slice of ``X`` (stacked along the batch).

        Args:
            X: ``batch' x batch_shape x q x d`` inputs (broadcast against ``batch_shape``).
            output_indices: Tasks to keep (all by default).
            observation_noise: ``True`` adds each member's η; a ``batch' x batch_shape x q x
                n`` tensor (broadcastable) adds those outcome-transformed variances.
            posterior_transform: Applied last (e.g. ``ScalarizedPosteriorTransform``).

        Returns:
            ``GPyTorchPosterior``: mean ``batch' x batch_shape x q x n'``, interleaved
            covariance ``batch' x batch_shape x (q·n') x (q·n')``, as a member's posterior.
        """
        _, Xs = self._split(check_test_tensor(X, "X"), "X")
        if isinstance(observation_noise, Tensor):
            _, noises = self._split(observation_noise, "observation_noise")
        else:
            noises = [observation_noise] * len(Xs)
        dists = []
        for m, x, o in zip(self.members, Xs, noises, strict=True):
            post = m.posterior(x, output_indices=output_indices, observation_noise=o)
            if not isinstance(post, GPyTorchPosterior):
                raise NotImplementedError(
                    f"A batch needs Gaussian member posteriors; the outcome transform "
                    f"{type(m.outcome_transform).__name__} gives {type(post).__name__}."
                )
            dists.append(post.distribution)
        multi = isinstance(dists[0], MultitaskMultivariateNormal)
        mean = self._stack([d.mean for d in dists], 2 if multi else 1)
        cov = self._stack([d.lazy_covariance_matrix.to_dense() for d in dists], 2)
        if multi:
            mvn = MultitaskMultivariateNormal(mean, cov, interleaved=dists[0]._interleaved)
        else:
            mvn = MultivariateNormal(mean, cov)
        post = GPyTorchPosterior(distribution=mvn)
        return post if posterior_transform is None else posterior_transform(post)

    def task_posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Each member's mean and task blocks Γ_t(x, x) at its slice of ``X``.

        Args:
            X: ``batch' x batch_shape x q x d`` inputs.

        Returns:
            ``(mean, blocks)``: ``batch' x batch_shape x q x n`` and ``... x q x n x n``.
        """
        _, Xs = self._split(check_test_tensor(X, "X"), "X")
        outs = [m.task_posterior(x) for m, x in zip(self.members, Xs, strict=True)]
        return self._stack([o[0] for o in outs], 2), self._stack([o[1] for o in outs], 3)

    def projected_task_posterior(self, X: Tensor, directions: Tensor) -> tuple[Tensor, Tensor]:
        """Each member's mean and ``wᵀ Γ_t(x, x) w`` along the ``n x k`` ``directions``.

        Returns:
            ``(mean, quad)``: ``batch' x batch_shape x q x n`` and ``... x q x k``.
        """
        _, Xs = self._split(check_test_tensor(X, "X"), "X")
        outs = [m.projected_task_posterior(x, directions)
                for m, x in zip(self.members, Xs, strict=True)]
        return self._stack([o[0] for o in outs], 2), self._stack([o[1] for o in outs], 2)

    # ------------------------------------------------------------------ protocols
    def information_gain(self) -> Tensor:
        """Each member's Nyström information gain, a ``batch_shape`` tensor."""
        return self._member_shaped([m.information_gain() for m in self.members])

    @property
    def noise(self) -> Tensor:
        """Each member's η (outcome-transformed scale), a ``batch_shape`` tensor."""
        return self._member_shaped([m.noise for m in self.members])

    @property
    def log_det_variance_sum(self) -> Tensor:
        """Each member's Theorem-3 log-det sum, a ``batch_shape`` tensor."""
        return self._member_shaped([m.log_det_variance_sum for m in self.members])

    @property
    def dictionary_size(self) -> Tensor:
        """Each member's m_t, a ``batch_shape`` LongTensor (not an ``int``)."""
        sizes = [torch.tensor(m.dictionary_size) for m in self.members]
        return self._member_shaped(sizes)

    def __getattr__(self, name: str) -> Any:
        if name in _PER_MEMBER:  # an AttributeError: hasattr and the protocols see none
            raise AttributeError(_PER_MEMBER[name])
        return super().__getattr__(name)

    @property
    def epsilon(self) -> float:
        """ε of Theorem 3 (common to the members)."""
        return self.members[0].epsilon

    @property
    def delta(self) -> float:
        """δ of Theorem 3 (common to the members)."""
        return self.members[0].delta

    @property
    def generator(self) -> torch.Generator | None:
        """The generator the members draw their dictionaries from (shared)."""
        return self.members[0].generator

    def random_generators(self) -> list[torch.Generator]:
        """The members' generators, each once (``RandomStateModel``)."""
        gens = [g for m in self.members for g in m.random_generators()]
        return list({id(g): g for g in gens}.values())

    def resample_dictionary(self) -> None:
        """Redraw every member's dictionary, in row-major member order."""
        for m in self.members:
            m.resample_dictionary()

    # ------------------------------------------------------------------ conditioning
    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> NystromMultiTaskBatch:
        """Condition every member on its slice of ``(X, Y)``.

        ``X`` ``... x batch x m x d`` and ``Y`` ``... x batch x m x n`` (``batch`` broadcast,
        leading dims too). Member ``i`` gets ``X[..., i, :, :]`` and ``Y[..., i, :, :]``: with
        no leading dims (one real observation block per member) that is one round of
        Algorithm 2 (a fresh dictionary, drawn in member order); with leading dims (e.g. the
        ``num_fantasies`` of :meth:`fantasize`) a batched update that keeps the dictionary.
        The new batch shape is ``leading x batch``.

        Args:
            X: New inputs (original scale).
            Y: New observations (original outcome scale).
            noise: Per-observation noise variances shaped like ``Y`` (outcome-transformed;
                batched updates only, as for a single model), or ``None``.
        """
        if X.dim() < 2 or Y.dim() < 2:
            raise ValueError(
                f"`X` must be ... x m x d and `Y` ... x m x n, got {tuple(X.shape)} and "
                f"{tuple(Y.shape)}."
            )
        _, Xs = self._split(X, "X")
        _, Ys = self._split(Y, "Y")
        ns = [None] * len(Xs) if noise is None else self._split(noise, "noise")[1]
        members = [m.condition_on_observations(x, y, noise=v, **kwargs)
                   for m, x, y, v in zip(self.members, Xs, Ys, ns, strict=True)]
        return NystromMultiTaskBatch(members, self._batch)

    def fantasize(
        self, X: Tensor, sampler: Any, observation_noise: Tensor | None = None, **kwargs: Any
    ) -> NystromMultiTaskBatch:
        """BoTorch's ``fantasize``: ``Y ~ sampler(posterior(X, observation_noise))`` then
        :meth:`condition_on_observations` (batch shape ``num_fantasies x batch_shape``).

        Args:
            X: ``batch' x batch_shape x q x d`` fantasy points.
            sampler: A BoTorch ``MCSampler``.
            observation_noise: ``None`` (each member's η) or a ``... x q x n`` tensor of
                outcome-transformed variances.
            kwargs: ``propagate_grads``; the rest goes to ``condition_on_observations``.
        """
        if kwargs.pop("evaluation_mask", None) is not None:
            raise NotImplementedError("`evaluation_mask` is not supported.")
        grads = kwargs.pop("propagate_grads", False)
        with fantasize_flag():
            with propagate_grads(grads):
                post = self.posterior(
                    X, observation_noise=True if observation_noise is None else observation_noise
                )
            Y = sampler(post)
            if observation_noise is not None:
                kwargs["noise"] = observation_noise.expand(Y.shape[1:])
            return self.condition_on_observations(X, Y, **kwargs)

    def subset_output(self, idcs: list[int]) -> Model:
        """Refused, as for a single model: the tasks are coupled."""
        return self.members[0].subset_output(idcs)

    # ------------------------------------------------------------------ state
    def get_extra_state(self) -> dict[str, Any]:
        """The data's batch shape (the members hold their own state, dictionaries included)."""
        return {"batch": tuple(self._batch)}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        if torch.Size(state["batch"]) != self._batch:
            raise ValueError(f"A state of batch {tuple(state['batch'])} does not fit a batch "
                             f"{tuple(self._batch)}.")

    def load_state_dict(self, state_dict, strict: bool = True, keep_transforms: bool = True,
                        assign: bool = False) -> None:
        """Each member's ``load_state_dict`` (BoTorch's, transforms kept by default) on its
        ``members.<i>.`` entries, after checking the batch and (``strict``) the keys."""
        extra = state_dict.get("_extra_state")
        if extra is not None:
            self.set_extra_state(extra)
        if strict:
            unknown = [k for k in state_dict if k != "_extra_state" and not (
                k.startswith("members.") and k.split(".")[1].isdigit()
                and int(k.split(".")[1]) < len(self.members))]
            if unknown:
                raise RuntimeError(f"Unexpected key(s) in the state: {unknown[:5]}.")
        for i, m in enumerate(self.members):
            prefix = f"members.{i}."
            own = {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)}
            m.load_state_dict(own, strict=strict, keep_transforms=keep_transforms, assign=assign)

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")
