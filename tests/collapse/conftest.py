"""Fixtures of the collapse tests.

torch is imported inside the fixture: the theory tests of this folder run without torch
(`make test-py310`), and pytest loads this file for them too.
"""
import pytest


@pytest.fixture
def one_thread():
    """Thousands of small products: one BLAS thread (many times faster on a shared machine)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
