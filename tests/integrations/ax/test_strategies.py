"""Ax integration: input constructors, Ax-facing models, and real ``ax.Client`` loops.

References: brute-force formulas written out here (Chebyshev / linear UCB with the signs,
Pareto front by pairwise comparison, nadir reference point), models rebuilt from scratch on
the augmented data (GP-BUCB hallucination), the raw values reported to Ax (data order and
scale seen by the heavy-tailed model), Ax's own StandardizeY statistics (reference point =
the user's objective thresholds). The constructor's reference-point tests are in
``test_ax_reference_point.py``.
"""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch

pytest.importorskip("ax")

from ax.api.configs import RangeParameterConfig  # noqa: E402
from ax.generators.torch.botorch_modular.utils import fit_botorch_model  # noqa: E402
from botorch.acquisition.input_constructors import get_acqf_input_constructor  # noqa: E402
from botorch.acquisition.objective import ScalarizedPosteriorTransform  # noqa: E402
from botorch.utils.datasets import SupervisedDataset  # noqa: E402
from gpytorch.mlls import ExactMarginalLogLikelihood  # noqa: E402

from botorch_mtucb.acquisition import (  # noqa: E402
    HeavyTailedUCB,
    ScalarizedMultiTaskUCB,
    TheoremTwoBeta,
)
from botorch_mtucb.integrations.ax import (  # noqa: E402
    AxExactMultiTaskGP,
    AxTruncatedGP,
    heavy_tailed_generation_strategy,
    mtucb_generation_strategy,
)
from botorch_mtucb.integrations.ax.pending import SignedHallucinatedModel  # noqa: E402
from botorch_mtucb.models import (  # noqa: E402
    ExactMultiTaskGP,
    TruncatedGP,
)

DT = torch.float64
FAST_OPT = {"num_restarts": 2, "raw_samples": 32}


# ----------------------------------------------------------------------------- helpers
def _mt_model(seed: int = 3, n_obs: int = 7) -> tuple[ExactMultiTaskGP, SupervisedDataset]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n_obs, 2, generator=g, dtype=DT)
    Y = torch.stack([torch.sin(5 * X[:, 0]), X.sum(-1) ** 2], dim=-1)
    Y = Y + 0.1 * torch.randn(n_obs, 2, generator=g, dtype=DT)
    model = ExactMultiTaskGP(X, Y)  # default hyperparameters (no fitting needed)
    ds = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["a", "b"])
    return model, ds


def _mtucb_inputs(model, ds, **kwargs):
    constructor = get_acqf_input_constructor(ScalarizedMultiTaskUCB)
    return constructor(model=model, training_data=ds, **kwargs)


def _pareto_min(Y: torch.Tensor) -> set[int]:
    """Indices of non-dominated rows for minimisation, by pairwise comparison."""
    out = set()
    for i in range(Y.shape[0]):
        dominated = any(
            bool((Y[j] <= Y[i]).all() and (Y[j] < Y[i]).any()) for j in range(Y.shape[0])
        )
        if not dominated:
            out.add(i)
    return out


def _nadir_reference(Y: torch.Tensor, signs: torch.Tensor, scale: float = 0.1) -> torch.Tensor:
    """Brute force: nadir of the (maximisation-aligned) Pareto front minus scale·range."""
    A = Y * signs
    front = []
    for i in range(A.shape[0]):
        if not any(
            bool((A[j] >= A[i]).all() and (A[j] > A[i]).any()) for j in range(A.shape[0])
        ):
            front.append(A[i])
    F = torch.stack(front)
    lo, hi = F.min(0).values, F.max(0).values
    if F.shape[0] == 1:  # one Pareto point: margin relative to its magnitude
        return (lo - scale * lo.abs().clamp_min(1e-9)) * signs
    return (lo - scale * (hi - lo).clamp_min(1e-9)) * signs


def _unit_box(lo: float = 0.0, hi: float = 1.0) -> list[RangeParameterConfig]:
    return [
        RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(lo, hi))
        for i in range(2)
    ]


# ----------------------------------------------------------------------------- constructors
def test_mtucb_constructor_signs_reference_point_and_value() -> None:
    model, ds = _mt_model()
    pt = ScalarizedPosteriorTransform(weights=torch.tensor([-1.0, 1.0], dtype=DT))
    X = torch.rand(9, 1, 2, generator=torch.Generator().manual_seed(5), dtype=DT)
    post = model.posterior(X)  # independent route: the joint MVN, not task_posterior
    mu = post.mean[:, 0, :]
    cov = post.mvn.covariance_matrix  # 9 x 2 x 2 for q = 1
    s = torch.tensor([-1.0, 1.0], dtype=DT)
    beta = 1.7

    inputs = _mtucb_inputs(model, ds, posterior_transform=pt, beta=beta, seed=3,
                           reference="thresholds")  # plain s_λ at the data's nadir heuristic
    acqf = ScalarizedMultiTaskUCB(**inputs)
    sc = acqf.scalarization
    assert sc.minimize.tolist() == [True, False]
    z = _nadir_reference(ds.Y, s)
    torch.testing.assert_close(sc.ref_point, z)
    lam = sc.weights
    sigma = cov.diagonal(dim1=-2, dim2=-1).sqrt()
    expected = (lam * (s * mu + beta * sigma - s * z)).min(-1).values
    torch.testing.assert_close(acqf(X), expected)

    inputs = _mtucb_inputs(model, ds, posterior_transform=pt, beta=beta, seed=3,
                           scalarization="linear", bound="spectral")
    acqf = ScalarizedMultiTaskUCB(**inputs)
    lam = acqf.scalarization.weights
    spectral = torch.linalg.eigvalsh(cov)[..., -1].sqrt()
    expected = (s * mu) @ lam + lam.norm() * beta * spectral
    torch.testing.assert_close(acqf(X), expected)


