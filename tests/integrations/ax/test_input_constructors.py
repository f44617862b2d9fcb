"""The BoTorch input constructors of ScalarizedMultiTaskUCB and HeavyTailedUCB, as Ax calls them.

References: brute-force formulas written out here (Chebyshev / linear UCB with the signs, the
nadir reference point, the scale-free reference: nadir of the front minus a margin of the data's
range, weights divided by the ranges), Ax's objective thresholds mapped from objective rows to
model outputs, the loop's own ``ChebyshevScalarization.from_data`` with the payoff table, and
models rebuilt from scratch on the augmented data (GP-BUCB hallucination).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ax")

from botorch.acquisition.input_constructors import get_acqf_input_constructor  # noqa: E402
from botorch.acquisition.objective import ScalarizedPosteriorTransform  # noqa: E402
from botorch.models.transforms.input import Normalize  # noqa: E402

from botorch_mtucb.acquisition import (  # noqa: E402
    ChebyshevScalarization,
    HeavyTailedUCB,
    ScalarizedMultiTaskUCB,
    TheoremTwoBeta,
    predicted_anchors,
    sample_scalarization_weights,
)
from botorch_mtucb.integrations.ax.objective import trial_generator  # noqa: E402
from botorch_mtucb.models import ExactMultiTaskGP, TruncatedGP  # noqa: E402
from tests.integrations.ax.helpers import (  # noqa: E402
    DT,
    mt_model,
    mtucb_inputs,
    nadir_reference,
    truncated_gp,
)


def test_mtucb_constructor_signs_reference_point_and_value() -> None:
    model, ds = mt_model()
    pt = ScalarizedPosteriorTransform(weights=torch.tensor([-1.0, 1.0], dtype=DT))
    X = torch.rand(9, 1, 2, generator=torch.Generator().manual_seed(5), dtype=DT)
    post = model.posterior(X)  # independent route: the joint MVN, not task_posterior
    mu = post.mean[:, 0, :]
    cov = post.mvn.covariance_matrix  # 9 x 2 x 2 for q = 1
    s = torch.tensor([-1.0, 1.0], dtype=DT)
    beta = 1.7

    inputs = mtucb_inputs(model, ds, posterior_transform=pt, beta=beta, seed=3,
                           reference="thresholds")  # plain s_λ at the data's nadir heuristic
    acqf = ScalarizedMultiTaskUCB(**inputs)
    sc = acqf.scalarization
    assert sc.minimize.tolist() == [True, False]
    z = nadir_reference(ds.Y, s)
    torch.testing.assert_close(sc.ref_point, z)
    lam = sc.weights
    sigma = cov.diagonal(dim1=-2, dim2=-1).sqrt()
    expected = (lam * (s * mu + beta * sigma - s * z)).min(-1).values
    torch.testing.assert_close(acqf(X), expected)

    inputs = mtucb_inputs(model, ds, posterior_transform=pt, beta=beta, seed=3,
                           scalarization="linear", bound="spectral")
    acqf = ScalarizedMultiTaskUCB(**inputs)
    lam = acqf.scalarization.weights
    spectral = torch.linalg.eigvalsh(cov)[..., -1].sqrt()
    expected = (s * mu) @ lam + lam.norm() * beta * spectral
    torch.testing.assert_close(acqf(X), expected)


def test_mtucb_fresh_weights_per_trial_and_seedable() -> None:
    model, ds = mt_model(n_obs=7)
    model6, ds6 = mt_model(n_obs=6)

    def lam(m, d, seed, pending=None):
        return mtucb_inputs(m, d, seed=seed, X_pending=pending)["scalarization"].weights

    assert torch.equal(lam(model, ds, 4), lam(model, ds, 4))  # reproducible
    assert not torch.allclose(lam(model, ds, 4), lam(model6, ds6, 4))  # next trial: new λ
    assert not torch.allclose(lam(model, ds, 4), lam(model, ds, 5))  # another seed
    # One pending point makes it another trial too.
    pending = torch.full((1, 2), 0.5, dtype=DT)
    assert not torch.allclose(lam(model6, ds6, 4), lam(model6, ds6, 4, pending))
    # seed=None: Ax's Client reseeds torch before every trial; λ must still change.
    torch.manual_seed(0)
    a = lam(model, ds, None)
    torch.manual_seed(0)
    b = lam(model6, ds6, None)
    torch.manual_seed(0)
    c = lam(model, ds, None)
    assert not torch.allclose(a, b) and torch.equal(a, c)


def test_mtucb_pending_points_match_model_refit_with_hallucinated_data() -> None:
    model, ds = mt_model()
    Xp = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=DT)
    schedule = TheoremTwoBeta(b=1.0, sigma=0.1)
    inputs = mtucb_inputs(model, ds, X_pending=Xp, beta=schedule, seed=0)
    # β from the real data only (Lemma-4 log det of the un-hallucinated model).
    torch.testing.assert_close(torch.as_tensor(inputs["beta"]), schedule(model))
    # Reference: the same model rebuilt on data + (X_pending, μ(X_pending)).
    with torch.no_grad():
        Yp = model.posterior(Xp).mean
    ref = ExactMultiTaskGP(torch.cat([ds.X, Xp]), torch.cat([ds.Y, Yp]))
    ref.load_state_dict(model.state_dict())
    X = torch.rand(6, 1, 2, generator=torch.Generator().manual_seed(2), dtype=DT)
    X = torch.cat([X, Xp.unsqueeze(1)])
    assert inputs["model"] is model and torch.equal(inputs["X_pending"], Xp)
    acqf = ScalarizedMultiTaskUCB(**inputs)  # conditions on the pending points (GP-BUCB)
    m_new, c_new = acqf.model.task_posterior(X)
    m_ref, c_ref = ref.task_posterior(X)
    m_old, c_old = model.task_posterior(X)
    torch.testing.assert_close(m_new, m_ref)
    torch.testing.assert_close(c_new, c_ref)
    torch.testing.assert_close(m_new, m_old)  # GP-BUCB: the mean does not move
    var_old = c_old.diagonal(dim1=-2, dim2=-1)[-2:]
    var_new = c_new.diagonal(dim1=-2, dim2=-1)[-2:]
    assert (var_new < 0.5 * var_old).all()  # ... the variance at pending points shrinks
    acqf(X[:1])  # evaluates


def test_heavy_tailed_constructor_minimise_and_pending() -> None:
    model = truncated_gp()
    constructor = get_acqf_input_constructor(HeavyTailedUCB)
    # Maximise, nothing pending: the model itself and its own β_{t+1}.
    inputs = constructor(model=model, posterior_transform=ScalarizedPosteriorTransform(
        weights=torch.ones(1, dtype=DT)))
    assert inputs["model"] is model and inputs["beta"] == model.beta()
    assert inputs["maximize"] is True and inputs["X_pending"] is None
    # Minimise with two pending points.
    Xp = torch.tensor([[0.3], [0.7]], dtype=DT)
    pt = ScalarizedPosteriorTransform(weights=-torch.ones(1, dtype=DT))
    inputs = constructor(model=model, posterior_transform=pt, X_pending=Xp)
    assert inputs["model"] is model and inputs["beta"] == model.beta()
    assert inputs["maximize"] is False and torch.equal(inputs["X_pending"], Xp)
    ref = TruncatedGP(  # variance reference: from scratch on X ∪ X_pending (rewards irrelevant)
        torch.cat([model.train_X, Xp]), torch.zeros(10, 1, dtype=DT), alpha=1.0, v=4.0
    )
    X = torch.linspace(0, 1, 11, dtype=DT).reshape(11, 1, 1)
    base_mean, _ = model.mean_and_variance(X)
    _, ref_var = ref.mean_and_variance(X)
    acqf = HeavyTailedUCB(**inputs)
    expected = -base_mean[:, 0] + model.beta() * ref_var[:, 0].clamp_min(1e-12).sqrt()
    torch.testing.assert_close(acqf(X), expected)


def test_constructors_refuse_unsupported_inputs() -> None:
    model, ds = mt_model()
    with pytest.raises(ValueError, match="outcome constraints"):
        mtucb_inputs(model, ds, constraints_tuple=(torch.ones(1, 2), torch.ones(1, 1)))
    with pytest.raises(ValueError, match="±1"):
        mtucb_inputs(model, ds, posterior_transform=ScalarizedPosteriorTransform(
            weights=torch.tensor([2.0, 1.0], dtype=DT)))
    with pytest.raises(ValueError, match="Every model output"):
        mtucb_inputs(model, ds, posterior_transform=ScalarizedPosteriorTransform(
            weights=torch.tensor([1.0, 0.0], dtype=DT)))
    with pytest.raises(ValueError, match="single metric"):
        mtucb_inputs(model, ds, objective_weights=torch.tensor([[1.0, 1.0]], dtype=DT))
    with pytest.raises(ValueError, match="X_pending"):
        mtucb_inputs(model, ds, X_pending=torch.zeros(2, 3, dtype=DT))
    with pytest.raises(ValueError, match="MC objective"):
        mtucb_inputs(model, ds, objective=lambda y, X=None: y.sum(-1))
    heavy = get_acqf_input_constructor(HeavyTailedUCB)
    with pytest.raises(ValueError, match="single-output"):
        heavy(model=model)
    with pytest.raises(ValueError, match="outcome constraints"):
        heavy(model=truncated_gp(), constraints=[lambda y: y[..., 0]])


def test_mtucb_reference_point_from_ax_thresholds_maps_rows_to_outputs() -> None:
    model, ds = mt_model()
    # Row 0 = output 1 minimised, row 1 = output 0 maximised (objective order != outputs).
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)
    ref = torch.tensor([-3.0, 0.25], dtype=DT)  # maximisation-aligned, one per row
    for kw in ({"ref_point": ref, "reference": "thresholds"},  # Ax's (maybe inferred) ones
               {"ref_point": ref + 1, "user_ref_point": ref}):  # the user's, complete
        inputs = mtucb_inputs(model, ds, objective_weights=W, seed=0, **kw)
        sc = inputs["scalarization"]
        assert sc.minimize.tolist() == [False, True] and sc.augmentation == 0.0  # plain s_λ
        torch.testing.assert_close(sc.ref_point, torch.tensor([0.25, 3.0], dtype=DT))
    # Unknown row order (no matrix): Ax's thresholds are not used, the data nadir is.
    pt = ScalarizedPosteriorTransform(weights=torch.tensor([1.0, -1.0], dtype=DT))
    inputs = mtucb_inputs(model, ds, posterior_transform=pt, ref_point=ref, seed=0,
                           reference="thresholds")
    z = nadir_reference(ds.Y, torch.tensor([1.0, -1.0], dtype=DT))
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
    model, ds = mt_model()
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)
    signs = torch.tensor([1.0, -1.0], dtype=DT)
    lam = sample_scalarization_weights(2, 1, generator=trial_generator(0, 7))[0]
    z, w = _scale_free_reference(ds.Y, signs, lam)
    partial = torch.tensor([-3.0, float("nan")], dtype=DT)  # the user set one threshold only
    for kw in ({}, {"ref_point": torch.tensor([-3.0, 0.25], dtype=DT)},
               {"ref_point": torch.tensor([-3.0, 0.25], dtype=DT), "user_ref_point": partial}):
        inputs = mtucb_inputs(model, ds, objective_weights=W, seed=0, **kw)
        sc = inputs["scalarization"]
        assert "beta" not in inputs  # the acquisition's default width
        assert sc.minimize.tolist() == [False, True] and sc.augmentation == 0.05
        torch.testing.assert_close(sc.ref_point, z)
        torch.testing.assert_close(sc.weights, w)
    acqf = ScalarizedMultiTaskUCB(**inputs)
    assert acqf.beta == ScalarizedMultiTaskUCB.__init__.__defaults__[0]
    with pytest.raises(ValueError, match="`reference` must be"):
        mtucb_inputs(model, ds, reference="nadir")


def test_mtucb_default_reference_uses_the_predicted_front_on_the_normalize_box() -> None:
    """With Ax's ``Normalize`` input transform (fixed bounds = the search space), z and the
    ranges come from the observed front and the model's payoff table on that box, as the loop's
    default sampler builds them; ``front="observed"`` or no such transform: observed only."""
    _, ds = mt_model()
    box = torch.tensor([[-1.0, 0.0], [2.0, 3.0]], dtype=DT)
    model = ExactMultiTaskGP(ds.X, ds.Y, input_transform=Normalize(2, bounds=box))
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=DT)  # output 1 minimised
    minimize = [False, True]
    lam = sample_scalarization_weights(2, 1, generator=trial_generator(0, 7))[0]
    sc = mtucb_inputs(model, ds, objective_weights=W, seed=0)["scalarization"]
    P = predicted_anchors(model, box, ds.Y, minimize=minimize, seed=0 + 7)
    ref = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize, predicted=P,
                                           span="front")
    tol = {"atol": 1e-6, "rtol": 1e-4}  # the anchors' L-BFGS-B is not bitwise reproducible
    torch.testing.assert_close(sc.ref_point, ref.ref_point, **tol)
    torch.testing.assert_close(sc.weights, ref.weights, **tol)
    observed = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize)
    assert not torch.allclose(sc.ref_point, observed.ref_point, atol=1e-3)  # the table counts
    old = mtucb_inputs(model, ds, objective_weights=W, seed=0, front="observed")
    torch.testing.assert_close(old["scalarization"].ref_point, observed.ref_point)
    learned = ExactMultiTaskGP(ds.X, ds.Y, input_transform=Normalize(2))  # no fixed box
    sc = mtucb_inputs(learned, ds, objective_weights=W, seed=0)["scalarization"]
    torch.testing.assert_close(sc.ref_point, observed.ref_point)
    with pytest.raises(ValueError, match="`front` must be"):
        mtucb_inputs(model, ds, objective_weights=W, front="model")


def test_mtucb_reference_uses_ax_search_space_bounds() -> None:
    """Ax passes its search-space digest's ``bounds`` (``d`` pairs in the model's input space):
    the payoff table is computed on that box even when the model has no ``Normalize`` (Ax's
    UnitX transform already maps the inputs), and bad bounds are refused by name."""
    _, ds = mt_model()
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
        sc = mtucb_inputs(model, ds, objective_weights=W, seed=0,
                           bounds=bounds)["scalarization"]
        torch.testing.assert_close(sc.ref_point, ref.ref_point, **tol)
        torch.testing.assert_close(sc.weights, ref.weights, **tol)
    observed = ChebyshevScalarization.from_data(lam, ds.Y, minimize=minimize)
    sc = mtucb_inputs(model, ds, objective_weights=W, seed=0)["scalarization"]  # no box
    torch.testing.assert_close(sc.ref_point, observed.ref_point)
    assert not torch.allclose(ref.ref_point, observed.ref_point, atol=1e-3)
    for bad in ([(0.0, 1.0)], [(1.0, 0.0), (0.0, 1.0)], [(0.0, float("inf")), (0.0, 1.0)],
                [(0.0, 1.0, 2.0)], "box"):
        with pytest.raises(ValueError, match="`bounds` must be 2 finite"):
            mtucb_inputs(model, ds, objective_weights=W, seed=0, bounds=bad)

