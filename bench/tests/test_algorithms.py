"""Algorithm registry and baseline pieces against brute-force references."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from gpytorch.kernels import RBFKernel
from torch.quasirandom import SobolEngine

from botorch_mtucb.acquisition import (
    ChebyshevScalarization,
    ConfidenceWidthAcquisition,
    LinearScalarization,
    TheoremTwoBeta,
    sample_scalarization_weights,
)
from botorch_mtucb.acquisition.scalarization.chebyshev import predicted_anchors
from botorch_mtucb.acquisition.thompson import ScalarizedThompsonSampling
from botorch_mtucb.kernels import ICMKernel
from botorch_mtucb.loop import RefitSchedule, TrustRegionOptimizer
from botorch_mtucb.models import ExactMultiTaskGP, practical_multitask_gp
from botorch_mtucb.multitask import practical
from botorch_mtucb.multitask.practical import WarmStartPracticalFactory
from mtucb_bench import algorithms
from mtucb_bench.algorithms import ALGORITHMS, RunConfig, get_algorithm, with_width
from mtucb_bench.baselines import (
    AppendixEBeta,
    ScalarizedIndependentUCB,
    gp_ucb_width,
    srinivas_beta,
    suite_baseline_models,
)
from mtucb_bench.experiments import EXPERIMENTS
from mtucb_bench.heavy_tailed_problems import synthetic_heavy_tailed_problem
from mtucb_bench.metrics import bayes_regret, instantaneous_regret
from mtucb_bench.mo_suite_base import SuiteProblem, sobol_points
from mtucb_bench.mo_suite_problems import MO_SUITE, make_suite_problem
from mtucb_bench.multi_task_problems import branin_problem, rkhs_problem
from mtucb_bench.runner import BAYES_SAMPLES, run_trial

DT = torch.float64
pytestmark = pytest.mark.filterwarnings(
    "ignore::botorch.exceptions.warnings.InputDataWarning",
    "ignore::linear_operator.utils.warnings.NumericalWarning",
)


def _it_model(B, X, Y, eta=0.1):
    k = RBFKernel().to(DT)
    k.lengthscale = 0.2
    kern = ICMKernel(k, num_tasks=B.shape[0], task_covar=torch.diag(torch.diagonal(B)))
    return ExactMultiTaskGP(X, Y, covar_module=kern, noise=eta), k


def test_appendix_e_beta_against_log_dets():
    g = torch.Generator().manual_seed(0)
    B = torch.tensor([[2.0, 0.3, 0.1], [0.3, 0.5, 0.0], [0.1, 0.0, 1.0]], dtype=DT)
    X = torch.rand(7, 1, generator=g, dtype=DT)
    Y = torch.randn(7, 3, generator=g, dtype=DT)
    model, k = _it_model(B, X, Y)
    K = k(X).to_dense().detach()
    # brute force: γ_i = ½ log det(I + B_ii K / η), radius √n (b + σ/√η √(2(γ+1+ln 1/δ)))
    gammas = [0.5 * torch.logdet(torch.eye(7, dtype=DT) + B[i, i] * K / 0.1) for i in range(3)]
    gamma = float(max(gammas))
    b, sigma, delta = 1.5, 0.1, 0.1
    single = b + sigma / math.sqrt(0.1) * math.sqrt(2 * (gamma + 1 + math.log(1 / delta)))
    beta = AppendixEBeta(b, sigma, 3, "gp-ucb", delta)(model)
    assert math.isclose(float(beta), math.sqrt(3) * single, rel_tol=1e-9)
    # the fair radius uses the sum over tasks (Lemma 4) instead: smaller than √n × single here
    fair = TheoremTwoBeta(b=b, sigma=sigma, delta=delta)(model)
    logdet_total = sum(2 * gm for gm in gammas)
    assert math.isclose(
        float(fair), b + sigma / math.sqrt(0.1) * math.sqrt(2 * math.log(10) + logdet_total),
        rel_tol=1e-9,
    )
    assert float(fair) < float(beta)
    with pytest.raises(ValueError, match="kind"):
        AppendixEBeta(1.0, 0.1, 2, "ucb")


def test_scalarized_independent_ucb_by_hand():
    g = torch.Generator().manual_seed(1)
    X = torch.rand(6, 1, generator=g, dtype=DT)
    Y = torch.randn(6, 2, generator=g, dtype=DT)
    subs = []
    for i in range(2):
        m = SingleTaskGP(X, Y[:, i : i + 1], outcome_transform=None)
        m.likelihood.noise = 0.1
        m.eval()
        subs.append(m)
    model = ModelListGP(*subs)
    Xt = torch.rand(5, 1, 1, generator=g, dtype=DT)
    mu = torch.stack([m.posterior(Xt).mean[..., 0, 0] for m in subs], dim=-1)
    sd = torch.stack([m.posterior(Xt).variance[..., 0, 0].sqrt() for m in subs], dim=-1)
    w = torch.tensor([0.3, 0.7], dtype=DT)
    z = torch.tensor([-2.0, -2.0], dtype=DT)
    cheb = ScalarizedIndependentUCB(model, ChebyshevScalarization(w, z), 2.0)(Xt)
    torch.testing.assert_close(cheb, (w * (mu + 2.0 * sd - z)).min(dim=-1).values)
    lin = ScalarizedIndependentUCB(model, LinearScalarization(w), 2.0)(Xt)
    torch.testing.assert_close(lin, ((mu + 2.0 * sd) * w).sum(dim=-1))
    with pytest.raises(ValueError, match="beta"):
        ScalarizedIndependentUCB(model, LinearScalarization(w), -1.0)
    # It declares its width, so the loop records β per round.
    ucb = ScalarizedIndependentUCB(model, LinearScalarization(w), beta=1.0)
    assert isinstance(ucb, ConfidenceWidthAcquisition)


def test_width_formulas():
    assert math.isclose(srinivas_beta(3, 101, 0.1), 2 * math.log(101 * 9 * math.pi**2 / 0.6))
    assert math.isclose(gp_ucb_width(4, v=4.0, B=1.0), 1.0 + 2.0 * math.sqrt(math.log(5)))


def test_every_multi_task_algorithm_runs():
    problem = rkhs_problem(2, 0)
    assert "continuous domain" in get_algorithm("Sobol").available(problem)
    for name, spec in ALGORITHMS.items():
        if spec.kind != "multi_task" or name in ("Sobol", "MT-UCB-TR"):
            continue
        T = 1 if name == "qLogNEHVI" else 3
        tr = run_trial(problem, name, T, seed=0)
        assert tr.regret.shape == (T,) and (tr.regret >= 0).all(), name
        assert tr.hypervolume is not None and tr.bayes is not None
        sizes = [r.dictionary_size for r in tr.history.rounds]
        if "BKB" in name:  # m_t is recorded: after round t + 1 there are t + 2 points
            assert all(1 <= m <= t + 2 for t, m in enumerate(sizes)), (name, sizes)
        else:
            assert sizes == [None] * T, name
    # IT-KB's Appendix-E radius is the larger one (√n blow-up), by construction
    a = run_trial(problem, "IT-KB", 2, seed=0).history
    f = run_trial(problem, "IT-KB-fair", 2, seed=0).history
    assert a.rounds[0].beta > f.rounds[0].beta
    assert "n <= 10" in get_algorithm("qLogNEHVI").available(rkhs_problem(20, 0))
    assert "continuous domain" in get_algorithm("MT-UCB-TR").available(problem)


def test_mt_ucb_tr_entry_is_mt_ucb_inside_the_trust_region():
    """MT-UCB-TR: MT-UCB's model schedule and acquisition, TuRBO's isotropic region as the
    maximiser with the runner's restarts / raw samples / seed (the region itself is tested in
    tests/acquisition/test_trust_region.py); the runner accepts the entry."""
    p = make_suite_problem("branin-currin")
    cfg = RunConfig(horizon=3, bound="directional", seed=7)
    tr_setup = get_algorithm("MT-UCB-TR").build(p, cfg)
    ref_setup = get_algorithm("MT-UCB").build(p, cfg)
    opt = tr_setup.optimizer
    assert isinstance(opt, TrustRegionOptimizer) and ref_setup.optimizer is None
    assert (opt.shape, opt.num_restarts, opt.raw_samples, opt.seed) == ("isotropic", 4, 256, 7)
    assert (tr_setup.update, tr_setup.refit_every) == (ref_setup.update, ref_setup.refit_every)
    X = sobol_points(6, p.bounds, 0)
    Y = p.f(X)
    lam = torch.tensor([0.4, 0.6], dtype=torch.float64)
    torch.manual_seed(0)
    a = tr_setup.acquisition_factory(tr_setup.model_factory(X, Y),
                                     ChebyshevScalarization(lam, p.ref_point))
    torch.manual_seed(0)
    b = ref_setup.acquisition_factory(ref_setup.model_factory(X, Y),
                                      ChebyshevScalarization(lam, p.ref_point))
    torch.testing.assert_close(a(X.unsqueeze(-2)), b(X.unsqueeze(-2)))
    torch.manual_seed(0)
    trial = run_trial(p, "MT-UCB-TR", 3, seed=0, initial_design="sobol:6")
    assert trial.history.X.shape == (3, 2)


def _entry_beside_reference(name: str, reference: str):
    """``name``'s and ``reference``'s setups on branin-currin (same schedule and optimizer
    asserted), the problem, its config, 6 Sobol inputs and a λ."""
    p = make_suite_problem("branin-currin")
    cfg = RunConfig(horizon=3, bound="directional", seed=7)
    setup, ref_setup = get_algorithm(name).build(p, cfg), get_algorithm(reference).build(p, cfg)
    assert (setup.update, setup.refit_every, setup.optimizer) == (
        ref_setup.update, ref_setup.refit_every, ref_setup.optimizer)
    lam = torch.tensor([0.4, 0.6], dtype=torch.float64)
    return p, cfg, setup, ref_setup, sobol_points(6, p.bounds, 0), lam


def test_mt_ts_entry_is_mt_ucb_with_a_seeded_thompson_path():
    p, _, ts_setup, ref_setup, X, lam = _entry_beside_reference("MT-TS", "MT-UCB")
    assert isinstance(ts_setup.model_factory, WarmStartPracticalFactory)
    model = ts_setup.model_factory(X, p.f(X))
    a = ts_setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
    b = ts_setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
    u = ref_setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
    assert isinstance(a, ScalarizedThompsonSampling) and a.num_paths == 1
    torch.testing.assert_close(a.scalarization.ref_point, u.scalarization.ref_point)
    torch.testing.assert_close(a(X.unsqueeze(-2)), b(X.unsqueeze(-2)))  # seeded per round
    trial = run_trial(p, "MT-TS", 3, seed=0, initial_design="sobol:6")
    assert trial.history.X.shape == (3, 2) and trial.hypervolume is not None


@pytest.mark.parametrize("name", ["MT-UCB-HVI", "MT-LogEHVI"])
def test_known_reference_entries_take_the_problems_reference_point(name):
    """``<name>-z``: the same model and acquisition at the problem's z (qLogNEHVI's), where
    ``<name>`` takes the round's scale-free z."""
    p, cfg, z_setup, ref_setup, X, lam = _entry_beside_reference(f"{name}-z", name)
    model = z_setup.model_factory(X, p.f(X))
    a = z_setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
    b = ref_setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
    assert type(a) is type(b)
    torch.testing.assert_close(a.ref_point, p.ref_point)
    assert not torch.allclose(b.ref_point, p.ref_point)
    # the acquisition at z over the model's front, whatever the round's s_λ (not rebuilt)
    direct = type(a)(model, p.ref_point, X)
    Xq = sobol_points(5, p.bounds, 3).unsqueeze(-2)
    torch.testing.assert_close(a(Xq), direct(Xq))
    it = get_algorithm("IT-LogEHVI-z").build(p, cfg)
    assert it.model_factory.independent and not z_setup.model_factory.independent
    lmc = get_algorithm("LMC-LogEHVI-z").build(p, cfg).model_factory
    assert lmc.per_task and not lmc.independent and not z_setup.model_factory.per_task
    for name in ("LMC-UCB", "LMC-UCB-HVI"):
        lmc = get_algorithm(name).build(p, cfg).model_factory
        assert lmc.per_task and not lmc.independent


