"""No device → host synchronisation on the hot paths, counted on the CPU.

:class:`~tests.sync_counter.SyncCounter` records every operation that would synchronise a CUDA
device. The modules that skip work where a host read is free (the CPU) are switched to their
accelerator behaviour here (``FREE_READ_DEVICES`` emptied), so the counts are those of a GPU
run. Reads that happen only on the CPU (``_finite_on_cpu``, NumPy views of CPU buffers) and
the ones inside GPyTorch/BoTorch are listed separately (``ALLOWED``) so that a new read in this
package fails the tests.
"""

import math
import warnings

import pytest
import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

import botorch_mtucb.linalg.nystrom as lin_nystrom
from botorch_mtucb.acquisition import ChebyshevScalarization, ScalarizedMultiTaskUCB
from botorch_mtucb.linalg import pivoted_cholesky
from botorch_mtucb.models import (
    AdaptiveTruncationGP,
    ExactMultiTaskGP,
    NystromMultiTaskGP,
    TruncatedGP,
    practical_multitask_gp,
)
from botorch_mtucb.multitask.practical_fit import practical_mll_closure
from tests.sync_counter import SyncCounter

DT = torch.float64

#: Reads that are not this package's hot-path business: CPU-only branches (they do not run on
#: an accelerator) and reads inside GPyTorch / BoTorch (``Kernel.covar_dist``'s
#: ``torch.equal(x1, x2)``; ``Standardize.untransform_posterior``).
ALLOWED = ("(_finite_on_cpu)", "(_numpy_view)", "via gpytorch", "via botorch")


def _ours(sc: SyncCounter, kind: str = "read") -> list[str]:
    return [str(e) for e in sc.events if e.kind == kind and not any(a in e.where for a in ALLOWED)]


@pytest.fixture(autouse=True)
def _accelerator_behaviour(monkeypatch):
    monkeypatch.setattr(lin_nystrom, "FREE_READ_DEVICES", frozenset())


def _data(t=30, d=2, n=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(t, d, generator=g, dtype=DT), torch.randn(t, n, generator=g, dtype=DT),
            torch.rand(5, 1, d, generator=g, dtype=DT))


def _practical(X, Y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return practical_multitask_gp(X, Y, bounds=torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT))


def test_counter_sees_reads_and_ignores_device_side_work():
    x = torch.rand(4, dtype=DT)
    with SyncCounter() as sc:
        y = (x * 2).cumsum(0).max()  # device-side only
        torch.where(x > 0.5, x, 0.0)
    assert sc.count() == 0 and y.dim() == 0
    with SyncCounter() as sc:
        _ = float(x.sum()), bool(x[0] > 0), x.tolist(), x[x > 0.5], torch.equal(x, x.clone())
        torch.linalg.cholesky(torch.eye(2, dtype=DT))
    assert sc.count("read") == 5 and sc.count("check") == 1, sc.report()


@pytest.mark.parametrize("which", ["exact", "practical"])
def test_repeated_posterior_calls_do_not_read_the_device(which):
    X, Y, Xs = _data()
    model = ExactMultiTaskGP(X, Y) if which == "exact" else _practical(X, Y)
    model.posterior(Xs)  # builds the solver
    with SyncCounter() as sc:
        for _ in range(3):
            _ = model.posterior(Xs).mean
    assert _ours(sc) == [] and _ours(sc, "check") == [], sc.report()


def test_ucb_forward_backward_on_a_cached_model_does_not_read_the_device():
    X, Y, Xs = _data()
    model = _practical(X, Y)
    w = torch.tensor([0.5, 0.5], dtype=DT)
    s = ChebyshevScalarization(w, ref_point=torch.zeros(2, dtype=DT))
    acqf = ScalarizedMultiTaskUCB(model, s, beta=2.0)
    acqf(Xs)
    with SyncCounter() as sc:
        for _ in range(3):
            x = Xs.clone().requires_grad_(True)
            acqf(x).sum().backward()
    assert _ours(sc) == [] and _ours(sc, "check") == [], sc.report()


def test_cache_key_sees_every_change_without_reading_the_device():
    X, Y, Xs = _data()
    model = _practical(X, Y)
    solver = model.solver()
    first = next(model.parameters())
    changes = [
        lambda: setattr(model.likelihood, "noise", 0.3),  # a GPyTorch setter (.data write)
        lambda: model.initialize(**{"covar_module.data_covar_module.lengthscale": 0.4}),
        lambda: first.add_(0.1),  # in place under no_grad (an optimiser step)
        lambda: model.outcome_transform.stdvs.mul_(2.0),  # a buffer, in place
        lambda: model.load_state_dict({k: v + 0.01 for k, v in model.state_dict().items()}),
    ]
    for change in changes:
        with torch.no_grad():
            change()
        with SyncCounter() as sc:
            new = model.solver()
        assert new is not solver, change
        assert [e for e in _ours(sc) if "solver_cache" in e] == []
        solver = new
    raw = model.likelihood.raw_noise
    raw.data = raw.data + 0.5  # storage swap
    assert model.solver() is not solver


