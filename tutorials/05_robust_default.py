# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5. Robust BO on a continuous domain, without knowing the noise
#
# Real objectives are sometimes read through a faulty sensor: most readings are fine, a few are
# wildly off (a dropped packet read as 0, a saturated sensor, a crashed simulation reported as
# a huge value). You rarely know in advance which kind of corruption you have. This tutorial
# runs the package's robust default on a continuous box with the usual BoTorch loop:
#
# * `robust_gp(X, Y, bounds)` (`botorch_mtucb.models`): a GP whose training readings are first
#   **screened**: each reading is compared with what the *other* readings predict at its
#   input (the closed-form leave-one-out prediction), and a reading that is both improbable
#   under the model and far from that prediction on the scale of the readings themselves is
#   flagged as suspicious and replaced by the prediction. Peaks that neighbouring readings
#   share are kept; isolated readings far above or below them are not. With nothing flagged,
#   the model is BoTorch's `SingleTaskGP`. `model.suspicious` lists the flags.
# * `robust_acquisition(model)` (`botorch_mtucb.acquisition`): the acquisition for
#   `optimize_acqf` (expected improvement over a robust incumbent, or UCB; see the API
#   reference for the default and the options).
# * `recommend(model, X)` (`botorch_mtucb.models`): the point to report, the evaluated point
#   with the best posterior mean among those with a trusted reading. A point whose only
#   reading was flagged is never recommended.
#
# We compare it with what a BoTorch user writes by default: `SingleTaskGP` +
# `LogExpectedImprovement`, recommending the evaluated point with the best posterior mean.

# %%
import os
import warnings

# FAST mode (used by the test suite): BOTORCH_MTUCB_FAST=1 shrinks horizons and seeds so the
# notebook runs in well under a minute. Unset it to run the full tutorial.
FAST = os.environ.get("BOTORCH_MTUCB_FAST", "") not in ("", "0")

import matplotlib.pyplot as plt
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.optim import optimize_acqf
from botorch.test_functions import Branin
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_mtucb.acquisition import robust_acquisition
from botorch_mtucb.models import recommend, robust_gp
from botorch_mtucb.utils import sobol_initial_design

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=UserWarning)  # fitting / optimiser chatter
warnings.filterwarnings("ignore", category=RuntimeWarning, module="botorch.optim")
DT = torch.float64
print("FAST mode" if FAST else "full mode")

# %% [markdown]
# ## The problem: Branin with a faulty sensor
#
# We maximise $f = -\mathrm{Branin}$ on its box $[-5, 10] \times [0, 15]$. Every reading has
# small Gaussian noise; in addition, with probability 5 % the sensor **fails** and reports a
# constant far above every real value, and with probability 5 % a reading is a **gross
# outlier** (±200, either sign). Neither the kind nor the rate is told to the methods.

# %%
problem = Branin(negate=True).to(DT)
bounds = problem.bounds
F_STAR = float(problem.optimal_value)  # f* = -0.398


