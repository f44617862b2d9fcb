"""Ax integration: the reference point of the MT-UCB input constructor (issue 13).

Split from ``test_ax.py`` (its helpers). References written out here: Ax's objective
thresholds mapped from objective rows to model outputs, the scale-free default (nadir of the
Pareto front by pairwise comparison minus a margin of the data's range, weights divided by the
ranges), and :func:`data_reference_point` against the brute-force nadir.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ax")

from botorch.acquisition.objective import ScalarizedPosteriorTransform  # noqa: E402

from botorch_mtucb.acquisition import ScalarizedMultiTaskUCB  # noqa: E402
from botorch_mtucb.integrations.ax.objective import (  # noqa: E402
    ObjectiveInfo,
    data_reference_point,
)
from tests.integrations.ax.test_strategies import (  # noqa: E402
    DT,
    _mt_model,
    _mtucb_inputs,
    _nadir_reference,
)


def test_mtucb_reference_point_from_ax_thresholds_maps_rows_to_outputs() -> None:
    model, ds = _mt_model()
    # Row 0 = output 1 minimised, row 1 = output 0 maximised (objective order != outputs).
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)
    ref = torch.tensor([-3.0, 0.25], dtype=DT)  # maximisation-aligned, one per row
    for kw in ({"ref_point": ref, "reference": "thresholds"},  # Ax's (maybe inferred) ones
               {"ref_point": ref + 1, "user_ref_point": ref}):  # the user's, complete
        inputs = _mtucb_inputs(model, ds, objective_weights=W, seed=0, **kw)
        sc = inputs["scalarization"]
        assert sc.minimize.tolist() == [False, True] and sc.augmentation == 0.0  # plain s_λ
        torch.testing.assert_close(sc.ref_point, torch.tensor([0.25, 3.0], dtype=DT))
    # Unknown row order (no matrix): Ax's thresholds are not used, the data nadir is.
    pt = ScalarizedPosteriorTransform(weights=torch.tensor([1.0, -1.0], dtype=DT))
    inputs = _mtucb_inputs(model, ds, posterior_transform=pt, ref_point=ref, seed=0,
                           reference="thresholds")
    z = _nadir_reference(ds.Y, torch.tensor([1.0, -1.0], dtype=DT))
    torch.testing.assert_close(inputs["scalarization"].ref_point, z)


def _scale_free_reference(Y, signs, lam, margin=0.1):
    """Brute force of the scale-free s_λ: z = nadir of the front − margin · range of all data,
    weights λ_i / r_i renormalised."""
    A = Y * signs
    span = A.max(0).values - A.min(0).values
    front = [A[i] for i in range(len(A))
             if not any(bool((A[j] >= A[i]).all() and (A[j] > A[i]).any()) for j in range(len(A)))]
    z = (torch.stack(front).min(0).values - margin * span) * signs
    w = lam / span
    return z, w / w.sum()


def test_mtucb_default_reference_is_scale_free_from_data() -> None:
    from botorch_mtucb.acquisition import sample_scalarization_weights
    from botorch_mtucb.integrations.ax.objective import trial_generator

    model, ds = _mt_model()
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)
    signs = torch.tensor([1.0, -1.0], dtype=DT)
    lam = sample_scalarization_weights(2, 1, generator=trial_generator(0, 7))[0]
    z, w = _scale_free_reference(ds.Y, signs, lam)
    partial = torch.tensor([-3.0, float("nan")], dtype=DT)  # the user set one threshold only
    for kw in ({}, {"ref_point": torch.tensor([-3.0, 0.25], dtype=DT)},
               {"ref_point": torch.tensor([-3.0, 0.25], dtype=DT), "user_ref_point": partial}):
        inputs = _mtucb_inputs(model, ds, objective_weights=W, seed=0, **kw)
        sc = inputs["scalarization"]
        assert "beta" not in inputs  # the acquisition's default width
        assert sc.minimize.tolist() == [False, True] and sc.augmentation == 0.05
        torch.testing.assert_close(sc.ref_point, z)
        torch.testing.assert_close(sc.weights, w)
    acqf = ScalarizedMultiTaskUCB(**inputs)
    assert acqf.beta == ScalarizedMultiTaskUCB.__init__.__defaults__[0]
    with pytest.raises(ValueError, match="`reference` must be"):
        _mtucb_inputs(model, ds, reference="nadir")


def test_data_reference_point_matches_brute_force() -> None:
    g = torch.Generator().manual_seed(1)
    Y = torch.randn(30, 3, generator=g, dtype=DT)
    info = ObjectiveInfo(torch.tensor([False, True, True]), None)
    z = data_reference_point(Y, info)
    torch.testing.assert_close(z, _nadir_reference(Y, info.signs(Y)))
    Y[0] = info.signs(Y) * 10.0  # one observation now dominates all others
    z = data_reference_point(Y, info)
    torch.testing.assert_close(z, info.signs(Y) * 9.0)
    torch.testing.assert_close(z, _nadir_reference(Y, info.signs(Y)))


def test_mtucb_default_reference_uses_the_predicted_front_on_the_normalize_box() -> None:
    """With Ax's ``Normalize`` input transform (fixed bounds = the search space), z and the
    ranges come from the observed front and the model's payoff table on that box, as the loop's
    default sampler builds them; ``front="observed"`` or no such transform: observed only."""
    from botorch.models.transforms.input import Normalize

    from botorch_mtucb.acquisition import ChebyshevScalarization, sample_scalarization_weights
    from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors
    from botorch_mtucb.integrations.ax.objective import trial_generator
    from botorch_mtucb.models import ExactMultiTaskGP

    _, ds = _mt_model()
    box = torch.tensor([[-1.0, 0.0], [2.0, 3.0]], dtype=DT)
    model = ExactMultiTaskGP(ds.X, ds.Y, input_transform=Normalize(2, bounds=box))
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)  # output 1 minimised
    minimize = [False, True]
    lam = sample_scalarization_weights(2, 1, generator=trial_generator(0, 7))[0]
    sc = _mtucb_inputs(model, ds, objective_weights=W, seed=0)["scalarization"]
    P = predicted_anchors(model, box, ds.Y, minimize=minimize, seed=0 + 7)
    ref = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize, predicted=P,
                                           span="front")
    tol = {"atol": 1e-6, "rtol": 1e-4}  # the anchors' L-BFGS-B is not bitwise reproducible
    torch.testing.assert_close(sc.ref_point, ref.ref_point, **tol)
    torch.testing.assert_close(sc.weights, ref.weights, **tol)
    observed = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize)
    assert not torch.allclose(sc.ref_point, observed.ref_point, atol=1e-3)  # the table counts
    old = _mtucb_inputs(model, ds, objective_weights=W, seed=0, front="observed")
    torch.testing.assert_close(old["scalarization"].ref_point, observed.ref_point)
    learned = ExactMultiTaskGP(ds.X, ds.Y, input_transform=Normalize(2))  # no fixed box
    sc = _mtucb_inputs(learned, ds, objective_weights=W, seed=0)["scalarization"]
    torch.testing.assert_close(sc.ref_point, observed.ref_point)
    with pytest.raises(ValueError, match="`front` must be"):
        _mtucb_inputs(model, ds, objective_weights=W, front="model")


def test_mtucb_reference_uses_ax_search_space_bounds() -> None:
    """Ax passes its search-space digest's ``bounds`` (``d`` pairs in the model's input space):
    the payoff table is computed on that box even when the model has no ``Normalize`` (Ax's
    UnitX transform already maps the inputs), and bad bounds are refused by name."""
    from botorch_mtucb.acquisition import ChebyshevScalarization, sample_scalarization_weights
    from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors
    from botorch_mtucb.integrations.ax.objective import trial_generator
    from botorch_mtucb.models import ExactMultiTaskGP

    _, ds = _mt_model()
    model = ExactMultiTaskGP(ds.X, ds.Y)  # no input transform: the box must come from Ax
    box = torch.tensor([[-1.0, 0.0], [2.0, 3.0]], dtype=DT)
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)
    minimize = [False, True]
    lam = sample_scalarization_weights(2, 1, generator=trial_generator(0, 7))[0]
    P = predicted_anchors(model, box, ds.Y, minimize=minimize, seed=0 + 7)
    ref = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize, predicted=P,
                                           span="front")
    tol = {"atol": 1e-6, "rtol": 1e-4}
    for bounds in ([(-1.0, 2.0), (0.0, 3.0)], box):  # Ax's pairs, or a 2 x d tensor
        sc = _mtucb_inputs(model, ds, objective_weights=W, seed=0,
                           bounds=bounds)["scalarization"]
        torch.testing.assert_close(sc.ref_point, ref.ref_point, **tol)
        torch.testing.assert_close(sc.weights, ref.weights, **tol)
    observed = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize)
    sc = _mtucb_inputs(model, ds, objective_weights=W, seed=0)["scalarization"]  # no box
    torch.testing.assert_close(sc.ref_point, observed.ref_point)
    assert not torch.allclose(ref.ref_point, observed.ref_point, atol=1e-3)
    for bad in ([(0.0, 1.0)], [(1.0, 0.0), (0.0, 1.0)], [(0.0, float("inf")), (0.0, 1.0)],
                [(0.0, 1.0, 2.0)], "box"):
        with pytest.raises(ValueError, match="`bounds` must be 2 finite"):
            _mtucb_inputs(model, ds, objective_weights=W, seed=0, bounds=bad)
