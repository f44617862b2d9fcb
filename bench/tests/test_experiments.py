"""The experiment registry: initial designs, noise options, what each experiment stamps."""

from __future__ import annotations

import pytest
import torch
from torch.quasirandom import SobolEngine

from mtucb_bench.experiments import EXPERIMENTS, ExperimentOptions, get_experiment
from mtucb_bench.mo_suite_problems import MO_SUITE, make_suite_problem
from mtucb_bench.multi_task_problems import rkhs_problem
from mtucb_bench.problems import InitialDesign

DT = torch.float64


def test_initial_design_specs_and_refusals():
    assert InitialDesign.parse("paper") == InitialDesign()
    assert InitialDesign.parse(" Sobol ").spec == "sobol"
    assert InitialDesign.parse("sobol:12") == InitialDesign("sobol", 12)
    assert InitialDesign.parse("random:3").spec == "random:3"
    for bad, match in [("lhs", "kind 'lhs'"), ("sobol:x", "Malformed"), ("sobol:-2", "Malformed"),
                       ("sobol:0", ">= 1"), ("paper:3", "no size"), ("random", "needs a size")]:
        with pytest.raises(ValueError, match=match):
            InitialDesign.parse(bad)
    with pytest.raises(ValueError, match="must be a string"):
        InitialDesign.parse(3)
    with pytest.raises(ValueError, match="`initial_design` must be"):
        ExperimentOptions(initial_design="grid")
    with pytest.raises(ValueError, match="Malformed noise spec"):
        ExperimentOptions(noise="student-t")


def test_paper_design_is_the_old_single_random_point():
    finite = rkhs_problem(2, 3)
    g = torch.Generator().manual_seed(8)
    ref = finite.arms[torch.randint(0, finite.arms.shape[0], (1,), generator=g)]
    assert torch.equal(InitialDesign().draw(finite, 7), ref)
    box = make_suite_problem("zdt1")
    lo, hi = box.bounds
    g = torch.Generator().manual_seed(8)
    ref = lo + (hi - lo) * torch.rand(1, box.dim, generator=g, dtype=DT)
    assert torch.equal(InitialDesign().draw(box, 7), ref)


@pytest.mark.parametrize("name", ["branin-currin", "vehicle-safety", "car-side-impact"])
def test_sobol_design_size_grows_with_d_and_is_scrambled_sobol(name):
    p = make_suite_problem(name)
    design = InitialDesign.parse("sobol").resolve(p)
    assert design.size == max(5, 2 * p.dim)  # Ax's rule, the package's initial_design_size
    X = design.draw(p, 41)
    lo, hi = p.bounds
    U = SobolEngine(p.dim, scramble=True, seed=42).draw(design.size, dtype=DT)
    torch.testing.assert_close(X, lo + (hi - lo) * U, rtol=0, atol=1e-12)
    assert not torch.equal(X, design.draw(p, 42))  # another trial, another scrambling
    assert InitialDesign("sobol", 3).draw(p, 41).shape == (3, p.dim)


def test_random_design_and_domain_refusals():
    finite = rkhs_problem(2, 0)
    X = InitialDesign.parse("random:6").draw(finite, 5)
    assert X.shape == (6, finite.dim) and torch.unique(X, dim=0).shape[0] == 6
    assert (torch.cdist(X, finite.arms).min(dim=-1).values == 0).all()
    with pytest.raises(ValueError, match="continuous domain.*random:N"):
        InitialDesign.parse("sobol").resolve(finite)
    with pytest.raises(ValueError, match="more points than the"):
        InitialDesign.parse(f"random:{finite.arms.shape[0] + 1}").resolve(finite)
    box = make_suite_problem("zdt1")
    X = InitialDesign.parse("random:4").draw(box, 0)
    assert X.shape == (4, 4) and (X >= box.bounds[0]).all() and (X <= box.bounds[1]).all()


