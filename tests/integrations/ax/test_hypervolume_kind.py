"""``scalarization="hypervolume"`` in Ax: the input constructor and a short ``Client`` loop.

References: Zhang & Golovin's s_λ(y) = min_i max(0, (y_i − z_i)/(r_i λ_i))ⁿ written out here
with the signs, the brute-force scale-free reference point (nadir of the Pareto front by
pairwise comparison minus 10 % of the data's range, r = that range), Ax's thresholds mapped
from objective rows to outputs, and the loop's own ``HypervolumeScalarization.from_data``
with the model's payoff table on Ax's search box.
"""

from __future__ import annotations

import warnings

import pytest
import torch

pytest.importorskip("ax")

from ax.api.client import Client  # noqa: E402

from botorch_mtucb.acquisition import (  # noqa: E402
    HypervolumeScalarization,
    ScalarizedMultiTaskUCB,
    predicted_anchors,
    sample_scalarization_weights,
)
from botorch_mtucb.integrations.ax import mtucb_generation_strategy  # noqa: E402
from botorch_mtucb.integrations.ax.objective import trial_generator  # noqa: E402
from tests.integrations.ax.helpers import (  # noqa: E402
    DT,
    FAST_OPT,
    mt_model,
    mtucb_inputs,
    pareto_min,
    unit_box,
)

W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)  # row 0: output 1 min; row 1: output 0 max
SIGNS = torch.tensor([1.0, -1.0], dtype=DT)


def _s_lambda(Y: torch.Tensor, lam: torch.Tensor, z: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Brute force: min_i max(0, (ỹ_i − z̃_i)/(r_i λ_i))ⁿ, tildes = times SIGNS."""
    ratios = (Y * SIGNS - z * SIGNS) / (r * lam)
    return ratios.min(dim=-1).values.clamp_min(0.0) ** Y.shape[-1]


def test_hypervolume_scale_free_reference_from_data() -> None:
    model, ds = mt_model()
    lam = sample_scalarization_weights(2, 1, "hypervolume", generator=trial_generator(0, 7))[0]
    assert torch.linalg.vector_norm(lam) == pytest.approx(1.0)  # on the sphere, not simplex
    A = ds.Y * SIGNS
    front = A[sorted(pareto_min(-A))]
    r = A.max(0).values - A.min(0).values  # range of all observations
    z = (front.min(0).values - 0.1 * r) * SIGNS
    partial = torch.tensor([-3.0, float("nan")], dtype=DT)  # one threshold only: not used
    for kw in ({}, {"ref_point": torch.tensor([-3.0, 0.25], dtype=DT), "user_ref_point": partial}):
        inputs = mtucb_inputs(model, ds, objective_weights=W, seed=0,
                              scalarization="hypervolume", front="observed", **kw)
        sc = inputs["scalarization"]
        assert type(sc) is HypervolumeScalarization
        assert sc.minimize.tolist() == [False, True]
        torch.testing.assert_close(sc.sphere_weights, lam)
        torch.testing.assert_close(sc.ref_point, z)
        torch.testing.assert_close(sc.scale, r)
        Yq = ds.Y + 0.3 * torch.randn(20, 7, 2, generator=torch.Generator().manual_seed(1),
                                      dtype=DT)
        torch.testing.assert_close(sc(Yq), _s_lambda(Yq, lam, z, r))
        assert (sc(ds.Y) > 0).any()  # z lies below the front: some points score
    value = ScalarizedMultiTaskUCB(**inputs)(torch.rand(5, 1, 2, dtype=DT))
    assert value.shape == (5,) and torch.isfinite(value).all()


def test_hypervolume_reference_from_ax_thresholds_is_plain_s_lambda() -> None:
    model, ds = mt_model()
    ref = torch.tensor([-3.0, 0.25], dtype=DT)  # maximisation-aligned, one per objective row
    lam = sample_scalarization_weights(2, 1, "hypervolume", generator=trial_generator(0, 7))[0]
    z = torch.tensor([0.25, 3.0], dtype=DT)  # rows mapped to outputs, original signs
    for kw in ({"ref_point": ref, "reference": "thresholds"},
               {"ref_point": ref + 1, "user_ref_point": ref}):
        sc = mtucb_inputs(model, ds, objective_weights=W, seed=0, scalarization="hypervolume",
                          **kw)["scalarization"]
        assert type(sc) is HypervolumeScalarization
        torch.testing.assert_close(sc.ref_point, z)
        torch.testing.assert_close(sc.scale, torch.ones(2, dtype=DT))
        torch.testing.assert_close(sc(ds.Y), _s_lambda(ds.Y, lam, z, torch.ones(2, dtype=DT)))


def test_wrong_scalarization_kind_lists_all_three() -> None:
    model, ds = mt_model()
    expected = "'chebyshev', 'linear' or 'hypervolume', got 'pareto'"
    with pytest.raises(ValueError, match=expected):
        mtucb_generation_strategy(scalarization="pareto")
    with pytest.raises(ValueError, match=expected):
        mtucb_inputs(model, ds, scalarization="pareto")


def test_client_loop_with_the_hypervolume_scalarization() -> None:
    """4 trials of "a, -b" on a tiny box: 2 Sobol, then 2 MT-UCB trials with the scale-free
    hypervolume scalarization (no thresholds), each proposing a point inside the box."""
    lo, hi = -1.0, 2.0
    client = Client(random_seed=0)
    client.configure_experiment(parameters=unit_box(lo, hi))
    client.configure_optimization(objective="a, -b")
    client.set_generation_strategy(mtucb_generation_strategy(
        num_initial_trials=2, seed=0, scalarization="hypervolume", optimizer_options=FAST_OPT
    ))
    box = torch.tensor([[lo, lo], [hi, hi]], dtype=DT)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(4):
            ((idx, p),) = client.get_next_trials(max_trials=1).items()
            x = torch.tensor([p["x0"], p["x1"]], dtype=DT)
            assert ((x >= lo) & (x <= hi)).all()
            if k >= 2:  # BO trials: the hypervolume s_λ of this trial, built as the loop does
                gen = client._generation_strategy.adapter.generator
                sc = gen._acquisition.acqf.scalarization
                assert type(sc) is HypervolumeScalarization
                assert sc.minimize.tolist() == [False, True]
                Y_ax = gen.surrogate.training_data[0].Y
                t = Y_ax.shape[0]
                lam = sample_scalarization_weights(2, 1, "hypervolume",
                                                   generator=trial_generator(0, t))[0]
                P = predicted_anchors(gen.surrogate.model, box, Y_ax, minimize=[False, True],
                                      seed=t)
                ref = HypervolumeScalarization.from_data(lam, Y_ax, minimize=[False, True],
                                                         predicted=P, span="front")
                tol = {"atol": 1e-6, "rtol": 1e-4}  # L-BFGS-B is not bitwise reproducible
                torch.testing.assert_close(sc.sphere_weights, lam.to(sc.sphere_weights))
                torch.testing.assert_close(sc.ref_point, ref.ref_point.to(sc.ref_point), **tol)
                torch.testing.assert_close(sc.scale, ref.scale.to(sc.scale), **tol)
                seen.append(x)
            a = float(torch.sin(2.0 * x[0]) + x[1])
            b = float((x[0] - 0.5) ** 2 + 0.5 * x[1] ** 2)
            client.complete_trial(idx, raw_data={"a": a, "b": b})
    assert len(seen) == 2 and not torch.allclose(seen[0], seen[1])
