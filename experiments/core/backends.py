"""Where sweep runs execute: an embedded local process pool, or a Ray cluster. Same code path.

Both backends take a top-level function and a list of argument tuples and yield
``(index, result)`` as runs finish (in completion order). Results come back to the driver, which
alone writes files, so a remote Ray node needs no shared file system.

- ``local``: ``workers == 1`` runs in this process (no pool, easiest to debug); otherwise a
  ``concurrent.futures.ProcessPoolExecutor`` with the ``spawn`` start method (no forked torch
  thread pools).
- ``ray``: ``ray.init(address=...)`` (``"auto"`` = an existing cluster, ``None`` = start a local
  one); each run is a task with ``num_cpus=1`` and ``max_retries`` (a task whose worker dies is
  retried on another). Install with ``pip install 'resharpen[distributed]'``; every node needs
  the package installed.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterator, Sequence

BACKENDS = ("local", "ray")


def run_local(fn: Callable, args: Sequence[tuple], workers: int) -> Iterator[tuple[int, object]]:
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1 or len(args) <= 1:
        for index, arg in enumerate(args):
            yield index, fn(*arg)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(args)), mp_context=context) as pool:
        futures = {pool.submit(fn, *arg): index for index, arg in enumerate(args)}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def run_ray(fn: Callable, args: Sequence[tuple], address: str | None, workers: int | None = None,
            max_retries: int = 3) -> Iterator[tuple[int, object]]:
    try:
        import ray
    except ImportError:
        raise ValueError("the ray backend needs ray: pip install 'resharpen[distributed]' "
                         "(or 'ray[default]')") from None
    if not ray.is_initialized():
        kwargs = {"address": address, "include_dashboard": False, "log_to_driver": False}
        if address is None and workers:
            kwargs["num_cpus"] = workers
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError) as exc:
            raise ValueError(f"cannot start or reach Ray at address {address!r}: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                             ) from None
    remote = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(fn)
    refs = {remote.remote(*arg): index for index, arg in enumerate(args)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield refs[done[0]], ray.get(done[0])
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


def run_tasks(fn: Callable, args: Sequence[tuple], backend: str = "local", workers: int = 1,
              address: str | None = None) -> Iterator[tuple[int, object]]:
    """Yield ``(index, fn(*args[index]))`` as tasks finish on the chosen backend."""
    if backend == "local":
        if address is not None:
            raise ValueError("--address is only for the ray backend")
        return run_local(fn, args, workers)
    if backend == "ray":
        return run_ray(fn, args, address, workers)
    raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
