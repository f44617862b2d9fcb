"""The device suite: every public model, the acquisitions and the loop run where the data live,
return that device and dtype, and the cached posterior and acquisition calls do not synchronise
the device with the host.

It runs on CUDA and skips without it. ``MTUCB_DEVICE_TESTS=cpu`` runs the same tests on the CPU
(a check of the suite itself): there the modules are switched to their accelerator behaviour
(``FREE_READ_DEVICES`` emptied) and :class:`~tests.sync_counter.SyncCounter` stands in for
``torch.cuda.set_sync_debug_mode("error")``.

Sync checks. A call is first run under :class:`SyncCounter` (it sees the ATen reads on any
device): this package must issue none. Where GPyTorch or BoTorch read the device inside the call
(``Kernel.covar_dist``'s ``torch.equal(x1, x2)``, ``Standardize``'s ``_is_trained`` flag), the
CUDA run counts the synchronisations in ``"warn"`` mode and allows at most those; otherwise it
runs in ``"error"`` mode, where any synchronisation (a read, a blocking host → device copy, a
factorisation's error check) raises.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator

import pytest
import torch
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.test_functions.multi_objective import BraninCurrin
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch.utils._python_dispatch import TorchDispatchMode

import botorch_mtucb.linalg.nystrom as lin_nystrom
from botorch_mtucb.acquisition import ChebyshevScalarization, HeavyTailedUCB, ScalarizedMultiTaskUCB
from botorch_mtucb.linalg import CholeskyFactor, pivoted_cholesky
from botorch_mtucb.loop import BoxOptimizer, run_bo_loop
from botorch_mtucb.models import (
    AdaptiveTruncationGP,
    ExactMultiTaskGP,
    HeavyTailedBatch,
    MedianOfMeans,
    NystromMultiTaskBatch,
    NystromMultiTaskGP,
    TruncatedGP,
    practical_multitask_gp,
)
from botorch_mtucb.utils.validation import check_finite
from tests.sync_counter import SyncCounter, _where

DEVICE = torch.device(os.environ.get("MTUCB_DEVICE_TESTS", "cuda"))
_AVAILABLE = DEVICE.type == "cpu" or (DEVICE.type == "cuda" and torch.cuda.is_available())
pytestmark = pytest.mark.skipif(
    not _AVAILABLE,
    reason=f"no {DEVICE.type} device here (torch.cuda.is_available() is False): the device suite "
    "runs on a GPU host; MTUCB_DEVICE_TESTS=cpu runs its logic on the CPU",
)
ON_CUDA = DEVICE.type == "cuda"
DT = torch.float64
#: Reads outside this package's hot paths: CPU-only branches (absent on an accelerator) and the
#: ones inside GPyTorch / BoTorch (allowed, and counted, see the module docstring).
_CPU_ONLY = ("(_finite_on_cpu)", "(_numpy_view)")
_THIRD_PARTY = ("via gpytorch", "via botorch", "via linear_operator")


@pytest.fixture(autouse=True)
def _accelerator_behaviour(monkeypatch):
    if not ON_CUDA:  # the CPU check of the suite: take the accelerator branches
        monkeypatch.setattr(lin_nystrom, "FREE_READ_DEVICES", frozenset())


# ----------------------------------------------------------------------------- helpers


def _t(*shape, seed=0, dtype=DT, batch=()):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*batch, *shape, generator=g, dtype=dtype).to(DEVICE)


def _data(t=16, d=2, n=2, seed=0, dtype=DT, batch=()):
    X = _t(t, d, seed=seed, dtype=dtype, batch=batch)
    Y = torch.sin(4 * X[..., :1]) + torch.cos(3 * X[..., 1:2]) * torch.arange(
        1, n + 1, dtype=dtype, device=DEVICE
    ) + 0.05 * _t(t, n, seed=seed + 1, dtype=dtype, batch=batch)
    return X, Y


def _bounds(d=2, dtype=DT):
    return torch.stack([torch.zeros(d, dtype=dtype), torch.ones(d, dtype=dtype)]).to(DEVICE)


def _quiet(fn: Callable, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _multitask_models(dtype=DT) -> dict[str, Callable[[], object]]:
    """Builders of every public multi-task model, by name (the names of ``MULTITASK``)."""
    X, Y = _data(dtype=dtype)
    Xb, Yb = _data(dtype=dtype, batch=(2,))
    return {
        "ExactMultiTaskGP": lambda: ExactMultiTaskGP(X, Y),
        "practical_multitask_gp": lambda: _quiet(
            practical_multitask_gp, X, Y, _bounds(dtype=dtype)
        ),
        "NystromMultiTaskGP": lambda: NystromMultiTaskGP(X, Y, generator=0),
        "NystromMultiTaskGP-pivoted": lambda: NystromMultiTaskGP(
            X, Y, generator=0, pinv_method="pivoted_cholesky"
        ),
        "NystromMultiTaskBatch": lambda: NystromMultiTaskGP(Xb, Yb, generator=0),
    }


def _heavy_tailed_models(dtype=DT) -> dict[str, Callable[[], object]]:
    """Builders of every public heavy-tailed model, by name (the names of ``HEAVY``)."""
    X, Y = _data(n=1, dtype=dtype)
    Xb, Yb = _data(n=1, dtype=dtype, batch=(2,))
    return {
        "TruncatedGP": lambda: _quiet(TruncatedGP, X, Y),
        "TruncatedGP-declared": lambda: TruncatedGP(X, Y, alpha=0.5, v=4.0),
        "TruncatedGP-median-of-means": lambda: _quiet(
            TruncatedGP, X, Y, moment_estimator=MedianOfMeans()
        ),
        "AdaptiveTruncationGP": lambda: _quiet(AdaptiveTruncationGP, X, Y, generator=0),
        "HeavyTailedBatch": lambda: _quiet(TruncatedGP, Xb, Yb, v=1.0),
    }


MULTITASK = ["ExactMultiTaskGP", "practical_multitask_gp", "NystromMultiTaskGP",
             "NystromMultiTaskGP-pivoted", "NystromMultiTaskBatch"]
HEAVY = ["TruncatedGP", "TruncatedGP-declared", "TruncatedGP-median-of-means",
         "AdaptiveTruncationGP", "HeavyTailedBatch"]


def _test_X(model, q=1, d=2, b=5, dtype=DT):
    batch = tuple(getattr(model, "batch_shape", ()))  # b x batch x q x d for a batched model
    return _t(b, *batch, q, d, seed=7, dtype=dtype)


def _ucb(model, dtype=DT):
    n = model.num_outputs
    w = torch.full((n,), 1.0 / n, dtype=dtype, device=DEVICE)
    s = ChebyshevScalarization(w, ref_point=torch.zeros_like(w))
    return ScalarizedMultiTaskUCB(model, s, beta=2.0)


def _ucb_step(acqf, X):
    x = X.clone().requires_grad_(True)
    acqf(x).sum().backward()
    return x.grad


@contextlib.contextmanager
def _cuda_sync_mode(mode: str) -> Iterator[list]:
    """``torch.cuda.set_sync_debug_mode(mode)`` inside; yields the sync warnings (``"warn"``)."""
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode(mode)
        found: list = []
        try:
            yield found
        finally:
            torch.cuda.set_sync_debug_mode(previous)
        found.extend(w for w in caught if "synchroniz" in str(w.message))


class _HostData(TorchDispatchMode):
    """Records tensors made from Python data (``torch.tensor``/``as_tensor``: ``lift_fresh``),
    each a blocking host → device copy on an accelerator, with the frame that made them."""

    def __init__(self) -> None:
        super().__init__()
        self.places: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._schema.name.split("::", 1)[-1] in ("lift_fresh", "lift_fresh_copy"):
            self.places.append(_where())
        return func(*args, **(kwargs or {}))


def assert_no_own_syncs(call: Callable[[], object]) -> None:
    """``call`` (already warmed up: caches built) issues no device → host synchronisation of its
    own (no read, no tensor from Python data); on CUDA, none at all beyond GPyTorch's /
    BoTorch's (counted by :class:`SyncCounter`)."""
    with SyncCounter() as sc, _HostData() as host:
        call()
    ours = [str(e) for e in sc.events
            if not any(a in e.where for a in _CPU_ONLY + _THIRD_PARTY)]
    assert ours == [], sc.report()
    own_copies = [w for w in host.places if not any(a in w for a in _THIRD_PARTY)]
    assert own_copies == [], own_copies
    third_party = [e for e in sc.events if any(a in e.where for a in _THIRD_PARTY)]
    if not ON_CUDA:
        return
    torch.cuda.synchronize()
    if not third_party:
        with _cuda_sync_mode("error"):
            call()
    else:
        with _cuda_sync_mode("warn") as syncs:
            call()
        assert len(syncs) <= len(third_party), (
            [str(w.message) for w in syncs], [str(e) for e in third_party])