def test_continuous_regrets_use_polished_optima():
    # Branin on the unit square, x*_λ from a deliberately coarse 11 x 11 grid + polish
    problem = branin_problem(continuous=True, regret_grid_size=11)
    tr = run_trial(problem, "MT-KB", 3, seed=0)
    h = tr.history
    W = torch.stack([r.weights for r in h.rounds])
    F_q, z = problem.f(h.X), problem.ref_point
    coarse = instantaneous_regret(problem.f(problem.regret_X), F_q, W, "chebyshev", z)
    lin = torch.linspace(0, 1, 201, dtype=DT)
    dense = instantaneous_regret(
        problem.f(torch.cartesian_prod(lin, lin)), F_q, W, "chebyshev", z
    )
    assert (tr.regret >= coarse - 1e-12).all()
    assert (tr.regret - coarse).max() > 1e-4  # the coarse grid alone misses the optimum
    assert (tr.regret >= dense - 1e-5).all()  # as good as a 201² grid, or better
    # Bayes regret: the runner's Monte-Carlo λ (seed + 4), polished optima vs grid-only
    W_mc = sample_scalarization_weights(
        9, BAYES_SAMPLES, "chebyshev", torch.Generator().manual_seed(0 + 4)
    )
    coarse_b = bayes_regret(problem.f(problem.regret_X), F_q, W_mc, "chebyshev", z)
    assert tr.bayes is not None and (tr.bayes >= coarse_b - 1e-12).all()
    assert (tr.bayes - coarse_b)[-1] > 1e-6