def test_raw_data_writes_are_seen_after_eval():
    X, Y, _ = _data()
    model = ExactMultiTaskGP(X, Y)
    solver = model.solver()
    model.likelihood.raw_noise.data.fill_(0.7)
    assert model.eval().solver() is not solver  # train() / eval() clear the cache


@pytest.mark.parametrize("growth", [1.25, 2.0])
def test_pivoted_cholesky_reads_only_at_check_points(growth):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(400, 2, generator=g, dtype=DT)
    A = torch.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 0.5)
    with SyncCounter() as sc:
        piv, L = pivoted_cholesky(A.diagonal().clone(), lambda i: A[:, i], check_growth=growth)
    r = piv.numel()
    assert 16 < r < 400
    bound = 2 + math.ceil(math.log(r / 16) / math.log(growth))
    assert sc.count("read") <= bound, sc.report()
    torch.testing.assert_close(L @ L.T, A[piv][:, piv])


def test_nystrom_round_reads_the_device_a_bounded_number_of_times():
    g = torch.Generator().manual_seed(1)
    X, Y = torch.rand(300, 2, generator=g, dtype=DT), torch.randn(300, 2, generator=g, dtype=DT)
    Xs = torch.rand(5, 1, 2, generator=g, dtype=DT)
    with SyncCounter() as sc:
        model = NystromMultiTaskGP(X, Y, generator=0, pinv_method="pivoted_cholesky")
        _ = model.posterior(Xs).mean
    pivots = [e for e in _ours(sc) if "pivoted_cholesky" in e]
    factorisations = sum("nystrom_icm" in e for e in (str(e) for e in sc.events)
                         if "check:_linalg_eigh" in e)
    assert factorisations >= 1
    assert len(pivots) <= 8 * factorisations, sc.report()  # one read per pivot: ≈ 550
    with SyncCounter() as sc:
        for _ in range(3):
            _ = model.posterior(Xs).mean
    assert _ours(sc) == [], sc.report()


@pytest.mark.parametrize("cls", [TruncatedGP, AdaptiveTruncationGP])
def test_heavy_tailed_posterior_does_not_read_the_device(cls):
    X, Y, Xs = _data(n=1)
    model = cls(X, Y)
    model.posterior(Xs)
    with SyncCounter() as sc:
        for _ in range(3):
            _ = model.posterior(Xs).mean
    assert _ours(sc) == [], sc.report()


def test_practical_closure_reads_per_evaluation_are_bounded():
    """scipy needs the loss and gradient on the host once per evaluation (outside the closure);
    inside it, the reads counted here are GPyTorch's (prior log-probabilities, ``covar_dist``)
    and the ``eigh`` checks of the ICM likelihood."""
    X, Y, _ = _data()
    model = _practical(X, Y)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    closure = practical_mll_closure(mll)
    model.train()
    closure()
    with SyncCounter() as sc:
        closure()
    assert _ours(sc) == [], sc.report()
    assert sc.count("check") <= 2, sc.report()


@pytest.mark.parametrize("cls, bound", [(TruncatedGP, 1), (AdaptiveTruncationGP, 4)])
def test_heavy_tailed_conditioning_reads(cls, bound):
    """Per-round conditioning: no read in the models' own modules nor in the input checks
    (``check_finite`` reads only on the CPU, in ``_finite_on_cpu``); the Cholesky factor's error
    code is one read per factorisation. The adaptive model's Nyström features also read their
    rank (``psd_pinv_sqrt_factor``, the ridge's spectrum) and their dictionary's size."""
    X, Y, Xs = _data(n=1)
    model = cls(X, Y)
    model.condition_on_observations(Xs[0], Y[:1]).posterior(Xs)
    with SyncCounter() as sc:
        _ = model.condition_on_observations(Xs[0], Y[:1]).posterior(Xs).mean
    ours = _ours(sc)
    assert [e for e in ours if "heavy_tailed/" in e or "validation.py" in e] == [], sc.report()
    assert sum("(from_matrix)" in e for e in ours) <= 1, sc.report()
    assert sum("(psd_pinv_sqrt_factor)" in e for e in ours) <= 1, sc.report()
    assert len(ours) <= bound, sc.report()
