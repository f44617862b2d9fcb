"""Shared test configuration."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread():
    """Run every test with one intra-op thread, restoring the previous setting afterwards.

    The tests use small matrices, for which intra-op threads only add synchronisation cost
    (measured 10–100x slower on a busy 2-core machine).
    """
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
