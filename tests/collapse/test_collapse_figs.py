"""The collapse figures write readable PNG and PDF files."""
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