def test_mtucb_fresh_weights_per_trial_and_seedable() -> None:
    model, ds = _mt_model(n_obs=7)
    model6, ds6 = _mt_model(n_obs=6)

    def lam(m, d, seed, pending=None):
        return _mtucb_inputs(m, d, seed=seed, X_pending=pending)["scalarization"].weights

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
    model, ds = _mt_model()
    Xp = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=DT)
    schedule = TheoremTwoBeta(b=1.0, sigma=0.1)
    inputs = _mtucb_inputs(model, ds, X_pending=Xp, beta=schedule, seed=0)
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


def _truncated_gp() -> TruncatedGP:
    g = torch.Generator().manual_seed(3)
    X = torch.rand(8, 1, generator=g, dtype=DT)
    Y = torch.sin(6 * X) + 2.0 * torch.randn(8, 1, generator=g, dtype=DT)
    return TruncatedGP(X, Y, alpha=1.0, v=4.0, constants="authors")


def test_heavy_tailed_constructor_minimise_and_pending() -> None:
    model = _truncated_gp()
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
    view = SignedHallucinatedModel(model, -1.0, Xp)  # the view kept for direct users
    ref = TruncatedGP(  # variance reference: from scratch on X ∪ X_pending (rewards irrelevant)
        torch.cat([model.train_X, Xp]), torch.zeros(10, 1, dtype=DT), alpha=1.0, v=4.0
    )
    X = torch.linspace(0, 1, 11, dtype=DT).reshape(11, 1, 1)
    mean, var = view.mean_and_variance(X)
    base_mean, base_var = model.mean_and_variance(X)
    _, ref_var = ref.mean_and_variance(X)
    torch.testing.assert_close(mean, -base_mean)
    torch.testing.assert_close(var, ref_var)
    acqf = HeavyTailedUCB(**inputs)
    expected = -base_mean[:, 0] + model.beta() * ref_var[:, 0].clamp_min(1e-12).sqrt()
    torch.testing.assert_close(acqf(X), expected)
    post = view.posterior(X)
    torch.testing.assert_close(post.mean[..., 0], -base_mean)
    torch.testing.assert_close(post.variance[..., 0], ref_var)


