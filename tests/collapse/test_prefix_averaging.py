"""collapse.prefix_averaging decides only when its data can: a wrong reference C_n fails, too few
stacks are INCONCLUSIVE (never FAIL), and the run that decides uses enough stacks."""
import numpy as np
import pytest

from resharpen.experiments.collapse import stack, stack_checks
from resharpen.theory.collapse.attention import prefix_average


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/collapse/conftest.py


def test_too_few_stacks_are_inconclusive_not_fail():
    outcome = stack_checks.prefix_averaging_outcome(n=32, depth=3, batches=4, per_batch=4)
    assert outcome.inconclusive and "resharpen verify" in outcome.inconclusive


def test_a_wrong_reference_fails(monkeypatch):
    monkeypatch.setattr(stack, "prefix_average", lambda n: 0.9 * prefix_average(n) + 0.1 * np.eye(n))
    outcome = stack_checks.prefix_averaging_outcome(n=32, depth=3, batches=4, per_batch=4)
    assert not outcome.passed and not outcome.inconclusive, outcome