@pytest.mark.slow
def test_every_heavy_tailed_algorithm_runs():
    problem = synthetic_heavy_tailed_problem("se", "student", seed=0)
    for name, spec in ALGORITHMS.items():
        if spec.kind != "heavy_tailed":
            continue
        tr = run_trial(problem, name, 20, seed=0)
        assert tr.regret.shape == (20,) and (tr.regret >= 0).all(), name
        assert tr.bayes is None
    matern = synthetic_heavy_tailed_problem("matern", "student", seed=0)
    assert "QFF" in get_algorithm("ATA-GP-UCB-QFF").available(matern)
    with pytest.raises(ValueError, match="heavy_tailed algorithm"):
        run_trial(rkhs_problem(2, 0), "TGP-UCB", 2, seed=0)
    with pytest.raises(ValueError, match="Unknown algorithm"):
        get_algorithm("UCB1")
    assert RunConfig(horizon=5).bound == "spectral"


# ------------------------------------------------------------- issue 16: practical entries


def test_practical_model_predicts_better_than_the_paper_defaults():
    """Held-out NRMSE at 20 Sobol points on VehicleSafety (measured in mo_diagnosis.py)."""
    p = make_suite_problem("vehicle-safety")
    X, Xt = sobol_points(20, p.bounds, 0), sobol_points(256, p.bounds, 1)
    Y, Ft = p.f(X), p.f(Xt)
    careful = practical_multitask_gp(X, Y, p.bounds)
    assert careful.likelihood.raw_noise.requires_grad and not careful._zero_mean
    paper = ExactMultiTaskGP(X, Y, input_transform=Normalize(5, bounds=p.bounds),
                             outcome_transform=Standardize(m=3))

    def nrmse(m):
        with torch.no_grad():
            mu = m.posterior(Xt).mean
        return float(((mu - Ft).square().mean(0).sqrt() / Ft.std(0)).mean())

    assert nrmse(careful) < 0.8 * nrmse(paper)