# ----------------------------------------------------------------------------- models


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", MULTITASK)
def test_multitask_posterior_follows_the_data(name, dtype):
    model = _multitask_models(dtype)[name]()
    if name == "NystromMultiTaskBatch":
        assert isinstance(model, NystromMultiTaskBatch)
    Xs = _test_X(model, q=2, dtype=dtype)
    post = model.posterior(Xs)
    mean, var = post.mean, post.variance
    assert mean.shape == (*Xs.shape[:-1], 2) and var.shape == mean.shape
    for out in (mean, var):
        assert out.device.type == DEVICE.type and out.dtype == dtype
        assert torch.isfinite(out).all()
    assert (var > 0).all()


@pytest.mark.parametrize("name", ["ExactMultiTaskGP", "TruncatedGP-declared"])
def test_device_posterior_agrees_with_the_cpu_one(name):
    n = 2 if name == "ExactMultiTaskGP" else 1
    build = ExactMultiTaskGP if n == 2 else (lambda X, Y: TruncatedGP(X, Y, alpha=0.5, v=4.0))
    X, Y = _data(n=n)
    Xs = _t(5, 2, 2, seed=8)
    on_device = build(X, Y).posterior(Xs)
    on_cpu = build(X.cpu(), Y.cpu()).posterior(Xs.cpu())
    for a, b in ((on_device.mean, on_cpu.mean), (on_device.variance, on_cpu.variance)):
        assert a.device.type == DEVICE.type and b.device.type == "cpu"
        torch.testing.assert_close(a.cpu(), b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", HEAVY)
def test_heavy_tailed_posterior_follows_the_data(name, dtype):
    model = _heavy_tailed_models(dtype)[name]()
    if name == "HeavyTailedBatch":
        assert isinstance(model, HeavyTailedBatch)
    Xs = _test_X(model, q=3, dtype=dtype)
    post = model.posterior(Xs)
    assert post.mean.shape == (*Xs.shape[:-1], 1)
    for out in (post.mean, post.variance):
        assert out.device.type == DEVICE.type and out.dtype == dtype
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("cls", [ExactMultiTaskGP, NystromMultiTaskGP])
def test_mll_backward_on_the_device(cls):
    X, Y = _data(t=12)
    model = cls(X, Y)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    model.train()
    loss = -mll(model(*model.train_inputs), model.train_targets)
    loss.backward()
    assert loss.device.type == DEVICE.type
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(g.device.type == DEVICE.type and torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("name", ["ExactMultiTaskGP", "TruncatedGP"])
def test_conditioning_stays_on_the_device(name):
    if name == "ExactMultiTaskGP":
        model, n = ExactMultiTaskGP(*_data()), 2
    else:
        model, n = _quiet(TruncatedGP, *_data(n=1)), 1
    x, y = _t(1, 2, seed=3), _t(1, n, seed=4)
    new = model.condition_on_observations(x, y)
    mean = new.posterior(_t(4, 1, 2, seed=5)).mean
    assert mean.device.type == DEVICE.type and torch.isfinite(mean).all()


# ----------------------------------------------------------------------------- acquisitions


@pytest.mark.parametrize("name", [m for m in MULTITASK if m != "NystromMultiTaskBatch"])
def test_scalarized_ucb_value_and_gradient_on_the_device(name):
    model = _multitask_models()[name]()
    acqf = _ucb(model)
    Xs = _test_X(model)
    value = acqf(Xs)
    grad = _ucb_step(acqf, Xs)
    assert value.shape == (5,) and value.device.type == DEVICE.type and value.dtype == DT
    assert grad.device.type == DEVICE.type and torch.isfinite(grad).all()
    assert grad.abs().sum() > 0


@pytest.mark.parametrize("name", [m for m in HEAVY if m != "HeavyTailedBatch"])
def test_heavy_tailed_ucb_on_the_device(name):
    model = _heavy_tailed_models()[name]()
    acqf = HeavyTailedUCB(model)
    value = acqf(_test_X(model))
    assert value.shape == (5,) and value.device.type == DEVICE.type and value.dtype == DT
    assert torch.isfinite(value).all()


def test_botorch_hypervolume_acquisition_on_a_multitask_model():
    X, Y = _data()
    model = ExactMultiTaskGP(X, Y)
    acqf = qLogNoisyExpectedHypervolumeImprovement(model, ref_point=[-3.0, -3.0], X_baseline=X)
    value = acqf(_t(3, 1, 2, seed=9))
    assert value.device.type == DEVICE.type and torch.isfinite(value).all()


# ----------------------------------------------------------------------------- loop


def test_short_bo_loop_runs_on_the_device():
    problem = BraninCurrin(negate=True).to(device=DEVICE, dtype=DT)
    history = _quiet(
        run_bo_loop, problem, num_rounds=2, bounds=problem.bounds,
        optimizer=BoxOptimizer(problem.bounds, num_restarts=2, raw_samples=32, seed=0),
        generator=torch.Generator().manual_seed(0),
    )
    assert history.X.shape[-1] == 2 and history.Y.shape[-1] == 2
    assert history.X.shape[0] >= 2 and torch.isfinite(history.Y).all()
    assert history.X.dtype == DT and history.Y.dtype == DT


# ----------------------------------------------------------------------------- syncs


@pytest.mark.parametrize("name", MULTITASK)
def test_cached_multitask_posterior_does_not_sync(name):
    model = _multitask_models()[name]()
    Xs = _test_X(model)
    _ = model.posterior(Xs).mean  # builds the solver
    assert_no_own_syncs(lambda: model.posterior(Xs).mean)


@pytest.mark.parametrize("name", HEAVY)
def test_cached_heavy_tailed_posterior_does_not_sync(name):
    model = _heavy_tailed_models()[name]()
    Xs = _test_X(model)
    _ = model.posterior(Xs).mean
    assert_no_own_syncs(lambda: model.posterior(Xs).mean)


@pytest.mark.parametrize("name", [m for m in MULTITASK if m != "NystromMultiTaskBatch"])
def test_scalarized_ucb_forward_backward_does_not_sync(name):
    model = _multitask_models()[name]()
    acqf, Xs = _ucb(model), _test_X(model)
    _ucb_step(acqf, Xs)
    assert_no_own_syncs(lambda: _ucb_step(acqf, Xs))


@pytest.mark.parametrize("name", [m for m in HEAVY if m != "HeavyTailedBatch"])
def test_heavy_tailed_ucb_does_not_sync(name):
    model = _heavy_tailed_models()[name]()
    acqf, Xs = HeavyTailedUCB(model), _test_X(model)
    acqf(Xs)
    assert_no_own_syncs(lambda: acqf(Xs))


def test_check_finite_raises_at_once_on_the_device():
    """Training data are checked with one read, so a NaN is a ValueError, not a device-side
    assertion that would leave the device unusable."""
    X = _t(50, 3)
    check_finite(X, "X")
    X[3, 1] = float("nan")
    with pytest.raises(ValueError, match="`X` contains NaN or infinite values"):
        check_finite(X, "X")


def test_cholesky_factor_and_pivoted_cholesky_sync_counts():
    """One read per factorisation (its error code); the pivoted Cholesky reads only at its
    check points (16 pivots, then counts growing by 1.25)."""
    X = _t(400, 2, seed=11)
    A = torch.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 0.5)
    B = A[:50, :50] + 0.1 * torch.eye(50, dtype=DT, device=DEVICE)

    def pivots():
        return pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i])

    piv, L = pivots()
    r = piv.numel()
    assert 16 < r < 400 and piv.device.type == DEVICE.type and L.device.type == DEVICE.type
    torch.testing.assert_close(L @ L.T, A[piv][:, piv])
    with SyncCounter() as sc:
        CholeskyFactor.from_matrix(B)
    assert sc.count() == 1, sc.report()
    with SyncCounter() as sc:
        pivots()
    assert sc.count("read") <= 25, sc.report()
    if ON_CUDA:
        torch.cuda.synchronize()
        with _cuda_sync_mode("warn") as syncs:
            CholeskyFactor.from_matrix(B)
        assert len(syncs) == 1, [str(w.message) for w in syncs]
        with _cuda_sync_mode("warn") as syncs:
            pivots()
        assert len(syncs) <= sc.count("read") + 1, [str(w.message) for w in syncs]
