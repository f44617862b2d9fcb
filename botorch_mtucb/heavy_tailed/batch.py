"""Batches of the heavy-tailed models: batched training data, fantasies, batched conditioning.

* :class:`HeavyTailedBatch` — a batch of heavy-tailed models, each member holding its own
  stores (truncation depends on the rewards, so each batch member is its own truncated model):
  what ``TruncatedGP`` / ``AdaptiveTruncationGP`` return for batched training data
  (:meth:`HeavyTailedBatch.from_batched_data`), for batched ``condition_on_observations`` and
  for ``fantasize``;
* :func:`fantasize` — BoTorch's ``Model.fantasize`` for models without a GPyTorch likelihood.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch
from botorch.models.model import FantasizeMixin, Model
from botorch.models.utils.assorted import fantasize as fantasize_flag
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_mtucb.protocols import RandomStateModel
from botorch_mtucb.utils.batched_data import batch_of_training_data
from botorch_mtucb.utils.validation import check_test_tensor

__all__ = ["HeavyTailedBatch", "fantasize"]


def fantasize(model: Model, X: Tensor, sampler, observation_noise: Tensor | None = None,
               **kwargs: Any) -> Model:
    """BoTorch's ``Model.fantasize`` for the heavy-tailed models (no GPyTorch likelihood).

    ``Y ~ sampler(posterior(X, observation_noise=True))`` (noise variance ``λ``), shape
    ``num_fantasies x batch x q x 1``, then the batched ``condition_on_observations``: a
    fantasy model of batch shape ``num_fantasies x batch``.

    Args:
        model: A heavy-tailed model or batch.
        X: ``batch x q x d`` fantasy inputs.
        sampler: A BoTorch ``MCSampler``.
        observation_noise: Only ``None`` (the noise is the regulariser ``λ``).
        kwargs: Passed to ``condition_on_observations``.
    """
    if observation_noise is not None:
        raise ValueError("Heavy-tailed models fantasize with noise variance λ: "
                         "`observation_noise` must be None.")
    kwargs.pop("propagate_grads", None)
    with fantasize_flag():
        Y = sampler(model.posterior(X, observation_noise=True))
    return model.condition_on_observations(X, Y, **kwargs)


class HeavyTailedBatch(Model, FantasizeMixin):
    """A batch of heavy-tailed models (batched training data, fantasies, batched conditioning).

    Truncation depends on the rewards, so every batch member is its own truncated model:
    ``TruncatedGP`` / ``AdaptiveTruncationGP`` fitted and truncated on its own slice of the
    data. ``posterior`` at ``batch' x batch_shape x q x d`` (``batch'`` broadcast, ``q x d``
    too) stacks the members' posteriors along ``batch_shape``: a Python loop over the members
    (the batch), never over observations. Each member keeps its own regulariser ``λ``
    (``noise``, ``batch_shape``), added to its own diagonal with ``observation_noise=True``.

    Built by

    * ``TruncatedGP(train_X, train_Y, ...)`` / ``AdaptiveTruncationGP(...)`` with batched data
      ``batch x N x d`` / ``batch x N x 1`` (:meth:`from_batched_data`): batch shape
      ``batch``, as BoTorch's ``SingleTaskGP``. The result is a ``HeavyTailedBatch``, *not* an
      instance of the model class: ``isinstance(TruncatedGP(batched_X, batched_Y),
      TruncatedGP)`` is ``False`` (the members are; ``members[i]``, row-major over ``batch``);
    * ``model.condition_on_observations(X, Y)`` with ``X`` ``batch x q x d`` and ``Y``
      ``num_fantasies x batch x q x 1`` (batch shape ``num_fantasies x batch``);
    * ``model.fantasize(X, sampler)`` (batch shape ``num_fantasies x batch``).

    It offers ``posterior``, ``mean_and_variance``
    (:class:`~botorch_mtucb.protocols.MarginalMomentsModel`), ``noise``
    (:class:`~botorch_mtucb.protocols.RegularisedModel`), ``beta()``
    (:class:`~botorch_mtucb.protocols.WidthScheduleModel`), ``condition_on_observations``,
    ``fantasize``, ``train_X`` / ``train_Y``, ``state_dict`` round trips, ``.to``, deepcopy and
    pickling.

    Example:
        >>> import torch
        >>> from botorch.sampling import SobolQMCNormalSampler
        >>> from botorch_mtucb.models import HeavyTailedBatch, TruncatedGP
        >>> X = torch.rand(3, 10, 1, dtype=torch.float64)  # 3 data sets of 10 rounds
        >>> Y = torch.sin(6 * X) + 0.1 * torch.randn(3, 10, 1, dtype=torch.float64)
        >>> batch = TruncatedGP(X, Y, v=1.0)
        >>> isinstance(batch, HeavyTailedBatch), batch.batch_shape, len(batch.members)
        (True, torch.Size([3]), 3)
        >>> batch.posterior(torch.rand(3, 4, 1, dtype=torch.float64)).mean.shape
        torch.Size([3, 4, 1])
        >>> sampler = SobolQMCNormalSampler(torch.Size([2]))
        >>> fantasy = batch.fantasize(torch.rand(3, 1, 1, dtype=torch.float64), sampler)
        >>> fantasy.batch_shape  # num_fantasies x batch
        torch.Size([2, 3])
    """

    _num_outputs = 1
    fantasize = fantasize

    def random_generators(self) -> list[torch.Generator]:
        """The members' generators, each once (``RandomStateModel``)."""
        gens = [g for m in self.members if isinstance(m, RandomStateModel)
                for g in m.random_generators()]
        return list({id(g): g for g in gens}.values())

    def __init__(self, members: list[Model], batch_shape: torch.Size) -> None:
        """
        Args:
            members: ``prod(batch_shape)`` models in row-major order of ``batch_shape``.
            batch_shape: The batch shape.
        """
        super().__init__()
        if len(members) != batch_shape.numel():
            raise ValueError(f"{len(members)} members for batch shape {tuple(batch_shape)}.")
        self.members = torch.nn.ModuleList(members)
        self._batch_shape = torch.Size(batch_shape)

    @classmethod
    def from_batched_data(cls, model_cls: type, args: tuple, kwargs: dict) -> HeavyTailedBatch:
        """The batch of ``model_cls(train_X[i], train_Y[i], *rest, **kwargs)`` over the batch.

        ``train_X`` ``batch x N x d`` and ``train_Y`` ``batch x N x 1`` (the first two of
        ``args`` / ``kwargs``; equal batch shapes, at least one member). Members are built in
        row-major order of ``batch`` with the *same* other arguments, as ``b`` models built in
        a loop: a kernel, feature map or generator passed in is shared by the members (so a
        shared generator's draws advance from member to member), except a batched kernel
        (``batch_shape == batch``, as ``SingleTaskGP`` takes), of which member ``i`` gets its
        slice ``kernel[i]`` (GPyTorch's kernel indexing: a copy). Keywords named in
        ``model_cls._PER_MEMBER_KWARGS`` (per-observation tensors such as
        ``dictionary_variances``) may be batched, ``batch x N``: member ``i`` gets its slice.

        Raises:
            ValueError: if the batch shapes of ``train_X`` and ``train_Y`` differ, a batched
                keyword or kernel does not carry the batch, or the batch is empty.
        """
        args, kwargs = list(args), dict(kwargs)
        X = args.pop(0) if args else kwargs.pop("train_X", None)
        Y = args.pop(0) if args else kwargs.pop("train_Y", None)
        batch = batch_of_training_data(X, Y, "1")
        M = batch.numel()
        Xf, Yf = X.reshape(M, *X.shape[-2:]), Y.reshape(M, *Y.shape[-2:])
        sliced = {}
        for name in getattr(model_cls, "_PER_MEMBER_KWARGS", ()):
            value = kwargs.get(name)
            if isinstance(value, Tensor) and value.dim() > 1:
                if value.shape[: len(batch)] != batch:
                    raise ValueError(
                        f"Batched `{name}` must have the batch shape {tuple(batch)} of "
                        f"`train_X` in front, got shape {tuple(value.shape)}."
                    )
                sliced[name] = value.reshape(M, *value.shape[len(batch):])
        kernels = {}  # batched kernels (batch_shape == batch): member i gets kernel[i]
        for key, value in [*enumerate(args), *kwargs.items()]:
            base = getattr(value, "base_kernel", None)  # a feature map's kernel
            if not isinstance(value, Kernel) and isinstance(base, Kernel) and base.batch_shape:
                raise ValueError(
                    f"{type(value).__name__} with a batched base kernel is not supported for "
                    "batched training data: pass an unbatched kernel (shared by the members)."
                )
            if isinstance(value, Kernel) and len(value.batch_shape):
                if value.batch_shape != batch:
                    if isinstance(key, int):  # a positional argument after train_X, train_Y
                        params = list(inspect.signature(model_cls.__init__).parameters)[3:]
                        name = f"`{params[key]}`" if key < len(params) else f"argument {key + 3}"
                    else:
                        name = f"`{key}`"
                    raise ValueError(
                        f"A batched kernel ({name}) must have the batch shape {tuple(batch)} of "
                        f"`train_X`, got batch_shape {tuple(value.batch_shape)}."
                    )
                kernels[key] = value
        members = []
        for i in range(M):
            index = tuple(int(j) for j in torch.unravel_index(torch.tensor(i), batch))
            a = [kernels[j][index] if j in kernels else v for j, v in enumerate(args)]
            kw = {**kwargs, **{k: v[i] for k, v in sliced.items()},
                  **{k: v[index] for k, v in kernels.items() if isinstance(k, str)}}
            members.append(model_cls(Xf[i], Yf[i], *a, **kw))
        return cls(members, batch)

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return self._batch_shape

    @property
    def lam(self) -> float:
        """The members' common regulariser ``λ`` (``noise`` holds every member's).

        Raises:
            ValueError: if the members have different ``λ`` (data-driven batched models).
        """
        lams = {m.lam for m in self.members}
        if len(lams) != 1:
            raise ValueError("The batch members have different regularisers λ; read `noise` "
                             "(batch_shape) instead of `lam`.")
        return self.members[0].lam

    @property
    def noise(self) -> Tensor:
        """Every member's regulariser ``λ``, a ``batch_shape`` tensor (do not modify)."""
        return torch.stack([m.noise for m in self.members]).reshape(self._batch_shape)

    def beta(self) -> float | Tensor:
        """The members' widths ``β_{t+1}``: a float when they agree, else a float64 tensor
        ``batch_shape x 1`` — the shape that analytic acquisitions
        (:class:`~botorch_mtucb.acquisition.HeavyTailedUCB`, BoTorch's ``UpperConfidenceBound`` with
        ``beta ** 2``) broadcast against their ``batch' x batch_shape x 1`` means (with the output
        dimension still there)."""
        betas = [m.beta() for m in self.members]
        if all(b == betas[0] for b in betas):
            return betas[0]
        return torch.tensor(betas, dtype=torch.float64).reshape(*self._batch_shape, 1)

    @property
    def num_observations(self) -> int:
        """Number of observations ``t`` of every member."""
        return self.members[0].num_observations

    @property
    def train_X(self) -> Tensor:
        """``batch_shape x t x d`` inputs of the members in round order."""
        X = torch.stack([m.train_X for m in self.members])
        return X.reshape(*self._batch_shape, *X.shape[1:])

    @property
    def train_Y(self) -> Tensor:
        """``batch_shape x t x 1`` raw rewards of the members in round order."""
        Y = torch.stack([m.train_Y for m in self.members])
        return Y.reshape(*self._batch_shape, *Y.shape[1:])

    def get_extra_state(self) -> dict[str, Any]:
        """The batch shape (the members hold their own state)."""
        return {"batch_shape": tuple(self._batch_shape)}

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any) -> None:
        """Refuse, with nothing changed yet, a state that holds different values for a module
        the members share here (a kernel passed to the batched constructor): loading it would
        leave every member with the last member's values."""
        seen: dict[int, str] = {}
        for i, member in enumerate(self.members):
            for name, sub in member.named_modules(remove_duplicate=False):
                if sub is member:
                    continue
                here = f"{prefix}members.{i}.{name}."
                first = seen.setdefault(id(sub), here)
                if first == here:
                    continue
                for key, _ in [*sub.named_parameters(recurse=False),
                               *sub.named_buffers(recurse=False)]:
                    a, b = state_dict.get(first + key), state_dict.get(here + key)
                    if a is not None and b is not None and not torch.equal(a, b):
                        raise ValueError(
                            f"`{first}{key}` and `{here}{key}` differ in the state, but this "
                            "batch's members share that module (one kernel passed to the "
                            "batched constructor); build the batch the way the state's was."
                        )
        super()._load_from_state_dict(state_dict, prefix, *args)

    def set_extra_state(self, state: dict[str, Any]) -> None:
        """Take the loaded batch shape (the number of members must match)."""
        shape = torch.Size(state["batch_shape"])
        if shape.numel() != len(self.members):
            raise ValueError(f"A state of batch shape {tuple(shape)} does not fit a batch of "
                             f"{len(self.members)} members.")
        self._batch_shape = shape

    def _moments_out(self, X: Tensor, full: bool) -> tuple[Tensor, Tensor]:
        bs, (q, d) = self._batch_shape, X.shape[-2:]
        try:
            shape = torch.broadcast_shapes(X.shape[:-2], bs)
        except RuntimeError:
            raise ValueError(
                f"`X` of shape {tuple(X.shape)} does not broadcast with the model's batch shape "
                f"{tuple(bs)} (expected batch' x {' x '.join(map(str, bs))} x q x d)."
            ) from None
        lead = math.prod(shape[: len(shape) - len(bs)])  # explicit: X may be empty
        Xe = X.expand(*shape, q, d).reshape(lead, bs.numel(), q, d)
        G = self._sibling_groups()
        if G:  # fantasies of G inputs: one kernel call and one solve per input
            m = len(self.members) // G
            Xg = Xe.reshape(Xe.shape[0], m, G, q, d)
            outs = [self._group_moments(Xg[:, :, i], i, G, full) for i in range(G)]
            mean = torch.stack([o[0] for o in outs], 2).reshape(*shape, q)
            var = torch.stack([o[1] for o in outs], 2)
        else:
            outs = [m._moments_out(Xe[:, i], full) for i, m in enumerate(self.members)]
            mean = torch.stack([o[0] for o in outs], 1).reshape(*shape, q)
            var = torch.stack([o[1] for o in outs], 1)
        return mean, var.reshape(*shape, q, q) if full else var.reshape(*shape, q)

    def _apply(self, fn, *args: Any, **kwargs: Any):
        """``.to`` and friends. Fantasy siblings share every sub-module with the first ``G``
        members, so a conversion that changes neither dtype nor device (BoTorch's
        ``acqf.to(X)`` on every evaluation) is applied to those ``G`` only (the same tensors);
        any other conversion goes to every member (which then rebuild their own factors)."""
        G = self._sibling_groups()
        if G:
            probe = self.members[0]._y_buf.data[:1]
            moved = fn(probe)
            if moved.dtype == probe.dtype and moved.device == probe.device:
                for member in list(self.members)[:G]:
                    member._apply(fn, *args, **kwargs)
                return self
        return super()._apply(fn, *args, **kwargs)

    def _sibling_groups(self) -> int:
        """``G`` when member ``j`` shares its inputs, kernel, centre and Cholesky factor with
        member ``j % G`` (the fantasies :meth:`condition_on_observations` built for ``G``
        inputs, checked by identity every call, so a reloaded or moved batch falls back to the
        member loop); else 0."""
        G = self.__dict__.get("_sibling_period", 0)
        if not G:
            return 0
        ms = self.members
        for j in range(G, len(ms)):
            a, b = ms[j], ms[j % G]
            if not (a._L is b._L and a._X_buf is b._X_buf and a._t == b._t
                    and a.covar_module is b.covar_module and a._loc == b._loc):
                return 0
        return G

    def _group_moments(self, X: Tensor, i: int, G: int, full: bool) -> tuple[Tensor, Tensor]:
        """Moments of the siblings ``i, i + G, …`` at ``batch' x m x q x d`` (sibling ``f``
        at ``X[:, f]``) with the factor of member ``i`` and the stacked weights."""
        base = self.members[i]
        alphas = torch.stack([m._alpha_vec for m in list(self.members)[i::G]])
        mean, var = base._centred_moments(base._check_test_inputs(X), full, alphas)
        if base._loc != 0.0:
            mean = mean + base._loc
        if base._cdtype != base._dtype:
            return mean.to(base._dtype), var.to(base._dtype)
        return mean, var

    def posterior(self, X: Tensor, output_indices: list[int] | None = None,
                  observation_noise: bool | Tensor = False, posterior_transform=None,
                  **kwargs: Any) -> GPyTorchPosterior:
        """Joint posterior at ``batch' x batch_shape x q x d`` (as a member model; ``X`` checked
        by :func:`~botorch_mtucb.utils.validation.check_test_tensor`)."""
        check_test_tensor(X, "X")
        if output_indices not in (None, [0]):
            raise ValueError(f"This model has a single output; got {output_indices}.")
        mean, cov = self._moments_out(X, full=True)
        if isinstance(observation_noise, Tensor):
            raise ValueError("`observation_noise` must be a bool for this model.")
        if observation_noise:  # each member's own λ on its diagonal
            lam = self.noise.to(cov).reshape(*self._batch_shape, 1, 1)
            cov = cov + lam * torch.eye(cov.shape[-1], dtype=cov.dtype, device=cov.device)
        post = self.members[0]._make_posterior(mean, cov, 0.0, False)
        return post if posterior_transform is None else posterior_transform(post)

    def mean_and_variance(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal mean and variance, each ``batch' x batch_shape x q`` (``X`` checked by
        :func:`~botorch_mtucb.utils.validation.check_test_tensor`)."""
        check_test_tensor(X, "X")
        return self._moments_out(X, full=False)

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs: Any) -> HeavyTailedBatch:
        """Condition every member on its slice: ``X`` ``... x q x d``, ``Y`` ``... x q x 1``
        (leading shapes broadcast to ``batch' x batch_shape``; new batch shape
        ``batch' x batch_shape``). When the batch grows (fantasies), Nyström members keep
        their dictionaries unless ``resample_dictionary=True``; when it does not (each member
        conditioned on its own real observations), they behave as unbatched models (redraw
        unless ``resample_dictionary=False``). ``noise`` (optional, broadcastable to ``Y``):
        the noise variances of the new observations (each member's ``λ`` when ``None``; a
        variance other than ``λ`` is supported by ``TruncatedGP`` on a continuous domain)."""
        noise = kwargs.pop("noise", None)
        bs = self._batch_shape
        if X.dim() < 2 or Y.dim() < 2 or Y.shape[-1] != 1 or Y.shape[-2] != X.shape[-2]:
            raise ValueError(f"`X` must be ... x q x d and `Y` ... x q x 1 with the same q; got "
                             f"{tuple(X.shape)} and {tuple(Y.shape)}.")
        try:
            shape = torch.broadcast_shapes(X.shape[:-2], Y.shape[:-2], bs)
        except RuntimeError:
            raise ValueError(
                f"The batch shapes of `X` {tuple(X.shape[:-2])} and `Y` {tuple(Y.shape[:-2])} "
                f"do not broadcast with the model's batch shape {tuple(bs)}."
            ) from None
        if shape[len(shape) - len(bs):] != bs:
            raise ValueError(f"Batch shape {tuple(shape)} does not end with {tuple(bs)}.")
        q, M = X.shape[-2], bs.numel()
        Xe = X.expand(*shape, q, X.shape[-1]).reshape(-1, q, X.shape[-1])
        Ye = Y.expand(*shape, q, 1).reshape(-1, q, 1)
        Ne = None if noise is None else _expand_noise(noise, shape, q)
        if kwargs.get("resample_dictionary") is None:  # fantasies: Nyström members keep theirs
            kwargs["resample_dictionary"] = None if torch.Size(shape) == bs else False
        # Leading batch dimensions over which X is constant (fantasies: m reward vectors for
        # the same inputs): members f * G + g, f < m, share the conditioning of input g.
        x_batch = (1,) * (len(shape) - X.dim() + 2) + tuple(X.shape[:-2])
        k = 0
        while k < len(shape) - len(bs) and x_batch[k] == 1:
            k += 1
        m = math.prod(shape[:k])
        if m > 1 and Ne is None and all(hasattr(p, "_fantasy_siblings") for p in self.members):
            G = Xe.shape[0] // m
            Xg, Yg = Xe.reshape(m, G, q, -1), Ye.reshape(m, G, q, 1)
            groups = [self.members[g % M]._fantasy_siblings(Xg[0, g], Yg[:, g], kwargs)
                      for g in range(G)]
            if all(s is not None for s in groups):
                new = HeavyTailedBatch([s[f] for f in range(m) for s in groups],
                                       torch.Size(shape))
                new._sibling_period = G
                return new
        if Ne is not None:
            members = [
                self.members[j % M].condition_on_observations(Xe[j], Ye[j], noise=Ne[j], **kwargs)
                for j in range(Xe.shape[0])
            ]
        else:
            members = [self.members[j % M].condition_on_observations(Xe[j], Ye[j], **kwargs)
                       for j in range(Xe.shape[0])]
        return HeavyTailedBatch(members, torch.Size(shape))

    def subset_output(self, idcs: list[int]) -> Model:
        if list(idcs) != [0]:
            raise ValueError(f"This model has a single output; got output indices {idcs}.")
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError("Use `posterior`.")


def _expand_noise(noise: Any, shape: torch.Size, q: int) -> Tensor:
    """``noise`` broadcast to ``shape x q x 1`` and flattened to ``prod(shape) x q x 1``."""
    if not isinstance(noise, Tensor):
        raise ValueError(f"`noise` must be None or a tensor of noise variances shaped as `Y`, "
                         f"got {type(noise).__name__}.")
    try:
        return noise.expand(*shape, q, 1).reshape(-1, q, 1)
    except RuntimeError:
        raise ValueError(f"`noise` of shape {tuple(noise.shape)} does not broadcast to the "
                         f"shape of `Y` {(*shape, q, 1)}.") from None