def test_mt_ucb_entry_is_scale_free_refitted_and_beta_one():
    """s_λ from the observed and the model-predicted front (the loop's default sampler)."""
    p = make_suite_problem("branin-currin", units="raw")
    X = sobol_points(6, p.bounds, 0)
    Y = p.f(X)
    for name in ("MT-UCB", "IT-UCB", "MT-UCB-refit", "IT-UCB-refit"):
        setup = get_algorithm(name).build(p, RunConfig(horizon=5, bound="directional"))
        model = setup.model_factory(X, Y)
        lam = torch.tensor([0.3, 0.7], dtype=torch.float64)
        acqf = setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
        P = predicted_anchors(model, p.bounds, Y, seed=0 + Y.shape[0])  # the model's payoff
        ref = ChebyshevScalarization.from_data(lam, Y, predicted=P, span="front")  # table
        torch.testing.assert_close(acqf.scalarization.weights, ref.weights)
        torch.testing.assert_close(acqf.scalarization.ref_point, ref.ref_point)
        assert acqf.scalarization.augmentation == 0.05 and float(acqf.beta) == 1.0
        assert acqf.model is model  # the loop refits or conditions, the acquisition not
        if name.endswith("-refit"):
            assert setup.update == "refit" and setup.refit_every == 0
        else:
            assert setup.update == "condition" and setup.refit_every == RefitSchedule()
            assert isinstance(setup.model_factory, WarmStartPracticalFactory)
            assert setup.model_factory.independent == name.startswith("IT")
        assert acqf(X[:3].unsqueeze(-2)).shape == (3,)


