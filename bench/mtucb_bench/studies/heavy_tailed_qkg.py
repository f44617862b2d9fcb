"""qKnowledgeGradient on the heavy-tailed TruncatedGP against SingleTaskGP (issue 16, speed).

One qKG evaluation (forward, and forward + backward) at ``b`` restarts x (1 + num_fantasies)
points in 2-d, on ``t`` observations, for:

* ``stgp``: BoTorch's ``SingleTaskGP`` on the same data (the anchor, measured in this run);
* ``tgp``: the data-driven ``TruncatedGP(X, Y)``: its fantasies share one block-Cholesky
  extension and one kernel call per input (``HeavyTailedBatch``'s shared-factor path);
* ``tgp-loop``: the same model with that path switched off (every fantasy member conditioned
  and evaluated on its own: the code before the change).

Best of ``--repeats`` wall times, one thread; ratios against ``stgp``. The qKG values of
``tgp`` and ``tgp-loop`` are checked equal (1e-12). Writes ``results/heavy_tailed_qkg.json``.

    python bench/mtucb_bench/studies/heavy_tailed_qkg.py            # t in {30, 100}, 64 fantasies, b = 8
"""

from __future__ import annotations

import argparse
import json
import platform
import warnings
from pathlib import Path

import torch
from botorch.acquisition import qKnowledgeGradient
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler

from botorch_mtucb.models import TruncatedGP
from mtucb_bench.measure import best_time

DT = torch.float64


def _kg(model, Xq: torch.Tensor, nf: int, backward: bool) -> torch.Tensor:
    acqf = qKnowledgeGradient(model, num_fantasies=nf,
                              sampler=SobolQMCNormalSampler(torch.Size([nf]), seed=0))
    x = Xq.clone().requires_grad_(backward)
    val = acqf(x)
    if backward:
        val.sum().backward()
    return val.detach()


def measure(t: int, nf: int, b: int, repeats: int) -> list[dict]:
    g = torch.Generator().manual_seed(t)
    X = torch.rand(t, 2, generator=g, dtype=DT)
    Y = torch.sin(6 * X).sum(-1, keepdim=True) + 0.1 * torch.randn(t, 1, generator=g, dtype=DT)
    Y[:: max(t // 10, 1)] += 30.0  # gross outliers
    Xq = torch.rand(b, 1 + nf, 2, generator=g, dtype=DT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stgp = SingleTaskGP(X, Y).eval()
    tgp = TruncatedGP(X, Y)
    siblings = TruncatedGP._fantasy_siblings
    rows, values = [], {}
    for name in ("stgp", "tgp", "tgp-loop"):
        model = stgp if name == "stgp" else tgp
        if name == "tgp-loop":
            TruncatedGP._fantasy_siblings = lambda *a, **k: None
        try:
            values[name] = _kg(model, Xq, nf, False)
            fwd = best_time(lambda m=model: _kg(m, Xq, nf, False), repeats)
            both = best_time(lambda m=model: _kg(m, Xq, nf, True), repeats)
        finally:
            TruncatedGP._fantasy_siblings = siblings
        rows.append({"model": name, "t": t, "num_fantasies": nf, "restarts": b,
                     "forward_ms": 1e3 * fwd, "forward_backward_ms": 1e3 * both})
    err = float((values["tgp"] - values["tgp-loop"]).abs().max())
    if err > 1e-12:
        raise RuntimeError(f"shared-factor qKG differs from the member loop by {err:.2e}")
    anchor = rows[0]
    for r in rows:
        r["forward_ratio_vs_stgp"] = r["forward_ms"] / anchor["forward_ms"]
        r["forward_backward_ratio_vs_stgp"] = (r["forward_backward_ms"]
                                               / anchor["forward_backward_ms"])
        r["max_abs_diff_tgp_vs_loop"] = err
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--t", type=int, nargs="+", default=[30, 100])
    p.add_argument("--num-fantasies", type=int, default=64)
    p.add_argument("--restarts", type=int, default=8)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path,
                   default=Path(__file__).parent / "results" / "heavy_tailed_qkg.json")
    ns = p.parse_args()
    torch.set_num_threads(1)
    rows = [r for t in ns.t for r in measure(t, ns.num_fantasies, ns.restarts, ns.repeats)]
    print("| t | model | forward ms (× stgp) | forward + backward ms (× stgp) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['t']} | {r['model']} | {r['forward_ms']:.1f} "
              f"({r['forward_ratio_vs_stgp']:.2f}×) | {r['forward_backward_ms']:.1f} "
              f"({r['forward_backward_ratio_vs_stgp']:.2f}×) |")
    meta = {"torch": torch.__version__, "python": platform.python_version(), "threads": 1,
            "repeats": ns.repeats}
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
