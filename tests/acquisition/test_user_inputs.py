"""What a user may hand the acquisitions, β schedules and maximisers, and the clear errors.

β given as a string (or a bool), non-positive or non-integer counts, NumPy integers, a
multi-output model for the single-output UCB, and test inputs that are not finite float tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.exceptions import UnsupportedError
from botorch.models import SingleTaskGP

from botorch_mtucb.acquisition import (
    ConstantBeta,
    HeavyTailedUCB,
    LinearScalarization,
    ScalarizedMultiTaskUCB,
    TheoremThreeBeta,
    TheoremTwoBeta,
    predicted_anchors,
)
from botorch_mtucb.acquisition.beta import as_beta_tensor
from botorch_mtucb.acquisition.dedup import DedupOptimizer
from botorch_mtucb.acquisition.optimizers import BoxOptimizer, FiniteArmOptimizer
from botorch_mtucb.acquisition.trust_region import TrustRegionOptimizer
from botorch_mtucb.models import ExactMultiTaskGP, TruncatedGP

DT = torch.float64
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _data(n: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    return X, torch.randn(10, n, generator=g, dtype=DT)


def _multi_task() -> ExactMultiTaskGP:
    return ExactMultiTaskGP(*_data())


def _truncated() -> TruncatedGP:
    return TruncatedGP(*_data(1), v=1.0)


# ----------------------------------------------------------------------------- β
@pytest.mark.parametrize("beta", ["2", b"2", True, None, object(), [1.0, "a"]])
def test_beta_that_is_not_a_number_is_a_type_error_naming_beta(beta) -> None:
    s = LinearScalarization([0.5, 0.5])
    if beta is not None:  # None means "the model's beta()" for HeavyTailedUCB
        with pytest.raises(TypeError, match="`beta` must be a real number"):
            HeavyTailedUCB(_truncated(), beta=beta)
    with pytest.raises(TypeError, match="`beta` must be a real number"):
        ScalarizedMultiTaskUCB(_multi_task(), s, beta=beta)


def test_beta_as_numpy_numbers_and_tensors_is_accepted_in_float64() -> None:
    s = LinearScalarization([0.5, 0.5])
    model = _multi_task()
    for beta in (np.float64(1.7), np.int64(2), torch.tensor(1.7)):
        acqf = ScalarizedMultiTaskUCB(model, s, beta=beta)
        assert acqf.beta.dtype == DT and float(acqf.beta) == pytest.approx(float(beta))
    assert as_beta_tensor(1.7).item() == 1.7  # no float32 round trip
    assert float(HeavyTailedUCB(_truncated(), beta=np.int64(2)).beta) == 2.0
    with pytest.raises(ValueError, match="`beta` must be non-negative"):
        as_beta_tensor(-1.0)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda v: ConstantBeta(v), "value"),
        (lambda v: TheoremTwoBeta(b=v, sigma=0.1), "b"),
        (lambda v: TheoremTwoBeta(b=1.0, sigma=v), "sigma"),
        (lambda v: TheoremTwoBeta(b=1.0, sigma=0.1, eta=v), "eta"),
        (lambda v: TheoremTwoBeta(b=1.0, sigma=0.1, delta=v), "delta"),
        (lambda v: TheoremThreeBeta(b=v, sigma=0.1), "b"),
        (lambda v: TheoremThreeBeta(b=1.0, sigma=v), "sigma"),
        (lambda v: TheoremThreeBeta(b=1.0, sigma=0.1, epsilon=v), "epsilon"),
        (lambda v: TheoremThreeBeta(b=1.0, sigma=0.1, delta=v), "delta"),
        (lambda v: TheoremThreeBeta(b=1.0, sigma=0.1, eta=v), "eta"),
    ],
)
def test_schedule_arguments_that_are_strings_are_type_errors(build, name) -> None:
    for bad in ("0.5", True):
        with pytest.raises(TypeError, match=f"`{name}`.* must be a real number"):
            build(bad)
    build(np.float64(0.5))  # a NumPy number is a number


@pytest.mark.parametrize("schedule", [TheoremTwoBeta, TheoremThreeBeta])
def test_schedules_refuse_confidence_one(schedule) -> None:
    with pytest.raises(ValueError, match=r"`delta` must lie in the open interval \(0, 1\)"):
        schedule(b=1.0, sigma=0.1, delta=1.0)


# ----------------------------------------------------------------------------- models
def test_heavy_tailed_ucb_on_a_multi_output_model_is_botorchs_unsupported_error() -> None:
    model = SingleTaskGP(*_data())
    with pytest.raises(UnsupportedError, match="`model` must have a single output, got 2"):
        HeavyTailedUCB(model, beta=1.0)


# ----------------------------------------------------------------------------- test inputs
def _acquisitions():
    s = LinearScalarization([0.5, 0.5])
    return [HeavyTailedUCB(_truncated()), HeavyTailedUCB(SingleTaskGP(*_data(1)), beta=1.0),
            ScalarizedMultiTaskUCB(_multi_task(), s),
            ScalarizedMultiTaskUCB(_multi_task(), s, bound="spectral")]


def test_acquisition_inputs_must_be_finite_float_tensors() -> None:
    for acqf in _acquisitions():
        with pytest.raises(ValueError, match="`X` contains NaN or infinite values"):
            acqf(torch.full((3, 1, 2), float("nan"), dtype=DT))
        X = torch.rand(3, 1, 2, dtype=DT)
        X[1, 0, 1] = float("inf")
        with pytest.raises(ValueError, match="`X` contains NaN or infinite values"):
            acqf(X)
        with pytest.raises(TypeError, match="`X` must be a torch.Tensor, got ndarray"):
            acqf(np.zeros((3, 1, 2)))
        with pytest.raises(TypeError, match="`X` must be a float32 or float64 tensor"):
            acqf(torch.zeros(3, 1, 2, dtype=torch.bfloat16))
        assert acqf(torch.rand(3, 1, 2, dtype=DT)).shape == (3,)


def test_a_candidate_tensor_written_to_after_a_check_is_checked_again() -> None:
    acqf = HeavyTailedUCB(SingleTaskGP(*_data(1)), beta=1.0)
    X = torch.rand(4, 1, 2, dtype=DT)
    acqf(X)
    X[2, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        acqf(X)


# ----------------------------------------------------------------------------- counts
@pytest.mark.parametrize("name", ["num_restarts", "raw_samples"])
@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "4"])
def test_predicted_anchors_refuses_counts_that_are_not_positive_integers(name, bad) -> None:
    X, Y = _data()
    with pytest.raises(ValueError, match=f"`{name}` must be a positive integer"):
        predicted_anchors(SingleTaskGP(X, Y), BOUNDS, Y, **{name: bad})


def test_predicted_anchors_takes_numpy_integers() -> None:
    X, Y = _data()
    model = SingleTaskGP(X, Y)
    kw = dict(num_restarts=np.int64(2), raw_samples=np.int64(16), seed=np.int64(0))
    table = predicted_anchors(model, BOUNDS, Y, **kw)
    ref = predicted_anchors(model, BOUNDS, Y, num_restarts=2, raw_samples=16, seed=0)
    torch.testing.assert_close(table, ref)
    with pytest.raises(ValueError, match="`seed` must be an integer or None"):
        predicted_anchors(model, BOUNDS, Y, seed=1.5)


def test_maximisers_take_numpy_integers_and_refuse_other_counts() -> None:
    box = BoxOptimizer(BOUNDS, num_restarts=np.int64(2), raw_samples=np.int64(8),
                       seed=np.int64(3))
    assert (box.num_restarts, box.raw_samples, box.seed) == (2, 8, 3)
    assert type(box.seed) is int
    with pytest.raises(ValueError, match="`num_restarts` must be >= 1"):
        BoxOptimizer(BOUNDS, num_restarts=0)
    with pytest.raises(ValueError, match="`seed` must be an integer or None"):
        BoxOptimizer(BOUNDS, seed="3")
    arms = torch.rand(5, 2, dtype=DT)
    assert FiniteArmOptimizer(arms, max_batch_size=np.int64(2)).max_batch_size == 2
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="`max_batch_size` must be a positive integer"):
            FiniteArmOptimizer(arms, max_batch_size=bad)
    assert DedupOptimizer(BOUNDS, tol=np.float64(1e-3)).tol == 1e-3
    with pytest.raises(ValueError, match="`tol` must be a number >= 0"):
        DedupOptimizer(BOUNDS, tol=True)
    tr = TrustRegionOptimizer(BOUNDS, success_tolerance=np.int64(2),
                              failure_tolerance=np.int64(5), length_init=np.float64(0.5))
    assert (tr.success_tolerance, tr.failure_tolerance, tr.length_init) == (2, 5, 0.5)
    with pytest.raises(ValueError, match="`success_tolerance` must be a positive integer"):
        TrustRegionOptimizer(BOUNDS, success_tolerance=0)
    with pytest.raises(ValueError, match="`length_init` must be a positive finite number"):
        TrustRegionOptimizer(BOUNDS, length_init=True)


def test_pending_beta_inflation_takes_numpy_numbers() -> None:
    acqf = HeavyTailedUCB(_truncated(), beta=1.0, pending_beta_inflation=np.int64(2))
    assert acqf.pending_beta_inflation == 2.0
    with pytest.raises(ValueError, match="`pending_beta_inflation` must be a number"):
        HeavyTailedUCB(_truncated(), beta=1.0, pending_beta_inflation="2")


def _two_objective_model():
    g = torch.Generator().manual_seed(4)
    X = torch.rand(10, 2, generator=g, dtype=DT)
    return X, SingleTaskGP(X, torch.stack([X.sum(-1), X.prod(-1)], -1))


@pytest.mark.parametrize("bad", [None, "data", [0.0, None], [[0.0, 0.0]], [0.0, float("nan")]])
def test_reference_points_that_are_not_numbers_name_the_argument(bad) -> None:
    """None, a string (what the sampler takes), a nested list or a NaN: a ValueError naming
    `ref_point`, from every class that takes one."""
    from botorch_mtucb.acquisition import (
        ChebyshevScalarization,
        HypervolumeImprovementUCB,
        HypervolumeScalarization,
        LogExpectedHypervolumeImprovement,
    )

    X, model = _two_objective_model()
    builders = [
        lambda: HypervolumeImprovementUCB(model, bad, X),
        lambda: LogExpectedHypervolumeImprovement(model, bad, X),
        lambda: ChebyshevScalarization([0.5, 0.5], bad),
        lambda: HypervolumeScalarization([0.6, 0.8], bad),
    ]
    for build in builders:
        with pytest.raises(ValueError, match="`ref_point` must be"):
            build()


@pytest.mark.parametrize("bad", ["yes", [True, None], [1, 0], [0.0, 1.0]])
def test_minimize_must_be_booleans_not_indices(bad) -> None:
    """`minimize` of a scalarization or front acquisition is one boolean per objective;
    integers are refused ([0, 1] could mean indices, as in the loop's `minimize`)."""
    from botorch_mtucb.acquisition import (
        ChebyshevScalarization,
        HypervolumeImprovementUCB,
        ScalarizationSampler,
        recommend_pareto_set,
    )

    X, model = _two_objective_model()
    builders = [
        lambda: HypervolumeImprovementUCB(model, [0.0, 0.0], X, minimize=bad),
        lambda: ChebyshevScalarization([0.5, 0.5], [0.0, 0.0], minimize=bad),
        lambda: LinearScalarization([0.5, 0.5], minimize=bad),
        lambda: ScalarizationSampler(2, ref_point=[0.0, 0.0], minimize=bad),
        lambda: recommend_pareto_set(model, X, minimize=bad),
    ]
    for build in builders:
        with pytest.raises(ValueError, match="`minimize` must hold 2 booleans"):
            build()
    flags = np.array([True, False])  # NumPy booleans are booleans
    assert ChebyshevScalarization([0.5, 0.5], [0.0, 0.0], minimize=flags).minimize.tolist() == [
        True, False
    ]


def test_lists_are_read_in_float64() -> None:
    """Weights and reference points given as Python lists keep float64 precision (torch's
    default dtype would round -0.1 to -0.10000000149)."""
    from botorch_mtucb.acquisition import (
        ChebyshevScalarization,
        HypervolumeScalarization,
        ScalarizationSampler,
    )

    s = ChebyshevScalarization([0.3, 0.7], [-0.1, -0.1])
    assert s.weights.dtype == s.ref_point.dtype == DT and s.ref_point.tolist() == [-0.1, -0.1]
    h = HypervolumeScalarization([0.6, 0.8], [-0.1, -0.1])
    Y = torch.tensor([[0.3, 0.9], [0.7, 0.2]], dtype=DT)
    exact = HypervolumeScalarization(torch.tensor([0.6, 0.8], dtype=DT),
                                     torch.tensor([-0.1, -0.1], dtype=DT))
    assert torch.equal(h(Y), exact(Y))
    sampler = ScalarizationSampler(2, ref_point=[-0.1, -0.1])
    assert sampler.ref_point.dtype == DT and sampler.ref_point.tolist() == [-0.1, -0.1]
    # a float32 tensor keeps its dtype (the caller chose it)
    assert ChebyshevScalarization([0.5, 0.5], torch.zeros(2)).ref_point.dtype == torch.float32


def test_hypervolume_ucb_width_is_checked_like_the_scalarized_ucb() -> None:
    from botorch_mtucb.acquisition import HypervolumeImprovementUCB

    X, model = _two_objective_model()
    for bad, error in (("2", TypeError), (True, TypeError), (-1.0, ValueError),
                       (torch.tensor([1.0, 2.0]), ValueError), (float("nan"), ValueError)):
        with pytest.raises(error, match="`beta`"):
            HypervolumeImprovementUCB(model, [0.0, 0.0], X, beta=bad)
        with pytest.raises(error, match="`beta`"):
            ScalarizedMultiTaskUCB(model, LinearScalarization([0.5, 0.5]), beta=bad)
    acqf = HypervolumeImprovementUCB(model, [0.0, 0.0], X, beta=ConstantBeta(2.5))
    assert acqf.beta == 2.5  # a schedule is evaluated on the model
    assert HypervolumeImprovementUCB(model, [0.0, 0.0], X, beta=np.float32(0.5)).beta == 0.5


def test_factories_and_samplers_refuse_bad_options_when_built() -> None:
    """A bad option fails when the factory or sampler is built, not at the first round of a
    loop (after the initial design and the first fit)."""
    from botorch_mtucb.acquisition import ScalarizationSampler
    from botorch_mtucb.loop import (
        hypervolume_ucb_factory,
        practical_acquisition_factory,
        scalarized_ucb_factory,
    )

    with pytest.raises(ValueError, match="`bound`"):
        scalarized_ucb_factory(bound="foo")
    for factory in (scalarized_ucb_factory, hypervolume_ucb_factory,
                    practical_acquisition_factory):
        with pytest.raises(ValueError, match="`beta`"):
            factory(beta=-1.0)
    with pytest.raises(ValueError, match="`augmentation`"):
        ScalarizationSampler(2, ref_point=[0.0, 0.0], augmentation=-1.0)
    with pytest.warns(UserWarning, match="linear scalarization takes no"):
        assert ScalarizationSampler(2, "linear", ref_point=[5.0, 5.0]).ref_point is None
    with pytest.warns(UserWarning, match="linear scalarization takes no"):
        assert ScalarizationSampler(2, "linear", augmentation=0.5).augmentation == 0.0
    X, model = _two_objective_model()
    factory = practical_acquisition_factory(beta=ConstantBeta(2.0))  # a schedule for both
    from botorch_mtucb.acquisition import ChebyshevScalarization

    acqf = factory(model, ChebyshevScalarization([0.5, 0.5], [-0.5, -0.5]))
    assert acqf.beta == 2.0


def test_thompson_sampling_on_a_model_list() -> None:
    """A ModelListGP's paths come as a list (one per output): the acquisition stacks them, so
    its value is s_λ of the outputs' paths drawn with the same seed."""
    from botorch.models import ModelListGP
    from botorch.sampling.pathwise import draw_matheron_paths

    from botorch_mtucb.acquisition import ScalarizedThompsonSampling

    X, single = _two_objective_model()
    Y = single.train_targets.T
    model = ModelListGP(SingleTaskGP(X, Y[:, :1]), SingleTaskGP(X, Y[:, 1:]))
    acqf = ScalarizedThompsonSampling(model, LinearScalarization([0.25, 0.75]), seed=0)
    Xt = torch.rand(5, 1, 2, dtype=DT)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        paths = draw_matheron_paths(model, torch.Size([1]))
    values = paths(Xt.reshape(-1, 2))
    expected = (0.25 * values[0] + 0.75 * values[1]).reshape(-1)
    torch.testing.assert_close(acqf(Xt), expected)
