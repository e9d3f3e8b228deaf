"""Fixtures of the collapse tests."""
import pytest
import torch


@pytest.fixture
def one_thread():
    """Thousands of small products: one BLAS thread (many times faster on a shared machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
