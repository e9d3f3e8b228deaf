"""Where sweep tasks run: backend errors, and Ray retrying a task whose worker dies."""
import pytest


def test_backend_errors():
    from resharpen.experiments.training.backends import run_tasks

    with pytest.raises(ValueError, match="not one of local, ray"):
        run_tasks(print, [], backend="slurm")
    with pytest.raises(ValueError, match="only for the ray backend"):
        run_tasks(print, [], backend="local", address="auto")


def test_ray_retries_a_task_whose_worker_dies(tmp_path):
    """A worker process that dies mid-task (os._exit, as a SIGKILL or OOM would) is retried."""
    ray = pytest.importorskip("ray")
    from resharpen.experiments.training.backends import run_ray

    def die_once(marker, value):
        import os as _os
        from pathlib import Path as _Path
        if not _Path(marker).exists():
            _Path(marker).write_text("died")
            _os._exit(1)
        return value * 2

    args = [(str(tmp_path / f"marker{i}"), i) for i in range(3)]
    try:
        results = dict(run_ray(die_once, args, address=None, workers=2))
    finally:
        ray.shutdown()
    assert results == {0: 0, 1: 2, 2: 4}
    assert all((tmp_path / f"marker{i}").read_text() == "died" for i in range(3))


def many_tensors(seed: int, count: int) -> dict:
    """A worker's result shaped like an ensemble's: many weight tensors (top-level: picklable)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return {f"w{i}": torch.randn(4, 8, generator=generator) for i in range(count)}


def test_local_pool_results_cross_by_value():
    """Results of the local pool (2 spawned workers) come back as the standard pickle's bytes:
    equal to the result computed here, whatever number of tensors (the pool's own pickler sent
    tensors as shared-memory file descriptors, which broke a 288-run grid)."""
    import torch

    from resharpen.experiments.training.backends import _pickled_call, run_local

    args = [(seed, 400) for seed in range(4)]
    results = dict(run_local(many_tensors, args, workers=2))
    assert sorted(results) == [0, 1, 2, 3]
    for index, (seed, count) in enumerate(args):
        expected = many_tensors(seed, count)
        assert all(torch.equal(results[index][k], expected[k]) for k in expected)
    assert isinstance(_pickled_call(many_tensors, 0, 2), bytes)