def observe(X: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Readings ``N x 1``: f + N(0, 1), 5 % failures (constant f* + 300), 5 % ±200."""
    f = problem(X, noise=False).unsqueeze(-1)
    u = torch.rand(f.shape, generator=generator, dtype=DT)
    sign = torch.where(torch.rand(f.shape, generator=generator, dtype=DT) < 0.5, -1.0, 1.0)
    y = f + torch.randn(f.shape, generator=generator, dtype=DT)
    y = torch.where(u < 0.05, torch.full_like(y, F_STAR + 300.0), y)
    return torch.where((u >= 0.05) & (u < 0.10), f + 200.0 * sign, y)


def regret(x: torch.Tensor) -> float:
    return F_STAR - float(problem(x, noise=False))


# %% [markdown]
# ## Two loops
#
# Both start from the same scrambled-Sobol design and see the same readings stream; each round
# fits its model on all readings, maximises its acquisition and records the regret of its
# recommendation.

# %%
def botorch_default(X, Y):
    model = SingleTaskGP(X, Y, input_transform=Normalize(2, bounds=bounds),
                         outcome_transform=Standardize(m=1))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
    acqf = LogExpectedImprovement(model, best_f=mean.max())
    return acqf, X[mean.argmax()].unsqueeze(0)


def robust_default(X, Y):
    model = robust_gp(X, Y, bounds)
    return robust_acquisition(model), recommend(model, X)


def run(method, seed: int, rounds: int):
    generator = torch.Generator().manual_seed(seed)
    X = sobol_initial_design(bounds, seed=seed)
    Y = observe(X, generator)
    regrets = []
    for t in range(rounds):
        torch.manual_seed(seed * 1000 + t)  # optimize_acqf's random restarts
        acqf, x_rec = method(X, Y)
        regrets.append(regret(x_rec))
        x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=256)
        X, Y = torch.cat([X, x]), torch.cat([Y, observe(x, generator)])
    acqf, x_rec = method(X, Y)
    regrets.append(regret(x_rec))
    return torch.tensor(regrets), X, Y


SEEDS = [0] if FAST else list(range(5))
ROUNDS = 6 if FAST else 30
results = {name: [run(m, s, ROUNDS) for s in SEEDS]
           for name, m in (("SingleTaskGP + LogEI", botorch_default),
                           ("robust_gp + robust_acquisition", robust_default))}

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
for name, runs in results.items():
    R = torch.stack([r[0] for r in runs])
    t = torch.arange(R.shape[-1])
    ax.plot(t, R.mean(0), label=name)
    if R.shape[0] > 1:
        se = R.std(0) / R.shape[0] ** 0.5
        ax.fill_between(t, R.mean(0) - se, R.mean(0) + se, alpha=0.2)
    print(f"{name:>32}: regret of the recommendation after {ROUNDS} rounds "
          f"{R[:, -1].mean():.3f} (mean over {R.shape[0]} seed(s))")
ax.set(xlabel="round", ylabel="f* − f(recommended point)", yscale="log",
       title="Branin with failures and gross outliers")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What the screening saw
#
# The model of the last round of the first seed: which readings were flagged, and how far
# they were from the noise-free value.

# %%
_, X, Y = results["robust_gp + robust_acquisition"][0]
model = robust_gp(X, Y, bounds)
f = problem(X, noise=False).unsqueeze(-1)
corrupted = (Y - f).abs().squeeze(-1) > 10.0
flags = model.suspicious
print(f"{int(corrupted.sum())} corrupted readings among {len(Y)}; {int(flags.sum())} flagged; "
      f"{int((flags & corrupted).sum())} of the corrupted ones flagged, "
      f"{int((flags & ~corrupted).sum())} clean ones flagged")
print("recommended:", recommend(model, X).tolist(), "regret", round(regret(recommend(model, X)), 3))

# %% [markdown]
# **Reading the result.** `SingleTaskGP` takes every reading at face value: one failure reading
# (f* + 300) becomes the largest target, its posterior mean there is high, and both its
# expected improvement and its recommendation chase it. The robust model judges each reading
# against its neighbours: the isolated failures and outliers are flagged and replaced, so
# the model, the incumbent of its acquisition and the recommendation follow the clean
# readings. (In FAST mode the run is too short to compare the methods; run the notebook in
# full for the averaged curves.)
#
# When to use what (measured in the project's robust suite; see the user guide's table):
# with isolated corrupted readings of either sign, screen them (`robust_gp`); with readings
# that look clean, keep `SingleTaskGP` + LogEI, since the robust default gave up regret on the
# suite's clean cells; `TruncatedGP` / `AdaptiveTruncationGP` remain the models of paper 001,
# with its regret guarantees, when a moment bound $\mathbb{E}|y|^{1+\alpha} \le v$ is known.