def test_experiments_stamp_their_design():
    for name in MO_SUITE:
        assert EXPERIMENTS[f"mo-{name}"].initial_design == "sobol"
    p = get_experiment("mo-branin-currin").make_problem(0, None)
    assert p.initial_design == "sobol:5" and p.notes.endswith("; initial design sobol:5")
    raw = make_suite_problem("branin-currin")
    assert raw.initial_design == "paper"  # the cached instance is not mutated
    opts = ExperimentOptions(initial_design="paper")
    assert get_experiment("mo-branin-currin").make_problem(0, opts) is raw
    p = get_experiment("mo-branin-currin").make_problem(
        0, ExperimentOptions(initial_design="sobol:9")
    )
    assert p.initial_design == "sobol:9"
    # the papers' experiments: the instance as before (no stamp, same notes)
    p = get_experiment("rkhs-n2").make_problem(4, ExperimentOptions())
    ref = rkhs_problem(2, 4)
    assert p.initial_design == "paper" and p.notes == ref.notes
    assert torch.equal(p.task_covar, ref.task_covar)
    p = get_experiment("rkhs-n2").make_problem(4, ExperimentOptions(initial_design="random:3"))
    assert p.initial_design == "random:3"
    with pytest.raises(ValueError, match="continuous domain"):
        get_experiment("rkhs-n2").make_problem(0, ExperimentOptions(initial_design="sobol"))
    with pytest.raises(ValueError, match="start with no data"):
        get_experiment("se-student").make_problem(0, ExperimentOptions(initial_design="sobol"))


def test_paper_settings_drop_practical_entries(monkeypatch):
    import dataclasses

    from mtucb_bench.experiments import paper_settings

    s = paper_settings("mo-zdt1")
    assert s["algorithms"] == ["MT-UCB-paper", "MOBO", "qLogNParEGO", "qLogNEHVI", "Sobol"]
    assert (s["bound"], s["scalarization"], s["constants"]) == ("spectral", "chebyshev",
                                                                "authors")
    assert s["options"].initial_design == "paper"
    assert paper_settings("rkhs-n2")["algorithms"] == list(EXPERIMENTS["rkhs-n2"].algorithms)
    assert paper_settings("se-student", fast=True)["algorithms"] == ["TGP-UCB",
                                                                     "ATA-GP-UCB-Nystrom"]
    with pytest.raises(ValueError, match="TGP-UCB-practical .practical defaults"):
        paper_settings("se-student", ["TGP-UCB", "TGP-UCB-practical"])
    assert paper_settings("mo-zdt1", fast=True)["algorithms"] == ["qLogNParEGO"]
    only_practical = dataclasses.replace(EXPERIMENTS["mo-zdt1"], fast_algorithms=("MT-UCB",))
    monkeypatch.setitem(EXPERIMENTS, "mo-zdt1", only_practical)
    with pytest.raises(ValueError, match="leaves no algorithm"):
        paper_settings("mo-zdt1", fast=True)


def test_range_noise_gives_each_objective_a_fraction_of_its_range():
    from mtucb_bench.experiments import objective_ranges

    exp = get_experiment("mo-zdt1")
    problem = exp.make_problem(0, ExperimentOptions(noise="gaussian-range:0.05"))
    clean = exp.make_problem(0, ExperimentOptions())
    # the ranges by brute force on the same Sobol sample
    lo, hi = clean.bounds
    X = lo + (hi - lo) * SobolEngine(clean.dim, scramble=True, seed=0).draw(1024).to(DT)
    F = clean.f(X)
    ranges = F.max(0).values - F.min(0).values
    assert torch.allclose(torch.tensor(objective_ranges(clean), dtype=DT), ranges)
    assert problem.noise_std == 0.05
    assert torch.allclose(problem.noise_sd, 0.05 * ranges)
    # ZDT1's f1 = 1 - x1/11 in the normalised units spans 1/11 of f2's typical range
    assert ranges[0] < 0.2 * ranges[1]
    g = torch.Generator().manual_seed(0)
    Z = lo + (hi - lo) * torch.rand(20_000, clean.dim, generator=g, dtype=DT)
    eps = problem.observer(torch.Generator().manual_seed(1))(Z) - clean.f(Z)
    assert torch.allclose(eps.std(0), 0.05 * ranges, rtol=0.03)
    # the same draws as the plain Gaussian noise, scaled per objective
    plain = exp.make_problem(0, ExperimentOptions(noise="gaussian:0.05"))
    eps_plain = plain.observer(torch.Generator().manual_seed(1))(Z) - clean.f(Z)
    assert torch.allclose(eps, eps_plain * ranges)
    assert plain.noise_scale is None
    assert torch.equal(plain.noise_sd, torch.full((2,), 0.05, dtype=DT))


def test_range_noise_is_refused_by_single_objective_experiments():
    with pytest.raises(ValueError, match="single-objective"):
        get_experiment("se-student").make_problem(0, ExperimentOptions(noise="gaussian-range:0.1"))


def test_noise_scale_is_validated():
    import dataclasses

    problem = get_experiment("mo-zdt1").make_problem(0, ExperimentOptions())
    for bad in [(1.0,), (1.0, -1.0), (1.0, float("nan"))]:
        with pytest.raises(ValueError, match="`noise_scale`"):
            dataclasses.replace(problem, noise_scale=bad)
