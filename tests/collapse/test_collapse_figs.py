"""The collapse figures write readable PNG and PDF files."""
import numpy as np
import pytest


def _check(paths):
    assert {p.suffix for p in paths} == {".png", ".pdf"}
    for p in paths:
        assert p.stat().st_size > 5_000


@pytest.mark.slow
def test_deaveraging_figure(tmp_path):
    from resharpen.paper_figs.collapse import fig_collapse_deaveraging
    _check(fig_collapse_deaveraging.make("quick", tmp_path))


@pytest.mark.slow
def test_similarity_figure(tmp_path):
    from resharpen.paper_figs.collapse import fig_collapse_similarity
    _check(fig_collapse_similarity.make("quick", tmp_path))


@pytest.mark.slow
def test_training_figures(tmp_path, monkeypatch):
    """Trains the quick sweep into tmp_path/out (minutes on 2 cores); the figures only read it
    (before it, they are skipped)."""
    from resharpen.experiments.collapse.train import sweep
    from resharpen.paper_figs import MissingResults
    from resharpen.paper_figs.collapse import fig_collapse_gradients
    from resharpen.paper_figs.collapse import fig_collapse_training
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingResults, match="resharpen collapse train --profile quick"):
        fig_collapse_training.make("quick", tmp_path)
    sweep("quick", progress=False)
    _check(fig_collapse_training.make("quick", tmp_path))
    _check(fig_collapse_gradients.make("quick", tmp_path))


def test_trajectory_figure_draws_the_claims_stacks(tmp_path, monkeypatch):
    """fig_collapse_trajectory draws the stack claims' own stacks (trajectory_config): shrunk
    here to 3 stacks of 3 layers at n = d = 16, so the test takes seconds; each panel's
    interval half-width is q se of the paired gaps, q at samples - 1 degrees of freedom."""
    from scipy.stats import t as student

    from resharpen.experiments.collapse import stack_checks
    from resharpen.paper_figs.collapse import fig_collapse_trajectory

    monkeypatch.setattr(stack_checks, "TRAJECTORY_SAMPLES", (3, 3))
    monkeypatch.setattr(stack_checks, "stack_sizes",
                        lambda profile: dict(n=16, d=16, depth=3, samples=3))
    data = fig_collapse_trajectory.data("quick")
    assert len(data) == 9
    for r in data.values():
        assert r["samples"] == 3 and r["gap"].shape == r["half"].shape == (3,)
        q = student.ppf(1 - 0.05 / (2 * 3), 2)
        assert np.allclose(r["half"], q * r["se"])
    _check(fig_collapse_trajectory.make("quick", tmp_path))
