"""Where sweep runs execute: an embedded local process pool, or a Ray cluster. Same code path.

Both backends take a top-level function and a list of argument tuples and yield
``(index, result)`` as runs finish (in completion order). Results come back to the driver, which
alone writes files, so a remote Ray node needs no shared file system.

- ``local``: ``workers == 1`` runs in this process (no pool, easiest to debug); otherwise a
  ``concurrent.futures.ProcessPoolExecutor`` with the ``spawn`` start method (no forked torch
  thread pools). A worker returns its result as bytes of the standard pickle
  (:func:`_pickled_call`): the pool's own pickler carries torch tensors as shared-memory file
  descriptors sent over a socket, which fails intermittently ("received 0 items of ancdata",
  seen on the 288-run paper grid, a worker's ensemble of weight sets) and lost the grid's run.
- ``ray``: ``ray.init(address=...)`` (``"auto"`` = an existing cluster, ``None`` = start a local
  one); each run is a task with ``num_cpus=1`` and ``max_retries`` (a task whose worker dies is
  retried on another). Install with ``pip install 'resharpen[distributed]'``; every node needs
  the package installed.

Both hand their workers the plug-ins loaded in the driver
(:func:`resharpen.experiments.training.plugins.loaded`): a worker loads them before its run
(:func:`_with_plugins`), so a run of a plug-in scheme or task trains in any worker.
"""
from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterator, Sequence

BACKENDS = ("local", "ray")


def _pickled_call(fn: Callable, *args) -> bytes:
    """``fn(*args)`` pickled by value with the standard pickler (tensors as their bytes, no
    shared-memory file descriptors between processes)."""
    return pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)


def _with_plugins(specs: tuple[str, ...], fn: Callable, *args):
    """``fn(*args)`` after loading the plug-ins ``specs`` (in a worker; each loads once)."""
    from resharpen.experiments.training.plugins import load_plugins

    load_plugins(specs)
    return fn(*args)


def _in_workers(fn: Callable, args: Sequence[tuple]) -> tuple[Callable, list[tuple]]:
    """(fn, args) as a worker process runs them: through :func:`_with_plugins` when the driver
    loaded plug-ins, unchanged otherwise."""
    from resharpen.experiments.training.plugins import loaded

    specs = loaded()
    if not specs:
        return fn, list(args)
    return _with_plugins, [(specs, fn, *arg) for arg in args]


def run_local(fn: Callable, args: Sequence[tuple], workers: int) -> Iterator[tuple[int, object]]:
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1 or len(args) <= 1:
        for index, arg in enumerate(args):
            yield index, fn(*arg)
        return
    context = multiprocessing.get_context("spawn")
    call, calls = _in_workers(fn, args)
    with ProcessPoolExecutor(max_workers=min(workers, len(args)), mp_context=context) as pool:
        futures = {pool.submit(_pickled_call, call, *arg): index
                   for index, arg in enumerate(calls)}
        try:
            for future in as_completed(futures):
                yield futures[future], pickle.loads(future.result())
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
    call, calls = _in_workers(fn, args)
    remote = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(call)
    refs = {remote.remote(*arg): index for index, arg in enumerate(calls)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield refs[done[0]], ray.get(done[0])
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


PROBE_SECONDS = 3.0
"""How long :func:`check_ray_address` waits for a TCP connection to a Ray address."""
LOCALHOST = ("localhost", "127.0.0.1", "::1")


def check_backend(backend: str, address: str | None = None) -> None:
    """ValueError unless ``backend`` can run with ``address``: a known backend, an address only
    for Ray, Ray installed, and a given Ray address answering (:func:`check_ray_address`). Made
    before a sweep writes anything; takes a few seconds at most."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    if backend == "local":
        if address is not None:
            raise ValueError(f"--address {address!r} is only for the ray backend "
                             "(add --backend ray, or drop --address)")
        return
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ValueError("the ray backend needs ray: pip install 'resharpen[distributed]' "
                         "(or 'ray[default]')")
    check_ray_address(address)


def _host_port(address: str) -> tuple[str, int]:
    text = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--address {address!r} is not host:port, ray://host:port, 'auto' or "
                         "'local' (e.g. 10.0.0.1:6379)")
    return host, int(port)


def _unreachable(host: str, port: int) -> str | None:
    """Why a TCP connection to ``host:port`` fails within :data:`PROBE_SECONDS`, or None."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def _ray_resolved(address: str) -> str:
    """The host:port Ray itself would connect to for ``address`` (RAY_ADDRESS, the last
    ``ray start``, localhost as the node's address); ValueError when it finds no cluster."""
    from ray._private.services import canonicalize_bootstrap_address

    try:
        return canonicalize_bootstrap_address(address) or ""
    except (ConnectionError, ValueError) as exc:
        raise ValueError(f"--address {address!r}: {str(exc).splitlines()[0]}") from None


def check_ray_address(address: str | None) -> None:
    """ValueError (one line) unless the Ray cluster at ``address`` accepts a TCP connection
    within :data:`PROBE_SECONDS`; ``None`` and ``'local'`` start a cluster and pass. Probed with a
    socket before ``ray.init``, which would retry for tens of seconds and log every attempt."""
    import os

    if address is None or address == "local":
        return
    if address == "auto" or (os.environ.get("RAY_ADDRESS") and "://" not in address):
        target = _ray_resolved(address)  # Ray's own rules: RAY_ADDRESS, the last `ray start`
        if not target:
            return
        host, port = _host_port(target)
    else:
        host, port = _host_port(address)
    why = _unreachable(host, port)
    if why and host in LOCALHOST and "://" not in address:
        other = _ray_resolved(address)  # Ray connects to the node's address, not loopback
        if other:
            why = _unreachable(*_host_port(other))
    if why:
        raise ValueError(f"cannot reach Ray at --address {address!r} ({host}:{port}: {why}); "
                         "is the cluster up (`ray status`)?")


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
