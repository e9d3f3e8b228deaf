"""Where a result comes from: :func:`provenance`, the record written into every result file.

:func:`provenance` is the one record of where and how a result was made, written *into* the
files (a run folder's ``provenance.json``, a sweep folder's ``provenance.json`` beside its table,
the ledger JSON's top-level ``provenance``, a figure's PNG and PDF metadata), never read from file
metadata (a copy changes a file's time): the commit and whether the working tree was dirty, the
package and key dependency versions, the machine, the profile and the creation time.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

PROVENANCE_FILE = "provenance.json"
"""The name of the provenance record beside a run's config.json and a sweep's table."""
DEPENDENCIES = ("torch", "numpy", "scipy", "sympy")
"""The distributions whose versions a provenance record lists (besides python and resharpen)."""


@lru_cache(maxsize=1)
def _static() -> dict:
    """The part of a provenance record that does not change within a process: commit, dirty
    flag, versions, machine (git is asked once per process)."""
    import os
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                  text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    versions = {"python": platform.python_version()}
    for name in ("resharpen", *DEPENDENCIES):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    cpu, cpu_id = platform.processor() or platform.machine(), {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "model name" and "model name" not in cpu_id:
                cpu = cpu_id["model name"] = value
            elif key in ("cpu family", "model", "stepping") and key not in cpu_id:
                cpu_id[key] = value
            if key == "" and cpu_id:  # the first processor's block ended
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {"commit": commit.strip() if commit else None,
            "dirty": None if status is None else bool(status.strip()),
            "versions": versions,
            "machine": {"cpu": cpu, "cpu_id": " ".join(
                            f"{key.split()[-1]} {cpu_id[key]}" for key in
                            ("cpu family", "model", "stepping") if key in cpu_id) or None,
                        "cpus": os.cpu_count(), "usable_cpus": usable,
                        "platform": platform.platform()}}


def provenance(profile: str | None = None) -> dict:
    """The provenance record of a result made now: ``commit`` (None outside a git checkout),
    ``dirty`` (tracked or untracked changes in the working tree when this process first asked),
    ``versions`` (python, resharpen, torch, numpy, scipy, sympy; read from the installed
    distributions, nothing imported), ``machine`` (CPU model; ``cpu_id``, its family, model and
    stepping, which the brand name does not tell apart; CPU count, usable CPUs, platform, host),
    ``threads`` (torch's intra-op threads and the vector instruction set its kernels use,
    ``cpu_capability``, when torch is loaded; OMP_NUM_THREADS; float32 results of a chaotic
    run can differ between machines that differ in these), ``profile`` and ``created`` (UTC,
    ISO 8601). Every result file carries it (:data:`PROVENANCE_FILE`, the ledger JSON's
    ``provenance``)."""
    import datetime
    import os
    import sys

    record = json.loads(json.dumps(_static()))
    torch = sys.modules.get("torch")
    record["threads"] = {"torch": torch.get_num_threads() if torch is not None else None,
                         "cpu_capability": torch.backends.cpu.get_cpu_capability()
                         if torch is not None else None,
                         "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    record["profile"] = profile
    record["created"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")
    return record

# (section, key, label) of the settings a detail reports, when the runs have them.
