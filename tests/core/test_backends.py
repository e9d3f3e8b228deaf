"""Where sweep tasks run: backend errors, and Ray retrying a task whose worker dies."""
import pytest


def test_backend_errors():
    from resharpen.experiments.core.backends import run_tasks

    with pytest.raises(ValueError, match="not one of local, ray"):
        run_tasks(print, [], backend="slurm")
    with pytest.raises(ValueError, match="only for the ray backend"):
        run_tasks(print, [], backend="local", address="auto")


def test_ray_retries_a_task_whose_worker_dies(tmp_path):
    """A worker process that dies mid-task (os._exit, as a SIGKILL or OOM would) is retried."""
    ray = pytest.importorskip("ray")
    from resharpen.experiments.core.backends import run_ray

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