def test_constructors_refuse_unsupported_inputs() -> None:
    model, ds = _mt_model()
    with pytest.raises(ValueError, match="outcome constraints"):
        _mtucb_inputs(model, ds, constraints_tuple=(torch.ones(1, 2), torch.ones(1, 1)))
    with pytest.raises(ValueError, match="±1"):
        _mtucb_inputs(model, ds, posterior_transform=ScalarizedPosteriorTransform(
            weights=torch.tensor([2.0, 1.0], dtype=DT)))
    with pytest.raises(ValueError, match="Every model output"):
        _mtucb_inputs(model, ds, posterior_transform=ScalarizedPosteriorTransform(
            weights=torch.tensor([1.0, 0.0], dtype=DT)))
    with pytest.raises(ValueError, match="single metric"):
        _mtucb_inputs(model, ds, objective_weights=torch.tensor([[1.0, 1.0]], dtype=DT))
    with pytest.raises(ValueError, match="X_pending"):
        _mtucb_inputs(model, ds, X_pending=torch.zeros(2, 3, dtype=DT))
    with pytest.raises(ValueError, match="MC objective"):
        _mtucb_inputs(model, ds, objective=lambda y, X=None: y.sum(-1))
    heavy = get_acqf_input_constructor(HeavyTailedUCB)
    with pytest.raises(ValueError, match="single-output"):
        heavy(model=model)
    with pytest.raises(ValueError, match="outcome constraints"):
        heavy(model=_truncated_gp(), constraints=[lambda y: y[..., 0]])
    with pytest.raises(ValueError, match="num_initial_trials"):
        mtucb_generation_strategy(num_initial_trials=0)
    with pytest.raises(ValueError, match="scalarization"):
        mtucb_generation_strategy(scalarization="pareto")
    with pytest.raises(ValueError, match="bound"):
        mtucb_generation_strategy(bound="frobenius")
    with pytest.raises(ValueError, match="`model` must be 'practical' or 'paper'"):
        mtucb_generation_strategy(model="sparse")
    with pytest.raises(ValueError, match="`reference` must be 'data' or 'thresholds'"):
        mtucb_generation_strategy(reference="nadir")
    with pytest.raises(ValueError, match="`beta` must be"):
        mtucb_generation_strategy(beta=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        heavy_tailed_generation_strategy(alpha=1.5, v=1.0)
    with pytest.raises(ValueError, match="features"):
        heavy_tailed_generation_strategy(alpha=1.0, v=1.0, model="adaptive_truncation")


def test_ax_models_construct_inputs_and_fit() -> None:
    model, ds = _mt_model()
    Yvar = torch.full_like(ds.Y, 0.01)
    Yvar[2, 1] = float("nan")  # one SEM missing: all are ignored (see test_ax_models.py)
    ds_var = SupervisedDataset(ds.X, ds.Y, Yvar=Yvar,
                               feature_names=ds.feature_names, outcome_names=ds.outcome_names)
    with pytest.warns(UserWarning, match="ignores the observation noise"):
        kw = AxExactMultiTaskGP.construct_inputs(ds_var, noise=0.05)
    assert "train_Yvar" not in kw and kw["noise"] == 0.05
    assert AxExactMultiTaskGP(**kw).noise.item() == pytest.approx(0.05)
    with pytest.raises(ValueError, match="continuous"):
        AxExactMultiTaskGP.construct_inputs(ds, categorical_features=[0])
    ds1 = SupervisedDataset(ds.X, ds.Y[:, :1], feature_names=ds.feature_names,
                            outcome_names=["a"])
    ht = AxTruncatedGP(**AxTruncatedGP.construct_inputs(ds1, alpha=0.5, v=2.0))
    before = {k: v.clone() for k, v in ht.state_dict().items() if torch.is_tensor(v)}
    fit_botorch_model(ht, mll_class=ExactMarginalLogLikelihood)  # registered no-op
    after = {k: v for k, v in ht.state_dict().items() if torch.is_tensor(v)}
    assert before and before.keys() == after.keys()
    assert all(torch.equal(before[k], v) for k, v in after.items())


def test_import_without_ax_and_lazy_names(monkeypatch) -> None:
    code = (
        "import sys; sys.modules['ax'] = None\n"
        "import botorch_mtucb, botorch_mtucb.integrations as I\n"
        "try:\n    I.mtucb_generation_strategy\nexcept ImportError as e:\n"
        "    print('hint:', 'botorch-mtucb[ax]' in str(e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "hint: True" in out
    import botorch_mtucb.integrations as integrations

    assert integrations.mtucb_generation_strategy is mtucb_generation_strategy


def test_ax_practical_model_is_practical_multitask_gp() -> None:
    """Built as Ax builds it (construct_inputs + Normalize/Standardize submodules) and fitted,
    it has the same hyperparameters and posterior as ``practical_multitask_gp``."""
    import warnings

    from botorch.fit import fit_gpytorch_mll
    from botorch.models.transforms import Normalize, Standardize

    from botorch_mtucb.integrations.ax import AxPracticalMultiTaskGP
    from botorch_mtucb.models import practical_multitask_gp
    from botorch_mtucb.multitask.practical_fit import fit_practical_model

    _, ds = _mt_model(n_obs=10)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    ax_model = AxPracticalMultiTaskGP(
        **AxPracticalMultiTaskGP.construct_inputs(ds),
        input_transform=Normalize(2, bounds=bounds), outcome_transform=Standardize(m=2),
    )
    assert ax_model.learn_noise and hasattr(ax_model.likelihood, "noise_prior")
    ax_default = copy.deepcopy(ax_model)
    fit_practical_model(ax_model)  # practical_multitask_gp's own fit procedure
    ref = practical_multitask_gp(ds.X, ds.Y, bounds)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(ax_model.state_dict()[k], v)
    X = torch.rand(5, 2, generator=torch.Generator().manual_seed(0), dtype=DT)
    torch.testing.assert_close(ax_model.posterior(X).mean, ref.posterior(X).mean)
    # Ax's own fit (plain fit_gpytorch_mll, L-BFGS-B memory 10) reaches the same optimum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(ax_default.likelihood, ax_default))
    ax_default.eval()
    torch.testing.assert_close(ax_default.posterior(X).mean, ref.posterior(X).mean,
                               atol=1e-3, rtol=1e-3)

    def mll(m):
        m.train()
        out = ExactMarginalLogLikelihood(m.likelihood, m)(m(*m.train_inputs), m.train_targets)
        m.eval()
        return float(out)

    assert abs(mll(ax_default) - mll(ref)) < 1e-4
    ind = AxPracticalMultiTaskGP(**AxPracticalMultiTaskGP.construct_inputs(ds, independent=True))
    assert ind.covar_module.task_covar_matrix.equal(torch.eye(2, dtype=DT))
