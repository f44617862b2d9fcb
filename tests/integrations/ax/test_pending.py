"""SignedHallucinatedModel: the signed mean and the GP-BUCB variance of a heavy-tailed model.

Reference: the same model built from scratch on the data plus the pending points (the
variance does not depend on the rewards).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ax")

from botorch_mtucb.integrations.ax.pending import SignedHallucinatedModel  # noqa: E402
from botorch_mtucb.models import TruncatedGP  # noqa: E402
from tests.integrations.ax.helpers import DT, truncated_gp  # noqa: E402


def test_signed_view_mean_and_pending_variance() -> None:
    model = truncated_gp()
    Xp = torch.tensor([[0.3], [0.7]], dtype=DT)
    view = SignedHallucinatedModel(model, -1.0, Xp)
    ref = TruncatedGP(  # variance reference: from scratch on X ∪ X_pending (rewards irrelevant)
        torch.cat([model.train_X, Xp]), torch.zeros(10, 1, dtype=DT), alpha=1.0, v=4.0
    )
    X = torch.linspace(0, 1, 11, dtype=DT).reshape(11, 1, 1)
    mean, var = view.mean_and_variance(X)
    base_mean, _ = model.mean_and_variance(X)
    _, ref_var = ref.mean_and_variance(X)
    torch.testing.assert_close(mean, -base_mean)
    torch.testing.assert_close(var, ref_var)
    post = view.posterior(X)
    torch.testing.assert_close(post.mean[..., 0], -base_mean)
    torch.testing.assert_close(post.variance[..., 0], ref_var)
    with pytest.raises(ValueError, match="`sign` must be"):
        SignedHallucinatedModel(model, 2.0, None)
