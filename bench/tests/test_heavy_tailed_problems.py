"""Heavy-tailed problems of paper 001: noise laws, moment bounds, real-data problems."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import torch

from botorch_mtucb.kernels import PrecomputedKernel
from mtucb_bench.data import default_data_dir
from mtucb_bench.heavy_tailed_problems import (
    authors_code_synthetic,
    correlation_matrix,
    light_sensor_problem,
    sample_pareto,
    sample_student_t,
    stock_problem,
    synthetic_heavy_tailed_problem,
)

DT = torch.float64
DATA = default_data_dir()
needs_stock = pytest.mark.skipif(
    not (DATA / "fin.csv").is_file(), reason=f"fin.csv not found in {DATA} (set BOTORCH_MTUCB_DATA)"
)
needs_light = pytest.mark.skipif(
    not (DATA / "iw_data_all.mat").is_file(),
    reason=f"iw_data_all.mat not found in {DATA} (set BOTORCH_MTUCB_DATA)",
)


def test_student_t_and_pareto_laws():
    g = torch.Generator().manual_seed(0)
    t = sample_student_t((200_000,), 3, g)
    # E|T_3| = 2√3/π, median 0, P(T_3 > 2.353) = 0.05 (t-table)
    assert abs(float(t.abs().mean()) - 2 * math.sqrt(3) / math.pi) < 0.02
    assert abs(float(t.median())) < 0.01
    assert abs(float((t > 2.353).double().mean()) - 0.05) < 0.003
    scale = torch.full((200_000,), 0.5, dtype=DT)
    y = sample_pareto(scale, 2.0, g)
    # Pareto(shape 2, scale s): support [s, ∞), median s√2, P(y > 2s) = 1/4
    assert float(y.min()) >= 0.5
    assert abs(float(y.median()) - 0.5 * math.sqrt(2)) < 0.01
    assert abs(float((y > 1.0).double().mean()) - 0.25) < 0.005


@pytest.mark.parametrize(("kernel", "noise"), [("se", "student"), ("se", "pareto"),
                                                ("matern", "student")])
def test_synthetic_problem(kernel, noise):
    p = synthetic_heavy_tailed_problem(kernel, noise, seed=3)
    assert p.arms.shape == (100, 1) and p.num_arms == 100
    assert math.isclose(float(p.mean_rewards.abs().max()), 1.0) and p.B == 1.0
    torch.testing.assert_close(p.regret_f, p.mean_rewards)
    if noise == "student":
        assert p.alpha == 1.0 and math.isclose(p.v, 1.0 + 3.0)
    else:
        assert p.alpha == 0.9 and (p.mean_rewards >= 0).all()
        # v = E|y|^{1.9} at f = B for Pareto(2, B/2): 2 (B/2)^{1.9} / (2 − 1.9)
        assert math.isclose(p.v, 2 * 0.5**1.9 / 0.1, rel_tol=1e-12)
    assert (p.qff is not None) == (kernel == "se")
    # f lies in the span of the kernel columns (an RKHS element): exact interpolation residual
    K = p.kernel()(p.arms, p.arms).to_dense().detach()
    coef = torch.linalg.lstsq(K + 1e-10 * torch.eye(100, dtype=DT), p.mean_rewards).solution
    assert float((K @ coef - p.mean_rewards).abs().max()) < 1e-6
    # rewards: mean f(arm) (large sample at one arm), reproducible given the generator
    arm = int(p.mean_rewards.argmax())
    idx = torch.full((100_000,), arm)
    obs = p.observer(torch.Generator().manual_seed(1))(p.arms[idx])
    obs2 = p.observer(torch.Generator().manual_seed(1))(p.arms[idx])
    torch.testing.assert_close(obs, obs2)
    f_arm = float(p.mean_rewards[arm])
    # median of f + t_3 is f; median of Pareto(2, f/2) is (f/2)√2
    expected = f_arm if noise == "student" else f_arm / 2 * math.sqrt(2)
    assert abs(float(obs.median()) - expected) < 0.02
    assert p.true_f()(p.arms[[arm]]).item() == pytest.approx(float(p.regret_f[arm]))


def test_correlation_matrix_matches_numpy():
    g = torch.Generator().manual_seed(0)
    D = torch.randn(50, 6, generator=g, dtype=DT) @ torch.randn(6, 6, generator=g, dtype=DT)
    torch.testing.assert_close(correlation_matrix(D), torch.from_numpy(np.corrcoef(D.numpy().T)))


@needs_stock
def test_stock_problem_on_real_data():
    p = stock_problem()
    with open(DATA / "fin.csv") as fh:
        rows = list(csv.reader(fh))
    prices = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    assert p.num_arms == prices.shape[1] == 29
    np.testing.assert_allclose(p.mean_rewards.numpy(), prices.mean(axis=0))
    np.testing.assert_allclose(p.regret_f.numpy(), prices.mean(0) / prices.mean(0).max())
    assert math.isclose(p.v, float((prices**2).mean())) and math.isclose(p.B, prices.mean(0).max())
    kern = p.kernel()
    assert isinstance(kern, PrecomputedKernel)
    np.testing.assert_allclose(kern.matrix.numpy(), np.corrcoef(prices.T), atol=1e-12)
    r = p.observer(torch.Generator().manual_seed(0))(torch.tensor([[3.0], [3.0]], dtype=DT))
    assert all(any(abs(v - float(x)) < 1e-9 for v in prices[:, 3]) for x in r[:, 0])


@needs_light
def test_light_sensor_problem_on_real_data():
    import scipy.io

    p = light_sensor_problem()
    mat = scipy.io.loadmat(DATA / "iw_data_all.mat", squeeze_me=True, struct_as_record=False)
    test = mat["data"].test.sensordata.astype(np.float64)
    train = mat["data"].train.sensordata.astype(np.float64)
    assert p.num_arms == 41
    np.testing.assert_allclose(p.mean_rewards.numpy(), test.mean(axis=0))
    assert math.isclose(p.v, float((test**2).mean()))  # no uint16 overflow
    np.testing.assert_allclose(p.kernel().matrix.numpy(), np.corrcoef(train.T), atol=1e-12)
    assert p.qff is not None and p.qff.num_nodes == 16
    assert math.isclose(p.qff.lengthscale**2, 0.1)
    assert float(p.qff.arms.min()) == 0.0 and float(p.qff.arms.max()) == 1.0
    # both arm representations give the same regret values
    torch.testing.assert_close(p.true_f("qff")(p.qff.arms), p.true_f()(p.arms))


def test_authors_code_synthetic_by_hand():
    # f = Σ a_i exp(−(x − x_i)² / (2 l²)) over the same draws, normalised by max|f|
    arms, f, g = authors_code_synthetic(3, num_arms=50, lengthscale=0.3)
    ref = torch.Generator().manual_seed(3)
    support = torch.rand(100, 1, dtype=DT, generator=ref)
    a = 2 * torch.rand(100, dtype=DT, generator=ref) - 1
    x = torch.linspace(0.01, 1.0, 50, dtype=DT)
    raw = (torch.exp(-((x[:, None] - support[:, 0]) ** 2) / (2 * 0.3**2)) * a).sum(-1)
    torch.testing.assert_close(f, raw / raw.abs().max())
    assert arms.shape == (50, 1) and float(f.abs().max()) == 1.0
    # the returned generator continues the stream after the draw
    assert torch.equal(torch.rand(3, generator=g), torch.rand(3, generator=ref))


def test_synthetic_problem_with_a_noise_model():
    from mtucb_bench.noise_models import StudentTNoise, reward_moment_bound

    paper = synthetic_heavy_tailed_problem("se", "student", seed=4)
    p = synthetic_heavy_tailed_problem("se", "student-t:1.5", seed=4)
    assert torch.equal(p.mean_rewards, paper.mean_rewards)  # same f draw as the paper's t₃
    assert p.name == "se/student-t:1.5" and p.alpha == pytest.approx(0.4)
    assert p.v == pytest.approx(reward_moment_bound(StudentTNoise(df=1.5), 0.4, p.B))
    idx = torch.arange(100).repeat(20)
    y = p.sample_rewards(idx, torch.Generator().manual_seed(0))
    eps = StudentTNoise(df=1.5).sample((2000,), torch.Generator().manual_seed(0))
    assert torch.allclose(y, p.mean_rewards[idx] + eps)
    q = synthetic_heavy_tailed_problem("se", StudentTNoise(df=3.0), seed=4)
    assert q.alpha == 1.0
    with pytest.raises(ValueError, match="noise spec"):
        synthetic_heavy_tailed_problem("se", "cauchy", seed=0)
    with pytest.raises(ValueError, match="Unknown noise kind"):
        synthetic_heavy_tailed_problem("se", "cauchy:1", seed=0)