def test_suite_baselines_are_fitted_paper_baselines_fixed():
    factory, update = suite_baseline_models(rkhs_problem(2, 0))
    assert update == "condition"
    m = factory(torch.rand(3, 1, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64))
    assert isinstance(m, ModelListGP) and len(m.models) == 2
    p = make_suite_problem("zdt1")
    factory, update = suite_baseline_models(p)
    assert update == "refit"
    X = sobol_points(8, p.bounds, 0)
    m = factory(X, p.f(X))
    lengthscales = m.models[0].covar_module.lengthscale
    assert not torch.allclose(lengthscales, lengthscales.mean().expand_as(lengthscales))
    for name in ("MOBO", "qLogNParEGO", "qLogNEHVI"):
        assert get_algorithm(name).build(p, RunConfig(horizon=3)).update == "refit"
        assert get_algorithm(name).build(rkhs_problem(2, 0), RunConfig(3)).update == "condition"


def test_suite_experiments_registered():
    for name in MO_SUITE:
        exp = EXPERIMENTS[f"mo-{name}"]
        assert "MT-UCB" in exp.algorithms and "qLogNParEGO" in exp.algorithms
        assert exp.random_instance == (name == "corr-rff")
    assert isinstance(EXPERIMENTS["mo-zdt1"].make_problem(0, None), SuiteProblem)


def test_refit_schedule_calls_the_factory_after_every_round(monkeypatch):
    """update="refit": the ``-refit`` entries fit a fresh model on all data each round."""
    sizes = []
    real = algorithms.practical_multitask_gp

    def spy(X, Y, *args, **kwargs):
        sizes.append(X.shape[0])
        return real(X, Y, *args, **kwargs)

    monkeypatch.setattr(algorithms, "practical_multitask_gp", spy)
    p = make_suite_problem("branin-currin")
    tr = run_trial(p, "MT-UCB-refit", 3, seed=0, initial_design="sobol:4")
    assert sizes == [4, 5, 6, 7]  # the initial fit, then one refit per round on all data
    assert tr.history.initial_X.shape == (4, 2)


def test_mt_ucb_entry_refits_on_the_loop_schedule_warm_and_conditions_between(monkeypatch):
    """MT-UCB: refits (warm-started) on RefitSchedule(); other rounds condition the model,
    and the acquisition's scale-free scalarization then sees all data."""
    fits, starts = [], []
    real_fit = practical.fit_practical_model

    def spy(model, warm_start=None, **kwargs):
        fits.append(model.train_inputs[0].shape[0])
        starts.append(warm_start)
        return real_fit(model, warm_start=warm_start, **kwargs)

    monkeypatch.setattr(practical, "fit_practical_model", spy)
    p = make_suite_problem("branin-currin")
    tr = run_trial(p, "MT-UCB", 4, seed=0, initial_design="sobol:20")
    # N = 21: 1 < max(1, ceil(0.1 * 20)) = 2, no refit; N = 22 refits; N = 23, 24 do not
    # N = 22 refits twice: from the last fit and cold (the better likelihood is kept)
    assert fits == [20, 22, 22]
    assert starts[0] is None and starts[1] is not None and starts[2] is None
    assert [RefitSchedule()(t, 20 + t, 20 if t <= 2 else 22) for t in (1, 2, 3, 4)] == [
        False, True, False, False]
    setup = get_algorithm("MT-UCB").build(p, RunConfig(horizon=2, bound="directional"))
    X, Y = tr.history.X, tr.history.Y
    X0, Y0 = tr.history.initial_X, tr.history.initial_Y
    model = setup.model_factory(X0, Y0).condition_on_observations(X[:3], Y[:3])
    lam = torch.tensor([0.5, 0.5], dtype=torch.float64)
    acqf = setup.acquisition_factory(model, ChebyshevScalarization(lam, p.ref_point))
    Y_all = torch.cat([Y0, Y[:3]])
    P = predicted_anchors(model, p.bounds, Y_all, seed=Y_all.shape[0])  # conditioned model's
    ref = ChebyshevScalarization.from_data(lam, Y_all, predicted=P, span="front")
    torch.testing.assert_close(acqf.scalarization.ref_point, ref.ref_point)
    torch.testing.assert_close(acqf.scalarization.weights, ref.weights)


def test_sobol_random_search_continues_the_initial_sobol_sequence():
    p = make_suite_problem("vehicle-safety")
    tr = run_trial(p, "Sobol", 4, seed=3, initial_design="sobol")
    n0 = max(5, 2 * p.dim)
    lo, hi = p.bounds
    U = SobolEngine(p.dim, scramble=True, seed=4).draw(n0 + 4, dtype=DT)
    ref = lo + (hi - lo) * U
    torch.testing.assert_close(tr.history.initial_X, ref[:n0], rtol=0, atol=1e-12)
    torch.testing.assert_close(tr.history.X, ref[n0:], rtol=0, atol=1e-12)
    assert (tr.regret >= 0).all() and tr.wall_time.shape == (4,)
    assert get_algorithm("Sobol").available(p) is None


def test_width_option_of_the_practical_entries():
    assert with_width("mt-ucb", 0.5) == "MT-UCB@beta=0.5"
    assert with_width("MT-UCB@beta=2", 0.123456789) == "MT-UCB@beta=0.123456789"
    spec = get_algorithm("it-ucb@BETA=3.0")
    assert spec.name == "IT-UCB@beta=3" and spec.practical and spec.tunable_width
    p = make_suite_problem("branin-currin")
    X = sobol_points(6, p.bounds, 0)
    Y = p.f(X)
    lam = torch.tensor([0.3, 0.7], dtype=DT)
    for name, beta in (("MT-UCB", 1.0), ("MT-UCB@beta=2.5", 2.5), ("MT-UCB@beta=0", 0.0)):
        setup = get_algorithm(name).build(p, RunConfig(horizon=5))
        acqf = setup.acquisition_factory(setup.model_factory(X, Y),
                                         ChebyshevScalarization(lam, p.ref_point))
        assert float(acqf.beta) == beta
    for bad, match in [("MT-UCB@beta=x", "Malformed"), ("MT-UCB@width=1", "Malformed"),
                       ("MT-UCB@beta=nan", "Malformed"), ("qLogNParEGO@beta=1", "no tunable"),
                       ("XX@beta=1", "Unknown algorithm"), (3, "must be a string")]:
        with pytest.raises(ValueError, match=match):
            get_algorithm(bad)
    ht = synthetic_heavy_tailed_problem("se", "student", seed=0)
    with pytest.raises(ValueError, match="start with no data"):
        run_trial(ht, "GP-UCB", 1, seed=0, initial_design="random:3")
